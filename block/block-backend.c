/*
 * BlockBackend (block/block-backend.h): request checks, the cache modes'
 * meaning, O_DIRECT alignment, batching, and the one completion path that
 * every engine's results take on the drive's context. docs/storage.md
 * has the picture.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "block-internal.h"
#include "qemu/bh.h"
#include "qemu/main-loop.h"

/* The largest request: results travel as int, and no device needs more. */
#define BLK_MAX_TRANSFER (1u << 30)
#define SECTOR_SIZE 512

struct BlockBackend {
    char *name;
    char *node_name;                /* QEMU's automatic "#blockNNN" */
    BlockAcct *acct;                /* the drive's counters (shared across media) */
    BlockFile file;
    DriveCacheFlags cache;
    DriveAioMode aio;
    DriveDiscardMode discard;
    bool read_only;
    atomic_bool write_cache;        /* guest-visible WCE */

    IOThread *iothread;             /* NULL: the main loop */
    GMainContext *ctx;
    BlockContext *bctx;
    BlockAioEngine *engine;         /* reads and writes */
    BlockAioEngine *pool;           /* everything else */
    QEMUBH *early_bh;               /* completes what never reached the host */

    pthread_mutex_t lock;           /* early_done and the plug */
    GQueue early_done;
    unsigned plug_depth;
    GPtrArray *plugged;

    BlockErrorState on_error;       /* werror/rerror and the requests a stop keeps */

    atomic_uint in_flight;          /* kept requests included */
    pthread_mutex_t drain_lock;     /* wakes a drain waiting for another thread */
    pthread_cond_t drain_cond;
};

const BlockFile *blk_file(const BlockBackend *blk)
{
    return &blk->file;
}

BlockErrorState *blk_error_state(BlockBackend *blk)
{
    return &blk->on_error;
}

/* ---- completion ---- */

static void request_free(BlockRequest *req)
{
    g_free(req->rest_iov);
    g_free(req->iov);
    g_free(req->guest_iov);
    free(req->bounce);
    g_free(req);
}

static void request_account(const BlockRequest *req, int ret)
{
    BlockAcctOutcome outcome = req->invalid ? BLOCK_ACCT_INVALID
                               : ret < 0 ? BLOCK_ACCT_FAILED : BLOCK_ACCT_DONE;
    block_acct_done(req->blk->acct, req->acct_type, outcome, req->offset, req->bytes,
                    req->start_ns);
}

/* The end of every request: accounting, the device's callback, then the
 * count a drain waits for. On the drive's context. */
static void request_complete(BlockRequest *req, int ret)
{
    BlockBackend *blk = req->blk;
    if (ret < 0 && !req->invalid && block_error_handle(&blk->on_error, req, &ret)) {
        return;     /* kept until the VM runs again (werror/rerror=stop) */
    }
    request_account(req, ret);
    req->cb(req->opaque, ret);
    request_free(req);
    if (atomic_fetch_sub(&blk->in_flight, 1) == 1) {
        pthread_mutex_lock(&blk->drain_lock);
        pthread_cond_broadcast(&blk->drain_cond);
        pthread_mutex_unlock(&blk->drain_lock);
    }
}

static void early_done_bh(void *opaque)
{
    BlockBackend *blk = opaque;
    for (;;) {
        pthread_mutex_lock(&blk->lock);
        BlockRequest *req = g_queue_pop_head(&blk->early_done);
        pthread_mutex_unlock(&blk->lock);
        if (!req) {
            return;
        }
        request_complete(req, req->ret);
    }
}

/* A request refused before the host saw it: completes like the others,
 * counts as invalid. */
static void request_refuse(BlockRequest *req, int ret)
{
    req->invalid = ret < 0;
    block_request_fail(req, ret);
}

void block_request_fail(BlockRequest *req, int ret)
{
    BlockBackend *blk = req->blk;
    req->ret = ret;
    pthread_mutex_lock(&blk->lock);
    g_queue_push_tail(&blk->early_done, req);
    pthread_mutex_unlock(&blk->lock);
    qemu_bh_schedule(blk->early_bh);
}

/* ---- submission ---- */

