/*
 * Timers (qemu/timer.h): ordering, re-arming from a callback, deletion,
 * arming from another thread, and firing through the main context's
 * timerfd. Also the main loop that runs them (qemu/main-loop.h): run until
 * a shutdown request, reset requests, termination signals.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <glib.h>
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "sysemu/iothread.h"
#include "sysemu/runstate.h"

#define MS (NANOSECONDS_PER_SECOND / 1000)

typedef struct FireLog {
    GString *order;     /* one letter per callback run, in run order */
} FireLog;

typedef struct Probe {
    FireLog *log;
    char name;
    QEMUTimer *timer;
    int fired;
    int rearm_times;    /* re-arm itself this many times */
    int64_t period;
} Probe;

static void probe_cb(void *opaque)
{
    Probe *p = opaque;
    p->fired++;
    if (p->log) {
        g_string_append_c(p->log->order, p->name);
    }
    if (p->rearm_times > 0) {
        p->rearm_times--;
        timer_mod(p->timer, clock_get_ns() + p->period);
    }
}

static void probe_init(Probe *p, FireLog *log, char name)
{
    *p = (Probe){ .log = log, .name = name };
    p->timer = timer_new(probe_cb, p);
}

static void test_timer_order(void)
{
    FireLog log = { g_string_new(NULL) };
    Probe a, b, c;
    probe_init(&a, &log, 'a');
    probe_init(&b, &log, 'b');
    probe_init(&c, &log, 'c');
    int64_t now = clock_get_ns();

    timer_mod(c.timer, now + 3 * MS);
    timer_mod(a.timer, now + 1 * MS);
    timer_mod(b.timer, now + 2 * MS);
    g_assert_true(timer_pending(a.timer));
    g_assert_cmpint(timer_expire_time(b.timer), ==, now + 2 * MS);
    /* Nothing is due yet: the earliest deadline comes back. */
    g_assert_cmpint(timers_run_due(), ==, now + 1 * MS);
    g_assert_cmpstr(log.order->str, ==, "");

    g_usleep(4000);
    g_assert_cmpint(timers_run_due(), ==, -1);
    g_assert_cmpstr(log.order->str, ==, "abc");
    g_assert_false(timer_pending(a.timer));
    g_assert_cmpint(timer_expire_time(a.timer), ==, -1);

    timer_free(a.timer);
    timer_free(b.timer);
    timer_free(c.timer);
    g_string_free(log.order, TRUE);
}

static void test_timer_mod_moves(void)
{
    FireLog log = { g_string_new(NULL) };
    Probe a, b;
    probe_init(&a, &log, 'a');
    probe_init(&b, &log, 'b');
    int64_t now = clock_get_ns();

    timer_mod(a.timer, now + 1 * MS);
    timer_mod(b.timer, now + 2 * MS);
    /* Moving the head behind the other changes the order. */
    timer_mod(a.timer, now + 3 * MS);
    g_assert_cmpint(timers_run_due(), ==, now + 2 * MS);
    g_usleep(4000);
    timers_run_due();
    g_assert_cmpstr(log.order->str, ==, "ba");
    g_assert_cmpint(a.fired, ==, 1);

    timer_free(a.timer);
    timer_free(b.timer);
    g_string_free(log.order, TRUE);
}

static void test_timer_del(void)
{
    Probe a, b;
    probe_init(&a, NULL, 'a');
    probe_init(&b, NULL, 'b');
    int64_t now = clock_get_ns();

    timer_mod(a.timer, now);
    timer_mod(b.timer, now + 1 * MS);
    timer_del(a.timer);
    timer_del(a.timer);     /* deleting twice is harmless */
    g_assert_false(timer_pending(a.timer));
    g_assert_cmpint(timers_run_due(), ==, now + 1 * MS);
    g_assert_cmpint(a.fired, ==, 0);
    timer_free(b.timer);    /* freeing a pending timer unlinks it */
    g_assert_cmpint(timers_run_due(), ==, -1);
    timer_free(a.timer);
}

/* A periodic timer re-arms itself from its callback (lock not held), and
 * that costs no kick: the context sets its timerfd after the run. */
