/*
 * "pmconf" on the tiny guest's command line: the PIIX4 power-management
 * function 00:01.3 as the guest finds it after firmware (SeaBIOS on QEMU,
 * the VMM on ours), printed so that runs under two VMMs compare line by
 * line:
 *   tiny: pmconf config <offset> <dword>      (all 64 dwords)
 *   tiny: pmconf wmask <offset> <dword>       (0x40..0xfc: what an all-ones
 *                                              write leaves; then restored)
 *   tiny: pmconf <step> <port> <what it reads>
 * The steps move the PM I/O block with PMBA (0x40) and switch it off and
 * on with PMREGMISC (0x80) bit 0, then put it back at 0x600; at each a PM
 * timer port "runs" (two reads differ) or reads a fixed value, and PM1_EN
 * (base + 2) keeps what was written where the block decodes.
 */
#include "tiny.h"

#define PM_DEVFN            ((1u << 3) | 3)     /* 00:01.3 */
#define PM_CONFIG_DWORDS    64
#define PM_DEVICE_SPECIFIC  0x40
#define PMBA                0x40
#define PMREGMISC           0x80
#define PM_BASE             0x600
#define PM_MOVED_BASE       0xb000
#define PM1_EN_OFFSET       2
#define PM_TMR_OFFSET       8
#define PM1_RTC_EN          (1u << 10)

static uint32_t pm_config_address(unsigned offset)
{
    return 0x80000000u | PM_DEVFN << 8 | offset;
}

static uint32_t pm_config_read(unsigned offset)
{
    outl(PCI_CONFIG_ADDRESS, pm_config_address(offset));
    return inl(PCI_CONFIG_DATA);
}

static void pm_config_write(unsigned offset, uint32_t value)
{
    outl(PCI_CONFIG_ADDRESS, pm_config_address(offset));
    outl(PCI_CONFIG_DATA, value);
}

static void pm_config_write_byte(unsigned offset, uint8_t value)
{
    outl(PCI_CONFIG_ADDRESS, pm_config_address(offset & ~3u));
    outb(PCI_CONFIG_DATA + (offset & 3), value);
}

static void print_dword(const char *what, unsigned offset, uint32_t value)
{
    puts_serial("tiny: pmconf ");
    puts_serial(what);
    puts_serial(" ");
    put_hex(offset);
    puts_serial(" ");
    put_hex(value);
    puts_serial("\n");
}

/* What a port of the PM block shows: the timer runs between two reads a
 * little apart, a missing block reads the same value twice. */
static void report_timer(const char *step, uint16_t base)
{
    uint16_t port = base + PM_TMR_OFFSET;
    uint32_t first = inl(port), second = first;
    for (int i = 0; i < 100000 && second == first; i++) {
        second = inl(port);
    }
    puts_serial("tiny: pmconf ");
    puts_serial(step);
    puts_serial(" timer ");
    put_hex(port);
    if (second != first) {
        puts_serial(" runs\n");
    } else {
        puts_serial(" reads ");
        put_hex(first);
        puts_serial("\n");
    }
}

/* PM1_EN keeps RTC_EN where the block decodes (and is cleared again). */
static void report_pm1_en(const char *step, uint16_t base)
{
    uint16_t port = base + PM1_EN_OFFSET;
    outw(port, PM1_RTC_EN);
    uint16_t value = inw(port);
    outw(port, 0);
    puts_serial("tiny: pmconf ");
    puts_serial(step);
    puts_serial(" pm1_en ");
    put_hex(port);
    puts_serial(" reads ");
    put_hex(value);
    puts_serial("\n");
}

static void report_block(const char *step, uint16_t base, uint16_t other)
{
    report_timer(step, base);
    report_pm1_en(step, base);
    report_timer(step, other);
}

void run_pmconf(void)
{
    for (unsigned i = 0; i < PM_CONFIG_DWORDS; i++) {
        print_dword("config", 4 * i, pm_config_read(4 * i));
    }
    for (unsigned offset = PM_DEVICE_SPECIFIC; offset < 4 * PM_CONFIG_DWORDS; offset += 4) {
        uint32_t saved = pm_config_read(offset);
        pm_config_write(offset, 0xffffffffu);
        print_dword("wmask", offset, pm_config_read(offset));
        pm_config_write(offset, saved);
    }
    uint32_t pmba = pm_config_read(PMBA);
    report_block("initial", PM_BASE, PM_MOVED_BASE);
    pm_config_write(PMBA, PM_MOVED_BASE | 1);
    print_dword("moved-pmba", PMBA, pm_config_read(PMBA));
    report_block("moved", PM_MOVED_BASE, PM_BASE);
    pm_config_write_byte(PMREGMISC, 0);
    report_timer("disabled", PM_MOVED_BASE);
    pm_config_write_byte(PMREGMISC, 1);
    report_timer("enabled", PM_MOVED_BASE);
    pm_config_write(PMBA, pmba);
    report_block("restored", PM_BASE, PM_MOVED_BASE);
}
