/*
 * The PIIX4 power-management function (Intel 82371AB function 3,
 * 8086:7113) at 00:01.3, as QEMU's pc machine has it, and the ACPI fixed
 * hardware it decodes (ACPI 6.4, 4.8): the PM1a event block (PM1_STS,
 * PM1_EN), the PM1a control block (PM1_CNT) and the PM timer.
 *
 * Configuration space: what the guest finds after SeaBIOS ran on QEMU
 * (tests/functional/tiny pmconf compares both, dword by dword), since the
 * VMM stands in for the firmware: PMBA (0x40) = 0x601 and PMREGMISC (0x80)
 * bit 0 set put the 64-byte PM I/O space at ACPI_PM_BASE, where the FADT
 * says it is. As on QEMU, every device-specific byte (0x40-0xff) is
 * writable, and a guest write of PMBA or PMREGMISC moves or switches off
 * the whole I/O space through one address-space transaction. The SMBus
 * registers (SMBBA 0x90, SMBHSTCFG 0xd2) read as SeaBIOS leaves them, but
 * there is no SMBus controller behind them.
 *
 * PM1_STS, PM1_EN and PM1_CNT are 16-bit registers under the device lock
 * (the function's: config space and registers share it); the guest may
 * reach them with byte or word accesses at any offset, so accesses are
 * taken apart byte by byte. The SCI (ISA IRQ 9, level) is high while any
 * enabled status bit is set; it is not the function's INTx, although the
 * pin register says INTA as on QEMU.
 *
 * The PM timer is a pure function of the host's monotonic clock, so its
 * region is REGION_LOCK_FREE (no lock with device-lock=on): a
 * guest that uses it as its clocksource reads it tens of thousands of
 * times a second from every vCPU. Its overflow status (TMR_STS) is not
 * emulated: it reads 0 and never raises an SCI (Linux does not use it).
 */
#include <inttypes.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/acpi/acpi.h"
#include "hw/irq.h"
#include "hw/pci/pci.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "sysemu/runstate.h"

/* PM1_STS (4.8.3.1.1) and PM1_EN (4.8.3.1.2). */
#define PM1_TMR                 (1u << 0)
#define PM1_GBL                 (1u << 5)
#define PM1_PWRBTN              (1u << 8)
#define PM1_RTC                 (1u << 10)
#define PM1_STS_WAK             (1u << 15)
/* GBL_EN sticks although no firmware ever releases the Global Lock (so
 * GBL_STS never rises): the OS checks that the enable bit holds, or it
 * reports the Global Lock hardware as broken. */
#define PM1_EN_WRITABLE         (PM1_TMR | PM1_GBL | PM1_PWRBTN | PM1_RTC)

/* PM1_CNT (4.8.3.2.1). */
#define PM1_CNT_SCI_EN          (1u << 0)
#define PM1_CNT_SLP_TYP_SHIFT   10
#define PM1_CNT_SLP_TYP_MASK    (7u << PM1_CNT_SLP_TYP_SHIFT)
#define PM1_CNT_SLP_EN          (1u << 13)

#define PM_TIMER_MASK           0x00ffffffu

/* The PCI function. */
#define PCI_VENDOR_ID_INTEL     0x8086
#define PIIX4_PM_DEVICE_ID      0x7113
#define PIIX4_PM_REVISION       0x03
#define PCI_CLASS_BRIDGE_OTHER  0x068000
#define PCI_STATUS_FAST_BACK    0x0080
#define PCI_STATUS_DEVSEL_MEDIUM 0x0200
#define PIIX4_PM_INTERRUPT_PIN  1       /* INTA, never driven: the SCI is IRQ 9 */
#define PCI_DEVICE_SPECIFIC     0x40

/* Device-specific registers (82371AB datasheet, function 3), with the
 * values SeaBIOS leaves on QEMU's pc. */