static void test_timer_rearm_from_callback(void)
{
    Probe p;
    probe_init(&p, NULL, 'p');
    p.rearm_times = 3;
    p.period = 1 * MS;

    timer_mod(p.timer, clock_get_ns());
    uint64_t kicks = timer_list_kicks(main_loop_timers());
    for (int i = 0; i < 50 && p.fired < 4; i++) {
        timers_run_due();
        g_usleep(1000);
    }
    g_assert_cmpint(p.fired, ==, 4);
    g_assert_false(timer_pending(p.timer));
    g_assert_cmpuint(timer_list_kicks(main_loop_timers()), ==, kicks);
    timer_free(p.timer);
}

typedef struct Periodic {
    QEMUTimer *timer;
    int64_t deadline;
    int64_t period;
    int fired;
} Periodic;

/* Next deadline from the previous one, as a device's periodic timer does. */
static void periodic_cb(void *opaque)
{
    Periodic *p = opaque;
    p->fired++;
    p->deadline += p->period;
    timer_mod(p->timer, p->deadline);
}

/* A periodic timer that fell behind catches up in one call, and the call
 * still ends once its deadlines pass the moment the call started. */
static void test_timer_catch_up(void)
{
    Periodic p = { .period = 1 * MS };
    p.timer = timer_new(periodic_cb, &p);
    int64_t now = clock_get_ns();
    p.deadline = now - 10 * MS + 1;

    timer_mod(p.timer, p.deadline);
    int64_t next = timers_run_due();
    g_assert_cmpint(p.fired, >=, 10);
    g_assert_cmpint(p.fired, <=, 11);
    g_assert_cmpint(next, ==, p.deadline);
    g_assert_cmpint(next, >, now);
    timer_free(p.timer);
}

static gboolean wake_guard(gpointer opaque)
{
    return G_SOURCE_CONTINUE;
}

/* Iterate the main context until *count reaches want or 500 ms pass; a
 * glib timeout keeps a missing timerfd wake-up from hanging the test. */
static void iterate_until(const int *count, int want)
{
    guint guard = g_timeout_add(200, wake_guard, NULL);
    int64_t start = clock_get_ns();
    while (*count < want && clock_get_ns() - start < 500 * MS) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    g_source_remove(guard);
}

static gpointer arm_from_thread(gpointer opaque)
{
    Probe *p = opaque;
    g_usleep(2000);
    timer_mod(p->timer, clock_get_ns() + 1 * MS);
    return NULL;
}

/*
 * While the main context sleeps in poll(), another thread arms a timer:
 * the timerfd must be re-armed so that the callback runs on this thread
 * soon after, without any explicit wake-up.
 */
static void test_timer_mod_from_other_thread(void)
{
    Probe p;
    probe_init(&p, NULL, 'p');
    /* A far deadline keeps the timerfd armed late at first. */
    Probe far;
    probe_init(&far, NULL, 'f');
    timer_mod(far.timer, clock_get_ns() + 10 * NANOSECONDS_PER_SECOND);

    GThread *thread = g_thread_new("arm", arm_from_thread, &p);
    int64_t start = clock_get_ns();
    iterate_until(&p.fired, 1);
    g_thread_join(thread);
    g_assert_cmpint(p.fired, ==, 1);
    /* Fired by the timerfd, not by the 200 ms guard. */
    g_assert_cmpint(clock_get_ns() - start, <, 150 * MS);
    g_assert_cmpint(far.fired, ==, 0);
    timer_free(far.timer);
    timer_free(p.timer);
}

/* Sub-millisecond deadlines are honoured (the RTC runs at up to 8 kHz). */
static void test_timer_fine_resolution(void)
{
    Probe p;
    probe_init(&p, NULL, 'p');
    int64_t period = NANOSECONDS_PER_SECOND / 8192;
    p.rearm_times = 40;
    p.period = period;

    int64_t start = clock_get_ns();
    timer_mod(p.timer, start + period);
    iterate_until(&p.fired, 41);
    int64_t elapsed = clock_get_ns() - start;
    g_assert_cmpint(p.fired, ==, 41);
    /* 41 periods of 122 us: well under 100 ms unless something rounds
     * deadlines up to milliseconds. */
    g_assert_cmpint(elapsed, <, 100 * MS);
    g_assert_cmpint(elapsed, >=, period);
    timer_free(p.timer);
}

/*
 * Arming makes a system call only when it brings the list's next deadline
 * forward: pushing a timer back (a receive timeout on every byte) or
 * cancelling it costs none, and the early timerfd then fires for nothing
 * and is set to the new head, so the later deadline is still met.
 */
