/*
 * MC146818A real-time clock and CMOS RAM, as wired on the PC: index port
 * 0x70 (bit 7 of the written value is the chipset's NMI mask, not part of
 * the index), data port 0x71, 128 bytes of CMOS, interrupt on one GSI
 * (8 on the PC).
 *
 * The clock is the host's UTC time (CLOCK_REALTIME) plus an offset that the
 * guest changes by writing the time registers. Bytes 0x0e..0x7f other than
 * the century byte are plain CMOS RAM that the machine fills in the way a PC
 * BIOS would (memory sizes, CPU count) before the guest starts.
 */
#ifndef HW_RTC_MC146818RTC_H
#define HW_RTC_MC146818RTC_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/error.h"

#define RTC_ISA_BASE            0x70
#define RTC_ISA_GSI             8
#define RTC_CMOS_SIZE           128

/* Clock registers (MC146818A datasheet). */
#define RTC_SECONDS             0x00
#define RTC_SECONDS_ALARM       0x01
#define RTC_MINUTES             0x02
#define RTC_MINUTES_ALARM       0x03
#define RTC_HOURS               0x04
#define RTC_HOURS_ALARM         0x05
#define RTC_DAY_OF_WEEK         0x06
#define RTC_DAY_OF_MONTH        0x07
#define RTC_MONTH               0x08
#define RTC_YEAR                0x09
#define RTC_REG_A               0x0a
#define RTC_REG_B               0x0b
#define RTC_REG_C               0x0c
#define RTC_REG_D               0x0d

#define RTC_REG_A_UIP           0x80    /* update in progress (read-only) */
#define RTC_REG_A_DV_MASK       0x70    /* divider select */
#define RTC_REG_A_RS_MASK       0x0f    /* periodic rate select */

#define RTC_REG_B_SET           0x80    /* halt updates, time is being set */
#define RTC_REG_B_PIE           0x40    /* periodic interrupt enable */
#define RTC_REG_B_AIE           0x20    /* alarm interrupt enable */
#define RTC_REG_B_UIE           0x10    /* update-ended interrupt enable */
#define RTC_REG_B_SQWE          0x08    /* square wave output (not wired) */
#define RTC_REG_B_DM_BINARY     0x04    /* 1 = binary, 0 = BCD */
#define RTC_REG_B_24H           0x02    /* 1 = 24-hour, 0 = 12-hour */
#define RTC_REG_B_DSE           0x01    /* daylight saving (not emulated) */

#define RTC_REG_C_IRQF          0x80
#define RTC_REG_C_PF            0x40
#define RTC_REG_C_AF            0x20
#define RTC_REG_C_UF            0x10

#define RTC_REG_D_VRT           0x80    /* valid RAM and time */

/* An alarm register with its two top bits set matches every value. */
#define RTC_ALARM_DONT_CARE     0xc0

/* PC CMOS layout (the part a BIOS fills in and guests read). */
#define RTC_CMOS_BASE_MEM_LO    0x15    /* base memory in KiB (640) */
#define RTC_CMOS_BASE_MEM_HI    0x16
#define RTC_CMOS_EXT_MEM_LO     0x17    /* KiB above 1 MiB, max 0xffff */
#define RTC_CMOS_EXT_MEM_HI     0x18
#define RTC_CMOS_EXT_MEM2_LO    0x30    /* same value, second copy */
#define RTC_CMOS_EXT_MEM2_HI    0x31
#define RTC_CENTURY             0x32    /* century, same format as the year */
#define RTC_CMOS_MEM_16M_LO     0x34    /* 64 KiB units above 16 MiB, max 0xffff */
#define RTC_CMOS_MEM_16M_HI     0x35
#define RTC_CMOS_MEM_4G_LO      0x5b    /* 64 KiB units above 4 GiB, 3 bytes */
#define RTC_CMOS_MEM_4G_MID     0x5c
#define RTC_CMOS_MEM_4G_HI      0x5d
#define RTC_CMOS_NR_CPUS        0x5f    /* number of CPUs - 1 */

typedef struct RTCState RTCState;

/*
 * Create the RTC at ports 0x70-0x71 with its interrupt on gsi, as a BIOS
 * leaves it: 24-hour BCD mode, 1024 Hz periodic rate selected, interrupts
 * off, time = host UTC. Fails if gsi is not a valid GSI.
 */
RTCState *rtc_new(unsigned gsi, Error **errp);

/*
 * Store a byte of CMOS RAM (index 0x0e..0x7f, except RTC_CENTURY which is
 * part of the clock). Meant for the machine before the guest runs; other
 * indices are a programming error and are ignored with a warning.
 */
void rtc_set_cmos(RTCState *s, unsigned index, uint8_t value);

/*
 * Fill in the memory and CPU bytes the way a PC BIOS does: 640 KiB base
 * memory, KiB above 1 MiB (0x17/0x18 and 0x30/0x31), 64 KiB units above
 * 16 MiB (0x34/0x35) and above 4 GiB (0x5b-0x5d), CPU count - 1 (0x5f).
 * Values that do not fit their field are clamped to its maximum.
 */
void rtc_set_pc_memory_info(RTCState *s, uint64_t ram_below_4g,
                            uint64_t ram_above_4g, unsigned nr_cpus);

/*
 * Whether the guest masked NMIs (bit 7 of its last write to port 0x70).
 * Port 0x70 is write-only, as on PIIX-era chipsets, so this is the only way
 * to read the mask back.
 */
bool rtc_nmi_is_masked(RTCState *s);

#endif
