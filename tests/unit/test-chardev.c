/*
 * Character backends (chardev/char.h): spec parsing, the file and null
 * backends, the bounded output ring, and the stdio backend's non-blocking
 * output, paced input, EOF handling and mon:stdio escapes. The stdio tests
 * put pipes in place of fds 0 and 1 (and 2 for escape messages).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "chardev/char.h"
#include "qemu/main-loop.h"
#include "sysemu/runstate.h"

/* Run every source that is ready now, without blocking. */
static void run_ready_sources(void)
{
    for (int i = 0; i < 1000 && g_main_context_iteration(main_loop_context(), FALSE); i++) {
    }
}

static char *temp_path(const char *name)
{
    char *dir = g_dir_make_tmp("test-chardev-XXXXXX", NULL);
    g_assert_nonnull(dir);
    char *path = g_build_filename(dir, name, NULL);
    g_free(dir);
    return path;
}

static void remove_temp(char *path)
{
    char *dir = g_path_get_dirname(path);
    g_unlink(path);
    g_rmdir(dir);
    g_free(dir);
    g_free(path);
}

static char *file_contents(const char *path, gsize *len)
{
    char *data;
    g_assert_true(g_file_get_contents(path, &data, len, NULL));
    return data;
}

/* ---- parsing ---- */

static void assert_spec_rejected(const char *spec, const char *expected_part)
{
    Error *err = NULL;
    g_assert_null(chardev_new(spec, &err));
    g_assert_nonnull(err);
    if (!strstr(err->msg, expected_part)) {
        g_error("message for '%s' lacks '%s': %s", spec, expected_part, err->msg);
    }
    error_free(err);
}

static void test_parse_errors(void)
{
    assert_spec_rejected("pty", "'pty' is not supported");
    assert_spec_rejected("tcp:localhost:4444", "not supported");
    assert_spec_rejected("", "not supported");
    assert_spec_rejected("file:", "needs a path");
    assert_spec_rejected("mon:file:/tmp/x", "only be multiplexed on stdio");
    assert_spec_rejected("file:/nonexistent-dir/out.txt", "/nonexistent-dir/out.txt");
}

static Chardev *chardev_new_ok(const char *spec)
{
    Error *err = NULL;
    Chardev *chr = chardev_new(spec, &err);
    if (err) {
        g_error("chardev_new(%s): %s", spec, err->msg);
    }
    g_assert_nonnull(chr);
    return chr;
}

static void test_parse_none_and_null(void)
{
    Error *err = NULL;
    g_assert_null(chardev_new("none", &err));
    g_assert_null(err);

    Chardev *chr = chardev_new_ok("null");
    g_assert_cmpuint(chardev_write(chr, (const uint8_t *)"discard me", 10), ==, 10);
    chardev_flush(chr);
    g_assert_cmpuint(chardev_dropped_bytes(chr), ==, 0);
    chardev_free(chr);
}

/* ---- file backend and the output ring ---- */

static void test_file_roundtrip(void)
{
    char *path = temp_path("out.txt");
    g_assert_true(g_file_set_contents(path, "old contents to truncate", -1, NULL));
    char *spec = g_strconcat("file:", path, NULL);
    Chardev *chr = chardev_new_ok(spec);

    g_assert_cmpuint(chardev_write(chr, (const uint8_t *)"hello, ", 7), ==, 7);
    /* The I/O thread's watch writes it out... */
    run_ready_sources();
    gsize len;
    char *data = file_contents(path, &len);
    g_assert_cmpstr(data, ==, "hello, ");
    g_free(data);
    /* ...and flush does so without the main loop. */
    chardev_write(chr, (const uint8_t *)"world\n", 6);
    chardev_flush(chr);
    data = file_contents(path, &len);
    g_assert_cmpstr(data, ==, "hello, world\n");
    g_free(data);

    chardev_free(chr);
    g_free(spec);
    remove_temp(path);
}

