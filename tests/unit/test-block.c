/*
 * The block layer on real temporary images: every aio engine and cache
 * mode moves bytes both ways exactly, O_DIRECT takes unaligned guest
 * buffers, completions arrive on the chosen context's thread, drain and
 * plug do what devices rely on, and host errors come back as -errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "block/block-backend.h"
#include "full-tmpfs.h"
#include "qemu/main-loop.h"
#include "sysemu/iothread.h"

#define IMAGE_SIZE (1 << 20)

typedef struct Completion {
    bool done;
    int ret;
    pthread_t thread;
    GMainContext *expected_ctx;
    bool on_expected_ctx;
    unsigned *counter;
} Completion;

static void completion_cb(void *opaque, int ret)
{
    Completion *c = opaque;
    c->ret = ret;
    c->thread = pthread_self();
    c->on_expected_ctx = c->expected_ctx && g_main_context_is_owner(c->expected_ctx);
    if (c->counter) {
        __atomic_add_fetch(c->counter, 1, __ATOMIC_SEQ_CST);
    }
    __atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
}

/* Run the main loop's context until c is done; its result. */
static int wait_for(Completion *c)
{
    while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    return c->ret;
}

/* A buffer fit for O_DIRECT (free() it). */
static void *page_aligned(size_t size)
{
    void *buf = NULL;
    g_assert_cmpint(posix_memalign(&buf, 4096, size), ==, 0);
    return buf;
}

static char *make_image(const char *dir, const char *name, size_t size)
{
    char *path = g_build_filename(dir, name, NULL);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, size), ==, 0);
    close(fd);
    return path;
}

static DriveConfig drive_for(const char *path, DriveCacheMode cache, DriveAioMode aio)
{
    return (DriveConfig) { .id = (char *)"test0", .file = (char *)path,
                           .format = DRIVE_FORMAT_RAW, .cache = cache, .aio = aio,
                           .discard = DRIVE_DISCARD_UNMAP };
}

static BlockBackend *open_ok(const DriveConfig *cfg)
{
    Error *err = NULL;
    BlockBackend *blk = blk_new_open(cfg, &err);
    if (!blk) {
        g_error("blk_new_open: %s", err->msg);
    }
    return blk;
}

static void fill_pattern(uint8_t *buf, size_t len, unsigned seed)
{
    GRand *rand = g_rand_new_with_seed(seed);
    for (size_t i = 0; i < len; i++) {
        buf[i] = g_rand_int(rand);
    }
    g_rand_free(rand);
}

static void read_file(const char *path, uint64_t offset, void *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pread(fd, buf, len, offset), ==, (ssize_t)len);
    close(fd);
}

static int blk_write_sync(BlockBackend *blk, uint64_t offset, struct iovec *iov, int niov)
{
    Completion c = { 0 };
    blk_aio_pwritev(blk, offset, iov, niov, 0, completion_cb, &c);
    return wait_for(&c);
}

static int blk_read_sync(BlockBackend *blk, uint64_t offset, struct iovec *iov, int niov)
{
    Completion c = { 0 };
    blk_aio_preadv(blk, offset, iov, niov, completion_cb, &c);
    return wait_for(&c);
}

/* ---- round trips for every engine and cache mode ---- */

typedef struct EngineCase {
    const char *name;
    DriveAioMode aio;
    DriveCacheMode cache;
} EngineCase;

static const EngineCase engine_cases[] = {
    { "threads-writeback", DRIVE_AIO_THREADS, DRIVE_CACHE_WRITEBACK },
    { "threads-none", DRIVE_AIO_THREADS, DRIVE_CACHE_NONE },
    { "threads-writethrough", DRIVE_AIO_THREADS, DRIVE_CACHE_WRITETHROUGH },
    { "threads-unsafe", DRIVE_AIO_THREADS, DRIVE_CACHE_UNSAFE },
    { "native-none", DRIVE_AIO_NATIVE, DRIVE_CACHE_NONE },
    { "native-directsync", DRIVE_AIO_NATIVE, DRIVE_CACHE_DIRECTSYNC },
    { "io_uring-writeback", DRIVE_AIO_IO_URING, DRIVE_CACHE_WRITEBACK },
    { "io_uring-none", DRIVE_AIO_IO_URING, DRIVE_CACHE_NONE },
};

