/*
 * The PIIX3 IDE function driven as a guest driver would, through the port
 * I/O address space (tests/unit/pio.h) with a fake RAM for PRD tables and
 * DMA buffers, on temporary raw images: a disk on ide.0 master, a CD-ROM
 * on ide.1 master and an empty CD-ROM drive on ide.1 slave. Block-layer
 * completions arrive on the main loop's context, which the tests run while
 * a unit is busy.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "exec/memory.h"
#include "hw/ide/ide.h"
#include "hw/irq.h"
#include "ide-driver.h"
#include "ide-machine.h"
#include "qemu/byte-order.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "sysemu/dma.h"
#include "test-ram.h"

#define RAM_SIZE        (16 * 1024 * 1024)
#define PRD_TABLE       0x1000
#define DMA_BUFFER      0x100000
#define BM(base)        (BMDMA_BASE + ((base) == PRIMARY ? 0 : 8))
#define GSI(base)       ((base) == PRIMARY ? 14 : 15)

#define BM_START 0x01
#define BM_READ_TO_MEMORY 0x08
#define BM_ACTIVE 0x01
#define BM_ERROR 0x02
#define BM_INTR 0x04

static uint8_t *ram;
static IDETestMachine machine;
static bool irq_level[IRQ_MAX_GSI];
static unsigned irq_raised[IRQ_MAX_GSI];

static void rec_set_level(void *opaque, unsigned gsi, bool level)
{
    if (level && !irq_level[gsi]) {
        irq_raised[gsi]++;
    }
    irq_level[gsi] = level;
}

/* ---- the image files ---- */

static void read_image(const char *path, uint64_t offset, void *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pread(fd, buf, len, offset), ==, len);
    close(fd);
}

/* ---- driving the registers ---- */

static void identify(uint16_t base, int unit, uint8_t command, uint16_t words[256])
{
    ata_command(base, unit, command, 0, 0, false);
    g_assert_cmphex(wait_idle(base) & (ST_DRQ | ST_ERR), ==, ST_DRQ);
    pio_in(base, words, 512);
    g_assert_cmphex(status_ack(base) & (ST_DRQ | ST_BSY | ST_ERR), ==, 0);
}

static char *id_string(const uint16_t *words, int n)
{
    char *s = g_malloc0(n * 2 + 1);
    for (int i = 0; i < n; i++) {
        s[2 * i] = words[i] >> 8;
        s[2 * i + 1] = words[i];
    }
    return g_strchomp(s);
}

/* ---- PRD tables ---- */

static void prd_set(unsigned index, uint32_t addr, uint32_t count, bool eot)
{
    uint32_t entry[2] = { GUINT32_TO_LE(addr),
                          GUINT32_TO_LE((count & 0xffff) | (eot ? 0x80000000u : 0)) };
    memcpy(ram + PRD_TABLE + index * 8, entry, sizeof(entry));
}

static void bm_start(uint16_t base, bool to_memory)
{
    outl(BM(base) + 4, PRD_TABLE);
    outb(BM(base) + 2, BM_INTR | BM_ERROR);         /* clear both */
    outb(BM(base), (to_memory ? BM_READ_TO_MEMORY : 0) | BM_START);
}

static uint8_t bm_finish(uint16_t base)
{
    uint8_t status = inb(BM(base) + 2);
    outb(BM(base), 0);
    return status;
}

/* ---- tests ---- */

static PCIBus *test_bus;

static uint32_t cfg_read(uint32_t offset, unsigned len)
{
    return pci_bus_config_read(test_bus, PIIX3_IDE_DEVFN, offset, len);
}

