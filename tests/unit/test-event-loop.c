/*
 * The event-loop pieces every backend builds on: fd watches, event
 * notifiers, bottom halves, I/O threads and the worker pool.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include "qemu/bh.h"
#include "qemu/event-notifier.h"
#include "qemu/fd-watch.h"
#include "qemu/thread-naming.h"
#include "qemu/thread-pool.h"
#include "hw/qdev.h"
#include "sysemu/iothread.h"

/* Iterate ctx without blocking until nothing is ready. */
static void run_pending(GMainContext *ctx)
{
    while (g_main_context_iteration(ctx, FALSE)) {
    }
}

/* ---- fd watches ---- */

typedef struct PipeWatch {
    int fds[2];
    GIOCondition want;
    GIOCondition last;
    unsigned calls;
} PipeWatch;

static GIOCondition pipe_prepare(void *opaque)
{
    return ((PipeWatch *)opaque)->want;
}

static void pipe_ready(void *opaque, GIOCondition revents)
{
    PipeWatch *p = opaque;
    char c;
    p->last = revents;
    p->calls++;
    if (revents & G_IO_HUP) {
        p->want = 0;            /* as a backend stops watching a closed fd */
    } else if (revents & G_IO_IN) {
        g_assert_cmpint(read(p->fds[0], &c, 1), ==, 1);
    }
}

/* A watch polls its fd only while prepare asks for something; it reports
 * what poll said, a hang-up included. */
static void test_fd_watch_follows_prepare(void)
{
    GMainContext *ctx = g_main_context_new();
    PipeWatch p = { .want = 0 };
    g_assert_cmpint(pipe(p.fds), ==, 0);
    FdWatch *w = fd_watch_new(ctx, p.fds[0], 0, pipe_prepare, pipe_ready, &p);

    g_assert_cmpint(write(p.fds[1], "x", 1), ==, 1);
    run_pending(ctx);
    g_assert_cmpuint(p.calls, ==, 0);           /* readable, but not asked */
    p.want = G_IO_IN;
    run_pending(ctx);
    g_assert_cmpuint(p.calls, ==, 1);
    g_assert_true(p.last & G_IO_IN);
    run_pending(ctx);
    g_assert_cmpuint(p.calls, ==, 1);           /* drained: nothing more */

    close(p.fds[1]);
    p.want = G_IO_IN;
    run_pending(ctx);               /* returns: the hung-up fd left the set */
    g_assert_cmpuint(p.calls, ==, 2);
    g_assert_true(p.last & G_IO_HUP);
    fd_watch_free(w);
    close(p.fds[0]);
    g_main_context_unref(ctx);
}

static void fixed_ready(void *opaque, GIOCondition revents)
{
    PipeWatch *p = opaque;
    p->calls++;
    p->last = revents;
    char c;
    g_assert_cmpint(read(p->fds[0], &c, 1), ==, 1);
}

static void test_fd_watch_fixed_condition(void)
{
    GMainContext *ctx = g_main_context_new();
    PipeWatch p = { 0 };
    g_assert_cmpint(pipe(p.fds), ==, 0);
    FdWatch *w = fd_watch_new(ctx, p.fds[0], G_IO_IN, NULL, fixed_ready, &p);
    g_assert_cmpint(write(p.fds[1], "ab", 2), ==, 2);
    run_pending(ctx);
    g_assert_cmpuint(p.calls, ==, 2);
    fd_watch_free(w);
    close(p.fds[0]);
    close(p.fds[1]);
    g_main_context_unref(ctx);
}

/* ---- event notifiers ---- */

#define SETTERS 4
#define SETS_EACH 1000

static EventNotifier shared_notifier;
static atomic_uint handler_calls;

static void *set_many(void *arg)
{
    for (int i = 0; i < SETS_EACH; i++) {
        event_notifier_set(&shared_notifier);
    }
    return NULL;
}

static void count_and_clear(EventNotifier *e)
{
    if (event_notifier_test_and_clear(e)) {
        atomic_fetch_add(&handler_calls, 1);
    }
}