static char *test_dir;

/* A fresh image of IMAGE_SIZE bytes, opened as ec says. */
static BlockBackend *open_new_image(const EngineCase *ec, const char *name, char **path)
{
    *path = make_image(test_dir, name, IMAGE_SIZE);
    DriveConfig cfg = drive_for(*path, ec->cache, ec->aio);
    return open_ok(&cfg);
}

static void close_image(BlockBackend *blk, char *path)
{
    blk_unref(blk);
    g_unlink(path);
    g_free(path);
}

/* n 4 KiB requests (writes from buf, or reads into it) at offsets 0, 4096...,
 * each completing into c[i] and counted in *count. */
static void submit_pages(BlockBackend *blk, bool write, uint8_t *buf, Completion *c, int n,
                         unsigned *count, GMainContext *expected_ctx)
{
    for (int i = 0; i < n; i++) {
        c[i] = (Completion) { .expected_ctx = expected_ctx, .counter = count };
        struct iovec iov = { buf + i * 4096, 4096 };
        if (write) {
            blk_aio_pwritev(blk, i * 4096, &iov, 1, 0, completion_cb, &c[i]);
        } else {
            blk_aio_preadv(blk, i * 4096, &iov, 1, completion_cb, &c[i]);
        }
    }
}

/* Scatter-gather writes and reads at several offsets, checked against the
 * file itself; then flush, discard and write-zeroes. */
static void test_round_trip(gconstpointer data)
{
    const EngineCase *ec = data;
    char *path;
    BlockBackend *blk = open_new_image(ec, "rt.img", &path);
    g_assert_cmpuint(blk_getlength(blk), ==, IMAGE_SIZE);
    g_assert_cmpint(blk_enable_write_cache(blk), ==, drive_cache_flags(ec->cache).writeback);

    const size_t len = 64 * 1024;
    uint8_t *out = page_aligned(len), *in = page_aligned(len);
    uint8_t *file = g_malloc(len);
    static const uint64_t offsets[] = { 0, 4096, 512 * 1000, IMAGE_SIZE - 64 * 1024 };
    for (size_t k = 0; k < G_N_ELEMENTS(offsets); k++) {
        fill_pattern(out, len, k + 1);
        /* Three segments, as a PRD table or a virtqueue chain gives them. */
        struct iovec wiov[3] = { { out, 4096 }, { out + 4096, 8192 },
                                 { out + 12288, len - 12288 } };
        g_assert_cmpint(blk_write_sync(blk, offsets[k], wiov, 3), ==, 0);
        memset(in, 0xaa, len);
        struct iovec riov[2] = { { in, 32768 }, { in + 32768, len - 32768 } };
        g_assert_cmpint(blk_read_sync(blk, offsets[k], riov, 2), ==, 0);
        g_assert_cmpmem(in, len, out, len);
        read_file(path, offsets[k], file, len);
        g_assert_cmpmem(file, len, out, len);
    }

    Completion flush = { 0 };
    blk_aio_flush(blk, completion_cb, &flush);
    g_assert_cmpint(wait_for(&flush), ==, 0);

    /* A discarded range reads as zeroes on ext4/tmpfs (holes), and the
     * image keeps its size. */
    Completion discard = { 0 };
    blk_aio_pdiscard(blk, 4096, 8192, completion_cb, &discard);
    g_assert_cmpint(wait_for(&discard), ==, 0);
    read_file(path, 4096, file, 8192);
    g_assert_true(file[0] == 0 && memcmp(file, file + 1, 8191) == 0);
    struct stat st;
    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, IMAGE_SIZE);

    Completion zeroes = { 0 };
    blk_aio_pwrite_zeroes(blk, offsets[3], 16384, 0, completion_cb, &zeroes);
    g_assert_cmpint(wait_for(&zeroes), ==, 0);
    read_file(path, offsets[3], file, 16384);
    g_assert_true(file[0] == 0 && memcmp(file, file + 1, 16383) == 0);
    read_file(path, offsets[3] + 16384, file, 4096);
    g_assert_cmpmem(file, 4096, out + 16384, 4096);   /* and no further */

    g_assert_cmpuint(blk_in_flight(blk), ==, 0);
    close_image(blk, path);
    free(out);
    free(in);
    g_free(file);
}

