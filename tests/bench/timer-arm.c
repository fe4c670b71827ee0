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
 * Prints ns per timer_mod for one and for two threads. Never part of the
 * pass/fail suite (docs/benchmarks.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <glib.h>
#include "qemu/timer.h"

typedef struct Arming {
    QEMUTimer *timer;
    long arms;
    int64_t base;
    GThread *thread;
} Arming;

static void never_runs(void *opaque)
{
}

static gpointer arm_repeatedly(gpointer opaque)
{
    Arming *a = opaque;
    for (long i = 0; i < a->arms; i++) {
        timer_mod(a->timer, a->base + (i & 1023) * 1000);
    }
    return NULL;
}

/* ns per timer_mod, each of nthreads arming its own timer. */
static double measure(int nthreads, long arms)
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
    for (int i = 0; i < nthreads; i++) {
        timer_free(a[i].timer);
    }
    /* Threads ran in parallel: each one's cost is the wall time per arm. */
    return (double)elapsed / arms;
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
    printf("1 thread:  %.1f ns per timer_mod\n", measure(1, arms));
    printf("2 threads: %.1f ns per timer_mod\n", measure(2, arms));
    for (int i = 0; i < idle; i++) {
        timer_free(others[i]);
    }
    g_free(others);
    return 0;
}
