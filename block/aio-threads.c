/*
 * aio=threads: each request is a blocking system call on one of the
 * context's worker threads (qemu/thread-pool.h), and its result comes back
 * on the context's thread. Also where every engine sends flushes, discards
 * and write-zeroes, which Linux AIO cannot express.
 */
#include <errno.h>
#include <unistd.h>
#include "block-internal.h"
#include "qemu/thread-pool.h"

/* As QEMU's pool: enough workers for a deep queue on a fast disk. */
#define BLOCK_POOL_WORKERS 64

typedef struct ThreadsEngine {
    BlockAioEngine base;
    ThreadPool *pool;
} ThreadsEngine;

/* One preadv/pwritev of what is left; the caller continues a short one.
 * An int holds the result: a request moves at most 1 GiB. */
static int transfer_remaining(BlockRequest *req)
{
    struct iovec *iov;
    int niov;
    off_t offset = block_request_remaining(req, &iov, &niov);
    ssize_t n;
    do {
        n = req->op == BLOCK_OP_READ ? preadv(req->fd, iov, niov, offset)
                                     : pwritev(req->fd, iov, niov, offset);
    } while (n < 0 && (errno == EINTR || errno == EAGAIN));
    return n < 0 ? -errno : (int)n;
}

static int threads_work(void *opaque)
{
    BlockRequest *req = opaque;
    const BlockFile *file = blk_file(req->blk);
    switch (req->op) {
    case BLOCK_OP_READ:
    case BLOCK_OP_WRITE:
        return transfer_remaining(req);
    case BLOCK_OP_FLUSH:
        return block_file_flush(file);
    case BLOCK_OP_DISCARD:
        return block_file_discard(file, req->offset, req->bytes);
    case BLOCK_OP_WRITE_ZEROES:
        return block_file_write_zeroes(file, req->offset, req->bytes,
                                       req->flags & BLK_REQ_MAY_UNMAP);
    }
    g_assert_not_reached();
}

static void threads_done(void *opaque, int ret)
{
    block_request_transferred(opaque, ret);
}

static void threads_submit(BlockAioEngine *engine, BlockRequest **reqs, unsigned n)
{
    ThreadsEngine *e = (ThreadsEngine *)engine;
    for (unsigned i = 0; i < n; i++) {
        thread_pool_submit(e->pool, threads_work, threads_done, reqs[i]);
    }
}

static BlockAioEngine *threads_create(GMainContext *ctx, Error **errp)
{
    ThreadPool *pool = thread_pool_new(ctx, BLOCK_POOL_WORKERS, errp);
    if (!pool) {
        return NULL;
    }
    ThreadsEngine *e = g_new0(ThreadsEngine, 1);
    e->base.ops = &block_aio_threads_ops;
    e->pool = pool;
    return &e->base;
}

static void threads_destroy(BlockAioEngine *engine)
{
    ThreadsEngine *e = (ThreadsEngine *)engine;
    thread_pool_free(e->pool);
    g_free(e);
}

const BlockAioEngineOps block_aio_threads_ops = {
    .create = threads_create,
    .submit = threads_submit,
    .destroy = threads_destroy,
};
