/*
 * Raw images on the host: regular files and block devices. Opening checks
 * what QEMU checks (a missing, unreadable or odd file gets one line naming
 * it), takes QEMU's image locks, probes the format when none was given,
 * and finds what O_DIRECT needs. The flush, discard and write-zeroes
 * helpers run on worker threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "block-internal.h"

#define SECTOR_SIZE 512
/* The header bytes format probing looks at (every magic is within them). */
#define PROBE_BYTES 4096

static int open_image(const char *filename, bool read_only, bool direct)
{
    int flags = (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | (direct ? O_DIRECT : 0);
    int fd;
    while ((fd = open(filename, flags)) < 0 && errno == EINTR) {
    }
    return fd;
}

static bool probe_format(BlockFile *file, bool format_given, Error **errp)
{
    if (format_given) {
        return true;
    }
    uint8_t *buf = g_malloc0(PROBE_BYTES);
    ssize_t n;
    while ((n = pread(file->fd, buf, PROBE_BYTES, 0)) < 0 && errno == EINTR) {
    }
    if (n < 0) {
        error_setg_errno(errp, errno, "Could not read image '%s'", file->filename);
        g_free(buf);
        return false;
    }
    const char *format = block_probe_format(buf, n);
    g_free(buf);
    if (format) {
        error_setg(errp, "Image '%s' is in %s format: only raw images are supported "
                   "(convert with 'qemu-img convert -O raw')", file->filename, format);
        return false;
    }
    /* QEMU's warning, word for word: users and scripts know it. */
    fprintf(stderr,
            "WARNING: Image format was not specified for '%s' and probing guessed raw.\n"
            "         Automatically detecting the format is dangerous for raw images, "
            "write operations on block 0 will be restricted.\n"
            "         Specify the 'raw' format explicitly to remove the restrictions.\n",
            file->filename);
    file->probed_raw = true;
    return true;
}

uint64_t block_file_host_size(const BlockFile *file)
{
    uint64_t size = 0;
    struct stat st;
    if (file->is_block_device) {
        if (ioctl(file->fd, BLKGETSIZE64, &size) < 0) {
            return 0;
        }
        return size;
    }
    return fstat(file->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

uint64_t block_file_allocated_size(const BlockFile *file)
{
    struct stat st;
    /* st_blocks counts 512-byte units whatever the file system's block size. */
    return fstat(file->fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* Does an O_DIRECT read of len bytes at an aligned buffer pass the
 * file system's alignment checks? */
static bool direct_read_accepted(int fd, void *buf, size_t len)
{
    ssize_t n;
    while ((n = pread(fd, buf, len, 0)) < 0 && errno == EINTR) {
    }
    return n >= 0 || errno != EINVAL;
}

/* What O_DIRECT needs: the kernel says (statx), or a block device's
 * logical block size, or the smallest read length that passes. */
static void find_direct_alignment(BlockFile *file)
{
    struct statx stx;
    if (statx(file->direct_fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
        (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
        file->request_align = stx.stx_dio_offset_align;
        file->memory_align = MAX(stx.stx_dio_mem_align, 1);
        return;
    }
    int block_size;
    if (file->is_block_device && ioctl(file->direct_fd, BLKSSZGET, &block_size) == 0) {
        file->request_align = file->memory_align = block_size;
        return;
    }
    void *buf = NULL;
    file->request_align = file->memory_align = 4096;
    if (posix_memalign(&buf, 4096, 4096) != 0) {
        return;
    }
    for (uint32_t len = SECTOR_SIZE; len < 4096; len *= 2) {
        if (direct_read_accepted(file->direct_fd, buf, len)) {
            file->request_align = file->memory_align = len;
            break;
        }
    }
    free(buf);
}

static bool open_direct(BlockFile *file, bool read_only, Error **errp)
{
    file->direct_fd = open_image(file->filename, read_only, true);
    if (file->direct_fd < 0) {
        if (errno == EINVAL) {
            error_setg(errp, "Could not open '%s' with O_DIRECT: its file system does not "
                       "support it (cache=none and directsync need it)", file->filename);
        } else {
            error_setg_errno(errp, errno, "Could not open '%s'", file->filename);
        }
        return false;
    }
    find_direct_alignment(file);
    return true;
}

bool block_file_open(BlockFile *file, const DriveConfig *cfg, Error **errp)
{
    *file = (BlockFile) { .filename = g_strdup(cfg->file), .fd = -1, .direct_fd = -1,
                          .request_align = 1, .memory_align = 1 };
    file->fd = open_image(file->filename, cfg->read_only, false);
    struct stat st;
    if (file->fd < 0 && errno != EISDIR) {
        error_setg_errno(errp, errno, "Could not open '%s'", file->filename);
        goto fail;
    }
    if (file->fd >= 0 && fstat(file->fd, &st) < 0) {
        error_setg_errno(errp, errno, "Could not stat '%s'", file->filename);
        goto fail;
    }
    if (file->fd < 0 || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))) {
        error_setg(errp, "Could not open '%s': not a regular file or a block device",
                   file->filename);
        goto fail;
    }
    file->is_block_device = S_ISBLK(st.st_mode);
    if (!image_lock_acquire(file->fd, file->filename, !cfg->read_only, errp) ||
        !probe_format(file, cfg->format == DRIVE_FORMAT_RAW, errp)) {
        goto fail;
    }
    if (drive_cache_flags(cfg->cache).direct && !open_direct(file, cfg->read_only, errp)) {
        goto fail;
    }
    /* As QEMU: a size that is not a multiple of 512 is rounded up; the tail
     * reads as zeroes (short reads at the end of file are zero-filled) and
     * a write there extends the file. */
    uint64_t host_size = block_file_host_size(file);
    file->size = host_size + (SECTOR_SIZE - host_size % SECTOR_SIZE) % SECTOR_SIZE;
    return true;

fail:
    block_file_close(file);
    return false;
}

void block_file_close(BlockFile *file)
{
    if (file->direct_fd >= 0) {
        close(file->direct_fd);
    }
    if (file->fd >= 0) {
        close(file->fd);        /* releases the image locks */
    }
    g_free(file->filename);
    *file = (BlockFile) { .fd = -1, .direct_fd = -1 };
}

int block_file_flush(const BlockFile *file)
{
    /* fdatasync reaches the inode's data whichever descriptor wrote it. */
    int ret;
    while ((ret = fdatasync(file->fd)) < 0 && errno == EINTR) {
    }
    return ret < 0 ? -errno : 0;
}

static int fallocate_range(int fd, int mode, uint64_t offset, uint64_t bytes)
{
    int ret;
    while ((ret = fallocate(fd, mode, offset, bytes)) < 0 && errno == EINTR) {
    }
    return ret < 0 ? -errno : 0;
}

static bool is_unsupported(int ret)
{
    return ret == -EOPNOTSUPP || ret == -ENOTTY || ret == -ENOSYS;
}

int block_file_discard(const BlockFile *file, uint64_t offset, uint64_t bytes)
{
    int ret = fallocate_range(file->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                              offset, bytes);
    /* Discard is a hint: a host that cannot deallocate keeps the data. */
    return is_unsupported(ret) ? 0 : ret;
}

/* Where the host cannot zero a range cheaply: write zeroes. */
static int write_zero_buffer(int fd, uint64_t offset, uint64_t bytes)
{
    const size_t chunk = 1 << 20;
    void *zeroes = g_malloc0(MIN(bytes, chunk));
    int ret = 0;
    while (bytes && ret == 0) {
        ssize_t n = pwrite(fd, zeroes, MIN(bytes, chunk), offset);
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            ret = -errno;
        } else if (n == 0) {
            ret = -EIO;
        } else if (n > 0) {
            offset += n;
            bytes -= n;
        }
    }
    g_free(zeroes);
    return ret;
}

int block_file_write_zeroes(const BlockFile *file, uint64_t offset, uint64_t bytes,
                            bool may_unmap)
{
    int ret = -EOPNOTSUPP;
    if (may_unmap) {
        /* A punched hole reads as zeroes, in a file as on a block device. */
        ret = fallocate_range(file->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                              offset, bytes);
    }
    if (is_unsupported(ret)) {
        ret = fallocate_range(file->fd, FALLOC_FL_ZERO_RANGE, offset, bytes);
    }
    if (is_unsupported(ret) || ret == -EINVAL) {
        ret = write_zero_buffer(file->fd, offset, bytes);
    }
    return ret;
}