static void test_ring_overflow(void)
{
    const size_t ring = 64 * 1024, extra = 1000;
    char *path = temp_path("big.bin");
    char *spec = g_strconcat("file:", path, NULL);
    Chardev *chr = chardev_new_ok(spec);
    uint8_t *buf = g_malloc(ring + extra);
    for (size_t i = 0; i < ring + extra; i++) {
        buf[i] = i * 7;
    }

    /* Nobody drains: the ring takes 64 KiB and drops the newest bytes. */
    g_assert_cmpuint(chardev_write(chr, buf, ring - 10), ==, ring - 10);
    g_assert_cmpuint(chardev_write(chr, buf + ring - 10, extra + 10), ==, 10);
    g_assert_cmpuint(chardev_dropped_bytes(chr), ==, extra);
    chardev_flush(chr);

    gsize len;
    char *data = file_contents(path, &len);
    g_assert_cmpuint(len, ==, ring);
    g_assert_true(memcmp(data, buf, ring) == 0);
    g_free(data);
    /* Room again after draining, across the ring's wrap-around. */
    g_assert_cmpuint(chardev_write(chr, buf, 100), ==, 100);
    chardev_flush(chr);
    data = file_contents(path, &len);
    g_assert_cmpuint(len, ==, ring + 100);
    g_assert_true(memcmp(data + ring, buf, 100) == 0);
    g_free(data);

    chardev_free(chr);
    g_free(buf);
    g_free(spec);
    remove_temp(path);
}

/* ---- stdio backend on pipes ---- */

typedef struct StdioPipes {
    int saved_stdin;
    int stdin_writer;       /* the test types here */
    int stdout_reader;      /* and reads the VMM's output here */
} StdioPipes;

/* The backend reopens its own description of fd 1 at creation and reads
 * fd 0 while it lives: redirect both around chardev_new(). */
static Chardev *stdio_on_pipes(const char *spec, StdioPipes *p)
{
    int in[2], out[2];
    g_assert_cmpint(pipe(in), ==, 0);
    g_assert_cmpint(pipe(out), ==, 0);
    fflush(stdout);
    p->saved_stdin = dup(STDIN_FILENO);
    int saved_stdout = dup(STDOUT_FILENO);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    close(in[0]);
    close(out[1]);

    Chardev *chr = chardev_new_ok(spec);

    dup2(saved_stdout, STDOUT_FILENO);
    close(saved_stdout);
    p->stdin_writer = in[1];
    p->stdout_reader = out[0];
    fcntl(p->stdout_reader, F_SETFL, O_NONBLOCK);
    return chr;
}

static void stdio_pipes_close(Chardev *chr, StdioPipes *p)
{
    chardev_free(chr);
    dup2(p->saved_stdin, STDIN_FILENO);
    close(p->saved_stdin);
    if (p->stdin_writer >= 0) {
        close(p->stdin_writer);
    }
    close(p->stdout_reader);
}

static size_t read_available(int fd, uint8_t *buf, size_t max)
{
    size_t total = 0;
    ssize_t n;
    while (total < max && (n = read(fd, buf + total, max - total)) > 0) {
        total += n;
    }
    return total;
}

/*
 * A reader that takes nothing fills the pipe: neither the writer nor the
 * I/O thread may block, the ring absorbs what it can and the rest is
 * counted as dropped. Once the reader drains, everything kept arrives in
 * order.
 */
static void test_stdio_output_never_blocks(void)
{
    StdioPipes p;
    Chardev *chr = stdio_on_pipes("stdio", &p);
    const size_t total = 512 * 1024;
    uint8_t *buf = g_malloc(total);
    for (size_t i = 0; i < total; i++) {
        buf[i] = i % 251;
    }

    size_t accepted = 0;
    for (size_t off = 0; off < total; off += 4096) {
        accepted += chardev_write(chr, buf + off, 4096);
        run_ready_sources();    /* would hang here on a blocking write */
    }
    g_assert_cmpuint(accepted, <, total);
    g_assert_cmpuint(chardev_dropped_bytes(chr), ==, total - accepted);

    uint8_t *got = g_malloc(total);
    size_t received = 0;
    for (int i = 0; i < 1000 && received < accepted; i++) {
        received += read_available(p.stdout_reader, got + received, total - received);
        run_ready_sources();
    }
    g_assert_cmpuint(received, ==, accepted);
    /* The first bytes went through unchanged, whatever was dropped later. */
    g_assert_true(memcmp(got, buf, 64 * 1024) == 0);

    g_free(got);
    g_free(buf);
    stdio_pipes_close(chr, &p);
}