static void test_timer_push_back_costs_no_syscall(void)
{
    Probe p;
    probe_init(&p, NULL, 'p');
    TimerList *tl = main_loop_timers();
    int64_t start = clock_get_ns();
    timer_mod(p.timer, start + 2 * MS);
    uint64_t sets = timer_list_kicks(tl);
    for (int i = 1; i <= 1000; i++) {
        timer_mod(p.timer, start + 2 * MS + i * 10000);
    }
    timer_del(p.timer);
    timer_mod(p.timer, start + 20 * MS);
    g_assert_cmpuint(timer_list_kicks(tl), ==, sets);

    iterate_until(&p.fired, 1);
    g_assert_cmpint(p.fired, ==, 1);
    g_assert_cmpint(clock_get_ns() - start, >=, 20 * MS);
    /* Bringing it forward does set the timerfd. */
    timer_mod(p.timer, clock_get_ns() + 50 * MS);
    uint64_t before = timer_list_kicks(tl);
    timer_mod(p.timer, clock_get_ns() + 1 * MS);
    g_assert_cmpuint(timer_list_kicks(tl), ==, before + 1);
    iterate_until(&p.fired, 2);
    g_assert_cmpint(p.fired, ==, 2);
    timer_free(p.timer);
}

typedef struct Stamped {
    QEMUTimer *timer;
    int64_t deadline;   /* set by the arming thread before it arms */
    int64_t fired_at;
    int fired;
} Stamped;

static void stamped_cb(void *opaque)
{
    Stamped *s = opaque;
    s->fired_at = clock_get_ns();
    s->fired++;
}

static gpointer arm_earlier_from_thread(gpointer opaque)
{
    Stamped *s = opaque;
    g_usleep(5000);     /* the context is asleep by now, its timerfd far out */
    s->deadline = clock_get_ns() + 2 * MS;
    timer_mod(s->timer, s->deadline);
    return NULL;
}

/*
 * An arm that brings the earliest deadline forward wakes the sleeping
 * context with one kick, and the context moves its timerfd at once: the
 * callback runs about on time, not when the far deadline or the test's
 * 200 ms guard would have woken the context.
 */
static void test_timer_earlier_arm_wakes_context(void)
{
    TimerList *tl = main_loop_timers();
    Probe far;
    probe_init(&far, NULL, 'f');
    timer_mod(far.timer, clock_get_ns() + 10 * NANOSECONDS_PER_SECOND);
    Stamped s = { .timer = timer_new(stamped_cb, &s) };
    uint64_t kicks = timer_list_kicks(tl);

    GThread *thread = g_thread_new("arm", arm_earlier_from_thread, &s);
    iterate_until(&s.fired, 1);
    g_thread_join(thread);
    g_assert_cmpint(s.fired, ==, 1);
    g_assert_cmpuint(timer_list_kicks(tl), ==, kicks + 1);
    g_assert_cmpint(s.fired_at, >=, s.deadline);
    /* Generous for a loaded machine, well below the guard's 200 ms. */
    g_assert_cmpint(s.fired_at - s.deadline, <, 50 * MS);
    g_assert_cmpint(far.fired, ==, 0);
    timer_free(far.timer);
    timer_free(s.timer);
}

typedef struct Freeing {
    QEMUTimer *victim;
    int fired;
} Freeing;

static void free_victim_cb(void *opaque)
{
    Freeing *f = opaque;
    f->fired++;
    timer_free(f->victim);
    f->victim = NULL;
}

static void free_self_cb(void *opaque)
{
    Freeing *f = opaque;
    f->fired++;
    timer_free(f->victim);     /* the timer that is calling back */
}

/* A callback may free its own timer, or another due one, which then does
 * not run. */
static void test_timer_free_from_callback(void)
{
    Freeing self = { 0 };
    Freeing other = { 0 };
    Probe victim;
    probe_init(&victim, NULL, 'v');
    self.victim = timer_new(free_self_cb, &self);
    QEMUTimer *freer = timer_new(free_victim_cb, &other);
    other.victim = victim.timer;
    int64_t now = clock_get_ns();
    timer_mod(self.victim, now - 3);
    timer_mod(freer, now - 2);
    timer_mod(victim.timer, now - 1);

    g_assert_cmpint(timers_run_due(), ==, -1);
    g_assert_cmpint(self.fired, ==, 1);
    g_assert_cmpint(other.fired, ==, 1);
    g_assert_cmpint(victim.fired, ==, 0);
    timer_free(freer);
}

typedef struct ThreadProbe {
    int fired;                  /* atomic */
    GThread *ran_on;
} ThreadProbe;