static void test_event_notifier_from_threads(void)
{
    GMainContext *ctx = g_main_context_new();
    Error *err = NULL;
    g_assert_true(event_notifier_init(&shared_notifier, &err));
    g_assert_false(event_notifier_test_and_clear(&shared_notifier));
    event_notifier_set(&shared_notifier);
    event_notifier_set(&shared_notifier);
    g_assert_true(event_notifier_test_and_clear(&shared_notifier));   /* both at once */
    g_assert_false(event_notifier_test_and_clear(&shared_notifier));

    event_notifier_set_handler(&shared_notifier, ctx, count_and_clear);
    pthread_t threads[SETTERS];
    for (int i = 0; i < SETTERS; i++) {
        pthread_create(&threads[i], NULL, set_many, NULL);
    }
    for (int i = 0; i < SETTERS; i++) {
        pthread_join(threads[i], NULL);
    }
    run_pending(ctx);
    g_assert_cmpuint(atomic_load(&handler_calls), >=, 1);
    g_assert_cmpuint(atomic_load(&handler_calls), <=, SETTERS * SETS_EACH);
    g_assert_false(event_notifier_test_and_clear(&shared_notifier));  /* all consumed */
    event_notifier_cleanup(&shared_notifier);
    g_main_context_unref(ctx);
}

/* ---- I/O threads and bottom halves ---- */

static void record_thread(void *opaque)
{
    *(pthread_t *)opaque = pthread_self();
}

typedef struct BHProbe {
    unsigned runs;
    pthread_t thread;
    pthread_mutex_t lock;       /* not GMutex: ThreadSanitizer sees pthreads */
    pthread_cond_t ran;
} BHProbe;

static void bh_probe_run(void *opaque)
{
    BHProbe *p = opaque;
    pthread_mutex_lock(&p->lock);
    p->thread = pthread_self();
    p->runs++;
    pthread_cond_signal(&p->ran);
    pthread_mutex_unlock(&p->lock);
}

typedef struct BHNew {
    GMainContext *ctx;
    BHProbe *probe;
    QEMUBH *bh;
} BHNew;

static void bh_new_there(void *opaque)
{
    BHNew *n = opaque;
    n->bh = qemu_bh_new(n->ctx, bh_probe_run, n->probe);
}

static void test_iothread_runs_its_context(void)
{
    Error *err = NULL;
    /* QEMU's thread name, as -name debug-threads=on asks for it. */
    thread_naming_enable(true);
    IOThread *t = iothread_new("io0", &err);
    thread_naming_enable(false);
    g_assert_nonnull(t);
    g_assert_true(iothread_find("io0") == t);
    g_assert_cmpstr(iothread_id(t), ==, "io0");
    g_assert_null(iothread_new("io0", &err));
    g_assert_nonnull(strstr(err->msg, "'io0' is already used"));
    error_free(err);

    pthread_t io_thread;
    iothread_run_sync(t, record_thread, &io_thread);
    g_assert_false(pthread_equal(io_thread, pthread_self()));
    char name[16];
    pthread_getname_np(io_thread, name, sizeof(name));
    g_assert_cmpstr(name, ==, "IO io0");

    /* A bottom half made there and scheduled here runs there. */
    BHProbe probe = { .lock = PTHREAD_MUTEX_INITIALIZER, .ran = PTHREAD_COND_INITIALIZER };
    BHNew new_bh = { .ctx = iothread_context(t), .probe = &probe };
    iothread_run_sync(t, bh_new_there, &new_bh);
    QEMUBH *bh = new_bh.bh;
    pthread_mutex_lock(&probe.lock);
    qemu_bh_schedule(bh);
    while (probe.runs < 1) {
        pthread_cond_wait(&probe.ran, &probe.lock);
    }
    g_assert_true(pthread_equal(probe.thread, io_thread));
    pthread_mutex_unlock(&probe.lock);
    iothread_run_sync(t, (void (*)(void *))qemu_bh_delete, bh);
    iothread_free(t);
    g_assert_null(iothread_find("io0"));
}

static void count_run(void *opaque)
{
    (*(unsigned *)opaque)++;
}