/* Guest buffers at odd addresses and of odd lengths, on an O_DIRECT image:
 * the block layer bounces them (without it the kernel says EINVAL). */
static void test_direct_unaligned(gconstpointer data)
{
    const EngineCase *ec = data;
    char *path;
    BlockBackend *blk = open_new_image(ec, "direct.img", &path);

    uint8_t *out = g_malloc(8192 + 3), *in = g_malloc(8192 + 5), *file = g_malloc(8192);
    fill_pattern(out + 1, 8192, 7);
    struct iovec wiov[2] = { { out + 1, 1000 }, { out + 1001, 8192 - 1000 } };
    g_assert_cmpint(blk_write_sync(blk, 8192, wiov, 2), ==, 0);
    struct iovec riov[3] = { { in + 3, 100 }, { in + 103, 5000 }, { in + 5103, 3092 } };
    g_assert_cmpint(blk_read_sync(blk, 8192, riov, 3), ==, 0);
    g_assert_cmpmem(in + 3, 8192, out + 1, 8192);
    read_file(path, 8192, file, 8192);
    g_assert_cmpmem(file, 8192, out + 1, 8192);

    /* A range the host's blocks cannot take directly (one sector on a host
     * whose O_DIRECT wants more goes the buffered way). */
    struct iovec one = { out + 1, 512 };
    g_assert_cmpint(blk_write_sync(blk, 512, &one, 1), ==, 0);
    read_file(path, 512, file, 512);
    g_assert_cmpmem(file, 512, out + 1, 512);

    close_image(blk, path);
    g_free(out);
    g_free(in);
    g_free(file);
}

/* ---- contexts, drain, plug ---- */

/* Completions run on the I/O thread the drive is attached to, never on
 * the submitting thread; a drain from the main thread waits for them. */
static void test_completion_on_iothread(gconstpointer data)
{
    const EngineCase *ec = data;
    char *path;
    BlockBackend *blk = open_new_image(ec, "ctx.img", &path);
    Error *err = NULL;
    IOThread *iothread = iothread_new("blk-test", &err);
    g_assert_nonnull(iothread);
    g_assert_true(blk_attach(blk, iothread, &err));

    enum { N = 16 };
    uint8_t *buf = page_aligned(N * 4096);
    fill_pattern(buf, N * 4096, 3);
    Completion c[N];
    unsigned count = 0;
    submit_pages(blk, true, buf, c, N, &count, iothread_context(iothread));
    blk_drain(blk);
    g_assert_cmpuint(__atomic_load_n(&count, __ATOMIC_SEQ_CST), ==, N);
    g_assert_cmpuint(blk_in_flight(blk), ==, 0);
    for (int i = 0; i < N; i++) {
        g_assert_true(c[i].done);
        g_assert_cmpint(c[i].ret, ==, 0);
        g_assert_true(c[i].on_expected_ctx);
        g_assert_false(pthread_equal(c[i].thread, pthread_self()));
    }
    /* Even a request refused at once completes there, not inside the call. */
    Completion refused = { .expected_ctx = iothread_context(iothread) };
    struct iovec past_end = { buf, 4096 };
    blk_aio_preadv(blk, IMAGE_SIZE, &past_end, 1, completion_cb, &refused);
    blk_drain(blk);
    g_assert_cmpint(refused.ret, ==, -EIO);
    g_assert_true(refused.on_expected_ctx);

    close_image(blk, path);
    iothread_free(iothread);
    free(buf);
}