static void thread_probe_cb(void *opaque)
{
    ThreadProbe *p = opaque;
    p->ran_on = g_thread_self();
    g_atomic_int_inc(&p->fired);
}

/* An I/O thread's timers run on that thread, armed from this one, with
 * their own list: the main loop's list never sees them. */
static void test_iothread_timers_run_on_their_thread(void)
{
    Error *err = NULL;
    IOThread *t = iothread_new("timers", &err);
    g_assert_nonnull(t);
    ThreadProbe p = { 0 };
    QEMUTimer *timer = timer_new_on(iothread_timers(t), thread_probe_cb, &p);
    uint64_t main_sets = timer_list_kicks(main_loop_timers());
    timer_mod(timer, clock_get_ns() + 1 * MS);
    int64_t start = clock_get_ns();
    while (!g_atomic_int_get(&p.fired) && clock_get_ns() - start < 2000 * MS) {
        g_usleep(1000);
    }
    g_assert_cmpint(g_atomic_int_get(&p.fired), ==, 1);
    g_assert_true(p.ran_on != g_thread_self());
    g_assert_cmpuint(timer_list_kicks(main_loop_timers()), ==, main_sets);
    timer_mod(timer, clock_get_ns() + 60 * NANOSECONDS_PER_SECOND);
    iothread_free(t);           /* disarms what is left */
    g_assert_false(timer_pending(timer));
    timer_free(timer);
}

/* ---- main loop ---- */

static int resets_seen;
static QEMUTimer *shutdown_timer;

/* The shutdown is armed by the reset handler: on a loaded machine two
 * timers armed up front can fall due in one dispatch, and the main loop,
 * which rightly looks at a shutdown first, would never see the reset. */
static bool count_reset(void)
{
    resets_seen++;
    timer_mod(shutdown_timer, clock_get_ns() + 1 * MS);
    return true;
}

static void request_reset(void *opaque)
{
    qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
}

static void request_shutdown(void *opaque)
{
    qemu_system_exit_request(GPOINTER_TO_INT(opaque));
}

static void test_main_loop_reset_then_shutdown(void)
{
    runstate_set_machine_ops(&(MachineRunOps) { .reset = count_reset });
    QEMUTimer *reset = timer_new(request_reset, NULL);
    shutdown_timer = timer_new(request_shutdown, GINT_TO_POINTER(7));
    timer_mod(reset, clock_get_ns() + 1 * MS);

    g_assert_cmpint(main_loop_run(), ==, 7);
    g_assert_cmpint(resets_seen, ==, 1);
    timer_free(reset);
    timer_free(shutdown_timer);
}

static void send_sigterm(void *opaque)
{
    raise(SIGTERM);
}

/* SIGTERM ends the loop with status 0 and says so, as QEMU does. */
static void test_main_loop_sigterm(void)
{
    if (g_test_subprocess()) {
        main_loop_init();
        QEMUTimer *t = timer_new(send_sigterm, NULL);
        timer_mod(t, clock_get_ns() + 1 * MS);
        int status = main_loop_run();
        timer_free(t);
        fprintf(stderr, "loop ended with %d\n", status);
        exit(status == 0 ? 0 : 1);
    }
    g_test_trap_subprocess(NULL, 2 * G_USEC_PER_SEC, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*terminating on signal 15*loop ended with 0*");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/timer/order", test_timer_order);
    g_test_add_func("/timer/mod-moves", test_timer_mod_moves);
    g_test_add_func("/timer/del", test_timer_del);
    g_test_add_func("/timer/rearm-from-callback", test_timer_rearm_from_callback);
    g_test_add_func("/timer/catch-up", test_timer_catch_up);
    g_test_add_func("/timer/mod-from-other-thread", test_timer_mod_from_other_thread);
    g_test_add_func("/timer/fine-resolution", test_timer_fine_resolution);
    g_test_add_func("/timer/push-back-costs-no-syscall", test_timer_push_back_costs_no_syscall);
    g_test_add_func("/timer/earlier-arm-wakes-context", test_timer_earlier_arm_wakes_context);
    g_test_add_func("/timer/free-from-callback", test_timer_free_from_callback);
    g_test_add_func("/timer/iothread-timers", test_iothread_timers_run_on_their_thread);
    g_test_add_func("/main-loop/reset-then-shutdown", test_main_loop_reset_then_shutdown);
    g_test_add_func("/main-loop/sigterm", test_main_loop_sigterm);
    return g_test_run();
}
