/*
 * werror= and rerror= through the block layer and the run-state machine,
 * without a device: a request the host fails is reported, ignored, or
 * kept while the VM stops in io-error (BLOCK_IO_ERROR, then STOP, as
 * QEMU 7.2 sends them) and re-submitted by cont, when it succeeds if the
 * host's problem went away. The host fails for real: EFBIG past
 * RLIMIT_FSIZE (writes, no root), ENOSPC on a full small tmpfs (root),
 * and, for reads, the block layer's fault injector.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "../../block/block-internal.h"     /* block_fault_injector */
#include "block/block-backend.h"
#include "file-size-limit.h"
#include "monitor/qmp.h"
#include "qemu/main-loop.h"
#include "sysemu/iothread.h"
#include "sysemu/runstate.h"

#define IMAGE_BYTES     (1024 * 1024)
#define FSIZE_LIMIT     (64 * 1024)     /* writes past it fail with EFBIG */

static char *dir;
static GPtrArray *events;               /* "NAME {data}", in order */
static GMutex events_lock;              /* sent from an I/O thread too */

static void record_event(const char *name, JsonObject *data, int64_t ts, void *opaque)
{
    JsonNode *node = json_node_init_object(json_node_alloc(), data);
    g_autofree char *text = json_to_string(node, false);
    json_node_unref(node);
    g_mutex_lock(&events_lock);
    g_ptr_array_add(events, g_strdup_printf("%s %s", name, text));
    g_mutex_unlock(&events_lock);
}

/* The events since the last call, one per line, then forget them. */
static char *take_events(void)
{
    g_mutex_lock(&events_lock);
    g_ptr_array_add(events, NULL);
    char *all = g_strjoinv("\n", (char **)events->pdata);
    g_ptr_array_set_size(events, 0);
    g_mutex_unlock(&events_lock);
    return all;
}

/* nospace: "true", "false", or NULL where QEMU leaves it out (no error
 * of the drive may stop the VM). */
static char *io_error_event(const char *op, const char *action, const char *nospace, int err)
{
    g_autofree char *nospace_member = nospace ? g_strdup_printf("\"nospace\":%s,", nospace)
                                              : g_strdup("");
    return g_strdup_printf("BLOCK_IO_ERROR {\"device\":\"werr0\",\"node-name\":\"NODE\","
                           "\"operation\":\"%s\",\"action\":\"%s\",%s\"reason\":\"%s\"}",
                           op, action, nospace_member, g_strerror(err));
}

/* The events, with the node name (a process-wide counter) as NODE. */
static void expect_events(BlockBackend *blk, const char *expected)
{
    g_autofree char *got = take_events();
    g_autofree char *node = g_strdup_printf("\"node-name\":\"%s\"", blk_node_name(blk));
    g_auto(GStrv) parts = g_strsplit(got, node, -1);
    g_autofree char *normalized = g_strjoinv("\"node-name\":\"NODE\"", parts);
    g_assert_cmpstr(normalized, ==, expected);
}

/* ---- requests ---- */

typedef struct Request {
    bool done;
    int ret;
    uint8_t buf[4096];
} Request;

static void request_done(void *opaque, int ret)
{
    Request *r = opaque;
    r->ret = ret;
    __atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
}

static bool is_done(Request *r)
{
    return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);
}

/* Run the main loop until r completes, or for a while if it never does
 * (a kept request): whether it did. */
static bool run_until_done(Request *r)
{
    gint64 deadline = g_get_monotonic_time() + G_USEC_PER_SEC / 2;
    while (!is_done(r) && g_get_monotonic_time() < deadline) {
        g_main_context_iteration(main_loop_context(), FALSE);
        g_usleep(1000);
    }
    return is_done(r);
}

static void start_write(BlockBackend *blk, uint64_t offset, Request *r, uint8_t fill)
{
    memset(r->buf, fill, sizeof(r->buf));
    struct iovec iov = { r->buf, sizeof(r->buf) };
    blk_aio_pwritev(blk, offset, &iov, 1, 0, request_done, r);
}

static void start_read(BlockBackend *blk, uint64_t offset, Request *r)
{
    memset(r->buf, 0, sizeof(r->buf));
    struct iovec iov = { r->buf, sizeof(r->buf) };
    blk_aio_preadv(blk, offset, &iov, 1, request_done, r);
}