/* A drain on the main loop's context returns only when every callback
 * has returned; a refused request is not completed inside the call. */
static void test_drain_waits(gconstpointer data)
{
    const EngineCase *ec = data;
    char *path;
    BlockBackend *blk = open_new_image(ec, "drain.img", &path);

    enum { N = 32 };
    uint8_t *buf = page_aligned(N * 4096);
    Completion c[N];
    unsigned count = 0;
    submit_pages(blk, false, buf, c, N, &count, NULL);
    Completion refused = { .counter = &count };
    struct iovec iov = { buf, 4096 };
    blk_aio_pwritev(blk, IMAGE_SIZE - 512, &iov, 1, 0, completion_cb, &refused);
    g_assert_false(refused.done);
    g_assert_cmpuint(blk_in_flight(blk), >=, 1);
    blk_drain(blk);
    g_assert_cmpuint(count, ==, N + 1);
    g_assert_cmpint(refused.ret, ==, -EIO);
    g_assert_cmpuint(blk_in_flight(blk), ==, 0);
    close_image(blk, path);
    free(buf);
}

/* Plugged requests wait for the unplug, then all complete. */
static void test_plug_batches(gconstpointer data)
{
    const EngineCase *ec = data;
    char *path;
    BlockBackend *blk = open_new_image(ec, "plug.img", &path);

    enum { N = 8 };
    uint8_t *buf = page_aligned(N * 4096), *file = g_malloc(N * 4096);
    fill_pattern(buf, N * 4096, 11);
    Completion c[N];
    unsigned count = 0;
    blk_io_plug(blk);
    blk_io_plug(blk);               /* plugs nest */
    submit_pages(blk, true, buf, c, N, &count, NULL);
    blk_io_unplug(blk);
    for (int i = 0; i < 20; i++) {
        g_main_context_iteration(main_loop_context(), FALSE);
        g_usleep(1000);
    }
    g_assert_cmpuint(count, ==, 0);             /* nothing went down yet */
    g_assert_cmpuint(blk_in_flight(blk), ==, N);
    blk_io_unplug(blk);
    blk_drain(blk);
    g_assert_cmpuint(count, ==, N);
    read_file(path, 0, file, N * 4096);
    g_assert_cmpmem(file, N * 4096, buf, N * 4096);
    close_image(blk, path);
    free(buf);
    g_free(file);
}

/* ---- errors ---- */

static void test_request_errors(void)
{
    g_autofree char *path = make_image(test_dir, "err.img", IMAGE_SIZE);
    DriveConfig cfg = drive_for(path, DRIVE_CACHE_WRITEBACK, DRIVE_AIO_THREADS);
    cfg.read_only = true;
    BlockBackend *blk = open_ok(&cfg);
    g_assert_true(blk_is_read_only(blk));
    uint8_t buf[512] = { 0 };
    struct iovec iov = { buf, sizeof(buf) };
    g_assert_cmpint(blk_write_sync(blk, 0, &iov, 1), ==, -EROFS);
    g_assert_cmpint(blk_read_sync(blk, IMAGE_SIZE - 256, &iov, 1), ==, -EIO);
    g_assert_cmpint(blk_read_sync(blk, UINT64_MAX - 100, &iov, 1), ==, -EIO);
    Completion discard = { 0 };
    blk_aio_pdiscard(blk, 0, 512, completion_cb, &discard);
    g_assert_cmpint(wait_for(&discard), ==, -EROFS);
    blk_unref(blk);
    g_unlink(path);
}

/* A write to an image on a full file system fails with -ENOSPC (and the
 * drive goes on working). Needs a small tmpfs: root only. */
