/*
 * "diskwrite" on the tiny guest's command line: one WRITE SECTORS (PIO,
 * polled, interrupts off) of 8 sectors of 0xa5 at LBA 2048 (1 MiB) to the
 * primary master ATA disk, for the werror tests (test_qmp_werror.py). It
 * prints
 *   tiny: disk writing              the command is about to go out
 *   tiny: disk write ok             the drive finished it without error
 *   tiny: disk write failed error=E the drive reported an error
 *   tiny: disk timeout <what>       the drive did not answer in time
 * The waits count polls rather than time: a VM stopped for an I/O error
 * sees the TSC jump when it resumes, and must still wait for the write.
 */
#include "../../unit/ata-regs.h"
#include "tiny.h"

#define DISK_BASE       0x1f0
#define DISK_CTL        0x3f6
#define DEV_LBA_MASTER  0xe0
#define ATA_WRITE_SECTORS 0x30
#define WRITE_LBA       2048
#define WRITE_SECTORS   8
#define POLL_CYCLES     2000000ull
#define POLLS           10000           /* some seconds of running time */

/* The status once BSY is clear and any of the bits in want (0: none
 * needed) is set, or -1 after POLLS polls. */
static int wait_status(uint8_t want)
{
    for (int i = 0; i < POLLS; i++) {
        uint8_t status = inb(DISK_CTL);     /* alternate status: no INTRQ ack */
        if (!(status & ST_BSY) && (!want || (status & want))) {
            return inb(DISK_BASE + REG_STATUS);
        }
        pause_cycles(POLL_CYCLES);
    }
    return -1;
}

void run_diskwrite(void)
{
    outb(DISK_CTL, DEVCTL_NIEN);
    outb(DISK_BASE + REG_DEVICE, DEV_LBA_MASTER);
    if (wait_status(0) < 0) {
        puts_serial("tiny: disk timeout ready\n");
        return;
    }
    puts_serial("tiny: disk writing\n");
    outb(DISK_BASE + REG_NSECTOR, WRITE_SECTORS);
    outb(DISK_BASE + REG_LBAL, WRITE_LBA & 0xff);
    outb(DISK_BASE + REG_LBAM, (WRITE_LBA >> 8) & 0xff);
    outb(DISK_BASE + REG_LBAH, (WRITE_LBA >> 16) & 0xff);
    outb(DISK_BASE + REG_COMMAND, ATA_WRITE_SECTORS);
    /* A drive may write each sector as it comes (QEMU does) and fail the
     * command before the last one, or write them all at the end (ours).
     * Between sectors BSY may clear a moment before DRQ is set (QEMU's
     * after a cont that restarts the write): wait for DRQ or ERR itself. */
    int status = 0;
    for (int sector = 0; sector < WRITE_SECTORS && !(status & ST_ERR); sector++) {
        status = wait_status(ST_DRQ | ST_ERR);
        if (status < 0) {
            puts_serial("tiny: disk timeout data request\n");
            return;
        }
        for (int word = 0; word < 256 && !(status & ST_ERR); word++) {
            outw(DISK_BASE + REG_DATA, 0xa5a5);
        }
    }
    if (!(status & ST_ERR)) {
        status = wait_status(0);
    }
    if (status < 0) {
        puts_serial("tiny: disk timeout write\n");
    } else if (status & ST_ERR) {
        puts_serial("tiny: disk write failed error=");
        put_hex(inb(DISK_BASE + REG_ERROR));
        puts_serial("\n");
    } else {
        puts_serial("tiny: disk write ok\n");
    }
}
