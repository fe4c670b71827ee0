/*
 * MC146818A real-time clock and CMOS RAM (written from the Motorola
 * MC146818A datasheet and the PC's port conventions).
 *
 * Time model: the clock shows host UTC (CLOCK_REALTIME) plus an offset.
 * Nothing ticks in the background: the time registers are computed from the
 * host clock on every read (a vDSO clock_gettime and some arithmetic, no
 * syscall), which keeps the hot 0x70/0x71 path short. While the clock is
 * halted (SET in register B, or the divider held in reset through register
 * A) the time registers are plain bytes the guest writes; restarting the
 * clock turns them back into an offset.
 *
 * Interrupt flags are evaluated lazily: PF, AF and UF are worked out from
 * the clocks when register C is read or when a timer fires, so a guest that
 * never enables an interrupt costs no timer at all. Timers run only for an
 * enabled interrupt whose flag is not yet pending; reading C re-arms them.
 */
#include <string.h>
#include "exec/memory.h"
#include "hw/irq.h"
#include "hw/qdev.h"
#include "hw/rtc/mc146818rtc.h"
#include "sysemu/runstate.h"
#include "qemu/log.h"
#include "qemu/timer.h"

#define RTC_DIVIDER_TICKS_PER_SECOND    32768
/* UIP rises this long before each update (datasheet t_BUC). */
#define RTC_UIP_LEAD_NS                 244000
/* After a divider reset is released the first update comes 500 ms later. */
#define RTC_DIVIDER_RESTART_PHASE_NS    (NANOSECONDS_PER_SECOND / 2)
#define RTC_SECONDS_PER_DAY             86400
#define RTC_INTERRUPT_FLAGS             (RTC_REG_C_PF | RTC_REG_C_AF | RTC_REG_C_UF)
/* Register A divider values 110 and 111 hold the divider chain in reset. */
#define RTC_DV_RESET                    0x60

/* Decoded alarm field: a value, or one of these. */
#define RTC_ALARM_ANY                   (-1)
#define RTC_ALARM_NEVER                 (-2)

struct RTCState {
    QEMUDevice dev;
    MemoryRegion io;
    IrqSource irq;
    bool irq_level;
    QEMUTimer *periodic_timer;
    QEMUTimer *second_timer;

    /*
     * CMOS RAM. Registers A (without UIP), B and C live here; the time
     * registers and the century byte only hold meaningful values while
     * the clock is halted.
     */
    uint8_t cmos[RTC_CMOS_SIZE];
    uint8_t index;
    bool nmi_masked;

    /*
     * guest UTC = host CLOCK_REALTIME + offset, kept as whole seconds plus
     * 0..999999999 ns: guests may set any year up to 9999, far beyond what
     * int64 nanoseconds since 1970 can hold.
     */
    int64_t offset_seconds;
    int64_t offset_subsec_ns;
    bool divider_was_reset;     /* during the current halt */
    int64_t last_second;        /* guest second UF/AF were evaluated up to */
    int64_t periodic_base_ns;   /* CLOCK_MONOTONIC origin of the divider */
    int64_t last_period;        /* periodic period PF was evaluated up to */
};

static const uint8_t rtc_time_registers[] = {
    RTC_SECONDS, RTC_MINUTES, RTC_HOURS, RTC_DAY_OF_WEEK,
    RTC_DAY_OF_MONTH, RTC_MONTH, RTC_YEAR, RTC_CENTURY,
};