static void test_enospc(gconstpointer data)
{
    const EngineCase *ec = data;
    char *path = full_tmpfs_image_new(test_dir, "256k", IMAGE_SIZE);
    if (!path) {
        return;
    }
    DriveConfig cfg = drive_for(path, ec->cache, ec->aio);
    Error *err = NULL;
    BlockBackend *blk = blk_new_open(&cfg, &err);
    if (!blk) {
        g_test_skip(err->msg);
        error_free(err);
    } else {
        const size_t len = 512 * 1024;
        uint8_t *buf = page_aligned(len);
        fill_pattern(buf, len, 5);
        struct iovec iov = { buf, len };
        g_assert_cmpint(blk_write_sync(blk, 0, &iov, 1), ==, -ENOSPC);
        struct iovec small = { buf, 4096 };
        g_assert_cmpint(blk_read_sync(blk, 0, &small, 1), ==, 0);
        blk_unref(blk);
        free(buf);
    }
    full_tmpfs_image_free(path);
}

/* ---- images: size, format, open errors ---- */

/* QEMU rounds a size that is not a multiple of 512 up; the tail reads as
 * zeroes and a write there extends the file. */
static void test_unaligned_size(gconstpointer data)
{
    const EngineCase *ec = data;
    g_autofree char *path = g_build_filename(test_dir, "odd.img", NULL);
    uint8_t content[1000];
    fill_pattern(content, sizeof(content), 9);
    g_assert_true(g_file_set_contents(path, (char *)content, sizeof(content), NULL));
    DriveConfig cfg = drive_for(path, ec->cache, ec->aio);
    BlockBackend *blk = open_ok(&cfg);
    g_assert_cmpuint(blk_getlength(blk), ==, 1024);

    uint8_t *sector = page_aligned(4096);
    memset(sector, 0xaa, 512);
    struct iovec iov = { sector, 512 };
    g_assert_cmpint(blk_read_sync(blk, 512, &iov, 1), ==, 0);
    g_assert_cmpmem(sector, 488, content + 512, 488);
    for (int i = 488; i < 512; i++) {
        g_assert_cmpint(sector[i], ==, 0);
    }
    memset(sector, 0x5c, 512);
    g_assert_cmpint(blk_write_sync(blk, 512, &iov, 1), ==, 0);
    struct stat st;
    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, 1024);
    blk_unref(blk);
    free(sector);
    g_unlink(path);
}

static void expect_open_error(const DriveConfig *cfg, const char *needle)
{
    Error *err = NULL;
    g_assert_null(blk_new_open(cfg, &err));
    g_assert_nonnull(err);
    if (!strstr(err->msg, needle)) {
        g_error("'%s' does not contain '%s'", err->msg, needle);
    }
    g_assert_null(strchr(err->msg, '\n'));
    error_free(err);
}

static void test_open_errors(void)
{
    g_autofree char *missing = g_build_filename(test_dir, "missing.img", NULL);
    DriveConfig cfg = drive_for(missing, DRIVE_CACHE_WRITEBACK, DRIVE_AIO_THREADS);
    expect_open_error(&cfg, "Could not open '");
    expect_open_error(&cfg, "No such file or directory");

    cfg.file = test_dir;
    expect_open_error(&cfg, "not a regular file or a block device");

    g_autofree char *qcow2 = g_build_filename(test_dir, "q.qcow2", NULL);
    g_assert_true(g_file_set_contents(qcow2, "QFI\xfb\0\0\0\3", 8, NULL));
    cfg.file = qcow2;
    cfg.format = DRIVE_FORMAT_PROBE;
    expect_open_error(&cfg, "is in qcow2 format: only raw images are supported");
    g_unlink(qcow2);
}

/* An unreadable image: as a user who may not read it (root reads all). */
static void test_open_unreadable(void)
{
    g_autofree char *path = make_image(test_dir, "secret.img", 4096);
    g_assert_cmpint(chmod(path, 0), ==, 0);
    if (getuid() == 0) {
        if (!g_test_subprocess()) {
            g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
            g_test_trap_assert_passed();
            g_unlink(path);
            return;
        }
        g_assert_cmpint(chmod(test_dir, 0755), ==, 0);
        g_assert_cmpint(setgid(65534), ==, 0);
        g_assert_cmpint(setuid(65534), ==, 0);
    }
    DriveConfig cfg = drive_for(path, DRIVE_CACHE_WRITEBACK, DRIVE_AIO_THREADS);
    expect_open_error(&cfg, "Permission denied");
    if (!g_test_subprocess()) {
        g_unlink(path);
    }
}

