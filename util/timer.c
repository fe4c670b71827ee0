/*
 * Timers (qemu/timer.h).
 *
 * Arming and cancelling touch the timer itself and, only when an arm makes
 * the context's earliest deadline earlier, one word of its list: no lock,
 * no list walk, so devices arming their own timers from vCPU threads share
 * nothing but that (mostly read) word.
 *
 * - A timer's deadline is an atomic, INT64_MAX when it is not armed.
 *   timer_mod stores the deadline, timer_del stores INT64_MAX.
 * - `next_wake` is never later than an armed deadline the context has not
 *   scanned yet. An arm lowers it by compare-exchange (an atomic minimum)
 *   and, if it did lower it, kicks the context (g_main_context_wakeup, one
 *   eventfd write). A timer cancelled or pushed back leaves next_wake early:
 *   the context then wakes once for nothing and recomputes it.
 * - Only the context's thread sets the timerfd: before each poll (the
 *   source's prepare) it moves it to next_wake if that changed. A kick ends
 *   the poll, so the new deadline is set at once.
 * - When the timerfd fires, the context claims due timers one at a time,
 *   earliest first, by a compare-exchange from the deadline it read to
 *   INT64_MAX. A timer re-armed or cancelled meanwhile fails the exchange
 *   and keeps its new state: a timer fires at most once per arm, a re-arm
 *   racing with the firing is never lost, and a timer cancelled before it
 *   is claimed never fires.
 * - Why no deadline is missed: a scan first sets next_wake to INT64_MAX,
 *   then reads the deadlines, then lowers next_wake to the earliest one
 *   left armed. These and the arms' store-then-read are sequentially
 *   consistent, so an arm whose store the scan missed reads next_wake after
 *   the reset: it lowers it and kicks, or finds it already at or before its
 *   own deadline, lowered by another arm that kicked.
 * - Timers are registered with their list when created and unregistered
 *   when freed, under the list's mutex. The scan holds it while it reads
 *   and claims, never across a callback. Creating and freeing timers is
 *   device set-up and tear-down, never on a vCPU's path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <glib-unix.h>
#include "qemu/main-loop.h"
#include "qemu/timer.h"

/* x86's cache line: what two threads writing neighbouring data bounce. */
#define CACHE_LINE 64

/* Not armed. */
#define TIMER_IDLE INT64_MAX

struct QEMUTimer {
    /* Alone on its cache line: another device's arm never bounces it. */
    alignas(CACHE_LINE) atomic_int_least64_t deadline;
    TimerList *list;        /* fixed at creation (NULL once the list is freed) */
    QEMUTimerCB *cb;
    void *opaque;
};

typedef struct TimerSource {
    GSource source;
    TimerList *list;
    gpointer fd_tag;
} TimerSource;

struct TimerList {
    /* Read by every arm, written only when the earliest deadline moves
     * earlier (and by the context's scan): a line of its own. */
    alignas(CACHE_LINE) atomic_int_least64_t next_wake;
    atomic_uint_least64_t kicks;
    /* The context's side. pthread rather than GMutex: ThreadSanitizer
     * sees it. */
    alignas(CACHE_LINE) pthread_mutex_t lock;
    GPtrArray *timers;      /* of QEMUTimer *, in creation order; under lock */
    int64_t fd_deadline;    /* what the timerfd is set to; context thread */
    int fd;
    GMainContext *ctx;
    TimerSource *source;
};

/* The list whose timers this thread is running: its arms need no kick,
 * the run recomputes the wake-up before the context polls again. */
static __thread TimerList *timer_list_running;

static int64_t clock_read_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * NANOSECONDS_PER_SECOND + ts.tv_nsec;
}

int64_t clock_get_ns(void)
{
    return clock_read_ns(CLOCK_MONOTONIC);
}

int64_t clock_get_realtime_ns(void)
{
    return clock_read_ns(CLOCK_REALTIME);
}

/* Zeroed memory starting on a cache line; size is a multiple of one. */
static void *cache_line_alloc0(size_t size)
{
    void *p = aligned_alloc(CACHE_LINE, size);
    if (!p) {
        g_error("timer: out of memory");
    }
    memset(p, 0, size);
    return p;
}

