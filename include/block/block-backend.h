/*
 * BlockBackend: a disk image as a device model sees it, whatever the
 * backend (a raw file or a host block device) and the engine
 * (aio=threads|native|io_uring) under it.
 *
 * Threads and locks (docs/storage.md):
 *  - blk_new_open, blk_attach and blk_unref run on the main thread while
 *    no request is in flight (machine build, exit).
 *  - Requests (blk_aio_*, plug/unplug) are submitted from any thread,
 *    typically a vCPU holding its device lock. Submission never waits for
 *    the host's disk: it queues the request with the engine and returns.
 *  - Every completion runs cb(opaque, ret) on the context chosen with
 *    blk_attach (the main loop's, or an I/O thread's), never inside the
 *    submitting call, so the callback may take the device lock that the
 *    submitter held. ret is 0 or -errno (-EIO, -ENOSPC...). Requests that
 *    fail before reaching the host (out of range, read-only) complete
 *    the same way.
 *  - A device's drain hook (QEMUDevice.drain, called without the device
 *    lock) calls blk_drain: every callback has returned when it does.
 *
 * Offsets and lengths are in bytes; the block layer deals with the host's
 * alignment (O_DIRECT bounce buffers), short transfers and EINTR/EAGAIN.
 * Errors: -EIO past the end, -EROFS on a read-only drive, -EINVAL for a
 * request over 1 GiB, -EPERM for a write that would give a probed raw
 * image another format's header; the host's errors as they come.
 * The iovec array is copied at submission; the memory it points to (guest
 * RAM) must stay valid until the callback.
 */
#ifndef BLOCK_BLOCK_BACKEND_H
#define BLOCK_BLOCK_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "block/block-acct.h"
#include "block/drive-config.h"
#include "qemu/error.h"
#include "sysemu/iothread.h"

typedef struct BlockBackend BlockBackend;
typedef void BlockCompletionFunc(void *opaque, int ret);

/* Request flags. */
enum {
    /* Write: on stable storage when the request completes (ATA's FUA
     * writes, virtio-blk with the write cache off). */
    BLK_REQ_FUA = 1 << 0,
    /* Write zeroes: the range may be deallocated (virtio-blk's UNMAP flag);
     * honoured only with discard=unmap. */
    BLK_REQ_MAY_UNMAP = 1 << 1,
};

/*
 * Open cfg->file (which must not be NULL) as cfg says: format probing
 * (the probed-raw warning on stderr, as QEMU prints it), O_DIRECT for
 * cache=none/directsync, the engine, and QEMU's image locks (a second
 * writer, or a reader next to a writer, is refused). Completions go to
 * the main loop until blk_attach says otherwise. Errors are one line
 * naming the file.
 */
BlockBackend *blk_new_open(const DriveConfig *cfg, Error **errp);
/*
 * Deliver completions on iothread's context (NULL: the main loop's).
 * Main thread, before the first request or with none in flight.
 */
bool blk_attach(BlockBackend *blk, IOThread *iothread, Error **errp);
/* Drain, release the image locks, close. NULL is allowed. */
void blk_unref(BlockBackend *blk);

const char *blk_name(const BlockBackend *blk);        /* the drive's id */
/* QEMU's automatic node name ("#block042"), unique in the process. */
const char *blk_node_name(const BlockBackend *blk);
const char *blk_filename(const BlockBackend *blk);
/* The cache= flags the image was opened with (query-block's "cache"). */
DriveCacheFlags blk_cache_flags(const BlockBackend *blk);
/* The bytes the image takes on the host's disk (query-block's "actual-size"). */
uint64_t blk_allocated_size(const BlockBackend *blk);

/*
 * Every request is accounted when it completes (block/block-acct.h) and a
 * request the host refused sends BLOCK_IO_ERROR (QMP) before its callback
 * (see blk_set_on_error).
 * blk_acct: the counters (a fresh set at blk_new_open). blk_set_acct: use
 * acct instead (a drive keeps its counters across media); main thread,
 * before the first request.
 */