/* Without format=, a raw image gets QEMU's warning, and a guest may not
 * write another format's header into block 0; with format=raw it may. */
static void test_probed_raw(void)
{
    g_autofree char *path = make_image(test_dir, "probe.img", IMAGE_SIZE);
    if (g_test_subprocess()) {
        DriveConfig cfg = drive_for(path, DRIVE_CACHE_WRITEBACK, DRIVE_AIO_THREADS);
        cfg.format = DRIVE_FORMAT_PROBE;
        BlockBackend *blk = open_ok(&cfg);
        uint8_t header[512] = "QFI\xfb";
        struct iovec iov = { header, sizeof(header) };
        g_assert_cmpint(blk_write_sync(blk, 0, &iov, 1), ==, -EPERM);
        g_assert_cmpint(blk_write_sync(blk, 512, &iov, 1), ==, 0);
        uint8_t plain[512] = "an MBR, say";
        iov.iov_base = plain;
        g_assert_cmpint(blk_write_sync(blk, 0, &iov, 1), ==, 0);
        blk_unref(blk);

        cfg.format = DRIVE_FORMAT_RAW;
        blk = open_ok(&cfg);
        iov.iov_base = header;
        g_assert_cmpint(blk_write_sync(blk, 0, &iov, 1), ==, 0);
        blk_unref(blk);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_autofree char *warning = g_strdup_printf(
        "WARNING: Image format was not specified for '%s' and probing guessed raw.\n"
        "         Automatically detecting the format is dangerous for raw images, "
        "write operations on block 0 will be restricted.\n"
        "         Specify the 'raw' format explicitly to remove the restrictions.\n", path);
    g_autofree char *pattern = g_strconcat("*", warning, "*", NULL);
    g_test_trap_assert_stderr(pattern);
    g_unlink(path);
}

/* ---- host block devices ---- */

/* A loop device over a file in test_dir with the given logical sector
 * size, or NULL (and the test skipped) where losetup cannot make one. */
static char *loop_device_new(const char *backing, unsigned sector_size)
{
    g_autofree char *size_arg = g_strdup_printf("%u", sector_size);
    const char *argv[] = { "losetup", "-f", "--show", "-b", size_arg, backing, NULL };
    g_autofree char *out = NULL, *err = NULL;
    int status;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                      &status, NULL) || !g_spawn_check_wait_status(status, NULL)) {
        g_autofree char *reason = g_strdup_printf("no loop device (root only): %s",
                                                  err ? g_strstrip(err) : "no losetup");
        g_test_skip(reason);
        return NULL;
    }
    return g_strdup(g_strstrip(out));
}

static void loop_device_free(char *device)
{
    const char *argv[] = { "losetup", "-d", device, NULL };
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                               NULL, NULL, NULL, NULL));
    g_free(device);
}

/* A host block device: its size, and sectors written through it are in
 * the file behind it. With 4 KiB logical sectors, 512-byte requests on
 * O_DIRECT take the buffered way and stay coherent with direct ones. */
