/*
 * The tiny guest's modes for the run-state tests (test_qmp_runstate.py),
 * found through the FADT so that they run the same under both VMMs:
 *   "count"        print "tiny: tick N" about every 50 ms, for ever: a
 *                  stopped machine shows as output that stops, and goes
 *                  on from the next number after cont.
 *   "powerbutton"  (with count) enable the ACPI power button and poll its
 *                  status, as an OS's SCI handler would find it; when it
 *                  is pressed, print "tiny: power button" and enter S5.
 *   "poweroff"     print "tiny: powering off" and enter S5 at once.
 * Interrupts stay off: the SCI the button raises is never taken.
 */
#include <stdint.h>
#include "tiny.h"

#define PM1_PWRBTN          (1u << 8)   /* PWRBTN_STS / PWRBTN_EN */
#define PM1_SLP_EN          (1u << 13)
#define PM1_SLP_TYP_SHIFT   10
#define ACPI_SLP_TYP_S5     0           /* _S5 of both DSDTs: Package(){0, 0, 0, 0} */
#define PM_TIMER_HZ         3579545u
#define PM_TIMER_MASK       0x00ffffffu
#define TICK_PM_TIMER       (PM_TIMER_HZ / 20)

struct pm_ports {
    uint16_t evt, cnt, tmr;             /* PM1a_EVT_BLK, PM1a_CNT_BLK, PM_TMR_BLK */
};

static int pm_ports_find(struct pm_ports *pm)
{
    uint32_t fadt = find_fadt();
    if (!fadt) {
        puts_serial("tiny: no FADT\n");
        return 0;
    }
    pm->evt = rd32(fadt + 56);
    pm->cnt = rd32(fadt + 64);
    pm->tmr = rd32(fadt + 76);
    return 1;
}

static void enter_s5(const struct pm_ports *pm)
{
    uint16_t cnt = inw(pm->cnt) & ~(7u << PM1_SLP_TYP_SHIFT);
    outw(pm->cnt, cnt | ACPI_SLP_TYP_S5 << PM1_SLP_TYP_SHIFT | PM1_SLP_EN);
    for (;;) {
        __asm__ volatile("hlt");
    }
}

void power_off(void)
{
    struct pm_ports pm;
    if (pm_ports_find(&pm)) {
        puts_serial("tiny: powering off\n");
        enter_s5(&pm);
    }
}

/* Wait about 50 ms by the 24-bit PM timer (it wraps every 4.7 s). */
static void wait_tick(const struct pm_ports *pm)
{
    uint32_t start = inl(pm->tmr);
    while (((inl(pm->tmr) - start) & PM_TIMER_MASK) < TICK_PM_TIMER) {
        __asm__ volatile("pause");
    }
}

void run_count(int answer_power_button)
{
    struct pm_ports pm;
    if (!pm_ports_find(&pm)) {
        return;
    }
    if (answer_power_button) {
        outw(pm.evt, PM1_PWRBTN);               /* clear a stale press */
        outw(pm.evt + 2, inw(pm.evt + 2) | PM1_PWRBTN);
        puts_serial("tiny: power button armed\n");
    }
    for (uint32_t n = 0;; n++) {
        puts_serial("tiny: tick ");
        put_dec(n);
        putc_serial('\n');
        wait_tick(&pm);
        if (answer_power_button && (inw(pm.evt) & PM1_PWRBTN)) {
            outw(pm.evt, PM1_PWRBTN);
            puts_serial("tiny: power button\n");
            enter_s5(&pm);
        }
    }
}
