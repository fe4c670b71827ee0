/*
 * aio=io_uring: one ring per GMainContext. Submitters (vCPU threads, or
 * the context's thread continuing a short transfer) fill the submission
 * queue under a mutex and enter the kernel once per batch; the ring
 * signals a registered eventfd when completions arrive, and the context's
 * thread, the only reader of the completion queue, reaps them.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <urcu/compiler.h>
#include "block-internal.h"
#include "qemu/event-notifier.h"

#define IO_URING_ENTRIES 256

typedef struct IoUringEngine {
    BlockAioEngine base;
    struct io_uring ring;
    EventNotifier completed;
    pthread_mutex_t lock;       /* the submission queue and waiting */
    GQueue waiting;             /* BlockRequest *, no free SQE yet */
} IoUringEngine;

/* Move waiting requests into free SQEs, then enter the kernel. With e->lock. */
static void io_uring_submit_waiting(IoUringEngine *e)
{
    struct io_uring_sqe *sqe;
    while (!g_queue_is_empty(&e->waiting) && (sqe = io_uring_get_sqe(&e->ring))) {
        BlockRequest *req = g_queue_pop_head(&e->waiting);
        struct iovec *iov;
        int niov;
        uint64_t offset = block_request_remaining(req, &iov, &niov);
        (req->op == BLOCK_OP_READ ? io_uring_prep_readv : io_uring_prep_writev)(
            sqe, req->fd, iov, niov, offset);
        io_uring_sqe_set_data(sqe, req);
        block_request_to_kernel(req);
    }
    int ret;
    while ((ret = io_uring_submit(&e->ring)) == -EINTR) {
    }
    /* -EBUSY/-EAGAIN: the kernel is full; the SQEs stay queued and go down
     * with the next submission, at the latest after the next completion. */
}

static void io_uring_engine_submit(BlockAioEngine *engine, BlockRequest **reqs, unsigned n)
{
    IoUringEngine *e = (IoUringEngine *)engine;
    pthread_mutex_lock(&e->lock);
    for (unsigned i = 0; i < n; i++) {
        g_queue_push_tail(&e->waiting, reqs[i]);
    }
    io_uring_submit_waiting(e);
    pthread_mutex_unlock(&e->lock);
}

static void io_uring_completed(EventNotifier *notifier)
{
    IoUringEngine *e = caa_container_of(notifier, IoUringEngine, completed);
    struct io_uring_cqe *cqe;
    unsigned reaped;

    event_notifier_test_and_clear(notifier);
    do {
        BlockRequest *reqs[64];
        int results[64];
        unsigned head;
        reaped = 0;
        io_uring_for_each_cqe(&e->ring, head, cqe) {
            reqs[reaped] = io_uring_cqe_get_data(cqe);
            results[reaped] = cqe->res;
            if (++reaped == G_N_ELEMENTS(reqs)) {
                break;
            }
        }
        io_uring_cq_advance(&e->ring, reaped);
        for (unsigned i = 0; i < reaped; i++) {
            block_request_from_kernel(reqs[i]);
            block_request_transferred(reqs[i], results[i]);
        }
    } while (reaped);

    pthread_mutex_lock(&e->lock);
    if (!g_queue_is_empty(&e->waiting) || io_uring_sq_ready(&e->ring)) {
        io_uring_submit_waiting(e);
    }
    pthread_mutex_unlock(&e->lock);
}

static BlockAioEngine *io_uring_engine_create(GMainContext *ctx, Error **errp)
{
    IoUringEngine *e = g_new0(IoUringEngine, 1);
    e->base.ops = &block_aio_io_uring_ops;
    int ret = io_uring_queue_init(IO_URING_ENTRIES, &e->ring, 0);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "aio=io_uring: cannot set up a ring");
        g_free(e);
        return NULL;
    }
    if (!event_notifier_init(&e->completed, errp)) {
        io_uring_queue_exit(&e->ring);
        g_free(e);
        return NULL;
    }
    ret = io_uring_register_eventfd(&e->ring, e->completed.fd);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "aio=io_uring: cannot register an eventfd");
        event_notifier_cleanup(&e->completed);
        io_uring_queue_exit(&e->ring);
        g_free(e);
        return NULL;
    }
    pthread_mutex_init(&e->lock, NULL);
    g_queue_init(&e->waiting);
    event_notifier_set_handler(&e->completed, ctx, io_uring_completed);
    return &e->base;
}

static void io_uring_engine_destroy(BlockAioEngine *engine)
{
    IoUringEngine *e = (IoUringEngine *)engine;
    g_assert(g_queue_is_empty(&e->waiting));
    event_notifier_cleanup(&e->completed);
    io_uring_queue_exit(&e->ring);
    pthread_mutex_destroy(&e->lock);
    g_free(e);
}

const BlockAioEngineOps block_aio_io_uring_ops = {
    .create = io_uring_engine_create,
    .submit = io_uring_engine_submit,
    .destroy = io_uring_engine_destroy,
};