#define PIIX4_PMBA              0x40    /* PM I/O base, bits 15:6 */
#define  PIIX4_PMBA_BASE_MASK       0xffc0u
#define  PIIX4_PMBA_IO_SPACE        0x1u    /* reads 1: an I/O base */
#define PIIX4_DEVACTB           0x58
#define  PIIX4_DEVACTB_APMC_EN      (1u << 25)
#define PIIX4_DEVRESA           0x5c
#define  PIIX4_DEVRESA_QEMU         (1u << 28)      /* always set on QEMU */
#define PIIX4_DEVRESB           0x60
#define  PIIX4_DEVRESB_KBC          (3u << 29)      /* keyboard controller decode */
#define PIIX4_DEVRESC           0x64
#define  PIIX4_DEVRESC_COM1         (1u << 27)      /* with a UART at 0x3f8 */
#define  PIIX4_DEVRESC_COM2         (9u << 28)      /* with a UART at 0x2f8 */
#define PIIX4_PMREGMISC         0x80
#define  PIIX4_PMREGMISC_PMIOSE     0x01    /* PM I/O space enable */
#define PIIX4_SMBBA             0x90
#define PIIX4_SMBHSTCFG         0xd2
#define  PIIX4_SMBHSTCFG_QEMU       0x09    /* host enabled, IRQ 9: as SeaBIOS writes */
#define PIIX4_PM_IO_SIZE        64
#define PIIX4_SMBUS_BASE        (ACPI_PM_BASE + 0x100)  /* where SeaBIOS puts it */
#define COM1_BASE               0x3f8
#define COM2_BASE               0x2f8

/* The event and control blocks are adjacent: three 16-bit registers. */
enum {
    PM_REG_STS,
    PM_REG_EN,
    PM_REG_CNT,
    PM_REG_COUNT,
};
#define PM_REGS_SIZE            (PM_REG_COUNT * 2)

_Static_assert(ACPI_PM1_CNT_OFFSET == PM_REG_CNT * 2, "PM1_CNT follows PM1_EN");
_Static_assert(ACPI_PM1_EVT_LEN + ACPI_PM1_CNT_LEN == PM_REGS_SIZE, "PM1 block sizes");

struct AcpiPMState {
    PCIDevice pci;              /* first: reset gets the QEMUDevice */
    MemoryRegion io;            /* container: the PM I/O space PMBA places */
    MemoryRegion regs_io;
    MemoryRegion timer_io;
    uint64_t io_addr;           /* where io decodes, or PCI_BAR_UNMAPPED */
    IrqSource sci;
    uint16_t sts;
    uint16_t en;
    uint16_t slp_typ;           /* PM1_CNT.SLP_TYP, in place */
};

uint32_t acpi_pm_timer_now(void)
{
    /* Seconds and the fraction apart: ns * 3579545 would overflow 64 bits
     * after 86 minutes of host uptime. */
    int64_t ns = clock_get_ns();
    uint64_t ticks = (uint64_t)(ns / NANOSECONDS_PER_SECOND) * ACPI_PM_TIMER_HZ +
                     (uint64_t)(ns % NANOSECONDS_PER_SECOND) * ACPI_PM_TIMER_HZ /
                     NANOSECONDS_PER_SECOND;
    return ticks & PM_TIMER_MASK;
}

/* ---- PM1 registers (device lock held) ---- */

static void pm_update_sci(AcpiPMState *s)
{
    irq_source_set(s->sci, (s->sts & s->en) != 0);
}

static uint16_t pm_reg_read(AcpiPMState *s, unsigned reg)
{
    switch (reg) {
    case PM_REG_STS:
        return s->sts;
    case PM_REG_EN:
        return s->en;
    default:
        /* No SMI port: always in ACPI mode. SLP_EN is write-only. */
        return s->slp_typ | PM1_CNT_SCI_EN;
    }
}