static bool is_transfer(const BlockRequest *req)
{
    return req->op == BLOCK_OP_READ || req->op == BLOCK_OP_WRITE;
}

/* Linux AIO blocks on a descriptor without O_DIRECT: only the direct one
 * goes there, everything else to the pool. */
static BlockAioEngine *engine_for(BlockBackend *blk, const BlockRequest *req)
{
    if (!is_transfer(req) || (blk->aio == DRIVE_AIO_NATIVE && req->fd != blk->file.direct_fd)) {
        return blk->pool;
    }
    return blk->engine;
}

/* Hand reqs to their engines, a batch per engine. */
static void dispatch(BlockBackend *blk, BlockRequest **reqs, unsigned n)
{
    if (n == 1) {               /* the common case, without allocations */
        BlockAioEngine *engine = engine_for(blk, reqs[0]);
        engine->ops->submit(engine, reqs, 1);
        return;
    }
    BlockRequest **to_engine = g_new(BlockRequest *, n);
    BlockRequest **to_pool = g_new(BlockRequest *, n);
    unsigned engine_n = 0, pool_n = 0;
    for (unsigned i = 0; i < n; i++) {
        if (engine_for(blk, reqs[i]) == blk->pool) {
            to_pool[pool_n++] = reqs[i];
        } else {
            to_engine[engine_n++] = reqs[i];
        }
    }
    if (engine_n) {
        blk->engine->ops->submit(blk->engine, to_engine, engine_n);
    }
    if (pool_n) {
        blk->pool->ops->submit(blk->pool, to_pool, pool_n);
    }
    g_free(to_engine);
    g_free(to_pool);
}

static void submit(BlockRequest *req)
{
    BlockBackend *blk = req->blk;
    pthread_mutex_lock(&blk->lock);
    if (blk->plug_depth) {
        g_ptr_array_add(blk->plugged, req);
        pthread_mutex_unlock(&blk->lock);
        return;
    }
    pthread_mutex_unlock(&blk->lock);
    dispatch(blk, &req, 1);
}

void block_request_resubmit(BlockRequest *req)
{
    req->ret = 0;
    dispatch(req->blk, &req, 1);
}

void blk_io_plug(BlockBackend *blk)
{
    pthread_mutex_lock(&blk->lock);
    blk->plug_depth++;
    pthread_mutex_unlock(&blk->lock);
}

void blk_io_unplug(BlockBackend *blk)
{
    GPtrArray *batch = NULL;
    pthread_mutex_lock(&blk->lock);
    g_assert(blk->plug_depth > 0);
    if (--blk->plug_depth == 0 && blk->plugged->len) {
        batch = blk->plugged;
        blk->plugged = g_ptr_array_new();
    }
    pthread_mutex_unlock(&blk->lock);
    if (batch) {
        dispatch(blk, (BlockRequest **)batch->pdata, batch->len);
        g_ptr_array_unref(batch);
    }
}

static BlockAcctType acct_type_of(BlockOp op)
{
    switch (op) {
    case BLOCK_OP_READ:
        return BLOCK_ACCT_READ;
    case BLOCK_OP_FLUSH:
        return BLOCK_ACCT_FLUSH;
    case BLOCK_OP_DISCARD:
        return BLOCK_ACCT_UNMAP;
    default:
        return BLOCK_ACCT_WRITE;
    }
}

static BlockRequest *request_new(BlockBackend *blk, BlockOp op, uint64_t offset,
                                 uint64_t bytes, unsigned flags,
                                 BlockCompletionFunc *cb, void *opaque)
{
    BlockRequest *req = g_new0(BlockRequest, 1);
    *req = (BlockRequest) { .blk = blk, .op = op, .flags = flags, .fd = blk->file.fd,
                            .offset = offset, .bytes = bytes, .cb = cb, .opaque = opaque,
                            .acct_type = acct_type_of(op), .start_ns = block_acct_now_ns() };
    atomic_fetch_add(&blk->in_flight, 1);
    return req;
}

static bool changes_data(BlockOp op)
{
    return op == BLOCK_OP_WRITE || op == BLOCK_OP_DISCARD || op == BLOCK_OP_WRITE_ZEROES;
}

