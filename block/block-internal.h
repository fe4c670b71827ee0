/*
 * Inside the block layer: requests, the engines that carry them to the
 * host, the per-context engine registry and the image file. Nothing here
 * is for device models (they use block/block-backend.h).
 */
#ifndef BLOCK_INTERNAL_H
#define BLOCK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <glib.h>
#include "block/block-acct.h"
#include "block/block-backend.h"

typedef enum BlockOp {
    BLOCK_OP_READ,
    BLOCK_OP_WRITE,
    BLOCK_OP_FLUSH,
    BLOCK_OP_DISCARD,
    BLOCK_OP_WRITE_ZEROES,
} BlockOp;

/* One request from submission to callback. */
typedef struct BlockRequest {
    BlockBackend *blk;
    BlockOp op;
    unsigned flags;             /* BLK_REQ_* */
    int fd;                     /* the descriptor this request uses */
    uint64_t offset;
    uint64_t bytes;
    /* What the engine transfers: a copy of the device's iovec array, or
     * one entry for the bounce buffer. */
    struct iovec *iov;
    int niov;
    /* With a bounce buffer: the device's iovecs, where a read's data goes. */
    struct iovec *guest_iov;
    int guest_niov;
    void *bounce;
    uint64_t done;              /* bytes moved so far (short transfers continue) */
    struct iovec *rest_iov;     /* the part of iov after done, for a continuation */
    bool flush_after;           /* a write to make durable before completing */
    BlockCompletionFunc *cb;
    void *opaque;
    int ret;                    /* for a completion that never reached the host */
    /* Accounting (block/block-acct.h): what the request counts as (op may
     * turn into a flush on the way), when it started, and whether it was
     * refused before reaching the host. */
    BlockAcctType acct_type;
    int64_t start_ns;
    bool invalid;
    /* Its host error was acted on (werror/rerror): a kept request given
     * up by a drain completes with it, without acting again. */
    bool error_handled;
} BlockRequest;

/*
 * An engine carries requests to the host and reports each result, on its
 * context's thread, through block_request_transferred(): bytes moved (for
 * a read or a write, possibly fewer than asked) or -errno.
 */
typedef struct BlockAioEngine BlockAioEngine;
typedef struct BlockFile BlockFile;
typedef struct BlockAioEngineOps {
    /* On ctx's thread (or before it runs). */
    BlockAioEngine *(*create)(GMainContext *ctx, Error **errp);
    /* Any thread, never waits for the host's disk. Reads and writes only
     * (of block_request_remaining), except the threads engine which
     * takes every op. */
    void (*submit)(BlockAioEngine *engine, BlockRequest **reqs, unsigned n);
    /* On ctx's thread, with nothing in flight. */
    void (*destroy)(BlockAioEngine *engine);
} BlockAioEngineOps;

struct BlockAioEngine {
    const BlockAioEngineOps *ops;
};

/*
 * A request handed to the kernel (io_submit, an io_uring SQE) comes back
 * on the context's thread; ThreadSanitizer cannot see the order the
 * kernel gives, so the engines announce it.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define block_request_to_kernel(req) __tsan_release(req)
#define block_request_from_kernel(req) __tsan_acquire(req)
#else
#define block_request_to_kernel(req) do { } while (0)
#define block_request_from_kernel(req) do { } while (0)
#endif

extern const BlockAioEngineOps block_aio_threads_ops;
extern const BlockAioEngineOps block_aio_linux_ops;
extern const BlockAioEngineOps block_aio_io_uring_ops;

/* The image under a drive. */
const BlockFile *blk_file(const BlockBackend *blk);
/* Hand a request kept by werror/rerror=stop to its engine again, from
 * where it failed (the rest of a short transfer, or a write's flush). */
void block_request_resubmit(BlockRequest *req);
/* Complete req with ret on its drive's context, without reaching the host
 * (an engine's submission failure). Any thread. */