static bool rtc_is_time_register(unsigned index)
{
    return memchr(rtc_time_registers, index, sizeof(rtc_time_registers)) != NULL;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ---- Register formats (BCD or binary, 12 or 24 hours) ---- */

static bool rtc_binary_mode(RTCState *s)
{
    return s->cmos[RTC_REG_B] & RTC_REG_B_DM_BINARY;
}

static uint8_t rtc_encode(RTCState *s, int value)
{
    return rtc_binary_mode(s) ? value : ((value / 10) << 4) | (value % 10);
}

/* The value of reg, or -1 if it is not a valid number below limit. */
static int rtc_decode(RTCState *s, uint8_t reg, int limit)
{
    int value = reg;
    if (!rtc_binary_mode(s)) {
        if ((reg & 0x0f) > 9 || (reg >> 4) > 9) {
            return -1;
        }
        value = (reg >> 4) * 10 + (reg & 0x0f);
    }
    return value < limit ? value : -1;
}

static uint8_t rtc_encode_hour(RTCState *s, int hour)
{
    if (s->cmos[RTC_REG_B] & RTC_REG_B_24H) {
        return rtc_encode(s, hour);
    }
    int hour12 = hour % 12 == 0 ? 12 : hour % 12;
    return rtc_encode(s, hour12) | (hour >= 12 ? 0x80 : 0);
}

/* 0..23, or -1 if reg is not a valid hour in the current mode. */
static int rtc_decode_hour(RTCState *s, uint8_t reg)
{
    if (s->cmos[RTC_REG_B] & RTC_REG_B_24H) {
        return rtc_decode(s, reg, 24);
    }
    int hour12 = rtc_decode(s, reg & 0x7f, 13);
    if (hour12 < 1) {
        return -1;
    }
    return hour12 % 12 + ((reg & 0x80) ? 12 : 0);
}

/* ---- The clock ---- */

static bool rtc_clock_halted(RTCState *s)
{
    return (s->cmos[RTC_REG_B] & RTC_REG_B_SET) ||
           (s->cmos[RTC_REG_A] & RTC_DV_RESET) == RTC_DV_RESET;
}

/* The guest's current time as whole seconds and nanoseconds into the next. */
static int64_t rtc_guest_now(RTCState *s, int64_t *subsec_ns)
{
    int64_t host_ns = clock_get_realtime_ns();
    int64_t host_seconds = floor_div(host_ns, NANOSECONDS_PER_SECOND);
    int64_t subsec = host_ns - host_seconds * NANOSECONDS_PER_SECOND + s->offset_subsec_ns;
    int64_t carry = subsec >= NANOSECONDS_PER_SECOND;
    if (subsec_ns) {
        *subsec_ns = subsec - carry * NANOSECONDS_PER_SECOND;
    }
    return host_seconds + s->offset_seconds + carry;
}

static int64_t rtc_guest_second(RTCState *s)
{
    return rtc_guest_now(s, NULL);
}

/* Make the guest's time seconds + subsec_ns now. */
static void rtc_set_guest_time(RTCState *s, int64_t seconds, int64_t subsec_ns)
{
    int64_t host_ns = clock_get_realtime_ns();
    int64_t host_seconds = floor_div(host_ns, NANOSECONDS_PER_SECOND);
    int64_t subsec = subsec_ns - (host_ns - host_seconds * NANOSECONDS_PER_SECOND);
    int64_t borrow = subsec < 0;
    s->offset_seconds = seconds - host_seconds - borrow;
    s->offset_subsec_ns = subsec + borrow * NANOSECONDS_PER_SECOND;
}

/*
 * Calendar arithmetic on the proleptic Gregorian calendar, done here rather
 * than with gmtime_r/timegm: glibc's versions take its time-zone lock and
 * may read /etc/localtime, neither of which belongs in a port handler.
 * Years are counted from March so that the leap day ends a year.
 */
typedef struct RTCTime {
    int64_t year;
    int month;          /* 1..12 */
    int day;            /* 1..31 */
    int weekday;        /* 1 = Sunday .. 7, as the day-of-week register */
    int hour, minute, second;
} RTCTime;

#define DAYS_PER_400_YEARS  146097
#define DAYS_0000_03_01_TO_1970_01_01 719468

static int64_t rtc_days_from_civil(int64_t year, int month, int day)
{
    year -= month <= 2;
    int64_t era = floor_div(year, 400);
    int64_t year_of_era = year - era * 400;
    int day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
    int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * DAYS_PER_400_YEARS + day_of_era - DAYS_0000_03_01_TO_1970_01_01;
}

static void rtc_civil_from_days(int64_t days, RTCTime *t)
{
    days += DAYS_0000_03_01_TO_1970_01_01;
    int64_t era = floor_div(days, DAYS_PER_400_YEARS);
    int64_t day_of_era = days - era * DAYS_PER_400_YEARS;
    int64_t year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 -
                           day_of_era / (DAYS_PER_400_YEARS - 1)) / 365;
    int day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    int month_from_march = (5 * day_of_year + 2) / 153;
    t->day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    t->month = month_from_march < 10 ? month_from_march + 3 : month_from_march - 9;
    t->year = era * 400 + year_of_era + (t->month <= 2);
}