/* 0 or the -errno the request completes with at once. */
static int check_request(const BlockBackend *blk, const BlockRequest *req)
{
    if (req->bytes > BLK_MAX_TRANSFER) {
        return -EINVAL;
    }
    if (req->offset > blk->file.size || req->bytes > blk->file.size - req->offset) {
        return -EIO;
    }
    if (changes_data(req->op) && blk->read_only) {
        return -EROFS;
    }
    return 0;
}

/* A write durable before it completes: FUA, or the write cache off;
 * cache=unsafe ignores both, as it ignores flushes. */
static bool needs_flush_after(const BlockBackend *blk, unsigned flags)
{
    return !blk->cache.no_flush &&
           ((flags & BLK_REQ_FUA) || !atomic_load(&blk->write_cache));
}

static uint64_t iov_size(const struct iovec *iov, int niov)
{
    uint64_t size = 0;
    for (int i = 0; i < niov; i++) {
        size += iov[i].iov_len;
    }
    return size;
}

static void iov_copy(const struct iovec *iov, int niov, uint8_t *buf, bool to_buf)
{
    for (int i = 0; i < niov; i++) {
        if (to_buf) {
            memcpy(buf, iov[i].iov_base, iov[i].iov_len);
        } else {
            memcpy(iov[i].iov_base, buf, iov[i].iov_len);
        }
        buf += iov[i].iov_len;
    }
}

static bool iov_aligned(const struct iovec *iov, int niov, uint32_t align)
{
    for (int i = 0; i < niov; i++) {
        if ((uintptr_t)iov[i].iov_base % align || iov[i].iov_len % align) {
            return false;
        }
    }
    return true;
}

/* A probed raw image must not become another format's header (QEMU's
 * restriction): refuse a write whose block 0 would probe as one. */
static bool write_makes_header(const BlockBackend *blk, const BlockRequest *req,
                               const struct iovec *iov, int niov)
{
    if (!blk->file.probed_raw || req->offset != 0) {
        return false;
    }
    uint8_t sector[SECTOR_SIZE] = { 0 };
    size_t copied = 0;
    for (int i = 0; i < niov && copied < sizeof(sector); i++) {
        size_t n = MIN(iov[i].iov_len, sizeof(sector) - copied);
        memcpy(sector + copied, iov[i].iov_base, n);
        copied += n;
    }
    return block_probe_format(sector, sizeof(sector)) != NULL;
}

/* Replace the device's iovecs by one aligned buffer (O_DIRECT wants what
 * guest memory may not give; preadv takes at most IOV_MAX entries). */
static void use_bounce_buffer(BlockRequest *req, uint32_t align)
{
    if (posix_memalign(&req->bounce, MAX(align, sizeof(void *)), req->bytes) != 0) {
        g_error("out of memory for a %" G_GUINT64_FORMAT "-byte bounce buffer",
                (guint64)req->bytes);
    }
    if (req->op == BLOCK_OP_WRITE) {
        iov_copy(req->iov, req->niov, req->bounce, true);
    }
    req->guest_iov = req->iov;
    req->guest_niov = req->niov;
    req->iov = g_new(struct iovec, 1);
    req->iov[0] = (struct iovec) { .iov_base = req->bounce, .iov_len = req->bytes };
    req->niov = 1;
}

/* Which descriptor, and whether to bounce. */
static void prepare_transfer(BlockBackend *blk, BlockRequest *req)
{
    const BlockFile *file = &blk->file;
    uint32_t align = 1;
    if (file->direct_fd >= 0 && (req->offset | req->bytes) % file->request_align == 0) {
        req->fd = file->direct_fd;
        align = file->memory_align;
    }
    /* Otherwise (no O_DIRECT, or a range the host's blocks cannot take
     * directly) the buffered descriptor: Linux keeps its page cache
     * coherent with direct I/O to the same file. */
    if (req->niov > IOV_MAX || !iov_aligned(req->iov, req->niov, align)) {
        use_bounce_buffer(req, align);
    }
}