void block_request_fail(BlockRequest *req, int ret);
/* The part of req's transfer that is still to do; returns its file offset. */
uint64_t block_request_remaining(BlockRequest *req, struct iovec **iov, int *niov);
/* An engine's report (on the completion context's thread). */
void block_request_transferred(BlockRequest *req, int64_t result);
/* For tests of the error paths (a read the host fails, which no file
 * system makes on demand): when set, every engine report passes through
 * it on the completion context, which may turn it into -errno. */
extern int64_t (*block_fault_injector)(const BlockRequest *req, int64_t result);

/*
 * The engines of one GMainContext, shared by every drive completing
 * there: one thread pool (aio=threads, and every flush, discard and
 * write-zeroes), one Linux AIO context, one io_uring. On ctx's thread.
 */
typedef struct BlockContext BlockContext;
BlockContext *block_context_ref(GMainContext *ctx, DriveAioMode aio, Error **errp);
void block_context_unref(BlockContext *bctx);
BlockAioEngine *block_context_engine(BlockContext *bctx, DriveAioMode aio);

/* ---- werror= and rerror= (block/block-error.c) ---- */

/*
 * A drive's error actions and the requests a stop keeps. Its lock guards
 * parked, draining and io_status; it is taken on the completion context
 * (a failure), the main loop (vm start, query-block) and by blk_drain, and
 * nothing is waited for under it.
 */
typedef struct BlockErrorState {
    pthread_mutex_t lock;
    DriveErrorAction rerror, werror;
    GQueue parked;              /* BlockRequest *, kept by a stop */
    unsigned draining;          /* blk_drains in progress: nothing is kept */
    int io_status;              /* 0 ok, else the errno of the first stop */
} BlockErrorState;

/* Report for both until blk_set_on_error; registered for the vm start
 * hook that re-submits what a stop kept. Main thread. */
void block_error_init(BlockErrorState *state);
BlockErrorState *blk_error_state(BlockBackend *blk);
void block_error_destroy(BlockErrorState *state);
/*
 * req failed on the host with *ret (on its completion context): send
 * BLOCK_IO_ERROR with the drive's action and carry it out. True if the
 * request is kept (stop): the caller forgets it until it is re-submitted
 * or given back by a drain. Else *ret is what the device gets (0 for
 * ignore).
 */
bool block_error_handle(BlockErrorState *state, BlockRequest *req, int *ret);
/* blk_drain's bracket: the kept requests complete with their errors, and
 * none is kept until the end. */
void block_error_drain_begin(BlockErrorState *state);
void block_error_drain_end(BlockErrorState *state);
const char *block_error_io_status(BlockErrorState *state);

/* ---- the image file (block/raw-file.c) ---- */

struct BlockFile {
    char *filename;
    int fd;                     /* for locks and buffered I/O */
    int direct_fd;              /* O_DIRECT (cache=none/directsync), else -1 */
    bool is_block_device;
    bool probed_raw;            /* no format= given: block 0 writes are checked */
    uint64_t size;              /* guest-visible: host size rounded up to 512 */
    uint32_t request_align;     /* O_DIRECT offset and length alignment */
    uint32_t memory_align;      /* O_DIRECT buffer alignment */
};

bool block_file_open(BlockFile *file, const DriveConfig *cfg, Error **errp);
void block_file_close(BlockFile *file);
/* The file's current size in bytes (a block device's is fixed). */
uint64_t block_file_host_size(const BlockFile *file);
/* Bytes allocated on the host (st_blocks), 0 if unknown. */
uint64_t block_file_allocated_size(const BlockFile *file);
/* Synchronous, for worker threads: 0 or -errno. */
int block_file_flush(const BlockFile *file);
int block_file_discard(const BlockFile *file, uint64_t offset, uint64_t bytes);
int block_file_write_zeroes(const BlockFile *file, uint64_t offset, uint64_t bytes,
                            bool may_unmap);

/* QEMU's image locks on fd (block/image-lock.c). */
bool image_lock_acquire(int fd, const char *filename, bool write, Error **errp);

/* The image format a header announces, or NULL for raw (block/format-probe.c). */
const char *block_probe_format(const uint8_t *buf, size_t len);

#endif