static void test_config_space(void)
{
    g_assert_cmphex(cfg_read(0x00, 4), ==, 0x70108086);
    g_assert_cmphex(cfg_read(0x09, 1), ==, 0x80);           /* legacy, bus master */
    g_assert_cmphex(cfg_read(0x0a, 2), ==, 0x0101);         /* IDE controller */
    g_assert_cmphex(cfg_read(0x3d, 1), ==, 0);              /* ISA IRQs 14/15, no pin */
    g_assert_cmphex(cfg_read(0x20, 4), ==, BMDMA_BASE | 1); /* BAR4: I/O */
    g_assert_cmphex(cfg_read(0x10, 4), ==, 0);              /* no other BAR */
    g_assert_cmphex(cfg_read(0x40, 2) & 0x8000, ==, 0x8000);
    g_assert_cmphex(cfg_read(0x42, 2) & 0x8000, ==, 0x8000);
    /* BAR4 is 16 bytes. */
    pci_bus_config_write(test_bus, PIIX3_IDE_DEVFN, 0x20, 0xffffffff, 4);
    g_assert_cmphex(cfg_read(0x20, 4), ==, 0xfffffff1);
    pci_bus_config_write(test_bus, PIIX3_IDE_DEVFN, 0x20, BMDMA_BASE, 4);
}

static void test_identify(void)
{
    uint16_t w[256];
    unsigned raised = irq_raised[14];
    identify(PRIMARY, 0, 0xec, w);
    g_assert_cmpuint(irq_raised[14], ==, raised + 1);
    g_assert_false(irq_level[14]);                  /* the status read acknowledged it */
    g_autofree char *serial = id_string(&w[10], 10);
    g_autofree char *firmware = id_string(&w[23], 4);
    g_autofree char *model = id_string(&w[27], 20);
    g_assert_cmpstr(serial, ==, "QM00001");
    g_assert_cmpstr(firmware, ==, "2.5+");
    g_assert_cmpstr(model, ==, "QEMU HARDDISK");
    g_assert_cmphex(w[0], ==, 0x0040);
    g_assert_cmphex(w[49] & 0x0300, ==, 0x0300);    /* LBA, DMA */
    g_assert_cmphex(w[47] & 0xff, ==, 16);
    g_assert_cmpuint(w[60] | (uint32_t)w[61] << 16, ==, DISK_SECTORS);
    g_assert_cmpuint(w[100] | (uint32_t)w[101] << 16, ==, DISK_SECTORS);
    g_assert_cmphex(w[83] & 0x3400, ==, 0x3400);    /* FLUSH EXT, FLUSH, LBA48 */
    g_assert_cmphex(w[85] & 0x20, ==, 0x20);        /* write cache on (writeback) */
    g_assert_cmphex(w[63] & 0x07, ==, 0x07);        /* MWDMA 0-2 */

    /* The absent slave reads 0 everywhere: no device. */
    select_unit(PRIMARY, 1);
    g_assert_cmphex(inb(PRIMARY + REG_STATUS), ==, 0);
    outb(PRIMARY + REG_NSECTOR, 0x55);
    g_assert_cmphex(inb(PRIMARY + REG_NSECTOR), ==, 0);
    outb(PRIMARY + REG_COMMAND, 0xec);              /* goes nowhere */
    g_assert_cmphex(inb(PRIMARY + REG_STATUS), ==, 0);
    select_unit(PRIMARY, 0);
    g_assert_cmphex(inb(PRIMARY + REG_STATUS) & ST_DRDY, ==, ST_DRDY);
}

static void fill_pattern(uint8_t *buf, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(i * 31 + seed);
    }
}

static void check_image(uint64_t sector, const uint8_t *expect, size_t len)
{
    g_autofree uint8_t *got = g_malloc(len);
    read_image(machine.disk_path, sector * 512, got, len);
    g_assert_cmpmem(got, len, expect, len);
}

/* PIO write of count sectors in DRQ blocks of block sectors, then read back. */
static void pio_round_trip(uint8_t write_cmd, uint8_t read_cmd, uint64_t lba, uint32_t count,
                           unsigned block, bool ext, uint8_t seed)
{
    size_t len = count * 512;
    g_autofree uint8_t *data = g_malloc(len), *back = g_malloc(len);
    fill_pattern(data, len, seed);
    ata_command(PRIMARY, 0, write_cmd, lba, count, ext);
    for (uint32_t done = 0; done < count; done += block) {
        g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR), ==, ST_DRQ);
        pio_out(PRIMARY, data + done * 512, MIN(block, count - done) * 512);
    }
    g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR | ST_DRDY), ==, ST_DRDY);
    status_ack(PRIMARY);
    check_image(lba, data, len);

    ata_command(PRIMARY, 0, read_cmd, lba, count, ext);
    for (uint32_t done = 0; done < count; done += block) {
        g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR), ==, ST_DRQ);
        g_assert_true(irq_level[14]);
        status_ack(PRIMARY);
        pio_in(PRIMARY, back + done * 512, MIN(block, count - done) * 512);
    }
    g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR), ==, 0);
    g_assert_cmpmem(back, len, data, len);
}