static char *image_in(const char *where, const char *name, uint8_t fill)
{
    char *path = g_build_filename(where, name, NULL);
    g_autofree uint8_t *data = g_malloc(FSIZE_LIMIT);
    memset(data, fill, FSIZE_LIMIT);
    g_assert_true(g_file_set_contents(path, (char *)data, FSIZE_LIMIT, NULL));
    g_assert_cmpint(truncate(path, IMAGE_BYTES), ==, 0);   /* the rest a hole */
    return path;
}

static BlockBackend *open_drive(const char *path, DriveErrorAction rerror,
                                DriveErrorAction werror, IOThread *iothread)
{
    DriveConfig cfg = { .id = (char *)"werr0", .file = (char *)path,
                        .format = DRIVE_FORMAT_RAW };
    Error *err = NULL;
    BlockBackend *blk = blk_new_open(&cfg, &err);
    g_assert_nonnull(blk);
    g_assert_true(blk_attach(blk, iothread, &err));
    blk_set_on_error(blk, rerror, werror);
    return blk;
}

static void file_holds(const char *path, uint64_t offset, uint8_t fill)
{
    uint8_t got[4096], want[4096];
    memset(want, fill, sizeof(want));
    int fd = open(path, O_RDONLY);
    g_assert_cmpint(pread(fd, got, sizeof(got), offset), ==, sizeof(got));
    close(fd);
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
}

/* ---- the run state as a monitor sees it ---- */

static void expect_status(const char *status, bool running)
{
    Error *err = NULL;
    g_autoptr(JsonNode) ret = qmp_dispatch("query-status", NULL, &err);
    g_assert_null(err);
    JsonObject *o = json_node_get_object(ret);
    g_assert_cmpstr(json_object_get_string_member(o, "status"), ==, status);
    g_assert_cmpint(json_object_get_boolean_member(o, "running"), ==, running);
}

/* What the main loop does between iterations. */
static void take_runstate_requests(void)
{
    int status;
    g_assert_false(runstate_main_loop_should_exit(&status));
}

static void cont(void)
{
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch("cont", NULL, &err);
    g_assert_null(err);
    json_node_unref(ret);
}

static void vm_running(void)
{
    take_runstate_requests();
    runstate_set(RUN_STATE_RUNNING);
    g_free(take_events());
}

/* ---- tests ---- */

/* werror=stop: the write waits while the VM is stopped in io-error, and
 * cont finishes it once the host takes it. Completions on the main loop
 * or on an I/O thread; the re-submission comes from the main loop. */
static void test_stop_then_cont(gconstpointer with_iothread)
{
    IOThread *iothread = NULL;
    if (with_iothread) {
        Error *err = NULL;
        iothread = iothread_new("werr-io", &err);
        g_assert_nonnull(iothread);
    }
    g_autofree char *path = image_in(dir, "stop.raw", 0x11);
    BlockBackend *blk = open_drive(path, DRIVE_ERROR_REPORT, DRIVE_ERROR_STOP, iothread);
    vm_running();
    Request w = { 0 };
    file_size_limit_set(FSIZE_LIMIT);
    start_write(blk, 512 * 1024, &w, 0x5a);
    g_assert_false(run_until_done(&w));
    g_assert_cmpuint(blk_in_flight(blk), ==, 1);
    g_assert_cmpstr(blk_io_status(blk), ==, "failed");
    take_runstate_requests();
    g_autofree char *error = io_error_event("write", "stop", "false", EFBIG);
    g_autofree char *stopped = g_strconcat(error, "\nSTOP {}", NULL);
    expect_events(blk, stopped);
    expect_status("io-error", false);

    file_size_limit_lift();
    cont();
    g_assert_true(run_until_done(&w));
    g_assert_cmpint(w.ret, ==, 0);
    expect_events(blk, "RESUME {}");
    expect_status("running", true);
    g_assert_cmpstr(blk_io_status(blk), ==, "ok");
    file_holds(path, 512 * 1024, 0x5a);
    BlockAcctSnapshot snap;
    block_acct_snapshot(blk_acct(blk), &snap);
    g_assert_cmpuint(snap.kind[BLOCK_ACCT_WRITE].ops, ==, 1);
    g_assert_cmpuint(snap.kind[BLOCK_ACCT_WRITE].failed_ops, ==, 0);
    blk_unref(blk);
    if (iothread) {
        iothread_free(iothread);
    }
    g_unlink(path);
}

