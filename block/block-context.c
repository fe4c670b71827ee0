/*
 * The engines of each GMainContext that completes block requests, shared
 * by every drive attached there: one worker pool, one Linux AIO context
 * and one io_uring per context (created when a drive first needs them),
 * so a virtqueue's batch and another drive's requests go down in the same
 * system calls and come back through the same eventfd.
 */
#include <pthread.h>
#include "block-internal.h"

struct BlockContext {
    GMainContext *ctx;
    unsigned refs;                  /* under registry_lock */
    BlockAioEngine *engines[3];     /* by DriveAioMode; created on ctx's thread */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static GHashTable *registry;        /* GMainContext * -> BlockContext * */

static const BlockAioEngineOps *const engine_ops[] = {
    [DRIVE_AIO_THREADS] = &block_aio_threads_ops,
    [DRIVE_AIO_NATIVE] = &block_aio_linux_ops,
    [DRIVE_AIO_IO_URING] = &block_aio_io_uring_ops,
};

static bool ensure_engine(BlockContext *bctx, DriveAioMode aio, Error **errp)
{
    if (!bctx->engines[aio]) {
        bctx->engines[aio] = engine_ops[aio]->create(bctx->ctx, errp);
    }
    return bctx->engines[aio] != NULL;
}

BlockContext *block_context_ref(GMainContext *ctx, DriveAioMode aio, Error **errp)
{
    pthread_mutex_lock(&registry_lock);
    if (!registry) {
        registry = g_hash_table_new(NULL, NULL);
    }
    BlockContext *bctx = g_hash_table_lookup(registry, ctx);
    if (!bctx) {
        bctx = g_new0(BlockContext, 1);
        bctx->ctx = g_main_context_ref(ctx);
        g_hash_table_insert(registry, ctx, bctx);
    }
    bctx->refs++;
    /* Every drive needs the pool: flush, discard and write-zeroes run there. */
    bool ok = ensure_engine(bctx, DRIVE_AIO_THREADS, errp) && ensure_engine(bctx, aio, errp);
    pthread_mutex_unlock(&registry_lock);
    if (!ok) {
        block_context_unref(bctx);
        return NULL;
    }
    return bctx;
}

void block_context_unref(BlockContext *bctx)
{
    pthread_mutex_lock(&registry_lock);
    bool last = --bctx->refs == 0;
    if (last) {
        g_hash_table_remove(registry, bctx->ctx);
    }
    pthread_mutex_unlock(&registry_lock);
    if (!last) {
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(bctx->engines); i++) {
        if (bctx->engines[i]) {
            bctx->engines[i]->ops->destroy(bctx->engines[i]);
        }
    }
    g_main_context_unref(bctx->ctx);
    g_free(bctx);
}

BlockAioEngine *block_context_engine(BlockContext *bctx, DriveAioMode aio)
{
    return bctx->engines[aio];
}