static void pm_enter_sleep_state(unsigned slp_typ)
{
    switch (slp_typ) {
    case ACPI_SLP_TYP_S5:
    case ACPI_SLP_TYP_S4:
        /* Nothing survives S4 here: the guest saved its image, power off. */
        qemu_system_shutdown_request(SHUTDOWN_CAUSE_GUEST_SHUTDOWN);
        break;
    case ACPI_SLP_TYP_S3:
        qemu_system_suspend_request();
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "acpi-pm: SLP_EN with unknown SLP_TYP %u ignored\n",
                      slp_typ);
        break;
    }
}

/* Write the bits of mask in register reg. */
static void pm_reg_write(AcpiPMState *s, unsigned reg, uint16_t value, uint16_t mask)
{
    value &= mask;
    switch (reg) {
    case PM_REG_STS:
        s->sts &= ~value;       /* write 1 to clear */
        break;
    case PM_REG_EN:
        s->en = (s->en & ~mask) | (value & PM1_EN_WRITABLE);
        break;
    default:
        s->slp_typ = (s->slp_typ & ~mask) | (value & PM1_CNT_SLP_TYP_MASK);
        if (value & PM1_CNT_SLP_EN) {
            pm_enter_sleep_state(s->slp_typ >> PM1_CNT_SLP_TYP_SHIFT);
        }
        break;
    }
}

static uint64_t pm_regs_read(void *opaque, uint64_t offset, unsigned size)
{
    AcpiPMState *s = opaque;
    uint64_t value = 0;
    for (unsigned i = 0; i < size && offset + i < PM_REGS_SIZE; i++) {
        unsigned byte = offset + i;
        uint8_t part = pm_reg_read(s, byte / 2) >> (8 * (byte % 2));
        value |= (uint64_t)part << (8 * i);
    }
    return value;
}

static void pm_regs_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    AcpiPMState *s = opaque;
    uint16_t data[PM_REG_COUNT] = { 0 };
    uint16_t mask[PM_REG_COUNT] = { 0 };
    /* Gather the bytes per register first, so that one word write that
     * sets SLP_TYP and SLP_EN together acts on the new SLP_TYP. */
    for (unsigned i = 0; i < size && offset + i < PM_REGS_SIZE; i++) {
        unsigned byte = offset + i;
        unsigned shift = 8 * (byte % 2);
        data[byte / 2] |= ((value >> (8 * i)) & 0xff) << shift;
        mask[byte / 2] |= 0xff << shift;
    }
    for (unsigned reg = 0; reg < PM_REG_COUNT; reg++) {
        if (mask[reg]) {
            pm_reg_write(s, reg, data[reg], mask[reg]);
        }
    }
    pm_update_sci(s);
}

static const MemoryRegionOps pm_regs_ops = {
    .read = pm_regs_read,
    .write = pm_regs_write,
    .max_access_size = 2,
};

/* ---- PM timer (no lock) ---- */

static uint64_t pm_timer_read(void *opaque, uint64_t offset, unsigned size)
{
    return (uint64_t)acpi_pm_timer_now() >> (8 * offset);
}

static void pm_timer_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    qemu_log_mask(LOG_GUEST_ERROR, "acpi-pm: write to the read-only PM timer ignored\n");
}

static const MemoryRegionOps pm_timer_ops = {
    .read = pm_timer_read,
    .write = pm_timer_write,
    .max_access_size = 4,
    .locking = REGION_LOCK_FREE,
};

/* ---- machine interface ---- */

/* Latch status bits; with only_if_enabled, only those the guest enabled. */
static void acpi_pm_set_status(AcpiPMState *s, uint16_t bits, bool only_if_enabled)
{
    device_lock(&s->pci.qdev);
    s->sts |= only_if_enabled ? bits & s->en : bits;
    pm_update_sci(s);
    device_unlock(&s->pci.qdev);
}

void acpi_pm_set_woken(AcpiPMState *pm, bool by_rtc)
{
    acpi_pm_set_status(pm, PM1_STS_WAK | (by_rtc ? PM1_RTC : 0), false);
}

/* As QEMU 7.2 (checked with a guest polling PM1_STS): a press while the
 * guest has not enabled the button is lost, so a guest that enables it
 * later finds no stale press (ACPI hardware would latch it). */