static void test_host_device(gconstpointer data)
{
    const EngineCase *ec = data;
    const unsigned sector_sizes[] = { 512, 4096 };
    for (size_t k = 0; k < G_N_ELEMENTS(sector_sizes); k++) {
        g_autofree char *backing = make_image(test_dir, "loop.img", 4 * IMAGE_SIZE);
        char *device = loop_device_new(backing, sector_sizes[k]);
        if (!device) {
            g_unlink(backing);
            return;
        }
        DriveConfig cfg = drive_for(device, ec->cache, ec->aio);
        BlockBackend *blk = open_ok(&cfg);
        g_assert_cmpuint(blk_getlength(blk), ==, 4 * IMAGE_SIZE);

        uint8_t *out = page_aligned(8192), *in = page_aligned(8192);
        uint8_t *patch = page_aligned(512), file[8192];
        fill_pattern(out, 8192, 21 + k);
        fill_pattern(patch, 512, 31 + k);
        struct iovec whole = { out, 8192 };
        g_assert_cmpint(blk_write_sync(blk, 8192, &whole, 1), ==, 0);
        struct iovec sector = { patch, 512 };
        g_assert_cmpint(blk_write_sync(blk, 8192 + 512, &sector, 1), ==, 0);
        struct iovec back = { in, 8192 };
        g_assert_cmpint(blk_read_sync(blk, 8192, &back, 1), ==, 0);
        Completion flush = { 0 };
        blk_aio_flush(blk, completion_cb, &flush);
        g_assert_cmpint(wait_for(&flush), ==, 0);
        blk_unref(blk);
        loop_device_free(device);
        read_file(backing, 8192, file, sizeof(file));
        /* The 4 KiB block with the patched sector, as the drive and the file see it. */
        const uint8_t *seen[] = { in, file };
        for (size_t i = 0; i < G_N_ELEMENTS(seen); i++) {
            g_assert_cmpmem(seen[i], 512, out, 512);
            g_assert_cmpmem(seen[i] + 512, 512, patch, 512);
            g_assert_cmpmem(seen[i] + 1024, 8192 - 1024, out + 1024, 8192 - 1024);
        }
        free(out);
        free(in);
        free(patch);
        g_unlink(backing);
    }
}

/* ---- locking ---- */

static void test_lock_between_openers(void)
{
    g_autofree char *path = make_image(test_dir, "lock.img", IMAGE_SIZE);
    DriveConfig rw = drive_for(path, DRIVE_CACHE_WRITEBACK, DRIVE_AIO_THREADS);
    DriveConfig ro = rw;
    ro.read_only = true;

    BlockBackend *writer = open_ok(&rw);
    g_autofree char *named = g_strdup_printf("Failed to get \"write\" lock: is another "
                                             "process using the image [%s]?", path);
    expect_open_error(&rw, named);
    expect_open_error(&ro, "Failed to get shared \"write\" lock");
    blk_unref(writer);

    BlockBackend *reader1 = open_ok(&ro);
    BlockBackend *reader2 = open_ok(&ro);           /* readers share */
    expect_open_error(&rw, "Failed to get \"write\" lock");
    blk_unref(reader1);
    blk_unref(reader2);
    writer = open_ok(&rw);                          /* released on close */
    blk_unref(writer);
    g_unlink(path);
}

static bool have_qemu_io(void)
{
    g_autofree char *qemu_io = g_find_program_in_path("qemu-io");
    return qemu_io != NULL;
}

/* Debian's qemu-io against our locks and ours against qemu-io's. */
static void test_lock_against_qemu(void)
{
    if (!have_qemu_io()) {
        g_test_skip("qemu-io is not installed (apt-get install qemu-utils)");
        return;
    }
    g_autofree char *path = make_image(test_dir, "qlock.img", IMAGE_SIZE);
    DriveConfig rw = drive_for(path, DRIVE_CACHE_WRITEBACK, DRIVE_AIO_THREADS);
    BlockBackend *writer = open_ok(&rw);
    const char *write_argv[] = { "qemu-io", "-f", "raw", "-c", "read 0 512", path, NULL };
    const char *shared_argv[] = { "qemu-io", "-r", "-U", "-f", "raw", "-c", "read 0 512",
                                  path, NULL };
    g_autofree char *out = NULL, *err = NULL;
    int status;
    g_assert_true(g_spawn_sync(NULL, (char **)write_argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
                               NULL, &out, &err, &status, NULL));
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(err, "Failed to get \"write\" lock"));
    g_free(out);
    g_free(err);
    g_assert_true(g_spawn_sync(NULL, (char **)shared_argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
                               NULL, &out, &err, &status, NULL));
    g_assert_true(g_spawn_check_wait_status(status, NULL));        /* -U shares */
    blk_unref(writer);

    /* qemu-io holds the image open (read-write) while it waits for
     * commands on its standard input. */
    const char *hold_argv[] = { "qemu-io", "-f", "raw", path, NULL };
    GPid pid;
    int in_fd, out_fd;
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)hold_argv, NULL,
                                           G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                           NULL, NULL, &pid, &in_fd, &out_fd, NULL, NULL));
    /* Its prompt comes once the image is open. */
    char prompt[16];
    g_assert_cmpint(read(out_fd, prompt, sizeof(prompt)), >, 0);
    /* qemu-io shares nothing it writes: we find its write lock. */
    expect_open_error(&rw, "\"write\" lock: is another process using the image");
    DriveConfig ro = rw;
    ro.read_only = true;
    expect_open_error(&ro, "Failed to get shared \"write\" lock");
    close(in_fd);
    close(out_fd);
    waitpid(pid, &status, 0);
    g_spawn_close_pid(pid);
    g_unlink(path);
}