static void test_pio_round_trip(void)
{
    pio_round_trip(0x30, 0x20, 10, 3, 1, false, 1);             /* WRITE/READ SECTORS */
    pio_round_trip(0x34, 0x24, 300, 300, 1, true, 2);           /* EXT, more than a buffer */
    /* SET MULTIPLE MODE 4, then READ/WRITE MULTIPLE (EXT) with a short last block. */
    ata_command(PRIMARY, 0, 0xc6, 0, 4, false);
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    status_ack(PRIMARY);
    pio_round_trip(0xc5, 0xc4, 40, 9, 4, false, 3);
    pio_round_trip(0x39, 0x29, 1000, 10, 4, true, 4);
    /* SET MULTIPLE MODE 3 (not a power of two) is aborted. */
    ata_command(PRIMARY, 0, 0xc6, 0, 3, false);
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(inb(PRIMARY + REG_ERROR), ==, ERR_ABRT);
    status_ack(PRIMARY);
}

/* READ or WRITE DMA (EXT) with the PRD table as set; returns ATA status. */
static uint8_t dma_command(uint8_t command, uint64_t lba, uint32_t count, bool to_memory,
                           bool ext, uint8_t *bm_status)
{
    ata_command(PRIMARY, 0, command, lba, count, ext);
    bm_start(PRIMARY, to_memory);
    uint8_t status = wait_idle(PRIMARY);
    g_assert_true(irq_level[14]);
    *bm_status = bm_finish(PRIMARY);
    status_ack(PRIMARY);
    return status;
}

static void test_dma(void)
{
    uint8_t bm;
    /* Write 16 sectors from three pieces of RAM at odd places. */
    fill_pattern(ram + DMA_BUFFER, 8192, 9);
    prd_set(0, DMA_BUFFER, 1000, false);
    prd_set(1, DMA_BUFFER + 1000, 4000, false);
    prd_set(2, DMA_BUFFER + 5000, 3192, true);
    g_assert_cmphex(dma_command(0xca, 64, 16, false, false, &bm) & (ST_ERR | ST_DRQ), ==, 0);
    g_assert_cmphex(bm & (BM_ACTIVE | BM_ERROR | BM_INTR), ==, BM_INTR);
    check_image(64, ram + DMA_BUFFER, 8192);

    /* Read them back (EXT) into one 64 KiB entry: a PRD table longer than
     * the transfer leaves Active set, as the bus-master specification says. */
    memset(ram + DMA_BUFFER + 0x10000, 0, 8192);
    prd_set(0, DMA_BUFFER + 0x10000, 0, true);          /* 0: 64 KiB */
    g_assert_cmphex(dma_command(0x25, 64, 16, true, true, &bm) & ST_ERR, ==, 0);
    g_assert_cmphex(bm & (BM_ACTIVE | BM_ERROR | BM_INTR), ==, BM_ACTIVE | BM_INTR);
    g_assert_cmpmem(ram + DMA_BUFFER + 0x10000, 8192, ram + DMA_BUFFER, 8192);
}

/* A hostile PRD table: the command fails with ABRT, the bus master shows
 * an error, the interrupt comes, and the next command works. */
static void expect_dma_fault(uint8_t command, bool to_memory)
{
    uint8_t bm;
    uint8_t status = dma_command(command, 0, 8, to_memory, false, &bm);
    g_assert_cmphex(status & (ST_ERR | ST_DRQ | ST_BSY), ==, ST_ERR);
    g_assert_cmphex(inb(PRIMARY + REG_ERROR), ==, ERR_ABRT);
    g_assert_cmphex(bm & (BM_ACTIVE | BM_ERROR | BM_INTR), ==, BM_ERROR | BM_INTR);
    /* Still alive. */
    prd_set(0, DMA_BUFFER, 4096, true);
    g_assert_cmphex(dma_command(0xc8, 0, 8, true, false, &bm) & ST_ERR, ==, 0);
    g_assert_cmphex(bm & BM_ERROR, ==, 0);
}