BlockAcct *blk_acct(const BlockBackend *blk);
void blk_set_acct(BlockBackend *blk, BlockAcct *acct);
/*
 * werror= and rerror= (drive-config.h) for a device that honours them, as
 * QEMU's ATA disks and virtio-blk do (its ATAPI does not): with report,
 * the default of a new BlockBackend, the callback gets the host's error;
 * with ignore it gets 0; with stop (or enospc and ENOSPC) the request is
 * kept, the VM stops in RUN_STATE_IO_ERROR, and when it runs again (cont)
 * the request goes to the host again from where it failed, so the
 * callback comes only then. A blk_drain (reset, exit) completes kept
 * requests with their errors. BLOCK_IO_ERROR says which action was taken.
 * Main thread, before the first request.
 */
void blk_set_on_error(BlockBackend *blk, DriveErrorAction rerror, DriveErrorAction werror);
/* query-block's io-status: "ok", or since a stop for an error "nospace"
 * (ENOSPC) or "failed", until the VM runs again. Any thread. */
const char *blk_io_status(BlockBackend *blk);

/* Size in bytes, a multiple of 512: an image whose size is not is rounded
 * up, as QEMU does; its tail reads as zeroes and a write there extends
 * the file. */
uint64_t blk_getlength(const BlockBackend *blk);
bool blk_is_read_only(const BlockBackend *blk);
/* discard=unmap: the device may advertise discard (TRIM, VIRTIO_BLK_F_DISCARD). */
bool blk_discard_enabled(const BlockBackend *blk);
/* The host's logical block size (512 or 4096...): a hint for the device's
 * topology (virtio-blk's physical block size, minimum I/O size). */
uint32_t blk_host_block_size(const BlockBackend *blk);

/*
 * The guest-visible volatile write cache (IDE's WCE, virtio-blk's
 * writeback bit). On for cache=writeback/none/unsafe, off for
 * writethrough/directsync. With it off every write is made durable
 * before it completes (as BLK_REQ_FUA); a guest may switch it (ATA SET
 * FEATURES, virtio-blk's config writeback field). Any thread.
 */
bool blk_enable_write_cache(const BlockBackend *blk);
void blk_set_enable_write_cache(BlockBackend *blk, bool enable);

void blk_aio_preadv(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov,
                    BlockCompletionFunc *cb, void *opaque);
void blk_aio_pwritev(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov,
                     unsigned flags, BlockCompletionFunc *cb, void *opaque);
/* Everything completed before is on stable storage (a no-op with cache=unsafe). */
void blk_aio_flush(BlockBackend *blk, BlockCompletionFunc *cb, void *opaque);
/* Deallocate a range (hole punching) with discard=unmap; with discard=ignore,
 * or where the host cannot, it succeeds without doing anything: after a
 * discard the range's contents are undefined, as ATA TRIM says. */
void blk_aio_pdiscard(BlockBackend *blk, uint64_t offset, uint64_t bytes,
                      BlockCompletionFunc *cb, void *opaque);
/* Make a range read as zeroes (flags: BLK_REQ_MAY_UNMAP, BLK_REQ_FUA). */
void blk_aio_pwrite_zeroes(BlockBackend *blk, uint64_t offset, uint64_t bytes,
                           unsigned flags, BlockCompletionFunc *cb, void *opaque);

/*
 * Batch submission: between plug and unplug, read and write requests are
 * queued; unplug hands them to the engine at once (one io_submit or
 * io_uring_enter for a virtqueue's worth). Plugs nest; call both from
 * the same thread, holding the device lock.
 */
void blk_io_plug(BlockBackend *blk);
void blk_io_unplug(BlockBackend *blk);

/* Requests submitted whose callback has not yet returned. Any thread. */
unsigned blk_in_flight(const BlockBackend *blk);
/* Wait until blk_in_flight is 0. Without the device lock, never from
 * within a completion callback. Main thread or the completion context's. */
void blk_drain(BlockBackend *blk);

#endif