static void add_engine_tests(const char *name, GTestDataFunc fn)
{
    for (size_t i = 0; i < G_N_ELEMENTS(engine_cases); i++) {
        g_autofree char *path = g_strdup_printf("/block/%s/%s", name, engine_cases[i].name);
        g_test_add_data_func(path, &engine_cases[i], fn);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* A test run again in a subprocess works in its parent's directory. */
    if (g_test_subprocess()) {
        test_dir = g_strdup(g_getenv("TEST_BLOCK_DIR"));
    } else {
        test_dir = g_dir_make_tmp("test-block-XXXXXX", NULL);
        g_setenv("TEST_BLOCK_DIR", test_dir, TRUE);
    }
    g_assert_nonnull(test_dir);
    add_engine_tests("round-trip", test_round_trip);
    add_engine_tests("drain", test_drain_waits);
    add_engine_tests("plug", test_plug_batches);
    add_engine_tests("iothread", test_completion_on_iothread);
    for (size_t i = 0; i < G_N_ELEMENTS(engine_cases); i++) {
        if (drive_cache_flags(engine_cases[i].cache).direct) {
            g_autofree char *path = g_strdup_printf("/block/direct-unaligned/%s",
                                                    engine_cases[i].name);
            g_test_add_data_func(path, &engine_cases[i], test_direct_unaligned);
        }
    }
    g_test_add_data_func("/block/enospc/threads", &engine_cases[0], test_enospc);
    g_test_add_data_func("/block/enospc/native", &engine_cases[4], test_enospc);
    g_test_add_data_func("/block/enospc/io_uring", &engine_cases[6], test_enospc);
    g_test_add_data_func("/block/size-not-512-multiple/threads", &engine_cases[0],
                         test_unaligned_size);
    g_test_add_data_func("/block/size-not-512-multiple/native", &engine_cases[4],
                         test_unaligned_size);
    g_test_add_data_func("/block/size-not-512-multiple/io_uring", &engine_cases[7],
                         test_unaligned_size);
    g_test_add_data_func("/block/host-device/threads-none", &engine_cases[1],
                         test_host_device);
    g_test_add_data_func("/block/host-device/native-none", &engine_cases[4],
                         test_host_device);
    g_test_add_data_func("/block/host-device/io_uring-writeback", &engine_cases[6],
                         test_host_device);
    g_test_add_func("/block/request-errors", test_request_errors);
    g_test_add_func("/block/open-errors", test_open_errors);
    g_test_add_func("/block/open-unreadable", test_open_unreadable);
    g_test_add_func("/block/probed-raw", test_probed_raw);
    g_test_add_func("/block/lock/openers", test_lock_between_openers);
    g_test_add_func("/block/lock/qemu-io", test_lock_against_qemu);
    int ret = g_test_run();
    if (!g_test_subprocess()) {
        g_rmdir(test_dir);
    }
    return ret;
}
