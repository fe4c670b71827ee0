/*
 * ACPI fixed hardware of the pc machine (ACPI 6.4, 4.8): the PM1a event
 * block (PM1_STS, PM1_EN), the PM1a control block (PM1_CNT) and the PM
 * timer, at the PIIX4 addresses of hw/acpi/acpi.h.
 *
 * PM1_STS, PM1_EN and PM1_CNT are 16-bit registers under the device lock;
 * the guest may reach them with byte or word accesses at any offset, so
 * accesses are taken apart byte by byte. The SCI (GSI 9, level) is high
 * while any enabled status bit is set.
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
#include "hw/qdev.h"
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
    QEMUDevice dev;
    MemoryRegion regs_io;
    MemoryRegion timer_io;
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
    device_lock(&s->dev);
    s->sts |= only_if_enabled ? bits & s->en : bits;
    pm_update_sci(s);
    device_unlock(&s->dev);
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
    device_lock(&pm->dev);
    bool enabled = pm->en & PM1_RTC;
    device_unlock(&pm->dev);
    return enabled;
}

static void acpi_pm_reset(QEMUDevice *dev)
{
    AcpiPMState *s = (AcpiPMState *)dev;
    s->sts = 0;
    s->en = 0;
    s->slp_typ = 0;
    pm_update_sci(s);
}

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

AcpiPMState *acpi_pm_new(Error **errp)
{
    if (!pm_ports_free(errp)) {
        return NULL;
    }
    AcpiPMState *s = g_new0(AcpiPMState, 1);
    device_init(&s->dev, "acpi-pm", "acpi-pm");
    s->dev.reset = acpi_pm_reset;
    s->sci = irq_source_claim(ACPI_SCI_IRQ);
    memory_region_init_io(&s->regs_io, &s->dev, &pm_regs_ops, s, "acpi-pm1", PM_REGS_SIZE);
    memory_region_init_io(&s->timer_io, &s->dev, &pm_timer_ops, s, "acpi-pm-timer",
                          ACPI_PM_TMR_LEN);
    address_space_map(address_space_io, &s->regs_io, ACPI_PM_BASE, 0);
    address_space_map(address_space_io, &s->timer_io, ACPI_PM_BASE + ACPI_PM_TMR_OFFSET, 0);
    return s;
}