static void test_dma_hostile(void)
{
    uint8_t bm;
    /* Buffer outside RAM. */
    prd_set(0, 0xfebf0000, 4096, true);
    expect_dma_fault(0xc8, true);
    /* The table itself outside RAM. */
    outl(BM(PRIMARY) + 4, 0xfebf0000);
    ata_command(PRIMARY, 0, 0xc8, 0, 8, false);
    outb(BM(PRIMARY) + 2, BM_INTR | BM_ERROR);
    outb(BM(PRIMARY), BM_READ_TO_MEMORY | BM_START);    /* no PRD address write */
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(bm_finish(PRIMARY) & BM_ERROR, ==, BM_ERROR);
    status_ack(PRIMARY);
    /* Shorter than the transfer (end mark after 2 KiB of 4). */
    prd_set(0, DMA_BUFFER, 2048, true);
    expect_dma_fault(0xc8, true);
    /* No end mark and nothing but 2-byte entries: the walk stops. */
    for (unsigned i = 0; i < 8192; i++) {
        prd_set(i, DMA_BUFFER, 2, false);
    }
    expect_dma_fault(0xca, false);
    /* The bus master's direction contradicts the command. */
    prd_set(0, DMA_BUFFER, 4096, true);
    expect_dma_fault(0xc8, false);
    /* Bus mastering off in the command register. */
    pci_bus_config_write(test_bus, PIIX3_IDE_DEVFN, 0x04, 0x1, 2);
    uint8_t status = dma_command(0xc8, 0, 8, true, false, &bm);
    g_assert_cmphex(status & ST_ERR, ==, ST_ERR);
    pci_bus_config_write(test_bus, PIIX3_IDE_DEVFN, 0x04, 0x5, 2);
    prd_set(0, DMA_BUFFER, 4096, true);
    g_assert_cmphex(dma_command(0xc8, 0, 8, true, false, &bm) & ST_ERR, ==, 0);
}

static void expect_idnf(uint8_t command, uint64_t lba, uint32_t count, bool ext)
{
    ata_command(PRIMARY, 0, command, lba, count, ext);
    g_assert_cmphex(wait_idle(PRIMARY) & (ST_ERR | ST_DRQ), ==, ST_ERR);
    g_assert_cmphex(inb(PRIMARY + REG_ERROR), ==, ERR_IDNF);
    g_assert_true(irq_level[14]);
    status_ack(PRIMARY);
}

static void test_lba_out_of_range(void)
{
    expect_idnf(0x20, DISK_SECTORS, 1, false);
    expect_idnf(0x20, DISK_SECTORS - 1, 2, false);
    expect_idnf(0x24, UINT64_C(0xffffffffffff), 0, true);
    expect_idnf(0x30, DISK_SECTORS, 1, false);
    expect_idnf(0xc8, DISK_SECTORS - 4, 8, false);      /* before any DMA starts */
    expect_idnf(0x40, DISK_SECTORS, 1, false);          /* READ VERIFY */
    /* The last sector itself is fine. */
    ata_command(PRIMARY, 0, 0x40, DISK_SECTORS - 1, 1, false);
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    status_ack(PRIMARY);
    /* Unknown commands are aborted. */
    ata_command(PRIMARY, 0, 0xb0, 0, 0, false);
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(inb(PRIMARY + REG_ERROR), ==, ERR_ABRT);
    status_ack(PRIMARY);
}