static void submit_transfer(BlockBackend *blk, BlockOp op, uint64_t offset,
                            const struct iovec *iov, int niov, unsigned flags,
                            BlockCompletionFunc *cb, void *opaque)
{
    BlockRequest *req = request_new(blk, op, offset, iov_size(iov, niov), flags, cb, opaque);
    int ret = check_request(blk, req);
    if (ret == 0 && op == BLOCK_OP_WRITE && write_makes_header(blk, req, iov, niov)) {
        ret = -EPERM;
    }
    if (ret < 0 || req->bytes == 0) {
        request_refuse(req, ret);
        return;
    }
    req->iov = g_memdup2(iov, niov * sizeof(*iov));
    req->niov = niov;
    req->flush_after = op == BLOCK_OP_WRITE && needs_flush_after(blk, flags);
    prepare_transfer(blk, req);
    submit(req);
}

void blk_aio_preadv(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov,
                    BlockCompletionFunc *cb, void *opaque)
{
    submit_transfer(blk, BLOCK_OP_READ, offset, iov, niov, 0, cb, opaque);
}

void blk_aio_pwritev(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov,
                     unsigned flags, BlockCompletionFunc *cb, void *opaque)
{
    submit_transfer(blk, BLOCK_OP_WRITE, offset, iov, niov, flags, cb, opaque);
}

void blk_aio_flush(BlockBackend *blk, BlockCompletionFunc *cb, void *opaque)
{
    BlockRequest *req = request_new(blk, BLOCK_OP_FLUSH, 0, 0, 0, cb, opaque);
    if (blk->read_only || blk->cache.no_flush) {
        block_request_fail(req, 0);
        return;
    }
    submit(req);
}

void blk_aio_pdiscard(BlockBackend *blk, uint64_t offset, uint64_t bytes,
                      BlockCompletionFunc *cb, void *opaque)
{
    BlockRequest *req = request_new(blk, BLOCK_OP_DISCARD, offset, bytes, 0, cb, opaque);
    int ret = check_request(blk, req);
    if (ret < 0 || bytes == 0 || blk->discard == DRIVE_DISCARD_IGNORE) {
        request_refuse(req, ret);
        return;
    }
    submit(req);
}

void blk_aio_pwrite_zeroes(BlockBackend *blk, uint64_t offset, uint64_t bytes,
                           unsigned flags, BlockCompletionFunc *cb, void *opaque)
{
    if (blk->discard != DRIVE_DISCARD_UNMAP) {
        flags &= ~BLK_REQ_MAY_UNMAP;
    }
    BlockRequest *req = request_new(blk, BLOCK_OP_WRITE_ZEROES, offset, bytes, flags,
                                    cb, opaque);
    int ret = check_request(blk, req);
    if (ret < 0 || bytes == 0) {
        request_refuse(req, ret);
        return;
    }
    req->flush_after = needs_flush_after(blk, flags);
    submit(req);
}

/* ---- results from the engines ---- */

uint64_t block_request_remaining(BlockRequest *req, struct iovec **iov, int *niov)
{
    if (req->done == 0) {
        *iov = req->iov;
        *niov = req->niov;
        return req->offset;
    }
    uint64_t skip = req->done;
    int first = 0;
    while (skip >= req->iov[first].iov_len) {
        skip -= req->iov[first].iov_len;
        first++;
    }
    g_free(req->rest_iov);
    req->rest_iov = g_memdup2(req->iov + first, (req->niov - first) * sizeof(struct iovec));
    req->rest_iov[0].iov_base = (uint8_t *)req->rest_iov[0].iov_base + skip;
    req->rest_iov[0].iov_len -= skip;
    *iov = req->rest_iov;
    *niov = req->niov - first;
    return req->offset + req->done;
}

static void zero_remaining(BlockRequest *req)
{
    struct iovec *iov;
    int niov;
    block_request_remaining(req, &iov, &niov);
    for (int i = 0; i < niov; i++) {
        memset(iov[i].iov_base, 0, iov[i].iov_len);
    }
    req->done = req->bytes;
}

static void request_finish(BlockRequest *req, int ret)
{
    if (ret == 0 && req->flush_after) {
        /* Writethrough or FUA: the write counts once it is durable. */
        req->flush_after = false;
        req->op = BLOCK_OP_FLUSH;
        req->blk->pool->ops->submit(req->blk->pool, &req, 1);
        return;
    }
    if (ret == 0 && req->op == BLOCK_OP_READ && req->guest_iov) {
        iov_copy(req->guest_iov, req->guest_niov, req->bounce, false);
    }
    request_complete(req, ret);
}

