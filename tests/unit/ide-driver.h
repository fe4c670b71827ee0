/*
 * Driving the PIIX3 IDE registers as a guest driver would, for unit tests:
 * the task file through port I/O (tests/unit/pio.h), PIO data by
 * repeated word transfers (one exit, as rep insw/outsw), ATAPI packets on
 * the secondary channel, and REQUEST SENSE. Completions of the block layer
 * arrive on the main loop's context, which wait_idle runs while the unit
 * is busy.
 */
#ifndef TESTS_UNIT_IDE_DRIVER_H
#define TESTS_UNIT_IDE_DRIVER_H

#include <glib.h>
#include "ata-regs.h"
#include "exec/memory.h"
#include "pio.h"
#include "qemu/main-loop.h"

#define PRIMARY         0x1f0
#define SECONDARY       0x170
#define CTL(base)       ((base) == PRIMARY ? 0x3f6 : 0x376)

/* Registers and status bits: ata-regs.h. */
#define ATA_LBA_BIT 0x40
#define ERR_ABRT 0x04
#define ERR_IDNF 0x10

/* Run completions until the unit is not busy; fail after 10 s. */
static inline uint8_t wait_idle(uint16_t base)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    uint8_t status;
    while ((status = inb(CTL(base))) & ST_BSY) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(main_loop_context(), FALSE);
        g_usleep(100);
    }
    return status;
}

static inline void select_unit(uint16_t base, int unit)
{
    outb(base + REG_DEVICE, 0xa0 | ATA_LBA_BIT | (unit << 4));
}

/* Task file for LBA28 or (ext) LBA48, then the command. */
static inline void ata_command(uint16_t base, int unit, uint8_t command, uint64_t lba,
                               uint32_t count, bool ext)
{
    select_unit(base, unit);
    if (ext) {
        outb(base + REG_NSECTOR, count >> 8);
        outb(base + REG_LBAL, lba >> 24);
        outb(base + REG_LBAM, lba >> 32);
        outb(base + REG_LBAH, lba >> 40);
    } else {
        outb(base + REG_DEVICE, 0xa0 | ATA_LBA_BIT | (unit << 4) | ((lba >> 24) & 0x0f));
    }
    outb(base + REG_NSECTOR, count);
    outb(base + REG_LBAL, lba);
    outb(base + REG_LBAM, lba >> 8);
    outb(base + REG_LBAH, lba >> 16);
    outb(base + REG_COMMAND, command);
}

/* rep insw / rep outsw of one DRQ block, as one exit. */
static inline void pio_in(uint16_t base, void *buf, size_t bytes)
{
    g_assert_cmpint(address_space_rw_repeated(address_space_io, base, buf, 2, bytes / 2, false),
                    ==, MEMTX_OK);
}

static inline void pio_out(uint16_t base, const void *buf, size_t bytes)
{
    g_assert_cmpint(address_space_rw_repeated(address_space_io, base, (void *)buf, 2,
                                              bytes / 2, true), ==, MEMTX_OK);
}

static inline uint8_t status_ack(uint16_t base)
{
    return inb(base + REG_STATUS);
}

/* Send a packet; returns the status after the command phase. data gets
 * what the drive sent by PIO (in DRQ blocks of at most limit bytes). */
static inline uint8_t atapi_command(int unit, const uint8_t cdb[12], uint16_t limit,
                                    uint8_t *data, size_t *len)
{
    select_unit(SECONDARY, unit);
    outb(SECONDARY + REG_FEATURE, 0);
    outb(SECONDARY + REG_LBAM, limit);
    outb(SECONDARY + REG_LBAH, limit >> 8);
    outb(SECONDARY + REG_COMMAND, 0xa0);
    g_assert_cmphex(wait_idle(SECONDARY) & ST_DRQ, ==, ST_DRQ);
    g_assert_cmphex(inb(SECONDARY + REG_NSECTOR), ==, 0x01);   /* CoD: command packet */
    pio_out(SECONDARY, cdb, 12);
    size_t got = 0;
    uint8_t status;
    while ((status = wait_idle(SECONDARY)) & ST_DRQ) {
        g_assert_cmphex(inb(SECONDARY + REG_NSECTOR), ==, 0x02);   /* IO: data in */
        size_t n = inb(SECONDARY + REG_LBAM) | inb(SECONDARY + REG_LBAH) << 8;
        g_assert_cmpuint(n, <=, limit);
        status_ack(SECONDARY);
        pio_in(SECONDARY, data + got, n);
        got += n;
    }
    g_assert_cmphex(inb(SECONDARY + REG_NSECTOR), ==, 0x03);
    status_ack(SECONDARY);
    if (len) {
        *len = got;
    }
    return status;
}

/* REQUEST SENSE must give key and asc; returns the qualifier (ASCQ). */
static inline uint8_t expect_sense(int unit, uint8_t key, uint8_t asc)
{
    uint8_t cdb[12] = { 0x03, 0, 0, 0, 18 }, sense[64];
    size_t len;
    g_assert_cmphex(atapi_command(unit, cdb, 0xfffe, sense, &len) & ST_ERR, ==, 0);
    g_assert_cmpuint(len, ==, 18);
    g_assert_cmphex(sense[2] & 0x0f, ==, key);
    g_assert_cmphex(sense[12], ==, asc);
    return sense[13];
}

#endif
