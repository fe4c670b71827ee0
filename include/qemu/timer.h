/*
 * Timers, in CLOCK_MONOTONIC nanoseconds. Each timer belongs to a timer
 * list, and each list to one GLib context: the main loop's (timer_new) or
 * an I/O thread's (iothread_timers), whose thread runs the callbacks.
 *
 * timer_mod() and timer_del() may be called from any thread (a vCPU inside a
 * device handler, typically) and take no lock: two devices arming their
 * own timers share nothing. Arming costs a system call (a wake-up of the
 * context) only when it makes the list's earliest deadline earlier; a
 * timer pushed back (a serial receive timeout on every byte) or cancelled
 * costs none, and re-arming from a callback costs none either.
 *
 * Callbacks run on their list's thread with no lock held: a device
 * callback takes its own device_lock(). A timer fires at most once per
 * arm, and a timer cancelled or re-armed before it falls due never fires
 * for the old deadline. But the context claims a due timer before it
 * calls back, so a timer_del() (or timer_mod()) made once it is due may
 * come too late: the callback may still run, or be running, after it
 * returns. A callback therefore checks, under its device lock, whether it
 * is still wanted; the device's state must outlive its timers.
 */
#ifndef QEMU_TIMER_H
#define QEMU_TIMER_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#define NANOSECONDS_PER_SECOND 1000000000LL

typedef void QEMUTimerCB(void *opaque);
typedef struct QEMUTimer QEMUTimer;
typedef struct TimerList TimerList;

int64_t clock_get_ns(void);                 /* CLOCK_MONOTONIC */
int64_t clock_get_realtime_ns(void);        /* CLOCK_REALTIME */

/* A list whose timers run on ctx's thread. Create it before ctx runs on
 * another thread (its timerfd source is attached to ctx); free it once that
 * thread has stopped: its timers are then disarmed, must not be armed
 * again, and are only freed (timer_free). */
TimerList *timer_list_new(GMainContext *ctx);
void timer_list_free(TimerList *tl);
/* Run tl's due timers, earliest first, equal deadlines in the order the
 * timers were created (on its thread, or while nothing runs its context);
 * returns the next deadline or -1. */
int64_t timer_list_run_due(TimerList *tl);
/* How many times an arm woke tl's context: the system calls arming has
 * cost so far. */
uint64_t timer_list_kicks(TimerList *tl);
/* The main loop's list, created on first use. */
TimerList *main_loop_timers(void);

/* Creating and freeing a timer take the list's mutex for a moment: do it
 * when the device is set up and torn down, not on a vCPU's path. */
QEMUTimer *timer_new_on(TimerList *tl, QEMUTimerCB *cb, void *opaque);
/* A timer of the main loop's list. */
QEMUTimer *timer_new(QEMUTimerCB *cb, void *opaque);
void timer_free(QEMUTimer *t);
/* (Re)arm t to fire at expire_ns (absolute, clock_get_ns() time base). */
void timer_mod(QEMUTimer *t, int64_t expire_ns);
void timer_del(QEMUTimer *t);
bool timer_pending(QEMUTimer *t);
int64_t timer_expire_time(QEMUTimer *t);    /* -1 if not pending */

/* timer_list_run_due of the main loop's list (unit tests drive time by hand
 * with it). */
int64_t timers_run_due(void);

#endif