typedef struct Frontend {
    GString *got;
    size_t room;
    int can_read_calls;
} Frontend;

static size_t frontend_can_read(void *opaque)
{
    Frontend *f = opaque;
    f->can_read_calls++;
    return f->room;
}

static void frontend_read(void *opaque, const uint8_t *buf, size_t len)
{
    Frontend *f = opaque;
    g_assert_cmpuint(len, <=, f->room);
    g_string_append_len(f->got, (const char *)buf, len);
    f->room -= len;
}

static void type_input(StdioPipes *p, const char *text)
{
    g_assert_cmpint(write(p->stdin_writer, text, strlen(text)), ==, strlen(text));
}

static void test_stdio_input_paced(void)
{
    StdioPipes p;
    Chardev *chr = stdio_on_pipes("stdio", &p);
    Frontend f = { g_string_new(NULL), 4 };
    chardev_set_handlers(chr, frontend_can_read, frontend_read, &f);

    type_input(&p, "hello world");
    run_ready_sources();
    g_assert_cmpstr(f.got->str, ==, "hell");
    /* Paused: stdin is no longer polled, can_read is not asked again. */
    int calls = f.can_read_calls;
    run_ready_sources();
    g_assert_cmpint(f.can_read_calls, ==, calls);
    g_assert_cmpstr(f.got->str, ==, "hell");

    f.room = 100;
    chardev_accept_input(chr);
    run_ready_sources();
    g_assert_cmpstr(f.got->str, ==, "hello world");

    g_string_free(f.got, TRUE);
    stdio_pipes_close(chr, &p);
}

static void test_stdio_input_eof(void)
{
    StdioPipes p;
    Chardev *chr = stdio_on_pipes("stdio", &p);
    Frontend f = { g_string_new(NULL), 100 };
    chardev_set_handlers(chr, frontend_can_read, frontend_read, &f);

    type_input(&p, "bye");
    close(p.stdin_writer);
    p.stdin_writer = -1;
    run_ready_sources();
    g_assert_cmpstr(f.got->str, ==, "bye");
    /* After EOF stdin is out of the poll set: nothing is ready any more
     * (a readable-at-EOF fd left in it would be ready forever). */
    g_assert_false(g_main_context_iteration(main_loop_context(), FALSE));

    g_string_free(f.got, TRUE);
    stdio_pipes_close(chr, &p);
}

static void test_stdio_only_once(void)
{
    StdioPipes p;
    Chardev *chr = stdio_on_pipes("stdio", &p);
    assert_spec_rejected("mon:stdio", "multiple");
    stdio_pipes_close(chr, &p);
    /* Free again once the first is gone. */
    chr = stdio_on_pipes("mon:stdio", &p);
    stdio_pipes_close(chr, &p);
}

static void test_mon_stdio_escapes(void)
{
    StdioPipes p;
    Chardev *chr = stdio_on_pipes("mon:stdio", &p);
    Frontend f = { g_string_new(NULL), 100 };
    chardev_set_handlers(chr, frontend_can_read, frontend_read, &f);
    int status = -1;
    ShutdownCause cause = SHUTDOWN_CAUSE_HOST_SIGNAL;
    g_assert_false(runstate_take_shutdown_request(&cause, &status));

    /* C-a C-a is a literal C-a, unknown escapes vanish, C-a h prints
     * QEMU's help on the console, C-a c with no monitor on the
     * multiplexer keeps the focus; none of it asks for a shutdown. */
    type_input(&p, "a\x01\x01" "b\x01zc\x01h\x01" "cd");
    run_ready_sources();
    g_assert_cmpstr(f.got->str, ==, "a\x01" "bcd");
    char out[1024];
    size_t n = read_available(p.stdout_reader, (uint8_t *)out, sizeof(out) - 1);
    out[n] = 0;
    g_assert_cmpstr(out, ==, "\n\rC-a h    print this help\n\r"
                             "C-a x    exit emulator\n\r"
                             "C-a c    switch between console and monitor\n\r"
                             "C-a C-a  sends C-a\n\r");
    g_assert_false(runstate_take_shutdown_request(&cause, &status));

    /* An escape split across two reads still works; C-a x says so on the
     * console as QEMU does. */
    type_input(&p, "e\x01");
    run_ready_sources();
    type_input(&p, "x");
    run_ready_sources();
    g_assert_cmpstr(f.got->str, ==, "a\x01" "bcde");
    g_assert_true(runstate_take_shutdown_request(&cause, &status));
    g_assert_cmpint(status, ==, 0);
    n = read_available(p.stdout_reader, (uint8_t *)out, sizeof(out) - 1);
    out[n] = 0;
    g_assert_cmpstr(out, ==, "QEMU: Terminated\n\r");
    /* QEMU exits there and then: no SHUTDOWN event. */
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_NONE);

    g_string_free(f.got, TRUE);
    stdio_pipes_close(chr, &p);
}

