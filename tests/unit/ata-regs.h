/*
 * The ATA task-file registers as a driver sees them (offsets from a
 * channel's command block, ATA/ATAPI-6) and the status and device-control
 * bits the test drivers use: the unit tests' IDE driver (ide-driver.h)
 * and the tiny guest's disk and CD-ROM modes (tests/functional/tiny),
 * which is freestanding, so this header has nothing but definitions.
 */
#ifndef TESTS_UNIT_ATA_REGS_H
#define TESTS_UNIT_ATA_REGS_H

#define REG_DATA        0
#define REG_ERROR       1
#define REG_FEATURE     1
#define REG_NSECTOR     2
#define REG_LBAL        3
#define REG_LBAM        4
#define REG_LBAH        5
#define REG_DEVICE      6
#define REG_STATUS      7
#define REG_COMMAND     7
#define ST_ERR          0x01
#define ST_DRQ          0x08
#define ST_DRDY         0x40
#define ST_BSY          0x80
#define DEVCTL_NIEN     0x02

#endif