static void test_bh_schedules_coalesce(void)
{
    GMainContext *ctx = g_main_context_new();
    unsigned runs = 0;
    QEMUBH *bh = qemu_bh_new(ctx, count_run, &runs);
    run_pending(ctx);
    g_assert_cmpuint(runs, ==, 0);
    qemu_bh_schedule(bh);
    qemu_bh_schedule(bh);
    run_pending(ctx);
    g_assert_cmpuint(runs, ==, 1);
    qemu_bh_schedule(bh);
    qemu_bh_delete(bh);                         /* deleted before it ran */
    run_pending(ctx);
    g_assert_cmpuint(runs, ==, 1);
    g_main_context_unref(ctx);
}

/* What the last poll of a context found ready (set as its poll function:
 * GLib gives that no user data). */
static gint last_poll_ready;

static gint counting_poll(GPollFD *fds, guint nfds, gint timeout)
{
    last_poll_ready = g_poll(fds, nfds, timeout);
    return last_poll_ready;
}

typedef struct Chain {
    QEMUBH *next;
    unsigned runs;
} Chain;

static void chain_run(void *opaque)
{
    Chain *c = opaque;
    c->runs++;
    qemu_bh_schedule(c->next);
}

/* A bottom half scheduled by the thread that is dispatching its context
 * runs in the next iteration with no wake-up: that iteration's poll finds
 * nothing ready. One scheduled from outside an iteration wakes the context
 * (its poll finds the wake-up fd). */
static void test_bh_schedule_from_own_context(void)
{
    GMainContext *ctx = g_main_context_new();
    g_main_context_set_poll_func(ctx, counting_poll);
    unsigned runs = 0;
    QEMUBH *second = qemu_bh_new(ctx, count_run, &runs);
    Chain chain = { .next = second };
    QEMUBH *first = qemu_bh_new(ctx, chain_run, &chain);
    run_pending(ctx);

    qemu_bh_schedule(first);                    /* not in an iteration */
    g_assert_true(g_main_context_iteration(ctx, FALSE));
    g_assert_cmpint(last_poll_ready, ==, 1);
    g_assert_cmpuint(chain.runs, ==, 1);
    g_assert_cmpuint(runs, ==, 0);

    g_assert_true(g_main_context_iteration(ctx, FALSE));
    g_assert_cmpint(last_poll_ready, ==, 0);
    g_assert_cmpuint(runs, ==, 1);
    g_assert_false(g_main_context_iteration(ctx, FALSE));

    qemu_bh_delete(first);
    qemu_bh_delete(second);
    g_main_context_unref(ctx);
}

/* ---- the worker pool ---- */

#define POOL_REQUESTS 200

typedef struct PoolRequest {
    int index;
    pthread_t worker;
    pthread_t completer;
    int done_ret;
    unsigned done_calls;
} PoolRequest;

static int pool_work(void *opaque)
{
    PoolRequest *r = opaque;
    r->worker = pthread_self();
    g_usleep(g_random_int_range(0, 200));
    return r->index * 3;
}

static void pool_done(void *opaque, int ret)
{
    PoolRequest *r = opaque;
    r->completer = pthread_self();
    r->done_ret = ret;
    r->done_calls++;
}

/* Work runs on workers; each completion comes back once, with its result,
 * on the pool's context; drain waits for them all. */
static void test_thread_pool_completes_on_its_context(void)
{
    GMainContext *ctx = g_main_context_new();
    Error *err = NULL;
    ThreadPool *pool = thread_pool_new(ctx, 4, &err);
    g_assert_nonnull(pool);
    PoolRequest reqs[POOL_REQUESTS] = { 0 };
    for (int i = 0; i < POOL_REQUESTS; i++) {
        reqs[i].index = i;
        thread_pool_submit(pool, pool_work, pool_done, &reqs[i]);
    }
    g_assert_cmpuint(thread_pool_in_flight(pool), >, 0);
    thread_pool_drain(pool);
    g_assert_cmpuint(thread_pool_in_flight(pool), ==, 0);
    for (int i = 0; i < POOL_REQUESTS; i++) {
        g_assert_cmpuint(reqs[i].done_calls, ==, 1);
        g_assert_cmpint(reqs[i].done_ret, ==, i * 3);
        g_assert_false(pthread_equal(reqs[i].worker, pthread_self()));
        g_assert_true(pthread_equal(reqs[i].completer, pthread_self()));
    }
    thread_pool_free(pool);
    g_main_context_unref(ctx);
}