static void rtc_time_from_seconds(int64_t seconds, RTCTime *t)
{
    int64_t days = floor_div(seconds, RTC_SECONDS_PER_DAY);
    int second_of_day = seconds - days * RTC_SECONDS_PER_DAY;
    rtc_civil_from_days(days, t);
    /* 1970-01-01 was a Thursday. */
    t->weekday = (int)(days - floor_div(days + 4, 7) * 7 + 4) + 1;
    t->hour = second_of_day / 3600;
    t->minute = second_of_day / 60 % 60;
    t->second = second_of_day % 60;
}

static uint8_t rtc_time_register_value(RTCState *s, const RTCTime *t, unsigned index)
{
    switch (index) {
    case RTC_SECONDS:
        return rtc_encode(s, t->second);
    case RTC_MINUTES:
        return rtc_encode(s, t->minute);
    case RTC_HOURS:
        return rtc_encode_hour(s, t->hour);
    case RTC_DAY_OF_WEEK:
        return rtc_encode(s, t->weekday);
    case RTC_DAY_OF_MONTH:
        return rtc_encode(s, t->day);
    case RTC_MONTH:
        return rtc_encode(s, t->month);
    case RTC_YEAR:
        return rtc_encode(s, t->year % 100);
    default: /* RTC_CENTURY */
        return rtc_encode(s, t->year / 100 % 100);
    }
}

static void rtc_guest_time(RTCState *s, RTCTime *t)
{
    rtc_time_from_seconds(rtc_guest_second(s), t);
}

/* Freeze the running time into the time registers (the clock halts). */
static void rtc_latch_time(RTCState *s)
{
    RTCTime t;
    rtc_guest_time(s, &t);
    for (size_t i = 0; i < sizeof(rtc_time_registers); i++) {
        unsigned index = rtc_time_registers[i];
        s->cmos[index] = rtc_time_register_value(s, &t, index);
    }
}

/*
 * Restart the clock from the time registers, subsec_ns into their second.
 * The day of week is derived from the date, as guests expect; a value the
 * guest wrote there is not checked. An invalid date leaves the clock's
 * offset as it was.
 */
static void rtc_load_time(RTCState *s, int64_t subsec_ns)
{
    int century = rtc_decode(s, s->cmos[RTC_CENTURY], 100);
    int year = rtc_decode(s, s->cmos[RTC_YEAR], 100);
    RTCTime t = {
        .year = century * 100 + year,
        .month = rtc_decode(s, s->cmos[RTC_MONTH], 13),
        .day = rtc_decode(s, s->cmos[RTC_DAY_OF_MONTH], 32),
        .hour = rtc_decode_hour(s, s->cmos[RTC_HOURS]),
        .minute = rtc_decode(s, s->cmos[RTC_MINUTES], 60),
        .second = rtc_decode(s, s->cmos[RTC_SECONDS], 60),
    };
    bool valid = century >= 0 && year >= 0 && t.month >= 1 && t.day >= 1 &&
                 t.hour >= 0 && t.minute >= 0 && t.second >= 0;
    int64_t days = 0;
    if (valid) {
        /* A day past the end of its month comes back as another date. */
        RTCTime check;
        days = rtc_days_from_civil(t.year, t.month, t.day);
        rtc_civil_from_days(days, &check);
        valid = check.day == t.day;
    }
    if (!valid) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "mc146818rtc: invalid time %02x:%02x:%02x %02x/%02x/%02x%02x "
                      "(register B 0x%02x) ignored\n",
                      s->cmos[RTC_HOURS], s->cmos[RTC_MINUTES], s->cmos[RTC_SECONDS],
                      s->cmos[RTC_DAY_OF_MONTH], s->cmos[RTC_MONTH],
                      s->cmos[RTC_CENTURY], s->cmos[RTC_YEAR], s->cmos[RTC_REG_B]);
    } else {
        int64_t seconds = days * RTC_SECONDS_PER_DAY + t.hour * 3600 + t.minute * 60 + t.second;
        rtc_set_guest_time(s, seconds, subsec_ns);
    }
    /* Setting the clock is not an update: no UF/AF for the jump. */
    s->last_second = rtc_guest_second(s);
}