/* A read that stopped short: the end of the file (the rounded-up tail of
 * an image whose size is not a multiple of 512) reads as zeroes. */
static bool read_reached_eof(BlockRequest *req, int64_t result)
{
    return result == 0 ||
           req->offset + req->done >= block_file_host_size(&req->blk->file);
}

int64_t (*block_fault_injector)(const BlockRequest *req, int64_t result);

void block_request_transferred(BlockRequest *req, int64_t result)
{
    if (block_fault_injector) {
        result = block_fault_injector(req, result);
    }
    if (!is_transfer(req)) {
        request_finish(req, result < 0 ? result : 0);
        return;
    }
    if (result == -EINTR || result == -EAGAIN) {
        dispatch(req->blk, &req, 1);
        return;
    }
    if (result < 0) {
        request_finish(req, result);
        return;
    }
    req->done += result;
    if (req->done < req->bytes) {
        if (req->op == BLOCK_OP_READ && read_reached_eof(req, result)) {
            zero_remaining(req);
        } else if (result == 0) {
            request_finish(req, -EIO);      /* a write that makes no progress */
            return;
        } else {
            dispatch(req->blk, &req, 1);    /* continue a short transfer */
            return;
        }
    }
    request_finish(req, 0);
}

/* ---- life cycle ---- */

typedef struct AttachArgs {
    BlockBackend *blk;
    GMainContext *ctx;
    BlockContext *bctx;
    QEMUBH *early_bh;
    Error *err;
} AttachArgs;

/* Sources are attached and freed on their context's thread (docs/design.md). */
static void run_on_context_thread(IOThread *iothread, void (*fn)(void *), void *opaque)
{
    if (iothread) {
        iothread_run_sync(iothread, fn, opaque);
    } else {
        fn(opaque);
    }
}

static void attach_on_context_thread(void *opaque)
{
    AttachArgs *args = opaque;
    args->bctx = block_context_ref(args->ctx, args->blk->aio, &args->err);
    if (args->bctx) {
        args->early_bh = qemu_bh_new(args->ctx, early_done_bh, args->blk);
    }
}

static void detach_on_context_thread(void *opaque)
{
    BlockBackend *blk = opaque;
    qemu_bh_delete(blk->early_bh);
    block_context_unref(blk->bctx);
    blk->early_bh = NULL;
    blk->bctx = NULL;
}

bool blk_attach(BlockBackend *blk, IOThread *iothread, Error **errp)
{
    g_assert(atomic_load(&blk->in_flight) == 0);
    AttachArgs args = { .blk = blk,
                        .ctx = iothread ? iothread_context(iothread) : main_loop_context() };
    run_on_context_thread(iothread, attach_on_context_thread, &args);
    if (!args.bctx) {
        error_propagate(errp, args.err);
        return false;
    }
    if (blk->bctx) {
        run_on_context_thread(blk->iothread, detach_on_context_thread, blk);
    }
    blk->iothread = iothread;
    blk->ctx = args.ctx;
    blk->bctx = args.bctx;
    blk->early_bh = args.early_bh;
    blk->engine = block_context_engine(args.bctx, blk->aio);
    blk->pool = block_context_engine(args.bctx, DRIVE_AIO_THREADS);
    return true;
}

BlockBackend *blk_new_open(const DriveConfig *cfg, Error **errp)
{
    g_assert(cfg->file);
    BlockBackend *blk = g_new0(BlockBackend, 1);
    if (!block_file_open(&blk->file, cfg, errp)) {
        g_free(blk);
        return NULL;
    }
    static atomic_uint node_counter;
    blk->name = g_strdup(cfg->id);
    blk->node_name = g_strdup_printf("#block%03u", atomic_fetch_add(&node_counter, 1));
    blk->acct = block_acct_new();
    blk->cache = drive_cache_flags(cfg->cache);
    blk->aio = cfg->aio;
    blk->discard = cfg->discard;
    blk->read_only = cfg->read_only;
    atomic_init(&blk->write_cache, blk->cache.writeback);
    atomic_init(&blk->in_flight, 0);
    block_error_init(&blk->on_error);
    pthread_mutex_init(&blk->lock, NULL);
    pthread_mutex_init(&blk->drain_lock, NULL);
    pthread_cond_init(&blk->drain_cond, NULL);
    g_queue_init(&blk->early_done);
    blk->plugged = g_ptr_array_new();
    if (!blk_attach(blk, NULL, errp)) {
        blk_unref(blk);
        return NULL;
    }
    return blk;
}