static void test_write_cache_and_flush(void)
{
    uint16_t w[256];
    select_unit(PRIMARY, 0);
    outb(PRIMARY + REG_FEATURE, 0x82);
    outb(PRIMARY + REG_COMMAND, 0xef);
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    identify(PRIMARY, 0, 0xec, w);
    g_assert_cmphex(w[85] & 0x20, ==, 0);
    outb(PRIMARY + REG_FEATURE, 0x02);
    outb(PRIMARY + REG_COMMAND, 0xef);
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    identify(PRIMARY, 0, 0xec, w);
    g_assert_cmphex(w[85] & 0x20, ==, 0x20);
    /* Transfer mode MWDMA2 shows in word 63. */
    outb(PRIMARY + REG_FEATURE, 0x03);
    outb(PRIMARY + REG_NSECTOR, 0x22);
    outb(PRIMARY + REG_COMMAND, 0xef);
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    identify(PRIMARY, 0, 0xec, w);
    g_assert_cmphex(w[63], ==, 0x0407);
    ata_command(PRIMARY, 0, 0xea, 0, 0, false);             /* FLUSH CACHE EXT */
    g_assert_cmphex(wait_idle(PRIMARY) & (ST_ERR | ST_DRDY), ==, ST_DRDY);
    g_assert_true(irq_level[14]);
    status_ack(PRIMARY);
    ata_command(PRIMARY, 0, 0xe5, 0, 0, false);             /* CHECK POWER MODE */
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    g_assert_cmphex(inb(PRIMARY + REG_NSECTOR), ==, 0xff);
    status_ack(PRIMARY);
}

/* ---- ATAPI ---- */

