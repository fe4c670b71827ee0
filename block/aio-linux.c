/*
 * aio=native: Linux AIO through libaio. One kernel AIO context per
 * GMainContext; requests go down with io_submit from whichever thread
 * submits them (a plugged batch in one call), completions signal an
 * eventfd that the context's thread watches and reaps with io_getevents.
 * Only asynchronous with O_DIRECT, which is why QEMU and the -drive
 * parser require cache.direct for it.
 */
#include <errno.h>
#include <libaio.h>
#include <pthread.h>
#include <urcu/compiler.h>
#include "block-internal.h"
#include "qemu/event-notifier.h"

/* Requests in the kernel at once; more wait in the engine's queue. */
#define LINUX_AIO_MAX_EVENTS 256

typedef struct LinuxAioEngine {
    BlockAioEngine base;
    io_context_t ioctx;
    EventNotifier completed;
    pthread_mutex_t lock;       /* submission: waiting, in_kernel */
    GQueue waiting;             /* BlockRequest *, not yet submitted */
    unsigned in_kernel;
} LinuxAioEngine;

typedef struct LinuxAioRequest {
    struct iocb iocb;           /* first: io_event.obj points here */
    BlockRequest *req;
} LinuxAioRequest;

static LinuxAioRequest *linux_aio_prepare(LinuxAioEngine *e, BlockRequest *req)
{
    LinuxAioRequest *lr = g_new0(LinuxAioRequest, 1);
    struct iovec *iov;
    int niov;
    uint64_t offset = block_request_remaining(req, &iov, &niov);
    (req->op == BLOCK_OP_READ ? io_prep_preadv : io_prep_pwritev)(&lr->iocb, req->fd, iov,
                                                                    niov, offset);
    io_set_eventfd(&lr->iocb, e->completed.fd);
    lr->req = req;
    block_request_to_kernel(lr);
    return lr;
}

/* Submit what fits from the head of the queue, in order. With e->lock. */
static void linux_aio_submit_waiting(LinuxAioEngine *e)
{
    struct iocb *iocbs[LINUX_AIO_MAX_EVENTS];
    unsigned n = 0;
    while (e->in_kernel + n < LINUX_AIO_MAX_EVENTS && !g_queue_is_empty(&e->waiting)) {
        iocbs[n++] = &linux_aio_prepare(e, g_queue_pop_head(&e->waiting))->iocb;
    }
    unsigned done = 0;
    while (done < n) {
        int ret = io_submit(e->ioctx, n - done, iocbs + done);
        if (ret > 0) {
            e->in_kernel += ret;
            done += ret;
            continue;
        }
        if (ret == -EINTR) {
            continue;
        }
        if (ret == -EAGAIN && e->in_kernel > 0) {
            /* The kernel is short of resources: retry after a completion. */
            for (unsigned i = n; i-- > done;) {
                LinuxAioRequest *lr = (LinuxAioRequest *)iocbs[i];
                g_queue_push_head(&e->waiting, lr->req);
                g_free(lr);
            }
            return;
        }
        LinuxAioRequest *lr = (LinuxAioRequest *)iocbs[done++];
        block_request_fail(lr->req, ret);
        g_free(lr);
    }
}

static void linux_aio_submit(BlockAioEngine *engine, BlockRequest **reqs, unsigned n)
{
    LinuxAioEngine *e = (LinuxAioEngine *)engine;
    pthread_mutex_lock(&e->lock);
    for (unsigned i = 0; i < n; i++) {
        g_queue_push_tail(&e->waiting, reqs[i]);
    }
    linux_aio_submit_waiting(e);
    pthread_mutex_unlock(&e->lock);
}

static void linux_aio_completed(EventNotifier *notifier)
{
    LinuxAioEngine *e = caa_container_of(notifier, LinuxAioEngine, completed);
    struct io_event events[64];
    struct timespec no_wait = { 0 };
    int n;

    event_notifier_test_and_clear(notifier);
    do {
        n = io_getevents(e->ioctx, 0, G_N_ELEMENTS(events), events, &no_wait);
        if (n == -EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        pthread_mutex_lock(&e->lock);
        e->in_kernel -= n;
        pthread_mutex_unlock(&e->lock);
        for (int i = 0; i < n; i++) {
            LinuxAioRequest *lr = (LinuxAioRequest *)events[i].obj;
            block_request_from_kernel(lr);
            BlockRequest *req = lr->req;
            g_free(lr);
            /* res is a byte count or a negative errno in an unsigned long. */
            block_request_transferred(req, (long)events[i].res);
        }
    } while (n == G_N_ELEMENTS(events) || n == -EINTR);

    pthread_mutex_lock(&e->lock);
    linux_aio_submit_waiting(e);
    pthread_mutex_unlock(&e->lock);
}

static BlockAioEngine *linux_aio_create(GMainContext *ctx, Error **errp)
{
    LinuxAioEngine *e = g_new0(LinuxAioEngine, 1);
    e->base.ops = &block_aio_linux_ops;
    int ret = io_setup(LINUX_AIO_MAX_EVENTS, &e->ioctx);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "aio=native: io_setup");
        g_free(e);
        return NULL;
    }
    if (!event_notifier_init(&e->completed, errp)) {
        io_destroy(e->ioctx);
        g_free(e);
        return NULL;
    }
    pthread_mutex_init(&e->lock, NULL);
    g_queue_init(&e->waiting);
    event_notifier_set_handler(&e->completed, ctx, linux_aio_completed);
    return &e->base;
}

static void linux_aio_destroy(BlockAioEngine *engine)
{
    LinuxAioEngine *e = (LinuxAioEngine *)engine;
    g_assert(e->in_kernel == 0 && g_queue_is_empty(&e->waiting));
    event_notifier_cleanup(&e->completed);
    io_destroy(e->ioctx);
    pthread_mutex_destroy(&e->lock);
    g_free(e);
}

const BlockAioEngineOps block_aio_linux_ops = {
    .create = linux_aio_create,
    .submit = linux_aio_submit,
    .destroy = linux_aio_destroy,
};
