/*
 * Timers on the I/O thread (qemu/timer.h).
 *
 * Pending timers sit in one list ordered by deadline, under a mutex so that
 * any thread may arm or cancel them. One timerfd (CLOCK_MONOTONIC, absolute
 * expiry) is always armed to the head of the list and is watched by the
 * main context; whoever changes the head re-arms it while still holding the
 * list lock, so the timerfd can never be left pointing at a stale deadline.
 * Callbacks run with the lock released: they take device locks and often
 * re-arm their own timer.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>
#include "qemu/main-loop.h"
#include "qemu/timer.h"

struct QEMUTimer {
    QEMUTimerCB *cb;
    void *opaque;
    int64_t expire_ns;      /* valid while pending */
    bool pending;
    QEMUTimer *next;        /* list link, ordered by expire_ns */
};

/* pthread rather than GMutex: ThreadSanitizer sees it. */
static pthread_mutex_t timer_list_lock = PTHREAD_MUTEX_INITIALIZER;
static QEMUTimer *timer_list_head;
static int timer_fd = -1;

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

/* Called with timer_list_lock held, whenever the head may have changed. */
static void timer_fd_rearm_locked(void)
{
    struct itimerspec its = { 0 };
    if (timer_list_head) {
        /* A zero it_value would disarm: a deadline at or before time 0
         * becomes 1 ns, which is just as much in the past. */
        int64_t deadline = MAX(timer_list_head->expire_ns, 1);
        its.it_value.tv_sec = deadline / NANOSECONDS_PER_SECOND;
        its.it_value.tv_nsec = deadline % NANOSECONDS_PER_SECOND;
    }
    if (timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        g_error("timerfd_settime: %s", strerror(errno));
    }
}

static gboolean timer_fd_dispatch(gint fd, GIOCondition cond, gpointer opaque)
{
    uint64_t expirations;
    /* Only clears readiness; the list, not the count, says what is due.
     * EAGAIN is fine: a re-arm since the poll already reset the count. */
    if (read(fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) {
        g_error("timerfd read: %s", strerror(errno));
    }
    timers_run_due();
    return G_SOURCE_CONTINUE;
}

/* The timerfd is created on first use so that programs (and unit tests)
 * need no explicit initialisation call. */
static void timer_subsystem_init(void)
{
    static gsize initialised;
    if (g_once_init_enter(&initialised)) {
        timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (timer_fd < 0) {
            g_error("timerfd_create: %s", strerror(errno));
        }
        GSource *src = g_unix_fd_source_new(timer_fd, G_IO_IN);
        g_source_set_callback(src, G_SOURCE_FUNC(timer_fd_dispatch), NULL, NULL);
        g_source_attach(src, main_loop_context());
        g_source_unref(src);
        g_once_init_leave(&initialised, 1);
    }
}

QEMUTimer *timer_new(QEMUTimerCB *cb, void *opaque)
{
    timer_subsystem_init();
    QEMUTimer *t = g_new0(QEMUTimer, 1);
    t->cb = cb;
    t->opaque = opaque;
    return t;
}

void timer_free(QEMUTimer *t)
{
    if (t) {
        timer_del(t);
        g_free(t);
    }
}

/* Unlink t if pending; true if it was the head. Lock held. */
static bool timer_unlink_locked(QEMUTimer *t)
{
    if (!t->pending) {
        return false;
    }
    QEMUTimer **link = &timer_list_head;
    while (*link != t) {
        link = &(*link)->next;
    }
    *link = t->next;
    t->next = NULL;
    t->pending = false;
    return link == &timer_list_head;
}

void timer_mod(QEMUTimer *t, int64_t expire_ns)
{
    pthread_mutex_lock(&timer_list_lock);
    bool was_head = timer_unlink_locked(t);
    /* Equal deadlines fire in the order they were armed. */
    QEMUTimer **link = &timer_list_head;
    while (*link && (*link)->expire_ns <= expire_ns) {
        link = &(*link)->next;
    }
    t->expire_ns = expire_ns;
    t->pending = true;
    t->next = *link;
    *link = t;
    if (was_head || link == &timer_list_head) {
        timer_fd_rearm_locked();
    }
    pthread_mutex_unlock(&timer_list_lock);
}

void timer_del(QEMUTimer *t)
{
    pthread_mutex_lock(&timer_list_lock);
    if (timer_unlink_locked(t)) {
        timer_fd_rearm_locked();
    }
    pthread_mutex_unlock(&timer_list_lock);
}

bool timer_pending(QEMUTimer *t)
{
    pthread_mutex_lock(&timer_list_lock);
    bool pending = t->pending;
    pthread_mutex_unlock(&timer_list_lock);
    return pending;
}

int64_t timer_expire_time(QEMUTimer *t)
{
    pthread_mutex_lock(&timer_list_lock);
    int64_t expire = t->pending ? t->expire_ns : -1;
    pthread_mutex_unlock(&timer_list_lock);
    return expire;
}

/*
 * "Now" is read once, so a callback that re-arms itself for a deadline
 * that has also passed (a periodic timer catching up) runs again in this
 * call only while its deadlines stay behind that instant: the loop ends.
 */
int64_t timers_run_due(void)
{
    int64_t now = clock_get_ns();
    for (;;) {
        pthread_mutex_lock(&timer_list_lock);
        QEMUTimer *t = timer_list_head;
        if (!t || t->expire_ns > now) {
            int64_t next = t ? t->expire_ns : -1;
            pthread_mutex_unlock(&timer_list_lock);
            return next;
        }
        timer_unlink_locked(t);
        timer_fd_rearm_locked();
        QEMUTimerCB *cb = t->cb;
        void *opaque = t->opaque;
        pthread_mutex_unlock(&timer_list_lock);
        cb(opaque);
    }
}
