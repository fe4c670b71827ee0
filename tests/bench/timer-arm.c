/*
 * What arming a timer costs a vCPU thread (qemu/timer.h): each of 1 or 2
 * threads, standing for vCPUs in two devices' handlers, re-arms its own
 * device's main-loop timer over and over with deadlines at or after the
 * first one, as a receive timeout re-armed on every byte does. No arm
 * brings the context's earliest deadline forward, so none should cost a
 * system call: what is left is what the threads share. Some other
 * devices' timers stay armed meanwhile for earlier deadlines (IDLE_TIMERS),
 * as the RTC's and a NIC's would: a list sorted by deadline walks past
 * them on every arm.
 *
 *   build/tests/bench/timer-arm [ARMS_PER_THREAD] [IDLE_TIMERS]
 *
 * Prints ns per timer_mod for one and for two threads, wall and CPU time. Never part of the
 * pass/fail suite (docs/benchmarks.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <glib.h>
#include "qemu/timer.h"

typedef struct Arming {
    QEMUTimer *timer;
    long arms;
    int64_t base;
    int64_t cpu_ns;     /* the thread's CPU time for its arms */
    GThread *thread;
} Arming;

static void never_runs(void *opaque)
{
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * NANOSECONDS_PER_SECOND + ts.tv_nsec;
}

static gpointer arm_repeatedly(gpointer opaque)
{
    Arming *a = opaque;
    int64_t start = thread_cpu_ns();
    for (long i = 0; i < a->arms; i++) {
        timer_mod(a->timer, a->base + (i & 1023) * 1000);
    }
    a->cpu_ns = thread_cpu_ns() - start;
    return NULL;
}

/* Each of nthreads arms its own timer; prints ns per timer_mod. */
static void measure(int nthreads, long arms)
{
    Arming a[2];
    /* Far enough that nothing falls due: nobody runs the main loop. */
    int64_t base = clock_get_ns() + 3600 * NANOSECONDS_PER_SECOND;
    for (int i = 0; i < nthreads; i++) {
        a[i] = (Arming) { .timer = timer_new(never_runs, NULL), .arms = arms, .base = base };
        timer_mod(a[i].timer, base);    /* the one arm that moves the deadline */
    }
    int64_t start = clock_get_ns();
    for (int i = 0; i < nthreads; i++) {
        a[i].thread = g_thread_new("arm", arm_repeatedly, &a[i]);
    }
    for (int i = 0; i < nthreads; i++) {
        g_thread_join(a[i].thread);
    }
    int64_t elapsed = clock_get_ns() - start;
    int64_t cpu = 0;
    for (int i = 0; i < nthreads; i++) {
        cpu += a[i].cpu_ns;
        timer_free(a[i].timer);
    }
    /* Wall time per arm of one thread (the threads ran side by side), and
     * CPU time per arm: on a busy machine the threads may not have had a
     * core each, which inflates the first and not the second. */
    printf("%d thread%s: %6.1f ns wall, %6.1f ns CPU per timer_mod\n", nthreads,
           nthreads > 1 ? "s" : " ", (double)elapsed / arms, (double)cpu / nthreads / arms);
}

int main(int argc, char **argv)
{
    long arms = argc > 1 ? atol(argv[1]) : 2000000;
    int idle = argc > 2 ? atoi(argv[2]) : 8;
    QEMUTimer **others = g_new(QEMUTimer *, idle);
    for (int i = 0; i < idle; i++) {
        others[i] = timer_new(never_runs, NULL);
        timer_mod(others[i], clock_get_ns() + (1800 + i) * NANOSECONDS_PER_SECOND);
    }
    printf("idle timers %d, arms per thread %ld\n", idle, arms);
    measure(1, arms);
    measure(2, arms);
    for (int i = 0; i < idle; i++) {
        timer_free(others[i]);
    }
    g_free(others);
    return 0;
}