/* The running clock's position inside its current second. */
static int64_t rtc_subsec_ns(RTCState *s)
{
    int64_t subsec;
    rtc_guest_now(s, &subsec);
    return subsec;
}

static void rtc_halt_changed(RTCState *s, bool was_halted)
{
    bool halted = rtc_clock_halted(s);
    if (!was_halted && halted) {
        rtc_latch_time(s);
        s->divider_was_reset = false;
    }
    if ((s->cmos[RTC_REG_A] & RTC_DV_RESET) == RTC_DV_RESET) {
        s->divider_was_reset = true;
    }
    if (was_halted && !halted) {
        rtc_load_time(s, s->divider_was_reset ? RTC_DIVIDER_RESTART_PHASE_NS
                                              : rtc_subsec_ns(s));
    }
}

static bool rtc_update_in_progress(RTCState *s)
{
    return !rtc_clock_halted(s) &&
           rtc_subsec_ns(s) >= NANOSECONDS_PER_SECOND - RTC_UIP_LEAD_NS;
}

/* ---- Periodic interrupt: rate select -> divider ticks per period ---- */

static int64_t rtc_period_ticks(RTCState *s)
{
    unsigned rate = s->cmos[RTC_REG_A] & RTC_REG_A_RS_MASK;
    if (rate == 0 || (s->cmos[RTC_REG_A] & RTC_DV_RESET) == RTC_DV_RESET) {
        return 0;
    }
    /* Rates 1 and 2 repeat rates 8 and 9 with a 32.768 kHz time base. */
    return rate <= 2 ? 1 << (rate + 6) : 1 << (rate - 1);
}

static int64_t rtc_ns_to_ticks(int64_t ns)
{
    return ns / NANOSECONDS_PER_SECOND * RTC_DIVIDER_TICKS_PER_SECOND +
           ns % NANOSECONDS_PER_SECOND * RTC_DIVIDER_TICKS_PER_SECOND /
           NANOSECONDS_PER_SECOND;
}

static int64_t rtc_ticks_to_ns_ceil(int64_t ticks)
{
    int64_t rest = ticks % RTC_DIVIDER_TICKS_PER_SECOND;
    return ticks / RTC_DIVIDER_TICKS_PER_SECOND * NANOSECONDS_PER_SECOND +
           (rest * NANOSECONDS_PER_SECOND + RTC_DIVIDER_TICKS_PER_SECOND - 1) /
           RTC_DIVIDER_TICKS_PER_SECOND;
}

static int64_t rtc_period_index(RTCState *s, int64_t now_ns)
{
    int64_t period = rtc_period_ticks(s);
    return period ? rtc_ns_to_ticks(now_ns - s->periodic_base_ns) / period : 0;
}

static void rtc_restart_divider(RTCState *s)
{
    s->periodic_base_ns = clock_get_ns();
    s->last_period = 0;
}

/* ---- Alarm ---- */

static int rtc_alarm_field(RTCState *s, unsigned index, int limit)
{
    uint8_t reg = s->cmos[index];
    if ((reg & RTC_ALARM_DONT_CARE) == RTC_ALARM_DONT_CARE) {
        return RTC_ALARM_ANY;
    }
    int value = index == RTC_HOURS_ALARM ? rtc_decode_hour(s, reg)
                                         : rtc_decode(s, reg, limit);
    return value < 0 ? RTC_ALARM_NEVER : value;
}

/* The first guest second >= from that matches the alarm, or INT64_MAX. */
static int64_t rtc_next_alarm_second(RTCState *s, int64_t from)
{
    int hour = rtc_alarm_field(s, RTC_HOURS_ALARM, 24);
    int minute = rtc_alarm_field(s, RTC_MINUTES_ALARM, 60);
    int second = rtc_alarm_field(s, RTC_SECONDS_ALARM, 60);
    if (hour == RTC_ALARM_NEVER || minute == RTC_ALARM_NEVER ||
        second == RTC_ALARM_NEVER) {
        return INT64_MAX;
    }
    /*
     * Each step jumps to the start of the next matching hour, minute or
     * second, so a match is found within a handful of steps.
     */
    int64_t t = from;
    for (int step = 0; step < 8; step++) {
        int64_t day = floor_div(t, RTC_SECONDS_PER_DAY) * RTC_SECONDS_PER_DAY;
        int64_t sod = t - day;
        int h = sod / 3600, m = sod / 60 % 60, sec = sod % 60;
        if (hour != RTC_ALARM_ANY && h != hour) {
            t = day + hour * 3600 + (h < hour ? 0 : RTC_SECONDS_PER_DAY);
        } else if (minute != RTC_ALARM_ANY && m != minute) {
            t = day + h * 3600 + (m < minute ? minute * 60 : 3600);
        } else if (second != RTC_ALARM_ANY && sec != second) {
            t = day + h * 3600 + m * 60 + (sec < second ? second : 60);
        } else {
            return t;
        }
    }
    return INT64_MAX;
}

