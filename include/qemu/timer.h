/*
 * Timers on the I/O thread, in CLOCK_MONOTONIC nanoseconds.
 *
 * timer_mod() and timer_del() may be called from any thread (a vCPU inside a
 * device handler, typically). Callbacks run on the I/O thread with no lock
 * held: a device callback takes its own device_lock(). After timer_del()
 * returns, the callback may still be running on the I/O thread; a callback
 * must therefore check, under its device lock, whether it is still wanted.
 */
#ifndef QEMU_TIMER_H
#define QEMU_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#define NANOSECONDS_PER_SECOND 1000000000LL

typedef void QEMUTimerCB(void *opaque);
typedef struct QEMUTimer QEMUTimer;

int64_t clock_get_ns(void);                 /* CLOCK_MONOTONIC */
int64_t clock_get_realtime_ns(void);        /* CLOCK_REALTIME */

QEMUTimer *timer_new(QEMUTimerCB *cb, void *opaque);
void timer_free(QEMUTimer *t);
/* (Re)arm t to fire at expire_ns (absolute, clock_get_ns() time base). */
void timer_mod(QEMUTimer *t, int64_t expire_ns);
void timer_del(QEMUTimer *t);
bool timer_pending(QEMUTimer *t);
int64_t timer_expire_time(QEMUTimer *t);    /* -1 if not pending */

/* Run due timers; returns the next deadline or -1. Used by the main loop
 * and by unit tests that drive time by hand. */
int64_t timers_run_due(void);

#endif