void acpi_pm_power_button(AcpiPMState *pm)
{
    acpi_pm_set_status(pm, PM1_PWRBTN, true);
}

bool acpi_pm_rtc_wake_enabled(AcpiPMState *pm)
{
    device_lock(&pm->pci.qdev);
    bool enabled = pm->en & PM1_RTC;
    device_unlock(&pm->pci.qdev);
    return enabled;
}

/* ---- the PCI function ---- */

/* Decode the PM I/O space where PMBA and PMREGMISC say, as QEMU does:
 * at PMBA bits 15:6 while PMIOSE is set, regardless of the command
 * register. Device lock held (or the machine not yet running). */
static void pm_io_update(AcpiPMState *s)
{
    uint32_t pmba = pci_get_long(&s->pci, PIIX4_PMBA);
    bool enabled = pci_get_byte(&s->pci, PIIX4_PMREGMISC) & PIIX4_PMREGMISC_PMIOSE;
    uint64_t addr = enabled ? (pmba & PIIX4_PMBA_BASE_MASK) : PCI_BAR_UNMAPPED;
    if (addr == s->io_addr) {
        return;
    }
    address_space_begin(address_space_io);
    if (s->io_addr != PCI_BAR_UNMAPPED) {
        address_space_unmap(address_space_io, &s->io);
    }
    if (addr != PCI_BAR_UNMAPPED) {
        address_space_map(address_space_io, &s->io, addr, PCI_DECODE_PRIORITY);
    }
    address_space_commit(address_space_io);
    s->io_addr = addr;
    if (addr != PCI_BAR_UNMAPPED) {
        pci_log_if_hidden(&s->pci, address_space_io, &s->io, addr, "PM I/O");
    }
}

static bool config_write_covers(uint32_t offset, unsigned len, uint32_t reg, unsigned reg_len)
{
    return offset < reg + reg_len && reg < offset + len;
}

/* QEMU keeps whatever the guest writes in PMBA and decodes bits 15:6; so
 * do we, and say so when the rest was not what a driver writes. */
static void pm_check_pmba(AcpiPMState *s)
{
    uint32_t pmba = pci_get_long(&s->pci, PIIX4_PMBA);
    uint32_t ignored = pmba & ~(PIIX4_PMBA_BASE_MASK | PIIX4_PMBA_IO_SPACE);
    if (ignored) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: PMBA 0x%08x: bits 0x%08x are not part of the "
                      "I/O base, ignored\n", s->pci.qdev.id, pmba, ignored);
    }
    if (!(pmba & PIIX4_PMBA_BASE_MASK)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: PMBA 0x%08x puts the PM I/O space at port 0\n",
                      s->pci.qdev.id, pmba);
    }
}

static void pm_config_written(PCIDevice *dev, uint32_t offset, uint32_t value, unsigned len)
{
    AcpiPMState *s = (AcpiPMState *)dev;
    bool pmba = config_write_covers(offset, len, PIIX4_PMBA, 4);
    if (pmba) {
        pm_check_pmba(s);
    }
    if (pmba || config_write_covers(offset, len, PIIX4_PMREGMISC, 1)) {
        pm_io_update(s);
    }
}

static void acpi_pm_reset(QEMUDevice *dev)
{
    AcpiPMState *s = (AcpiPMState *)dev;
    pci_device_reset(&s->pci);
    s->sts = 0;
    s->en = 0;
    s->slp_typ = 0;
    pm_update_sci(s);
    pm_io_update(s);
}

/* Refuse to start over another device's ports: the PM registers would
 * lose to it (they decode below the ISA devices) without a word. */
static bool pm_ports_free(Error **errp)
{
    for (uint64_t port = ACPI_PM_BASE; port < ACPI_PM_BASE + ACPI_PM_TMR_OFFSET +
                                               ACPI_PM_TMR_LEN; port++) {
        uint64_t offset;
        MemoryRegion *mr = address_space_lookup(address_space_io, port, &offset);
        if (mr) {
            error_setg(errp, "acpi-pm: I/O port 0x%" PRIx64 " is already "
                       "used by %s", port, mr->name);
            return false;
        }
    }
    return true;
}