static void test_atapi_identify(void)
{
    uint16_t w[256];
    /* IDENTIFY DEVICE is aborted, leaving the packet signature. */
    ata_command(SECONDARY, 0, 0xec, 0, 0, false);
    g_assert_cmphex(wait_idle(SECONDARY) & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(inb(SECONDARY + REG_LBAM), ==, 0x14);
    g_assert_cmphex(inb(SECONDARY + REG_LBAH), ==, 0xeb);
    status_ack(SECONDARY);
    identify(SECONDARY, 0, 0xa1, w);
    g_autofree char *model = id_string(&w[27], 20);
    g_assert_cmpstr(model, ==, "QEMU DVD-ROM");
    g_assert_cmphex(w[0] >> 8, ==, 0x85);               /* ATAPI, CD-ROM */
}

static void test_atapi_commands(void)
{
    static uint8_t buf[CD_BLOCKS * 2048];
    size_t len;
    uint8_t inquiry[12] = { 0x12, 0, 0, 0, 36 };
    g_assert_cmphex(atapi_command(0, inquiry, 0xfffe, buf, &len) & ST_ERR, ==, 0);
    g_assert_cmpuint(len, ==, 36);
    g_assert_cmphex(buf[0], ==, 0x05);
    g_assert_cmpmem(buf + 16, 12, "QEMU DVD-ROM", 12);

    uint8_t capacity[12] = { 0x25 };
    g_assert_cmphex(atapi_command(0, capacity, 0xfffe, buf, &len) & ST_ERR, ==, 0);
    g_assert_cmpuint(len, ==, 8);
    g_assert_cmpuint(get_be16(buf + 2), ==, CD_BLOCKS - 1);
    g_assert_cmpuint(get_be16(buf + 6), ==, 2048);

    /* READ(10) of 3 blocks from block 5, in DRQ blocks of at most 1000 bytes. */
    uint8_t read10[12] = { 0x28, 0, 0, 0, 0, 5, 0, 0, 3 };
    g_assert_cmphex(atapi_command(0, read10, 1000, buf, &len) & ST_ERR, ==, 0);
    g_assert_cmpuint(len, ==, 3 * 2048);
    g_autofree uint8_t *expect = g_malloc(3 * 2048);
    read_image(machine.cd_path, 5 * 2048, expect, 3 * 2048);
    g_assert_cmpmem(buf, len, expect, 3 * 2048);

    /* READ(12) of the whole disc, more than one buffer. */
    uint8_t read12[12] = { 0xa8, 0, 0, 0, 0, 0, 0, 0, 0, CD_BLOCKS };
    g_assert_cmphex(atapi_command(0, read12, 0xfffe, buf, &len) & ST_ERR, ==, 0);
    g_assert_cmpuint(len, ==, CD_BLOCKS * 2048);

    /* READ TOC format 0: track 1 at 0, lead-out at the end. */
    uint8_t toc[12] = { 0x43, 0, 0, 0, 0, 0, 0, 0x03, 0x24 };
    g_assert_cmphex(atapi_command(0, toc, 0xfffe, buf, &len) & ST_ERR, ==, 0);
    g_assert_cmpuint(len, ==, 20);
    g_assert_cmphex(buf[6], ==, 1);
    g_assert_cmphex(buf[14], ==, 0xaa);
    g_assert_cmpuint(buf[19], ==, CD_BLOCKS);

    uint8_t mode_sense[12] = { 0x5a, 0, 0x2a, 0, 0, 0, 0, 0, 64 };
    g_assert_cmphex(atapi_command(0, mode_sense, 0xfffe, buf, &len) & ST_ERR, ==, 0);
    g_assert_cmpuint(len, ==, 28);
    g_assert_cmphex(buf[8], ==, 0x2a);

    uint8_t gesn[12] = { 0x4a, 1, 0, 0, 0x10, 0, 0, 0, 8 };
    g_assert_cmphex(atapi_command(0, gesn, 0xfffe, buf, &len) & ST_ERR, ==, 0);
    g_assert_cmphex(buf[5], ==, 0x02);                  /* medium present */

    /* Out of range, writes, unknown opcodes: CHECK CONDITION with sense. */
    uint8_t past_end[12] = { 0x28, 0, 0, 0, 0, CD_BLOCKS - 1, 0, 0, 2 };
    g_assert_cmphex(atapi_command(0, past_end, 0xfffe, buf, &len) & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(inb(SECONDARY + REG_ERROR) >> 4, ==, 0x05);
    expect_sense(0, 0x05, 0x21);
    uint8_t write10[12] = { 0x2a, 0, 0, 0, 0, 0, 0, 0, 1 };
    g_assert_cmphex(atapi_command(0, write10, 0xfffe, buf, &len) & ST_ERR, ==, ST_ERR);
    expect_sense(0, 0x07, 0x27);
    uint8_t unknown[12] = { 0xff };
    g_assert_cmphex(atapi_command(0, unknown, 0xfffe, buf, &len) & ST_ERR, ==, ST_ERR);
    expect_sense(0, 0x05, 0x20);
    expect_sense(0, 0x00, 0x00);                        /* REQUEST SENSE cleared it */

    /* The empty drive: not ready, no medium. */
    uint8_t tur[12] = { 0x00 };
    g_assert_cmphex(atapi_command(1, tur, 0xfffe, buf, &len) & ST_ERR, ==, ST_ERR);
    expect_sense(1, 0x02, 0x3a);
    g_assert_cmphex(atapi_command(0, tur, 0xfffe, buf, &len) & ST_ERR, ==, 0);
}

static void test_atapi_dma(void)
{
    /* READ(10) by DMA: the features register's DMA bit. */
    uint8_t read10[12] = { 0x28, 0, 0, 0, 0, 2, 0, 0, 4 };
    prd_set(0, DMA_BUFFER, 4 * 2048, true);
    memset(ram + DMA_BUFFER, 0, 4 * 2048);
    select_unit(SECONDARY, 0);
    outb(SECONDARY + REG_FEATURE, 1);
    outb(SECONDARY + REG_COMMAND, 0xa0);
    g_assert_cmphex(wait_idle(SECONDARY) & ST_DRQ, ==, ST_DRQ);
    pio_out(SECONDARY, read10, 12);
    bm_start(SECONDARY, true);
    g_assert_cmphex(wait_idle(SECONDARY) & (ST_ERR | ST_DRQ), ==, 0);
    g_assert_true(irq_level[15]);
    g_assert_cmphex(bm_finish(SECONDARY) & (BM_ACTIVE | BM_ERROR | BM_INTR), ==, BM_INTR);
    status_ack(SECONDARY);
    g_autofree uint8_t *expect = g_malloc(4 * 2048);
    read_image(machine.cd_path, 2 * 2048, expect, 4 * 2048);
    g_assert_cmpmem(ram + DMA_BUFFER, 4 * 2048, expect, 4 * 2048);
}

/* ---- reset ---- */

static void test_soft_reset(void)
{
    /* SRST while a read is with the host: the unit stays busy until the
     * request is back, then comes out of reset; nothing is transferred. */
    ata_command(PRIMARY, 0, 0x20, 0, 8, false);
    g_assert_cmphex(inb(CTL(PRIMARY)) & ST_BSY, ==, ST_BSY);
    outb(CTL(PRIMARY), 0x04);
    outb(CTL(PRIMARY), 0x00);
    g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR | ST_DRDY), ==, ST_DRDY);
    g_assert_cmphex(inb(PRIMARY + REG_NSECTOR), ==, 1);
    g_assert_cmphex(inb(PRIMARY + REG_LBAL), ==, 1);
    g_assert_cmphex(inb(PRIMARY + REG_ERROR), ==, 1);    /* diagnostics passed */
    /* The CD-ROM channel: the packet signature after SRST. */
    outb(SECONDARY + REG_LBAM, 0);
    outb(CTL(SECONDARY), 0x04);
    g_assert_cmphex(inb(CTL(SECONDARY)) & ST_BSY, ==, ST_BSY);
    outb(CTL(SECONDARY), 0x00);
    g_assert_cmphex(inb(SECONDARY + REG_LBAM), ==, 0x14);
    g_assert_cmphex(inb(SECONDARY + REG_LBAH), ==, 0xeb);
    /* nIEN masks the line. */
    outb(CTL(PRIMARY), 0x02);
    ata_command(PRIMARY, 0, 0xe5, 0, 0, false);
    wait_idle(PRIMARY);
    g_assert_false(irq_level[14]);
    outb(CTL(PRIMARY), 0x00);
    g_assert_true(irq_level[14]);
    status_ack(PRIMARY);
    /* A machine reset after a drain: every channel idle, the line low. */
    ata_command(PRIMARY, 0, 0x20, 0, 1, false);
    device_drain_all();
    device_reset_all();
    g_assert_false(irq_level[14]);
    g_assert_cmphex(inb(PRIMARY + REG_STATUS) & (ST_BSY | ST_DRQ | ST_DRDY), ==, ST_DRDY);
    pio_round_trip(0x30, 0x20, 7, 2, 1, false, 5);
    /* The reset turned the PCI command register off, as on a PC. */
    pci_bus_config_write(test_bus, PIIX3_IDE_DEVFN, 0x04, 0x5, 2);
}