/* ---- Interrupt flags, line and timers ---- */

static void rtc_update_irq(RTCState *s)
{
    uint8_t *c = &s->cmos[RTC_REG_C];
    /* PIE/AIE/UIE in B sit at the same bit positions as PF/AF/UF in C. */
    bool pending = *c & s->cmos[RTC_REG_B] & RTC_INTERRUPT_FLAGS;
    *c = pending ? *c | RTC_REG_C_IRQF : *c & ~RTC_REG_C_IRQF;
    if (pending != s->irq_level) {
        s->irq_level = pending;
        irq_source_set(s->irq, pending);
    }
}

/* Set the flags of every event since the last evaluation. */
static void rtc_catch_up(RTCState *s)
{
    int64_t period = rtc_period_index(s, clock_get_ns());
    if (period != s->last_period) {
        s->cmos[RTC_REG_C] |= RTC_REG_C_PF;
        s->last_period = period;
    }
    if (!rtc_clock_halted(s)) {
        int64_t second = rtc_guest_second(s);
        if (second > s->last_second) {
            s->cmos[RTC_REG_C] |= RTC_REG_C_UF;
            if (rtc_next_alarm_second(s, s->last_second + 1) <= second) {
                s->cmos[RTC_REG_C] |= RTC_REG_C_AF;
                /* An enabled alarm is also a wake-up event (ACPI RTC_STS):
                 * it resumes a machine in S3 whose guest asked for it. */
                if (s->cmos[RTC_REG_B] & RTC_REG_B_AIE) {
                    qemu_system_wakeup_request();
                }
            }
        }
        /* A host clock stepped backwards simply restarts the count. */
        s->last_second = second;
    }
    rtc_update_irq(s);
}

static bool rtc_wants_event(RTCState *s, uint8_t enable, uint8_t flag)
{
    return (s->cmos[RTC_REG_B] & enable) && !(s->cmos[RTC_REG_C] & flag);
}

/* Arm the timers of enabled interrupts whose flag is not pending yet. */
static void rtc_arm_timers(RTCState *s)
{
    int64_t now = clock_get_ns();
    int64_t period = rtc_period_ticks(s);
    if (period && rtc_wants_event(s, RTC_REG_B_PIE, RTC_REG_C_PF)) {
        int64_t next_tick = (rtc_period_index(s, now) + 1) * period;
        timer_mod(s->periodic_timer, s->periodic_base_ns + rtc_ticks_to_ns_ceil(next_tick));
    } else {
        timer_del(s->periodic_timer);
    }

    int64_t next_second = INT64_MAX;
    if (!rtc_clock_halted(s)) {
        if (rtc_wants_event(s, RTC_REG_B_UIE, RTC_REG_C_UF)) {
            next_second = s->last_second + 1;
        } else if (rtc_wants_event(s, RTC_REG_B_AIE, RTC_REG_C_AF)) {
            next_second = rtc_next_alarm_second(s, s->last_second + 1);
        }
    }
    if (next_second == INT64_MAX) {
        timer_del(s->second_timer);
        return;
    }
    int64_t subsec;
    int64_t delay = (next_second - rtc_guest_now(s, &subsec)) * NANOSECONDS_PER_SECOND - subsec;
    timer_mod(s->second_timer, now + (delay > 0 ? delay : 1));
}

static void rtc_refresh(RTCState *s)
{
    rtc_catch_up(s);
    rtc_arm_timers(s);
}

/* Both timers: under the lock, whatever is due is found by rtc_catch_up. */
static void rtc_timer_cb(void *opaque)
{
    RTCState *s = opaque;
    device_lock(&s->dev);
    rtc_refresh(s);
    device_unlock(&s->dev);
}

/* ---- Register access ---- */