/* Context thread: move the timerfd to deadline (TIMER_IDLE: disarm it). */
static void timer_fd_set(TimerList *tl, int64_t deadline)
{
    struct itimerspec its = { 0 };
    if (deadline != TIMER_IDLE) {
        /* A zero it_value would disarm: a deadline at or before time 0
         * becomes 1 ns, which is just as much in the past. */
        int64_t when = MAX(deadline, 1);
        its.it_value.tv_sec = when / NANOSECONDS_PER_SECOND;
        its.it_value.tv_nsec = when % NANOSECONDS_PER_SECOND;
    }
    if (timerfd_settime(tl->fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        g_error("timerfd_settime: %s", strerror(errno));
    }
    tl->fd_deadline = deadline;
}

/* Lower next_wake to deadline; true if this call lowered it. */
static bool timer_list_lower_wake(TimerList *tl, int64_t deadline)
{
    int64_t wake = atomic_load(&tl->next_wake);
    while (deadline < wake) {
        if (atomic_compare_exchange_weak(&tl->next_wake, &wake, deadline)) {
            return true;
        }
    }
    return false;
}

static gboolean timer_source_prepare(GSource *source, gint *timeout)
{
    TimerList *tl = ((TimerSource *)source)->list;
    int64_t wake = atomic_load(&tl->next_wake);
    if (wake != tl->fd_deadline) {
        timer_fd_set(tl, wake);
    }
    *timeout = -1;
    return FALSE;
}

static gboolean timer_source_check(GSource *source)
{
    TimerSource *ts = (TimerSource *)source;
    return (g_source_query_unix_fd(source, ts->fd_tag) & G_IO_IN) != 0;
}

static gboolean timer_source_dispatch(GSource *source, GSourceFunc callback, gpointer data)
{
    TimerList *tl = ((TimerSource *)source)->list;
    uint64_t expirations;
    /* Only clears readiness; the deadlines, not the count, say what is
     * due. EAGAIN is fine: a prepare since the poll reset the count. */
    if (read(tl->fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) {
        g_error("timerfd read: %s", strerror(errno));
    }
    tl->fd_deadline = TIMER_IDLE;   /* it fired: a one-shot is disarmed */
    timer_list_run_due(tl);
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs timer_source_funcs = {
    .prepare = timer_source_prepare,
    .check = timer_source_check,
    .dispatch = timer_source_dispatch,
};

TimerList *timer_list_new(GMainContext *ctx)
{
    TimerList *tl = cache_line_alloc0(sizeof(TimerList));
    atomic_init(&tl->next_wake, TIMER_IDLE);
    atomic_init(&tl->kicks, 0);
    pthread_mutex_init(&tl->lock, NULL);
    tl->timers = g_ptr_array_new();
    tl->fd_deadline = TIMER_IDLE;
    tl->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tl->fd < 0) {
        g_error("timerfd_create: %s", strerror(errno));
    }
    tl->ctx = g_main_context_ref(ctx);
    tl->source = (TimerSource *)g_source_new(&timer_source_funcs, sizeof(TimerSource));
    tl->source->list = tl;
    tl->source->fd_tag = g_source_add_unix_fd(&tl->source->source, tl->fd, G_IO_IN);
    g_source_attach(&tl->source->source, ctx);
    return tl;
}

void timer_list_free(TimerList *tl)
{
    /* No thread is left to race with: the context's has stopped. */
    for (guint i = 0; i < tl->timers->len; i++) {
        QEMUTimer *t = g_ptr_array_index(tl->timers, i);
        atomic_store(&t->deadline, TIMER_IDLE);
        t->list = NULL;
    }
    g_ptr_array_free(tl->timers, TRUE);
    g_source_destroy(&tl->source->source);
    g_source_unref(&tl->source->source);
    close(tl->fd);
    g_main_context_unref(tl->ctx);
    pthread_mutex_destroy(&tl->lock);
    free(tl);
}

uint64_t timer_list_kicks(TimerList *tl)
{
    return atomic_load_explicit(&tl->kicks, memory_order_relaxed);
}

/* Created on first use so that programs (and unit tests) need no explicit
 * initialisation call. */
TimerList *main_loop_timers(void)
{
    static gsize list;
    if (g_once_init_enter(&list)) {
        g_once_init_leave(&list, (gsize)timer_list_new(main_loop_context()));
    }
    return (TimerList *)list;
}

QEMUTimer *timer_new_on(TimerList *tl, QEMUTimerCB *cb, void *opaque)
{
    QEMUTimer *t = cache_line_alloc0(sizeof(QEMUTimer));
    atomic_init(&t->deadline, TIMER_IDLE);
    t->list = tl;
    t->cb = cb;
    t->opaque = opaque;
    pthread_mutex_lock(&tl->lock);
    g_ptr_array_add(tl->timers, t);
    pthread_mutex_unlock(&tl->lock);
    return t;
}

QEMUTimer *timer_new(QEMUTimerCB *cb, void *opaque)
{
    return timer_new_on(main_loop_timers(), cb, opaque);
}

void timer_free(QEMUTimer *t)
{
    if (!t) {
        return;
    }
    timer_del(t);
    TimerList *tl = t->list;
    if (tl) {
        pthread_mutex_lock(&tl->lock);
        g_ptr_array_remove(tl->timers, t);
        pthread_mutex_unlock(&tl->lock);
    }
    free(t);
}

void timer_mod(QEMUTimer *t, int64_t expire_ns)
{
    int64_t deadline = MIN(expire_ns, TIMER_IDLE - 1);
    TimerList *tl = t->list;
    atomic_store(&t->deadline, deadline);
    if (timer_list_lower_wake(tl, deadline) && timer_list_running != tl) {
        atomic_fetch_add_explicit(&tl->kicks, 1, memory_order_relaxed);
        g_main_context_wakeup(tl->ctx);
    }
}

void timer_del(QEMUTimer *t)
{
    atomic_store(&t->deadline, TIMER_IDLE);
}

bool timer_pending(QEMUTimer *t)
{
    return atomic_load(&t->deadline) != TIMER_IDLE;
}

int64_t timer_expire_time(QEMUTimer *t)
{
    int64_t deadline = atomic_load(&t->deadline);
    return deadline == TIMER_IDLE ? -1 : deadline;
}

/*
 * Claim and run the earliest timer due by now; return false, with the
 * earliest deadline still armed in *next, when none is due. Equal
 * deadlines go in creation order.
 */
static bool timer_list_run_one(TimerList *tl, int64_t now, int64_t *next)
{
    pthread_mutex_lock(&tl->lock);
    QEMUTimer *due = NULL;
    int64_t earliest = TIMER_IDLE;
    for (guint i = 0; i < tl->timers->len; i++) {
        QEMUTimer *t = g_ptr_array_index(tl->timers, i);
        int64_t deadline = atomic_load(&t->deadline);
        if (deadline < earliest) {
            earliest = deadline;
            due = t;
        }
    }
    if (earliest > now) {
        pthread_mutex_unlock(&tl->lock);
        *next = earliest;
        return false;
    }
    /* Copied under the lock: once it is released, the timer may be freed
     * (its callback, running late, finds that out under its device lock). */
    bool claimed = atomic_compare_exchange_strong(&due->deadline, &earliest, TIMER_IDLE);
    QEMUTimerCB *cb = due->cb;
    void *opaque = due->opaque;
    pthread_mutex_unlock(&tl->lock);
    if (claimed) {
        cb(opaque);
    }
    return true;    /* claimed or re-armed meanwhile: look again */
}

/*
 * "Now" is read once, so a callback that re-arms itself for a deadline
 * that has also passed (a periodic timer catching up) runs again in this
 * call only while its deadlines stay behind that instant: the loop ends.
 */
int64_t timer_list_run_due(TimerList *tl)
{
    TimerList *outer = timer_list_running;
    timer_list_running = tl;
    atomic_store(&tl->next_wake, TIMER_IDLE);
    int64_t now = clock_get_ns();
    int64_t next;
    while (timer_list_run_one(tl, now, &next)) {
    }
    timer_list_lower_wake(tl, next);
    timer_list_running = outer;
    return next == TIMER_IDLE ? -1 : next;
}

int64_t timers_run_due(void)
{
    return timer_list_run_due(main_loop_timers());
}
