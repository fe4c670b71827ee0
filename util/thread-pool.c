/*
 * Worker threads for blocking host work (qemu/thread-pool.h). Requests wait
 * in a queue for one of at most max_workers threads, started on demand;
 * finished ones wait in a second queue, and an event notifier wakes the
 * pool's context, which calls their done callbacks. pthreads rather than
 * GLib's thread pool and locks: ThreadSanitizer sees the ordering of
 * pthread mutexes, not of GLib's futex-based ones.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <urcu/compiler.h>
#include "qemu/event-notifier.h"
#include "qemu/thread-naming.h"
#include "qemu/thread-pool.h"

typedef struct ThreadPoolRequest {
    ThreadPoolWorkFn *work;
    ThreadPoolDoneFn *done;
    void *opaque;
    int ret;
} ThreadPoolRequest;

struct ThreadPool {
    GMainContext *ctx;
    unsigned max_workers;
    pthread_mutex_t lock;
    pthread_cond_t work_cond;
    GQueue pending;             /* submitted, not started; under lock */
    GQueue completed;           /* finished, done not yet called; under lock */
    GPtrArray *workers;         /* of pthread_t *, under lock */
    unsigned idle_workers;      /* under lock */
    bool stopping;              /* under lock */
    EventNotifier completed_notifier;
    atomic_uint in_flight;
};

static void *thread_pool_worker(void *opaque)
{
    ThreadPool *pool = opaque;
    /* Named by itself (prctl): naming another thread opens its
     * /proc/self/task/TID/comm, which a vCPU thread submitting I/O may
     * not do under -sandbox on (docs/sandbox.md). */
    thread_set_debug_name(pthread_self(), "worker");
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        ThreadPoolRequest *req = g_queue_pop_head(&pool->pending);
        if (!req) {
            if (pool->stopping) {
                break;
            }
            pool->idle_workers++;
            pthread_cond_wait(&pool->work_cond, &pool->lock);
            pool->idle_workers--;
            continue;
        }
        pthread_mutex_unlock(&pool->lock);
        req->ret = req->work(req->opaque);
        pthread_mutex_lock(&pool->lock);
        g_queue_push_tail(&pool->completed, req);
        event_notifier_set(&pool->completed_notifier);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void thread_pool_complete(EventNotifier *e)
{
    ThreadPool *pool = caa_container_of(e, ThreadPool, completed_notifier);
    event_notifier_test_and_clear(e);
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        ThreadPoolRequest *req = g_queue_pop_head(&pool->completed);
        pthread_mutex_unlock(&pool->lock);
        if (!req) {
            return;
        }
        req->done(req->opaque, req->ret);
        g_free(req);
        atomic_fetch_sub(&pool->in_flight, 1);
    }
}

ThreadPool *thread_pool_new(GMainContext *ctx, unsigned max_workers, Error **errp)
{
    ThreadPool *pool = g_new0(ThreadPool, 1);
    if (!event_notifier_init(&pool->completed_notifier, errp)) {
        g_free(pool);
        return NULL;
    }
    pool->ctx = ctx;
    pool->max_workers = MAX(max_workers, 1);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work_cond, NULL);
    g_queue_init(&pool->pending);
    g_queue_init(&pool->completed);
    pool->workers = g_ptr_array_new_with_free_func(g_free);
    atomic_init(&pool->in_flight, 0);
    event_notifier_set_handler(&pool->completed_notifier, ctx, thread_pool_complete);
    return pool;
}

void thread_pool_submit(ThreadPool *pool, ThreadPoolWorkFn *work, ThreadPoolDoneFn *done,
                        void *opaque)
{
    ThreadPoolRequest *req = g_new0(ThreadPoolRequest, 1);
    *req = (ThreadPoolRequest) { .work = work, .done = done, .opaque = opaque };
    atomic_fetch_add(&pool->in_flight, 1);
    pthread_mutex_lock(&pool->lock);
    g_queue_push_tail(&pool->pending, req);
    if (pool->idle_workers) {
        pthread_cond_signal(&pool->work_cond);
    } else if (pool->workers->len < pool->max_workers) {
        pthread_t *thread = g_new(pthread_t, 1);
        if (pthread_create(thread, NULL, thread_pool_worker, pool) == 0) {
            g_ptr_array_add(pool->workers, thread);
        } else {
            g_free(thread);     /* the running workers take it */
            g_assert(pool->workers->len > 0);
        }
    }
    pthread_mutex_unlock(&pool->lock);
}

unsigned thread_pool_in_flight(ThreadPool *pool)
{
    return atomic_load(&pool->in_flight);
}

void thread_pool_drain(ThreadPool *pool)
{
    while (atomic_load(&pool->in_flight)) {
        g_main_context_iteration(pool->ctx, TRUE);
    }
}

void thread_pool_free(ThreadPool *pool)
{
    thread_pool_drain(pool);
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->work_cond);
    pthread_mutex_unlock(&pool->lock);
    for (guint i = 0; i < pool->workers->len; i++) {
        pthread_join(*(pthread_t *)g_ptr_array_index(pool->workers, i), NULL);
    }
    g_ptr_array_unref(pool->workers);
    event_notifier_cleanup(&pool->completed_notifier);
    pthread_cond_destroy(&pool->work_cond);
    pthread_mutex_destroy(&pool->lock);
    g_free(pool);
}