static uint8_t rtc_read_register(RTCState *s, unsigned index)
{
    switch (index) {
    case RTC_REG_A:
        return s->cmos[RTC_REG_A] | (rtc_update_in_progress(s) ? RTC_REG_A_UIP : 0);
    case RTC_REG_C: {
        rtc_catch_up(s);
        uint8_t value = s->cmos[RTC_REG_C];
        s->cmos[RTC_REG_C] = 0;
        rtc_update_irq(s);
        rtc_arm_timers(s);
        return value;
    }
    case RTC_REG_D:
        return RTC_REG_D_VRT;
    default:
        if (rtc_is_time_register(index) && !rtc_clock_halted(s)) {
            RTCTime t;
            rtc_guest_time(s, &t);
            return rtc_time_register_value(s, &t, index);
        }
        return s->cmos[index];
    }
}

static void rtc_write_reg_a(RTCState *s, uint8_t value)
{
    bool was_halted = rtc_clock_halted(s);
    uint8_t old = s->cmos[RTC_REG_A];
    rtc_catch_up(s);
    s->cmos[RTC_REG_A] = value & ~RTC_REG_A_UIP;
    if ((old ^ value) & (RTC_REG_A_DV_MASK | RTC_REG_A_RS_MASK)) {
        rtc_restart_divider(s);
    }
    rtc_halt_changed(s, was_halted);
    rtc_refresh(s);
}

static void rtc_write_reg_b(RTCState *s, uint8_t value)
{
    bool was_halted = rtc_clock_halted(s);
    rtc_catch_up(s);
    if ((value & ~s->cmos[RTC_REG_B]) & RTC_REG_B_SET) {
        /* Datasheet: SET going high clears UIE. */
        value &= ~RTC_REG_B_UIE;
    }
    if (value & RTC_REG_B_DSE) {
        qemu_log_mask(LOG_UNIMP, "mc146818rtc: daylight saving (DSE) not emulated\n");
    }
    s->cmos[RTC_REG_B] = value;
    rtc_halt_changed(s, was_halted);
    rtc_refresh(s);
}

static void rtc_write_time_register(RTCState *s, unsigned index, uint8_t value)
{
    if (rtc_clock_halted(s)) {
        s->cmos[index] = value;
        return;
    }
    /* A running clock is set field by field, keeping the second's phase. */
    rtc_catch_up(s);
    int64_t subsec = rtc_subsec_ns(s);
    rtc_latch_time(s);
    s->cmos[index] = value;
    rtc_load_time(s, subsec);
    rtc_arm_timers(s);
}

static void rtc_write_register(RTCState *s, unsigned index, uint8_t value)
{
    switch (index) {
    case RTC_REG_A:
        rtc_write_reg_a(s, value);
        break;
    case RTC_REG_B:
        rtc_write_reg_b(s, value);
        break;
    case RTC_REG_C:
    case RTC_REG_D:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "mc146818rtc: write 0x%02x to read-only register 0x%02x ignored\n",
                      value, index);
        break;
    case RTC_SECONDS_ALARM:
    case RTC_MINUTES_ALARM:
    case RTC_HOURS_ALARM:
        s->cmos[index] = value;
        rtc_refresh(s);
        break;
    default:
        if (rtc_is_time_register(index)) {
            rtc_write_time_register(s, index, value);
        } else {
            s->cmos[index] = value;
        }
        break;
    }
}

enum { RTC_PORT_INDEX = 0, RTC_PORT_DATA = 1 };

static uint64_t rtc_io_read(void *opaque, uint64_t offset, unsigned size)
{
    RTCState *s = opaque;
    /* The index port is write-only on the PC. */
    return offset == RTC_PORT_DATA ? rtc_read_register(s, s->index) : 0xff;
}

static void rtc_io_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    RTCState *s = opaque;
    if (offset == RTC_PORT_INDEX) {
        /* Bit 7 is the chipset's NMI mask, wired next to the index latch. */
        s->index = value & (RTC_CMOS_SIZE - 1);
        s->nmi_masked = value & 0x80;
    } else {
        rtc_write_register(s, s->index, value);
    }
}

static const MemoryRegionOps rtc_io_ops = {
    .read = rtc_io_read,
    .write = rtc_io_write,
    .max_access_size = 1,
};

/* ---- Reset, creation, machine interface ---- */