/* The configuration space as SeaBIOS leaves it on QEMU's pc. */
static void pm_config_init(AcpiPMState *s)
{
    PCIDevice *d = &s->pci;
    pci_set_word(d, PCI_COMMAND, PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_SERR);
    pci_set_word(d, PCI_STATUS, PCI_STATUS_FAST_BACK | PCI_STATUS_DEVSEL_MEDIUM);
    pci_set_unrouted_interrupt_pin(d, PIIX4_PM_INTERRUPT_PIN, ACPI_SCI_IRQ);
    pci_set_long(d, PIIX4_PMBA, ACPI_PM_BASE | PIIX4_PMBA_IO_SPACE);
    pci_set_long(d, PIIX4_DEVACTB, PIIX4_DEVACTB_APMC_EN);
    pci_set_long(d, PIIX4_DEVRESA, PIIX4_DEVRESA_QEMU);
    pci_set_long(d, PIIX4_DEVRESB, PIIX4_DEVRESB_KBC);
    pci_set_byte(d, PIIX4_PMREGMISC, PIIX4_PMREGMISC_PMIOSE);
    pci_set_long(d, PIIX4_SMBBA, PIIX4_SMBUS_BASE | PIIX4_PMBA_IO_SPACE);
    pci_set_byte(d, PIIX4_SMBHSTCFG, PIIX4_SMBHSTCFG_QEMU);
    for (unsigned offset = PCI_DEVICE_SPECIFIC; offset < PCI_CONFIG_SPACE_SIZE; offset++) {
        pci_set_wmask(d, offset, 0xff, 1);
    }
}

AcpiPMState *acpi_pm_new(PCIBus *bus, Error **errp)
{
    if (!pm_ports_free(errp)) {
        return NULL;
    }
    AcpiPMState *s = g_new0(AcpiPMState, 1);
    if (!pci_device_init(&s->pci, bus, PIIX4_PM_DEVFN, "PIIX4_PM", "piix4-pm",
                         PCI_VENDOR_ID_INTEL, PIIX4_PM_DEVICE_ID, PIIX4_PM_REVISION,
                         PCI_CLASS_BRIDGE_OTHER, 0, errp)) {
        g_free(s);
        return NULL;
    }
    s->pci.qdev.reset = acpi_pm_reset;
    s->pci.config_written = pm_config_written;
    s->io_addr = PCI_BAR_UNMAPPED;
    s->sci = irq_source_claim(ACPI_SCI_IRQ);
    pm_config_init(s);
    memory_region_init_container(&s->io, &s->pci.qdev, "piix4-pm", PIIX4_PM_IO_SIZE);
    memory_region_init_io(&s->regs_io, &s->pci.qdev, &pm_regs_ops, s, "acpi-pm1",
                          PM_REGS_SIZE);
    memory_region_init_io(&s->timer_io, &s->pci.qdev, &pm_timer_ops, s, "acpi-pm-timer",
                          ACPI_PM_TMR_LEN);
    memory_region_add_subregion(&s->io, 0, &s->regs_io, 0);
    memory_region_add_subregion(&s->io, ACPI_PM_TMR_OFFSET, &s->timer_io, 0);
    pm_io_update(s);
    return s;
}

void acpi_pm_machine_done(AcpiPMState *pm)
{
    uint32_t devresc = 0;
    uint64_t offset;
    if (address_space_lookup(address_space_io, COM1_BASE, &offset)) {
        devresc |= PIIX4_DEVRESC_COM1;
    }
    if (address_space_lookup(address_space_io, COM2_BASE, &offset)) {
        devresc |= PIIX4_DEVRESC_COM2;
    }
    device_lock(&pm->pci.qdev);
    pci_set_long(&pm->pci, PIIX4_DEVRESC, devresc);
    device_unlock(&pm->pci.qdev);
}