typedef struct FocusLog {
    Frontend f;
    GString *events;
} FocusLog;

static void focus_logged(void *opaque, bool focused)
{
    FocusLog *l = opaque;
    g_string_append(l->events, focused ? "in " : "out ");
}

/*
 * mon:stdio with two frontends (a serial port, then a monitor): input goes
 * to the first until C-a c, then to the second, and back; both can write
 * whatever has the focus; the second is told when it gains and loses it.
 */
static void test_mon_stdio_mux_focus(void)
{
    StdioPipes p;
    Chardev *chr = stdio_on_pipes("mon:stdio", &p);
    g_assert_true(chardev_is_mux(chr));
    Frontend serial = { g_string_new(NULL), 100 };
    FocusLog mon = { { g_string_new(NULL), 100 }, g_string_new(NULL) };
    chardev_set_handlers(chr, frontend_can_read, frontend_read, &serial);
    chardev_set_handlers(chr, frontend_can_read, frontend_read, &mon.f);
    chardev_mux_set_focus_handler(chr, focus_logged, &mon);

    type_input(&p, "ab\x01" "cinfo\x01" "cd");
    run_ready_sources();
    g_assert_cmpstr(serial.got->str, ==, "abd");
    g_assert_cmpstr(mon.f.got->str, ==, "info");
    g_assert_cmpstr(mon.events->str, ==, "in out ");

    /* Output of the frontend out of focus still flows. */
    chardev_write(chr, (const uint8_t *)"guest ", 6);
    chardev_write(chr, (const uint8_t *)"monitor", 7);
    run_ready_sources();
    char out[64];
    size_t n = read_available(p.stdout_reader, (uint8_t *)out, sizeof(out) - 1);
    out[n] = 0;
    g_assert_cmpstr(out, ==, "guest monitor");

    g_string_free(serial.got, TRUE);
    g_string_free(mon.f.got, TRUE);
    g_string_free(mon.events, TRUE);
    stdio_pipes_close(chr, &p);
}

/* Plain stdio has no escape key: C-a goes to the guest like any byte. */
static void test_stdio_passes_ctrl_a(void)
{
    StdioPipes p;
    Chardev *chr = stdio_on_pipes("stdio", &p);
    Frontend f = { g_string_new(NULL), 100 };
    chardev_set_handlers(chr, frontend_can_read, frontend_read, &f);
    int status;
    ShutdownCause cause;

    type_input(&p, "\x01x");
    run_ready_sources();
    g_assert_cmpstr(f.got->str, ==, "\x01x");
    g_assert_false(runstate_take_shutdown_request(&cause, &status));

    g_string_free(f.got, TRUE);
    stdio_pipes_close(chr, &p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/chardev/parse-errors", test_parse_errors);
    g_test_add_func("/chardev/none-and-null", test_parse_none_and_null);
    g_test_add_func("/chardev/file-roundtrip", test_file_roundtrip);
    g_test_add_func("/chardev/ring-overflow", test_ring_overflow);
    g_test_add_func("/chardev/stdio-output-never-blocks", test_stdio_output_never_blocks);
    g_test_add_func("/chardev/stdio-input-paced", test_stdio_input_paced);
    g_test_add_func("/chardev/mon-stdio-mux-focus", test_mon_stdio_mux_focus);
    g_test_add_func("/chardev/stdio-input-eof", test_stdio_input_eof);
    g_test_add_func("/chardev/stdio-only-once", test_stdio_only_once);
    g_test_add_func("/chardev/mon-stdio-escapes", test_mon_stdio_escapes);
    g_test_add_func("/chardev/stdio-passes-ctrl-a", test_stdio_passes_ctrl_a);
    return g_test_run();
}