/* The RESET pin clears the interrupt enables and flags, not the clock. */
static void rtc_reset(QEMUDevice *dev)
{
    RTCState *s = (RTCState *)dev;
    rtc_catch_up(s);
    s->cmos[RTC_REG_B] &= ~(RTC_REG_B_PIE | RTC_REG_B_AIE | RTC_REG_B_UIE |
                            RTC_REG_B_SQWE);
    s->cmos[RTC_REG_C] = 0;
    rtc_update_irq(s);
    rtc_arm_timers(s);
}

RTCState *rtc_new(unsigned gsi, Error **errp)
{
    if (gsi >= IRQ_MAX_GSI) {
        error_setg(errp, "mc146818rtc: GSI %u out of range (0-%u)", gsi, IRQ_MAX_GSI - 1);
        return NULL;
    }
    RTCState *s = g_new0(RTCState, 1);
    device_init(&s->dev, "mc146818rtc", "rtc");
    s->dev.reset = rtc_reset;
    s->irq = irq_source_claim(gsi);
    s->periodic_timer = timer_new(rtc_timer_cb, s);
    s->second_timer = timer_new(rtc_timer_cb, s);

    /* What a PC BIOS leaves: 32.768 kHz divider, 1024 Hz rate, 24-hour BCD. */
    s->cmos[RTC_REG_A] = 0x20 | 0x06;
    s->cmos[RTC_REG_B] = RTC_REG_B_24H;
    s->last_second = rtc_guest_second(s);
    rtc_restart_divider(s);

    memory_region_init_io(&s->io, &s->dev, &rtc_io_ops, s, "rtc", 2);
    address_space_map(address_space_io, &s->io, RTC_ISA_BASE, 0);
    return s;
}

void rtc_set_cmos(RTCState *s, unsigned index, uint8_t value)
{
    if (index < RTC_REG_D + 1 || index >= RTC_CMOS_SIZE || index == RTC_CENTURY) {
        g_warning("rtc_set_cmos: index 0x%x is not plain CMOS RAM", index);
        return;
    }
    device_lock(&s->dev);
    s->cmos[index] = value;
    device_unlock(&s->dev);
}

/* A little-endian 16-bit CMOS field, clamped to its maximum. */
static void rtc_set_cmos_word(RTCState *s, unsigned lo_index, uint64_t value)
{
    value = MIN(value, 0xffff);
    rtc_set_cmos(s, lo_index, value & 0xff);
    rtc_set_cmos(s, lo_index + 1, (value >> 8) & 0xff);
}

void rtc_set_pc_memory_info(RTCState *s, uint64_t ram_below_4g,
                            uint64_t ram_above_4g, unsigned nr_cpus)
{
    const uint64_t KiB = 1024, MiB = 1024 * KiB;
    uint64_t above_1m_kib = ram_below_4g > MiB ? (ram_below_4g - MiB) / KiB : 0;
    uint64_t above_16m_64k = ram_below_4g > 16 * MiB ? (ram_below_4g - 16 * MiB) / (64 * KiB) : 0;
    uint64_t above_4g_64k = MIN(ram_above_4g / (64 * KiB), 0xffffff);

    rtc_set_cmos_word(s, RTC_CMOS_BASE_MEM_LO, 640);
    rtc_set_cmos_word(s, RTC_CMOS_EXT_MEM_LO, above_1m_kib);
    rtc_set_cmos_word(s, RTC_CMOS_EXT_MEM2_LO, above_1m_kib);
    rtc_set_cmos_word(s, RTC_CMOS_MEM_16M_LO, above_16m_64k);
    rtc_set_cmos(s, RTC_CMOS_MEM_4G_LO, above_4g_64k & 0xff);
    rtc_set_cmos(s, RTC_CMOS_MEM_4G_MID, (above_4g_64k >> 8) & 0xff);
    rtc_set_cmos(s, RTC_CMOS_MEM_4G_HI, above_4g_64k >> 16);
    rtc_set_cmos(s, RTC_CMOS_NR_CPUS, nr_cpus ? MIN(nr_cpus - 1, 0xff) : 0);
}

bool rtc_nmi_is_masked(RTCState *s)
{
    device_lock(&s->dev);
    bool masked = s->nmi_masked;
    device_unlock(&s->dev);
    return masked;
}
