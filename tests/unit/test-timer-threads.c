/*
 * Timers armed from several threads at once (qemu/timer.h): two
 * "devices", each with its own lock and nothing else in common, arm and
 * cancel their timers from two threads while the context runs them; and a
 * timer re-armed while its callback runs. Meant for ThreadSanitizer too
 * (docs/testing.md).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <glib.h>
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "sysemu/iothread.h"

#define US (NANOSECONDS_PER_SECOND / 1000000)
#define ARMS_PER_DEVICE 1000
/* The claim race needs both threads on a core at once: more rounds. */
#define RACE_ROUNDS 3000

typedef struct Device {
    pthread_mutex_t lock;       /* the device lock: its callbacks take it */
    pthread_cond_t fired_cond;
    QEMUTimer *timer;           /* each arm must fire, once, not early */
    QEMUTimer *cancelled;       /* always cancelled long before it is due */
    int64_t deadline;           /* of timer's current arm; under lock */
    int armed;                  /* arms of timer; under lock */
    int fired;                  /* its callbacks; under lock */
    int early;                  /* callbacks before their deadline; under lock */
    int lost;                   /* arms that never fired; the device's thread */
    atomic_int cancelled_fired;
    atomic_int *finished;       /* devices done, shared with the test */
} Device;

static void device_timer_cb(void *opaque)
{
    Device *d = opaque;
    pthread_mutex_lock(&d->lock);
    if (clock_get_ns() < d->deadline) {
        d->early++;
    }
    d->fired++;
    pthread_cond_broadcast(&d->fired_cond);
    pthread_mutex_unlock(&d->lock);
}

static void device_cancelled_cb(void *opaque)
{
    Device *d = opaque;
    atomic_fetch_add(&d->cancelled_fired, 1);
}

/* Wait under the lock until every arm has fired; false after 5 s. */
static bool device_wait_fired(Device *d)
{
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 5;
    while (d->fired < d->armed) {
        if (pthread_cond_timedwait(&d->fired_cond, &d->lock, &limit)) {
            return false;
        }
    }
    return true;
}

/*
 * What a vCPU does to a device's timers: push one far out and back
 * (no syscall), arm and cancel another well before it is due, then bring
 * the first in to a deadline within 200 us (earlier: a kick), then wait
 * for it to fire (a handler would return instead; the test must know).
 */
static gpointer device_vcpu(gpointer opaque)
{
    Device *d = opaque;
    for (int i = 0; i < ARMS_PER_DEVICE; i++) {
        int64_t now = clock_get_ns();
        pthread_mutex_lock(&d->lock);
        timer_mod(d->timer, now + 10 * NANOSECONDS_PER_SECOND);
        timer_mod(d->cancelled, now + 10 * NANOSECONDS_PER_SECOND + i);
        timer_mod(d->timer, now + 20 * NANOSECONDS_PER_SECOND);
        timer_del(d->cancelled);
        d->deadline = clock_get_ns() + g_random_int_range(0, 200) * US;
        d->armed++;
        timer_mod(d->timer, d->deadline);
        bool fired = device_wait_fired(d);
        d->lost += !fired;
        pthread_mutex_unlock(&d->lock);
        if (!fired) {
            break;
        }
    }
    atomic_fetch_add(d->finished, 1);
    main_loop_wakeup();
    return NULL;
}

static void device_init(Device *d, TimerList *tl, atomic_int *finished)
{
    *d = (Device) { .finished = finished };
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->fired_cond, NULL);
    atomic_init(&d->cancelled_fired, 0);
    d->timer = timer_new_on(tl, device_timer_cb, d);
    d->cancelled = timer_new_on(tl, device_cancelled_cb, d);
}

static void device_check_and_free(Device *d)
{
    pthread_mutex_lock(&d->lock);
    g_assert_cmpint(d->lost, ==, 0);
    g_assert_cmpint(d->armed, ==, ARMS_PER_DEVICE);
    g_assert_cmpint(d->fired, ==, d->armed);   /* nothing fired twice */
    g_assert_cmpint(d->early, ==, 0);
    pthread_mutex_unlock(&d->lock);
    g_assert_cmpint(atomic_load(&d->cancelled_fired), ==, 0);
    timer_free(d->timer);
    timer_free(d->cancelled);
    pthread_cond_destroy(&d->fired_cond);
    pthread_mutex_destroy(&d->lock);
}

/* Run the two devices' threads; the context is the main loop's (run here)
 * or an I/O thread's (which runs it). */
static void run_two_devices(TimerList *tl, bool run_main_loop)
{
    atomic_int finished;
    atomic_init(&finished, 0);
    Device dev[2];
    GThread *vcpu[2];
    for (int i = 0; i < 2; i++) {
        device_init(&dev[i], tl, &finished);
    }
    for (int i = 0; i < 2; i++) {
        vcpu[i] = g_thread_new("vcpu", device_vcpu, &dev[i]);
    }
    while (run_main_loop && atomic_load(&finished) < 2) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    for (int i = 0; i < 2; i++) {
        g_thread_join(vcpu[i]);
    }
    /* Time for a duplicate or a cancelled timer to show up. */
    int64_t settle = clock_get_ns() + 20 * 1000 * US;
    while (clock_get_ns() < settle) {
        if (run_main_loop) {
            g_main_context_iteration(main_loop_context(), FALSE);
        }
        g_usleep(1000);
    }
    for (int i = 0; i < 2; i++) {
        device_check_and_free(&dev[i]);
    }
}

static void test_two_devices_main_loop(void)
{
    run_two_devices(main_loop_timers(), true);
}

static void test_two_devices_iothread(void)
{
    Error *err = NULL;
    IOThread *t = iothread_new("timers", &err);
    g_assert_nonnull(t);
    run_two_devices(iothread_timers(t), false);
    iothread_free(t);
}