/* Own the context to run it ourselves: always on its own thread; the main
 * loop's also when nobody runs it (tests, exit). An I/O thread's context
 * is never run elsewhere: its completions belong on that thread. */
static bool acquire_context_here(BlockBackend *blk)
{
    if (blk->iothread && !g_main_context_is_owner(blk->ctx)) {
        return false;
    }
    return g_main_context_acquire(blk->ctx);
}

static void wait_for_in_flight(BlockBackend *blk)
{
    if (acquire_context_here(blk)) {
        while (atomic_load(&blk->in_flight)) {
            g_main_context_iteration(blk->ctx, TRUE);
        }
        g_main_context_release(blk->ctx);
        return;
    }
    pthread_mutex_lock(&blk->drain_lock);
    while (atomic_load(&blk->in_flight)) {
        pthread_cond_wait(&blk->drain_cond, &blk->drain_lock);
    }
    pthread_mutex_unlock(&blk->drain_lock);
}

/* Requests a stop kept would never finish: they complete with their
 * errors, and none is kept meanwhile. */
void blk_drain(BlockBackend *blk)
{
    block_error_drain_begin(&blk->on_error);
    wait_for_in_flight(blk);
    block_error_drain_end(&blk->on_error);
}

void blk_unref(BlockBackend *blk)
{
    if (!blk) {
        return;
    }
    if (blk->bctx) {
        blk_drain(blk);
        run_on_context_thread(blk->iothread, detach_on_context_thread, blk);
    }
    block_file_close(&blk->file);
    block_error_destroy(&blk->on_error);
    g_ptr_array_unref(blk->plugged);
    pthread_mutex_destroy(&blk->lock);
    pthread_mutex_destroy(&blk->drain_lock);
    pthread_cond_destroy(&blk->drain_cond);
    block_acct_unref(blk->acct);
    g_free(blk->node_name);
    g_free(blk->name);
    g_free(blk);
}

/* ---- properties ---- */

const char *blk_name(const BlockBackend *blk)
{
    return blk->name;
}

const char *blk_node_name(const BlockBackend *blk)
{
    return blk->node_name;
}

BlockAcct *blk_acct(const BlockBackend *blk)
{
    return blk->acct;
}

void blk_set_acct(BlockBackend *blk, BlockAcct *acct)
{
    g_assert(atomic_load(&blk->in_flight) == 0);
    block_acct_ref(acct);
    block_acct_unref(blk->acct);
    blk->acct = acct;
}

DriveCacheFlags blk_cache_flags(const BlockBackend *blk)
{
    return blk->cache;
}

uint64_t blk_allocated_size(const BlockBackend *blk)
{
    return block_file_allocated_size(&blk->file);
}

const char *blk_filename(const BlockBackend *blk)
{
    return blk->file.filename;
}

uint64_t blk_getlength(const BlockBackend *blk)
{
    return blk->file.size;
}

bool blk_is_read_only(const BlockBackend *blk)
{
    return blk->read_only;
}

bool blk_discard_enabled(const BlockBackend *blk)
{
    return blk->discard == DRIVE_DISCARD_UNMAP;
}

uint32_t blk_host_block_size(const BlockBackend *blk)
{
    return MAX(blk->file.request_align, SECTOR_SIZE);
}

bool blk_enable_write_cache(const BlockBackend *blk)
{
    return atomic_load(&blk->write_cache);
}

void blk_set_enable_write_cache(BlockBackend *blk, bool enable)
{
    atomic_store(&blk->write_cache, enable);
}

const char *blk_io_status(BlockBackend *blk)
{
    return block_error_io_status(&blk->on_error);
}

unsigned blk_in_flight(const BlockBackend *blk)
{
    return atomic_load(&blk->in_flight);
}
