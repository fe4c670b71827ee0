/*
 * "cdrom" on the tiny guest's command line: the CD-ROM drive on the
 * secondary IDE channel's master, driven as Linux's sr driver does it, by
 * ATAPI packets over PIO with interrupts off (polling), to watch a media
 * change that a QMP client makes. It prints
 *   tiny: cd ready blocks=N        the disc (READ CAPACITY) once TEST UNIT
 *                                  READY succeeds
 *   tiny: cd read ok|failed        READ(10) of block 0
 *   tiny: cd locked                PREVENT MEDIUM REMOVAL
 * then polls GET EVENT STATUS NOTIFICATION (media class) and, on an
 * eject request (the monitor's eject refused for the lock),
 *   tiny: cd eject request
 *   tiny: cd tray opened           unlocked, START STOP UNIT (eject) done
 * then polls TEST UNIT READY until a disc is ready again, and prints
 *   tiny: cd new medium attention=A   A: 1 if a UNIT ATTENTION (MEDIUM
 *                                    MAY HAVE CHANGED) came on the way
 *   tiny: cd ready blocks=N
 * or "tiny: cd timeout <what>" where something did not come in time.
 */
#include "../../unit/ata-regs.h"
#include "tiny.h"

#define CD_BASE         0x170
#define CD_CTL          0x376
#define ATA_PACKET      0xa0
#define BYTE_LIMIT      0xfffe
/* Polling: how long one wait may take, and the pause between polls. */
#define WAIT_CYCLES     3000000000ull
#define POLL_CYCLES     20000000ull
#define POLLS           1500            /* about a minute at 2 GHz+ */
#define SENSE_UNIT_ATTENTION 0x6

static uint8_t reply[2048];

static int wait_not_busy(uint8_t *status)
{
    uint64_t start = rdtsc();
    while ((*status = inb(CD_CTL)) & ST_BSY) {
        if (rdtsc() - start > WAIT_CYCLES) {
            return -1;
        }
    }
    *status = inb(CD_BASE + REG_STATUS);
    return 0;
}

/* One packet command; its data lands in reply. Returns 0, the sense key
 * (from the error register) when the drive fails it, or -1 on a hang. */
static int packet(const uint8_t cdb[12])
{
    uint8_t status;
    outb(CD_BASE + REG_DEVICE, 0xa0);
    if (wait_not_busy(&status) < 0) {
        return -1;
    }
    outb(CD_BASE + REG_FEATURE, 0);                 /* PIO */
    outb(CD_BASE + REG_LBAM, BYTE_LIMIT & 0xff);
    outb(CD_BASE + REG_LBAH, BYTE_LIMIT >> 8);
    outb(CD_BASE + REG_COMMAND, ATA_PACKET);
    if (wait_not_busy(&status) < 0 || !(status & ST_DRQ)) {
        return -1;
    }
    for (int i = 0; i < 6; i++) {
        outw(CD_BASE + REG_DATA, cdb[2 * i] | cdb[2 * i + 1] << 8);
    }
    unsigned got = 0;
    while (wait_not_busy(&status) == 0 && (status & ST_DRQ)) {
        unsigned n = inb(CD_BASE + REG_LBAM) | inb(CD_BASE + REG_LBAH) << 8;
        for (unsigned i = 0; i < n; i += 2) {
            uint16_t w = inw(CD_BASE + REG_DATA);
            if (got + 1 < sizeof(reply)) {
                reply[got] = w;
                reply[got + 1] = w >> 8;
            }
            got += 2;
        }
    }
    if (status & ST_BSY) {
        return -1;
    }
    return status & ST_ERR ? inb(CD_BASE + REG_ERROR) >> 4 : 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static void report_capacity(void)
{
    static const uint8_t read_capacity[12] = { 0x25 };
    puts_serial("tiny: cd ready blocks=");
    put_dec(packet(read_capacity) == 0 ? be32(reply) + 1 : 0);
    puts_serial("\n");
}

/* TEST UNIT READY until the disc is ready; *attention: a UNIT ATTENTION
 * came first. */
static int wait_ready(int *attention)
{
    static const uint8_t tur[12] = { 0x00 };
    static const uint8_t request_sense[12] = { 0x03, 0, 0, 0, 18 };
    for (int i = 0; i < POLLS; i++) {
        int key = packet(tur);
        if (key == 0) {
            return 0;
        }
        if (key == SENSE_UNIT_ATTENTION && packet(request_sense) == 0 && reply[12] == 0x28) {
            *attention = 1;
        }
        pause_cycles(POLL_CYCLES);
    }
    return -1;
}

/* GET EVENT STATUS NOTIFICATION until the media event code is event. */
static int wait_media_event(uint8_t event)
{
    static const uint8_t gesn[12] = { 0x4a, 0x01, 0, 0, 0x10, 0, 0, 0, 8 };
    for (int i = 0; i < POLLS; i++) {
        if (packet(gesn) == 0 && (reply[2] & 0x07) == 0x04 && (reply[4] & 0x0f) == event) {
            return 0;
        }
        pause_cycles(POLL_CYCLES);
    }
    return -1;
}

void run_cdrom(void)
{
    static const uint8_t read10[12] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 1 };
    static const uint8_t lock[12] = { 0x1e, 0, 0, 0, 1 };
    static const uint8_t unlock[12] = { 0x1e, 0, 0, 0, 0 };
    static const uint8_t eject[12] = { 0x1b, 0, 0, 0, 0x02 };
    int attention = 0;
    outb(CD_CTL, DEVCTL_NIEN);
    if (wait_ready(&attention) < 0) {
        puts_serial("tiny: cd timeout first disc\n");
        return;
    }
    report_capacity();
    puts_serial(packet(read10) == 0 ? "tiny: cd read ok\n" : "tiny: cd read failed\n");
    if (packet(lock) != 0) {
        puts_serial("tiny: cd lock failed\n");
        return;
    }
    puts_serial("tiny: cd locked\n");
    if (wait_media_event(1) < 0) {
        puts_serial("tiny: cd timeout eject request\n");
        return;
    }
    puts_serial("tiny: cd eject request\n");
    if (packet(unlock) != 0 || packet(eject) != 0) {
        puts_serial("tiny: cd eject failed\n");
        return;
    }
    puts_serial("tiny: cd tray opened\n");
    attention = 0;
    if (wait_ready(&attention) < 0) {
        puts_serial("tiny: cd timeout new disc\n");
        return;
    }
    puts_serial("tiny: cd new medium attention=");
    put_dec(attention);
    puts_serial("\n");
    report_capacity();
}