typedef struct Racer {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    QEMUTimer *timer;
    int64_t deadline;   /* of the last arm; under lock */
    int met;            /* callbacks at or after it; under lock */
    int early;          /* callbacks before it; under lock */
    int lost;           /* last arms that never fired; the racer's thread */
    atomic_bool done;
} Racer;

static void racer_cb(void *opaque)
{
    Racer *r = opaque;
    pthread_mutex_lock(&r->lock);
    if (clock_get_ns() >= r->deadline) {
        r->met++;
    } else {
        r->early++;
    }
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

/*
 * Arm the timer due at once, then, a few microseconds later (while the
 * context may be claiming it), re-arm it 100 us out. The re-arm must
 * fire, and nothing fires more than once per arm (a callback of the due
 * arm that waited long for the lock may pass for the re-arm's: hence
 * counts, not one verdict per round).
 */
static gpointer racer_vcpu(gpointer opaque)
{
    Racer *r = opaque;
    for (int i = 0; i < RACE_ROUNDS; i++) {
        pthread_mutex_lock(&r->lock);
        int met = r->met;
        r->deadline = INT64_MAX;    /* a callback now is the due arm's */
        timer_mod(r->timer, clock_get_ns());
        int64_t pause_until = clock_get_ns() + g_random_int_range(0, 150) * US;
        while (clock_get_ns() < pause_until) {
        }
        r->deadline = clock_get_ns() + 100 * US;
        timer_mod(r->timer, r->deadline);
        struct timespec limit;
        clock_gettime(CLOCK_REALTIME, &limit);
        limit.tv_sec += 5;
        while (r->met == met && !pthread_cond_timedwait(&r->cond, &r->lock, &limit)) {
        }
        bool fired = r->met > met;
        r->lost += !fired;
        pthread_mutex_unlock(&r->lock);
        if (!fired) {
            break;
        }
    }
    atomic_store(&r->done, true);
    main_loop_wakeup();
    return NULL;
}

static void never_runs(void *opaque)
{
}

/*
 * A re-arm that races with the context claiming the timer is kept. Idle
 * timers created after it lengthen the context's scan, which reads the
 * racer's deadline first and claims it last: a wider window to race in.
 */
static void test_rearm_races_claim(void)
{
    Racer r = { .lost = 0 };
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    atomic_init(&r.done, false);
    r.timer = timer_new(racer_cb, &r);
    QEMUTimer *idle[2000];
    for (size_t i = 0; i < G_N_ELEMENTS(idle); i++) {
        idle[i] = timer_new(never_runs, NULL);
    }
    GThread *thread = g_thread_new("racer", racer_vcpu, &r);
    while (!atomic_load(&r.done)) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    g_thread_join(thread);
    pthread_mutex_lock(&r.lock);
    g_assert_cmpint(r.lost, ==, 0);
    g_assert_cmpint(r.met, >=, RACE_ROUNDS);
    g_assert_cmpint(r.met + r.early, <=, 2 * RACE_ROUNDS);
    pthread_mutex_unlock(&r.lock);
    timer_free(r.timer);
    for (size_t i = 0; i < G_N_ELEMENTS(idle); i++) {
        timer_free(idle[i]);
    }
    pthread_cond_destroy(&r.cond);
    pthread_mutex_destroy(&r.lock);
}

typedef struct Blocking {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    QEMUTimer *timer;
    int fired;          /* under lock */
    bool rearmed;       /* under lock */
} Blocking;

/* The first call waits until another thread has re-armed the timer. */
static void blocking_cb(void *opaque)
{
    Blocking *b = opaque;
    pthread_mutex_lock(&b->lock);
    b->fired++;
    pthread_cond_broadcast(&b->cond);
    while (b->fired == 1 && !b->rearmed) {
        pthread_cond_wait(&b->cond, &b->lock);
    }
    pthread_mutex_unlock(&b->lock);
}

static gpointer rearm_during_callback(gpointer opaque)
{
    Blocking *b = opaque;
    pthread_mutex_lock(&b->lock);
    while (b->fired == 0) {
        pthread_cond_wait(&b->cond, &b->lock);
    }
    timer_mod(b->timer, clock_get_ns() + 1000 * US);
    b->rearmed = true;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/*
 * The context claims a timer before it calls back: an arm made while the
 * callback runs is a new arm, pending afterwards, and fires in turn.
 */
static void test_rearm_while_callback_runs(void)
{
    Blocking b = { .fired = 0 };
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cond, NULL);
    b.timer = timer_new(blocking_cb, &b);
    GThread *thread = g_thread_new("rearm", rearm_during_callback, &b);
    timer_mod(b.timer, clock_get_ns());
    timers_run_due();
    g_thread_join(thread);
    g_assert_true(timer_pending(b.timer));
    int64_t start = clock_get_ns();
    while (timer_pending(b.timer) && clock_get_ns() - start < NANOSECONDS_PER_SECOND) {
        g_main_context_iteration(main_loop_context(), FALSE);
        g_usleep(200);
    }
    pthread_mutex_lock(&b.lock);
    g_assert_cmpint(b.fired, ==, 2);
    pthread_mutex_unlock(&b.lock);
    timer_free(b.timer);
    pthread_cond_destroy(&b.cond);
    pthread_mutex_destroy(&b.lock);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/timer-threads/two-devices/main-loop", test_two_devices_main_loop);
    g_test_add_func("/timer-threads/two-devices/iothread", test_two_devices_iothread);
    g_test_add_func("/timer-threads/rearm-while-callback-runs", test_rearm_while_callback_runs);
    g_test_add_func("/timer-threads/rearm-races-claim", test_rearm_races_claim);
    return g_test_run();
}