static uint64_t acquisitions(const char *id)
{
    QEMUDevice *dev = device_find(id);
    g_assert_nonnull(dev);
    return atomic_load(&device_lock_of(dev)->acquisitions);
}

/* Each channel is a device of its own: its ATA registers and its half of
 * the bus-master BAR take its lock, never the other channel's. */
static void test_channel_locks(void)
{
    uint64_t ch0 = acquisitions("ide-channel0"), ch1 = acquisitions("ide-channel1");
    inb(PRIMARY + REG_STATUS);
    inb(CTL(PRIMARY));
    inb(BM(PRIMARY) + 2);
    g_assert_cmpuint(acquisitions("ide-channel0"), ==, ch0 + 3);
    g_assert_cmpuint(acquisitions("ide-channel1"), ==, ch1);
    inb(SECONDARY + REG_STATUS);
    inb(BM(SECONDARY) + 2);
    g_assert_cmpuint(acquisitions("ide-channel0"), ==, ch0 + 3);
    g_assert_cmpuint(acquisitions("ide-channel1"), ==, ch1 + 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    main_loop_init();
    qemu_loglevel = LOG_GUEST_ERROR;
    irq_set_backend(&(IrqBackend) { .set_level = rec_set_level });

    ram = test_ram_map(0, RAM_SIZE);

    ide_test_machine_init(&machine, "test-ide-XXXXXX", NULL);
    test_bus = machine.bus;

    g_test_add_func("/ide/config-space", test_config_space);
    g_test_add_func("/ide/identify", test_identify);
    g_test_add_func("/ide/pio-round-trip", test_pio_round_trip);
    g_test_add_func("/ide/dma", test_dma);
    g_test_add_func("/ide/dma-hostile", test_dma_hostile);
    g_test_add_func("/ide/lba-out-of-range", test_lba_out_of_range);
    g_test_add_func("/ide/write-cache-and-flush", test_write_cache_and_flush);
    g_test_add_func("/ide/atapi/identify", test_atapi_identify);
    g_test_add_func("/ide/atapi/commands", test_atapi_commands);
    g_test_add_func("/ide/atapi/dma", test_atapi_dma);
    g_test_add_func("/ide/soft-reset", test_soft_reset);
    g_test_add_func("/ide/channel-locks", test_channel_locks);
    int status = g_test_run();

    ide_test_machine_cleanup(&machine);
    return status;
}