/* A cont while the host still fails: the request fails again and the VM
 * stops again, with a second event. */
static void test_fails_again_after_cont(void)
{
    g_autofree char *path = image_in(dir, "again.raw", 0x22);
    BlockBackend *blk = open_drive(path, DRIVE_ERROR_REPORT, DRIVE_ERROR_STOP, NULL);
    vm_running();
    Request w = { 0 };
    file_size_limit_set(FSIZE_LIMIT);
    start_write(blk, 512 * 1024, &w, 0x5b);
    g_assert_false(run_until_done(&w));
    take_runstate_requests();
    g_free(take_events());
    cont();
    g_assert_false(run_until_done(&w));
    take_runstate_requests();
    g_autofree char *error = io_error_event("write", "stop", "false", EFBIG);
    g_autofree char *again = g_strconcat("RESUME {}\n", error, "\nSTOP {}", NULL);
    expect_events(blk, again);
    expect_status("io-error", false);
    file_size_limit_lift();
    cont();
    g_assert_true(run_until_done(&w));
    g_assert_cmpint(w.ret, ==, 0);
    blk_unref(blk);
    g_unlink(path);
}

/* A cont that comes before the main loop took the stop (an I/O thread
 * failed the request a moment ago): the stop is dropped with the STOP and
 * RESUME events QEMU sends, and the kept request goes out again. */
static void test_cont_before_the_stop_is_taken(void)
{
    g_autofree char *path = image_in(dir, "race.raw", 0x33);
    BlockBackend *blk = open_drive(path, DRIVE_ERROR_REPORT, DRIVE_ERROR_STOP, NULL);
    vm_running();
    Request w = { 0 };
    file_size_limit_set(FSIZE_LIMIT);
    start_write(blk, 512 * 1024, &w, 0x5c);
    g_assert_false(run_until_done(&w));
    file_size_limit_lift();
    cont();
    g_assert_true(run_until_done(&w));
    g_assert_cmpint(w.ret, ==, 0);
    take_runstate_requests();
    g_autofree char *error = io_error_event("write", "stop", "false", EFBIG);
    g_autofree char *events_seen = g_strconcat(error, "\nSTOP {}\nRESUME {}", NULL);
    expect_events(blk, events_seen);
    expect_status("running", true);
    blk_unref(blk);
    g_unlink(path);
}

/* A drain (reset, exit) gives a kept request back with its error, once:
 * nothing else would ever finish it. */
static void test_drain_gives_kept_requests_back(void)
{
    g_autofree char *path = image_in(dir, "drain.raw", 0x44);
    BlockBackend *blk = open_drive(path, DRIVE_ERROR_REPORT, DRIVE_ERROR_STOP, NULL);
    vm_running();
    Request w = { 0 };
    file_size_limit_set(FSIZE_LIMIT);
    start_write(blk, 512 * 1024, &w, 0x5d);
    g_assert_false(run_until_done(&w));
    take_runstate_requests();
    g_free(take_events());
    blk_drain(blk);
    g_assert_true(is_done(&w));
    g_assert_cmpint(w.ret, ==, -EFBIG);
    g_assert_cmpuint(blk_in_flight(blk), ==, 0);
    expect_events(blk, "");
    BlockAcctSnapshot snap;
    block_acct_snapshot(blk_acct(blk), &snap);
    g_assert_cmpuint(snap.kind[BLOCK_ACCT_WRITE].failed_ops, ==, 1);
    /* A failure during a drain is not kept either (the drain would wait
     * for ever): it still says stop, and stops the VM. The completion
     * runs on the main loop's context, which only the drain runs here. */
    runstate_set(RUN_STATE_RUNNING);
    Request during = { 0 };
    start_write(blk, 512 * 1024, &during, 0x5d);
    blk_drain(blk);
    file_size_limit_lift();
    g_assert_true(is_done(&during));
    g_assert_cmpint(during.ret, ==, -EFBIG);
    take_runstate_requests();
    g_autofree char *error = io_error_event("write", "stop", "false", EFBIG);
    g_autofree char *stopped = g_strconcat(error, "\nSTOP {}", NULL);
    expect_events(blk, stopped);
    blk_unref(blk);
    g_unlink(path);
}

