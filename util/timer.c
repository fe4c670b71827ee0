/*
 * Timers (qemu/timer.h).
 *
 * Each TimerList keeps its pending timers in one list ordered by deadline,
 * under the list's own mutex so that any thread may arm or cancel them, and
 * owns a timerfd (CLOCK_MONOTONIC, absolute expiry) watched by its context.
 *
 * The timerfd is only ever moved earlier by an arming thread: `armed_ns`
 * is the deadline it is set to (INT64_MAX: not set), and timer_mod makes a
 * system call only when its deadline is earlier than that. A timer that is
 * cancelled or pushed back leaves the timerfd early; it then fires for
 * nothing, and the dispatch, which runs whatever is due, sets it to the
 * list's new head. Everything about armed_ns happens under the list lock,
 * so the timerfd is never left later than the head: no deadline is missed.
 * Callbacks run with the lock released: they take device locks and often
 * re-arm their own timer.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <glib-unix.h>
#include "qemu/main-loop.h"
#include "qemu/timer.h"

struct QEMUTimer {
    TimerList *list;
    QEMUTimerCB *cb;
    void *opaque;
    int64_t expire_ns;      /* valid while pending */
    bool pending;
    QEMUTimer *next;        /* list link, ordered by expire_ns */
};

struct TimerList {
    /* pthread rather than GMutex: ThreadSanitizer sees it. */
    pthread_mutex_t lock;
    QEMUTimer *head;        /* under lock */
    int64_t armed_ns;       /* the timerfd's deadline, under lock */
    uint64_t fd_sets;       /* under lock */
    int fd;
    GSource *source;
};

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

static void timer_unlink_locked(QEMUTimer *t);

/* Set the timerfd to deadline. Lock held. */
static void timer_fd_set_locked(TimerList *tl, int64_t deadline)
{
    /* A zero it_value would disarm: a deadline at or before time 0
     * becomes 1 ns, which is just as much in the past. */
    int64_t when = MAX(deadline, 1);
    struct itimerspec its = {
        .it_value = { .tv_sec = when / NANOSECONDS_PER_SECOND,
                      .tv_nsec = when % NANOSECONDS_PER_SECOND },
    };
    if (timerfd_settime(tl->fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        g_error("timerfd_settime: %s", strerror(errno));
    }
    tl->armed_ns = deadline;
    tl->fd_sets++;
}

/* Make sure the timerfd fires no later than the head. Lock held. */
static void timer_fd_cover_head_locked(TimerList *tl)
{
    if (tl->head && tl->head->expire_ns < tl->armed_ns) {
        timer_fd_set_locked(tl, tl->head->expire_ns);
    }
}

static gboolean timer_fd_dispatch(gint fd, GIOCondition cond, gpointer opaque)
{
    TimerList *tl = opaque;
    uint64_t expirations;
    /* Only clears readiness; the list, not the count, says what is due.
     * EAGAIN is fine: an arming since the poll already reset the count. */
    if (read(fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) {
        g_error("timerfd read: %s", strerror(errno));
    }
    pthread_mutex_lock(&tl->lock);
    tl->armed_ns = INT64_MAX;   /* it fired: set it again below */
    pthread_mutex_unlock(&tl->lock);
    timer_list_run_due(tl);
    return G_SOURCE_CONTINUE;
}

TimerList *timer_list_new(GMainContext *ctx)
{
    TimerList *tl = g_new0(TimerList, 1);
    pthread_mutex_init(&tl->lock, NULL);
    tl->armed_ns = INT64_MAX;
    tl->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tl->fd < 0) {
        g_error("timerfd_create: %s", strerror(errno));
    }
    tl->source = g_unix_fd_source_new(tl->fd, G_IO_IN);
    g_source_set_callback(tl->source, G_SOURCE_FUNC(timer_fd_dispatch), tl, NULL);
    g_source_attach(tl->source, ctx);
    return tl;
}

void timer_list_free(TimerList *tl)
{
    while (tl->head) {
        timer_unlink_locked(tl->head);  /* no thread is left to race with */
    }
    g_source_destroy(tl->source);
    g_source_unref(tl->source);
    close(tl->fd);
    pthread_mutex_destroy(&tl->lock);
    g_free(tl);
}

uint64_t timer_list_fd_sets(TimerList *tl)
{
    pthread_mutex_lock(&tl->lock);
    uint64_t sets = tl->fd_sets;
    pthread_mutex_unlock(&tl->lock);
    return sets;
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
    QEMUTimer *t = g_new0(QEMUTimer, 1);
    t->list = tl;
    t->cb = cb;
    t->opaque = opaque;
    return t;
}

QEMUTimer *timer_new(QEMUTimerCB *cb, void *opaque)
{
    return timer_new_on(main_loop_timers(), cb, opaque);
}

void timer_free(QEMUTimer *t)
{
    if (t) {
        timer_del(t);
        g_free(t);
    }
}

/* Unlink t if pending. Lock held. */
static void timer_unlink_locked(QEMUTimer *t)
{
    if (!t->pending) {
        return;
    }
    QEMUTimer **link = &t->list->head;
    while (*link != t) {
        link = &(*link)->next;
    }
    *link = t->next;
    t->next = NULL;
    t->pending = false;
}

void timer_mod(QEMUTimer *t, int64_t expire_ns)
{
    TimerList *tl = t->list;
    pthread_mutex_lock(&tl->lock);
    timer_unlink_locked(t);
    /* Equal deadlines fire in the order they were armed. */
    QEMUTimer **link = &tl->head;
    while (*link && (*link)->expire_ns <= expire_ns) {
        link = &(*link)->next;
    }
    t->expire_ns = expire_ns;
    t->pending = true;
    t->next = *link;
    *link = t;
    timer_fd_cover_head_locked(tl);
    pthread_mutex_unlock(&tl->lock);
}

void timer_del(QEMUTimer *t)
{
    pthread_mutex_lock(&t->list->lock);
    timer_unlink_locked(t);
    pthread_mutex_unlock(&t->list->lock);
}

bool timer_pending(QEMUTimer *t)
{
    pthread_mutex_lock(&t->list->lock);
    bool pending = t->pending;
    pthread_mutex_unlock(&t->list->lock);
    return pending;
}

int64_t timer_expire_time(QEMUTimer *t)
{
    pthread_mutex_lock(&t->list->lock);
    int64_t expire = t->pending ? t->expire_ns : -1;
    pthread_mutex_unlock(&t->list->lock);
    return expire;
}

/*
 * "Now" is read once, so a callback that re-arms itself for a deadline
 * that has also passed (a periodic timer catching up) runs again in this
 * call only while its deadlines stay behind that instant: the loop ends.
 */
int64_t timer_list_run_due(TimerList *tl)
{
    int64_t now = clock_get_ns();
    for (;;) {
        pthread_mutex_lock(&tl->lock);
        QEMUTimer *t = tl->head;
        if (!t || t->expire_ns > now) {
            timer_fd_cover_head_locked(tl);
            int64_t next = t ? t->expire_ns : -1;
            pthread_mutex_unlock(&tl->lock);
            return next;
        }
        timer_unlink_locked(t);
        QEMUTimerCB *cb = t->cb;
        void *opaque = t->opaque;
        pthread_mutex_unlock(&tl->lock);
        cb(opaque);
    }
}

int64_t timers_run_due(void)
{
    return timer_list_run_due(main_loop_timers());
}