/* ---- the drain before a reset ---- */

#define DRAIN_REQUESTS 20

/* A device whose host work runs on a worker pool of an I/O thread and
 * whose completions take the device lock, as a disk's will. */
typedef struct PoolDevice {
    QEMUDevice dev;
    IOThread *iothread;
    ThreadPool *pool;
    unsigned completed;         /* under the device lock */
    unsigned completed_at_reset;
    unsigned in_flight_at_reset;
    bool drained_unlocked;
} PoolDevice;

static int slow_work(void *opaque)
{
    g_usleep(2000);
    return 0;
}

static void locked_done(void *opaque, int ret)
{
    PoolDevice *d = opaque;
    device_lock(&d->dev);
    d->completed++;
    device_unlock(&d->dev);
}

static void pool_device_create_pool(void *opaque)
{
    PoolDevice *d = opaque;
    Error *err = NULL;
    d->pool = thread_pool_new(iothread_context(d->iothread), 2, &err);
    g_assert_nonnull(d->pool);
}

static void pool_device_drain_on_thread(void *opaque)
{
    thread_pool_drain(((PoolDevice *)opaque)->pool);
}

static void pool_device_free_pool(void *opaque)
{
    thread_pool_free(((PoolDevice *)opaque)->pool);
}

static void pool_device_drain(QEMUDevice *dev)
{
    PoolDevice *d = (PoolDevice *)dev;
    /* Called without the lock: the completions need it. */
    if (pthread_mutex_trylock(&device_lock_of(dev)->mutex) == 0) {
        pthread_mutex_unlock(&device_lock_of(dev)->mutex);
        d->drained_unlocked = true;
    }
    iothread_run_sync(d->iothread, pool_device_drain_on_thread, d);
}

static void pool_device_reset(QEMUDevice *dev)
{
    PoolDevice *d = (PoolDevice *)dev;
    d->completed_at_reset = d->completed;
    d->in_flight_at_reset = thread_pool_in_flight(d->pool);
}

/* device_reset_all drains first, without the device lock: every request
 * in flight has completed (under the lock) before the reset runs. */
static void test_reset_drains_in_flight_work(void)
{
    Error *err = NULL;
    /* Static: a device stays in the device list for the program's life. */
    static PoolDevice d = { .dev.reset = pool_device_reset, .dev.drain = pool_device_drain };
    device_init(&d.dev, "pool-device", "pooldev");
    d.iothread = iothread_new("drain-test", &err);
    g_assert_nonnull(d.iothread);
    iothread_run_sync(d.iothread, pool_device_create_pool, &d);
    for (int i = 0; i < DRAIN_REQUESTS; i++) {
        thread_pool_submit(d.pool, slow_work, locked_done, &d);
    }
    device_reset_all();
    g_assert_true(d.drained_unlocked);
    g_assert_cmpuint(d.in_flight_at_reset, ==, 0);
    g_assert_cmpuint(d.completed_at_reset, ==, DRAIN_REQUESTS);
    iothread_run_sync(d.iothread, pool_device_free_pool, &d);
    iothread_free(d.iothread);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/event-loop/fd-watch-follows-prepare", test_fd_watch_follows_prepare);
    g_test_add_func("/event-loop/fd-watch-fixed-condition", test_fd_watch_fixed_condition);
    g_test_add_func("/event-loop/event-notifier-from-threads", test_event_notifier_from_threads);
    g_test_add_func("/event-loop/iothread-runs-its-context", test_iothread_runs_its_context);
    g_test_add_func("/event-loop/bh-schedules-coalesce", test_bh_schedules_coalesce);
    g_test_add_func("/event-loop/bh-schedule-from-own-context", test_bh_schedule_from_own_context);
    g_test_add_func("/event-loop/thread-pool", test_thread_pool_completes_on_its_context);
    g_test_add_func("/event-loop/reset-drains-in-flight-work", test_reset_drains_in_flight_work);
    return g_test_run();
}