/* ignore: the device sees success, the monitor an event; the VM runs on. */
static void test_ignore(void)
{
    g_autofree char *path = image_in(dir, "ignore.raw", 0x55);
    BlockBackend *blk = open_drive(path, DRIVE_ERROR_REPORT, DRIVE_ERROR_IGNORE, NULL);
    vm_running();
    Request w = { 0 };
    file_size_limit_set(FSIZE_LIMIT);
    start_write(blk, 512 * 1024, &w, 0x5e);
    g_assert_true(run_until_done(&w));
    file_size_limit_lift();
    g_assert_cmpint(w.ret, ==, 0);
    take_runstate_requests();
    g_autofree char *ignored = io_error_event("write", "ignore", NULL, EFBIG);
    expect_events(blk, ignored);
    expect_status("running", true);
    g_assert_cmpstr(blk_io_status(blk), ==, "ok");
    blk_unref(blk);
    g_unlink(path);
}

/* enospc (werror's default) reports what is not ENOSPC. */
static void test_enospc_reports_other_errors(void)
{
    g_autofree char *path = image_in(dir, "efbig.raw", 0x66);
    BlockBackend *blk = open_drive(path, DRIVE_ERROR_REPORT, DRIVE_ERROR_ENOSPC, NULL);
    vm_running();
    Request w = { 0 };
    file_size_limit_set(FSIZE_LIMIT);
    start_write(blk, 512 * 1024, &w, 0x5f);
    g_assert_true(run_until_done(&w));
    file_size_limit_lift();
    g_assert_cmpint(w.ret, ==, -EFBIG);
    take_runstate_requests();
    g_autofree char *reported = io_error_event("write", "report", "false", EFBIG);
    expect_events(blk, reported);
    expect_status("running", true);
    blk_unref(blk);
    g_unlink(path);
}

/* enospc on a full file system: stop, io-status nospace; space freed,
 * cont, and the write lands. A small tmpfs: root only. */
static void test_enospc_stops_until_space_is_freed(void)
{
    g_autofree char *mnt = g_build_filename(dir, "full", NULL);
    g_mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=256k") < 0) {
        g_test_skip("cannot mount a small tmpfs (needs root)");
        g_rmdir(mnt);
        return;
    }
    g_autofree char *path = image_in(mnt, "full.raw", 0x77);
    g_autofree char *filler = g_build_filename(mnt, "filler", NULL);
    int fd = open(filler, O_CREAT | O_WRONLY, 0600);
    static const uint8_t chunk[4096];
    while (write(fd, chunk, sizeof(chunk)) == sizeof(chunk)) {
    }
    close(fd);
    BlockBackend *blk = open_drive(path, DRIVE_ERROR_REPORT, DRIVE_ERROR_ENOSPC, NULL);
    vm_running();
    Request w = { 0 };
    start_write(blk, 512 * 1024, &w, 0x60);
    g_assert_false(run_until_done(&w));
    take_runstate_requests();
    g_autofree char *error = io_error_event("write", "stop", "true", ENOSPC);
    g_autofree char *stopped = g_strconcat(error, "\nSTOP {}", NULL);
    expect_events(blk, stopped);
    expect_status("io-error", false);
    g_assert_cmpstr(blk_io_status(blk), ==, "nospace");

    g_assert_cmpint(g_unlink(filler), ==, 0);
    cont();
    g_assert_true(run_until_done(&w));
    g_assert_cmpint(w.ret, ==, 0);
    file_holds(path, 512 * 1024, 0x60);
    g_assert_cmpstr(blk_io_status(blk), ==, "ok");
    blk_unref(blk);
    g_unlink(path);
    g_assert_cmpint(umount(mnt), ==, 0);
    g_rmdir(mnt);
}

/* Reads: the fault injector fails them with EIO while it is set. */
static int64_t fail_reads(const BlockRequest *req, int64_t result)
{
    return req->op == BLOCK_OP_READ ? -EIO : result;
}

