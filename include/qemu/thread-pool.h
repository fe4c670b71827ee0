/*
 * A pool of worker threads for blocking host work (a read() of an image, an
 * fsync) whose completions come back on one context's thread: work(opaque)
 * runs on a worker, then done(opaque, ret) on the pool's context. A device
 * submits with its lock held and gets the completion later, under its lock
 * again, without ever waiting for the host while holding it.
 */
#ifndef QEMU_THREAD_POOL_H
#define QEMU_THREAD_POOL_H

#include <glib.h>
#include "qemu/error.h"

typedef struct ThreadPool ThreadPool;
typedef int ThreadPoolWorkFn(void *opaque);
typedef void ThreadPoolDoneFn(void *opaque, int ret);

ThreadPool *thread_pool_new(GMainContext *ctx, unsigned max_workers, Error **errp);
/* Any thread. */
void thread_pool_submit(ThreadPool *pool, ThreadPoolWorkFn *work, ThreadPoolDoneFn *done,
                        void *opaque);
/* Submitted and not yet completed (done not yet called). Any thread. */
unsigned thread_pool_in_flight(ThreadPool *pool);
/* Run the pool's context until every submitted request has completed: on
 * that context's thread, or while nothing else runs it. */
void thread_pool_drain(ThreadPool *pool);
/* Drains, then frees. */
void thread_pool_free(ThreadPool *pool);

#endif