static void test_rerror(void)
{
    g_autofree char *path = image_in(dir, "read.raw", 0x88);
    BlockBackend *blk = open_drive(path, DRIVE_ERROR_STOP, DRIVE_ERROR_REPORT, NULL);
    vm_running();
    Request r = { 0 };
    block_fault_injector = fail_reads;
    start_read(blk, 0, &r);
    g_assert_false(run_until_done(&r));
    take_runstate_requests();
    g_autofree char *error = io_error_event("read", "stop", "false", EIO);
    g_autofree char *stopped = g_strconcat(error, "\nSTOP {}", NULL);
    expect_events(blk, stopped);
    g_assert_cmpstr(blk_io_status(blk), ==, "failed");
    block_fault_injector = NULL;
    cont();
    g_assert_true(run_until_done(&r));
    g_assert_cmpint(r.ret, ==, 0);
    g_assert_cmphex(r.buf[0], ==, 0x88);
    g_free(take_events());

    /* rerror=ignore and report, and reads never take werror's action. */
    blk_set_on_error(blk, DRIVE_ERROR_IGNORE, DRIVE_ERROR_STOP);
    block_fault_injector = fail_reads;
    Request ignored = { 0 };
    start_read(blk, 0, &ignored);
    g_assert_true(run_until_done(&ignored));
    g_assert_cmpint(ignored.ret, ==, 0);
    blk_set_on_error(blk, DRIVE_ERROR_REPORT, DRIVE_ERROR_STOP);
    Request reported = { 0 };
    start_read(blk, 0, &reported);
    g_assert_true(run_until_done(&reported));
    g_assert_cmpint(reported.ret, ==, -EIO);
    block_fault_injector = NULL;
    take_runstate_requests();
    g_autofree char *first = io_error_event("read", "ignore", "false", EIO);
    g_autofree char *second = io_error_event("read", "report", "false", EIO);
    g_autofree char *both = g_strconcat(first, "\n", second, NULL);
    expect_events(blk, both);
    expect_status("running", true);
    blk_unref(blk);
    g_unlink(path);
}

/* A drive no device set the actions for reports, whatever the error. */
static void test_default_is_report(void)
{
    g_autofree char *path = image_in(dir, "plain.raw", 0x99);
    DriveConfig cfg = { .id = (char *)"werr0", .file = path, .format = DRIVE_FORMAT_RAW,
                        .werror = DRIVE_ERROR_STOP };
    Error *err = NULL;
    BlockBackend *blk = blk_new_open(&cfg, &err);
    vm_running();
    Request w = { 0 };
    file_size_limit_set(FSIZE_LIMIT);
    start_write(blk, 512 * 1024, &w, 0x61);
    g_assert_true(run_until_done(&w));
    file_size_limit_lift();
    g_assert_cmpint(w.ret, ==, -EFBIG);
    take_runstate_requests();
    /* No error of this drive may stop the VM: no "nospace", as in QEMU. */
    g_autofree char *reported = io_error_event("write", "report", NULL, EFBIG);
    expect_events(blk, reported);
    blk_unref(blk);
    g_unlink(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    main_loop_init();
    events = g_ptr_array_new_with_free_func(g_free);
    qmp_event_add_sink(record_event, NULL);
    dir = g_dir_make_tmp("test-block-error-XXXXXX", NULL);
    g_test_add_data_func("/block-error/stop-then-cont/main-loop", NULL, test_stop_then_cont);
    g_test_add_data_func("/block-error/stop-then-cont/iothread", "", test_stop_then_cont);
    g_test_add_func("/block-error/fails-again-after-cont", test_fails_again_after_cont);
    g_test_add_func("/block-error/cont-before-the-stop-is-taken",
                    test_cont_before_the_stop_is_taken);
    g_test_add_func("/block-error/drain-gives-kept-requests-back",
                    test_drain_gives_kept_requests_back);
    g_test_add_func("/block-error/ignore", test_ignore);
    g_test_add_func("/block-error/enospc-reports-other-errors",
                    test_enospc_reports_other_errors);
    g_test_add_func("/block-error/enospc-stops-until-space-is-freed",
                    test_enospc_stops_until_space_is_freed);
    g_test_add_func("/block-error/rerror", test_rerror);
    g_test_add_func("/block-error/default-is-report", test_default_is_report);
    int status = g_test_run();
    qmp_event_remove_sink(record_event, NULL);
    g_rmdir(dir);
    g_ptr_array_unref(events);
    return status;
}
