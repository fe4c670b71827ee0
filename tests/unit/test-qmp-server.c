/*
 * The socket chardev and the QMP server on it, driven through real sockets
 * and the main loop's context: OPENED/CLOSED, one client at a time (the
 * next waits in the backlog), output dropped while nobody listens, the
 * socket file's life, the refusals; then the server's greeting,
 * negotiation, events only to negotiated clients (without an empty
 * "data"), a fresh negotiation per connection, a response larger than
 * the chardev's buffer arriving whole and the last event flushed at exit.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "chardev/char.h"
#include "monitor/monitor.h"
#include "monitor/qmp.h"
#include "qemu/main-loop.h"
#include "sysemu/runstate.h"
#include "loopback-port.h"

/* The main loop's turns (main_loop_run) while something is ready: an
 * iteration, then the run-state check, after which the server answers. */
static void run_ready_sources(void)
{
    int exit_status;
    for (int i = 0; i < 1000 && g_main_context_iteration(main_loop_context(), FALSE); i++) {
        g_assert_false(runstate_main_loop_should_exit(&exit_status));
    }
}

static char *temp_socket_path(void)
{
    char *dir = g_dir_make_tmp("test-qmp-server-XXXXXX", NULL);
    g_assert_nonnull(dir);
    char *path = g_build_filename(dir, "qmp.sock", NULL);
    g_free(dir);
    return path;
}

static void remove_temp(char *path)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
}

static int unix_connect(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    return fd;
}

/* Whatever arrives on fd within a short while, main loop turning. */
static GString *drain_client(int fd, GString *into)
{
    GString *out = into ? into : g_string_new(NULL);
    for (int idle = 0; idle < 20;) {
        run_ready_sources();
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 10) <= 0) {
            idle++;
            continue;
        }
        char buf[65536];
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0) {
            break;
        }
        g_string_append_len(out, buf, n);
        idle = 0;
    }
    return out;
}

/* ---- the socket backend ---- */

typedef struct EventLog {
    int opened, closed;
    GString *input;
} EventLog;

static void log_event(void *opaque, ChardevEvent event)
{
    EventLog *log = opaque;
    if (event == CHR_EVENT_OPENED) {
        log->opened++;
    } else {
        log->closed++;
    }
}

static size_t log_can_read(void *opaque)
{
    return 1024;
}

static void log_read(void *opaque, const uint8_t *buf, size_t len)
{
    EventLog *log = opaque;
    g_string_append_len(log->input, (const char *)buf, len);
}

static Chardev *socket_with_log(const char *spec, EventLog *log)
{
    Error *err = NULL;
    Chardev *chr = chardev_new(spec, &err);
    g_assert_null(err);
    g_assert_nonnull(chr);
    log->input = g_string_new(NULL);
    chardev_set_handlers(chr, log_can_read, log_read, log);
    chardev_set_event_handler(chr, log_event, log);
    return chr;
}

static void test_unix_one_client_at_a_time(void)
{
    char *path = temp_socket_path();
    /* A stale socket from an earlier run is replaced. */
    int stale = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    strcpy(addr.sun_path, path);
    g_assert_cmpint(bind(stale, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    close(stale);

    g_autofree char *spec = g_strdup_printf("unix:%s,server=on,wait=off", path);
    EventLog log = { 0 };
    Chardev *chr = socket_with_log(spec, &log);
    g_assert_cmpint(log.opened, ==, 0);       /* nobody yet */

    /* Output with nobody connected is dropped, not kept for later. */
    g_assert_cmpuint(chardev_write_room(chr), ==, 0);
    chardev_write(chr, (const uint8_t *)"lost", 4);
    g_assert_cmpuint(chardev_dropped_bytes(chr), ==, 4);

    int a = unix_connect(path);
    run_ready_sources();
    g_assert_cmpint(log.opened, ==, 1);
    int b = unix_connect(path);               /* waits in the backlog */
    run_ready_sources();
    g_assert_cmpint(log.opened, ==, 1);

    chardev_write(chr, (const uint8_t *)"to-a", 4);
    g_autoptr(GString) got_a = drain_client(a, NULL);
    g_assert_cmpstr(got_a->str, ==, "to-a");
    g_assert_cmpint(send(a, "from-a", 6, 0), ==, 6);
    run_ready_sources();
    g_assert_cmpstr(log.input->str, ==, "from-a");

    close(a);
    run_ready_sources();
    g_assert_cmpint(log.closed, ==, 1);
    g_assert_cmpint(log.opened, ==, 2);       /* b's turn */
    chardev_write(chr, (const uint8_t *)"to-b", 4);
    g_autoptr(GString) got_b = drain_client(b, NULL);
    g_assert_cmpstr(got_b->str, ==, "to-b");
    close(b);
    run_ready_sources();
    g_assert_cmpint(log.closed, ==, 2);
    /* After the last client left, output is dropped again. */
    g_assert_cmpuint(chardev_write_room(chr), ==, 0);

    chardev_free(chr);
    struct stat st;
    g_assert_cmpint(lstat(path, &st), ==, -1);  /* removed at exit */
    g_string_free(log.input, true);
    remove_temp(path);
}

static void test_tcp_server(void)
{
    uint16_t port = loopback_free_port();
    g_autofree char *spec = g_strdup_printf("tcp:127.0.0.1:%u,server,nowait", port);
    EventLog log = { 0 };
    Chardev *chr = socket_with_log(spec, &log);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    run_ready_sources();
    g_assert_cmpint(log.opened, ==, 1);
    chardev_write(chr, (const uint8_t *)"hi", 2);
    g_autoptr(GString) got = drain_client(fd, NULL);
    g_assert_cmpstr(got->str, ==, "hi");
    close(fd);
    run_ready_sources();
    g_assert_cmpint(log.closed, ==, 1);
    chardev_free(chr);
    g_string_free(log.input, true);
}

static void assert_refused(const char *spec, const char *fragment)
{
    Error *err = NULL;
    g_assert_null(chardev_new(spec, &err));
    g_assert_nonnull(err);
    if (!strstr(err->msg, fragment)) {
        g_error("'%s': '%s' lacks '%s'", spec, err->msg, fragment);
    }
    error_free(err);
}

static void test_socket_refusals(void)
{
    assert_refused("unix:/tmp/x.sock", "client mode is not supported");
    assert_refused("unix:/tmp/x.sock,server=off", "client mode is not supported");
    assert_refused("unix:/tmp/x.sock,server=on", "add wait=off");
    assert_refused("unix:/tmp/x.sock,server=on,wait=off,bogus=1", "Invalid parameter 'bogus'");
    assert_refused("tcp:127.0.0.1,server=on,wait=off", "expected tcp:HOST:PORT");

    /* A regular file at the path is not the VMM's to remove. */
    char *path = temp_socket_path();
    g_assert_true(g_file_set_contents(path, "keep", -1, NULL));
    g_autofree char *spec = g_strdup_printf("unix:%s,server=on,wait=off", path);
    assert_refused(spec, "Failed to bind socket");
    g_autofree char *kept = NULL;
    g_assert_true(g_file_get_contents(path, &kept, NULL, NULL));
    g_assert_cmpstr(kept, ==, "keep");
    remove_temp(path);
}

static void test_other_backends_open_at_once(void)
{
    Error *err = NULL;
    Chardev *chr = chardev_new("null", &err);
    EventLog log = { 0 };
    chardev_set_event_handler(chr, log_event, &log);
    g_assert_cmpint(log.opened, ==, 1);
    g_assert_cmpint(log.closed, ==, 0);
    chardev_free(chr);
}

/* ---- the QMP server ---- */

/* The complete lines of buf (each "\r\n" ended), parsed; the rest stays. */
static GPtrArray *take_messages(GString *buf)
{
    GPtrArray *msgs = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
    char *nl;
    while ((nl = strstr(buf->str, "\r\n"))) {
        g_autoptr(JsonParser) parser = json_parser_new();
        g_assert_true(json_parser_load_from_data(parser, buf->str, nl - buf->str, NULL));
        g_ptr_array_add(msgs, json_node_ref(json_parser_get_root(parser)));
        g_string_erase(buf, 0, nl + 2 - buf->str);
    }
    return msgs;
}

static JsonObject *msg_at(GPtrArray *msgs, guint i)
{
    g_assert_cmpuint(i, <, msgs->len);
    return json_node_get_object(g_ptr_array_index(msgs, i));
}

/* Send all of text, the main loop turning meanwhile (it is the reader). */
static void send_all(int fd, const char *text, size_t len)
{
    while (len) {
        ssize_t n = send(fd, text, len, MSG_DONTWAIT);
        if (n < 0) {
            g_assert_cmpint(errno, ==, EAGAIN);
            run_ready_sources();
            continue;
        }
        text += n;
        len -= n;
    }
}

/* Send text, return the messages that come back. */
static GPtrArray *exchange(int fd, const char *text)
{
    if (text) {
        send_all(fd, text, strlen(text));
    }
    g_autoptr(GString) buf = drain_client(fd, NULL);
    GPtrArray *msgs = take_messages(buf);
    g_assert_cmpuint(buf->len, ==, 0);          /* nothing cut in half */
    return msgs;
}

/* A QMP server on a new unix socket; its path in *path. */
static Chardev *qmp_on_new_socket(char **path)
{
    *path = temp_socket_path();
    g_autofree char *spec = g_strdup_printf("unix:%s,server=on,wait=off", *path);
    Error *err = NULL;
    Chardev *chr = chardev_new(spec, &err);
    g_assert_true(qmp_monitor_new(chr, false, &err));
    return chr;
}

static void test_qmp_session(void)
{
    char *path;
    Chardev *chr = qmp_on_new_socket(&path);

    int fd = unix_connect(path);
    g_autoptr(GPtrArray) greeting = exchange(fd, NULL);
    g_assert_cmpuint(greeting->len, ==, 1);
    JsonObject *qmp = json_object_get_object_member(msg_at(greeting, 0), "QMP");
    JsonObject *version = json_object_get_object_member(qmp, "version");
    g_assert_cmpint(json_object_get_int_member(
                        json_object_get_object_member(version, "qemu"), "major"), ==, 7);
    g_assert_cmpstr(json_array_get_string_element(
                        json_object_get_array_member(qmp, "capabilities"), 0), ==, "oob");

    /* Before negotiation: no events. */
    qmp_event_send("STOP", NULL);
    g_autoptr(GPtrArray) none = exchange(fd, NULL);
    g_assert_cmpuint(none->len, ==, 0);

    g_autoptr(GPtrArray) neg = exchange(fd, "{\"execute\": \"qmp_capabilities\", \"id\": 1}");
    g_assert_cmpuint(neg->len, ==, 1);
    g_assert_true(json_object_has_member(msg_at(neg, 0), "return"));

    JsonObject *data = json_object_new();
    json_object_set_boolean_member(data, "guest", true);
    qmp_event_send("SHUTDOWN", data);
    qmp_event_send("STOP", NULL);
    g_autoptr(GPtrArray) events = exchange(fd, NULL);
    g_assert_cmpuint(events->len, ==, 2);
    g_assert_cmpstr(json_object_get_string_member(msg_at(events, 0), "event"), ==, "SHUTDOWN");
    g_assert_true(json_object_get_boolean_member(
                      json_object_get_object_member(msg_at(events, 0), "data"), "guest"));
    JsonObject *ts = json_object_get_object_member(msg_at(events, 0), "timestamp");
    g_assert_cmpint(json_object_get_int_member(ts, "seconds"), >, 1600000000);
    g_assert_true(json_object_has_member(ts, "microseconds"));
    g_assert_false(json_object_has_member(msg_at(events, 1), "data"));

    /* A response far larger than the chardev's buffer arrives whole. */
    GString *big = g_string_new("{\"execute\": \"query-version\", \"id\": \"");
    for (int i = 0; i < 300000; i++) {
        g_string_append_c(big, 'a' + i % 26);
    }
    g_string_append(big, "\"}");
    g_autoptr(GPtrArray) big_rsp = exchange(fd, big->str);
    g_assert_cmpuint(big_rsp->len, ==, 1);
    g_assert_cmpuint(strlen(json_object_get_string_member(msg_at(big_rsp, 0), "id")), ==,
                     300000);
    g_string_free(big, true);

    /* Half a message, then gone: the next client starts afresh. */
    send_all(fd, "{\"execute\": \"qu", 15);
    run_ready_sources();
    close(fd);
    run_ready_sources();
    fd = unix_connect(path);
    g_autoptr(GPtrArray) again = exchange(fd, NULL);
    g_assert_cmpuint(again->len, ==, 1);
    g_assert_true(json_object_has_member(msg_at(again, 0), "QMP"));
    g_autoptr(GPtrArray) refused = exchange(fd, "{\"execute\": \"query-version\"}");
    g_assert_cmpuint(refused->len, ==, 1);
    JsonObject *error = json_object_get_object_member(msg_at(refused, 0), "error");
    g_assert_cmpstr(json_object_get_string_member(error, "class"), ==, "CommandNotFound");
    g_assert_cmpstr(json_object_get_string_member(error, "desc"), ==,
                    "Expecting capabilities negotiation with 'qmp_capabilities'");

    /* An event sent just before exit still reaches the client. */
    g_autoptr(GPtrArray) neg2 = exchange(fd, "{\"execute\": \"qmp_capabilities\"}");
    g_assert_cmpuint(neg2->len, ==, 1);
    qmp_event_send("LAST-WORDS", NULL);
    qmp_monitors_free_all();
    g_autoptr(GString) tail = g_string_new(NULL);
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    g_assert_cmpint(n, >, 0);
    g_string_append_len(tail, buf, n);
    g_autoptr(GPtrArray) last = take_messages(tail);
    g_assert_cmpuint(last->len, ==, 1);
    g_assert_cmpstr(json_object_get_string_member(msg_at(last, 0), "event"), ==, "LAST-WORDS");

    close(fd);
    chardev_free(chr);
    remove_temp(path);
}

#define EVENT_THREADS 3
#define EVENTS_PER_THREAD 2000

static gpointer send_events(gpointer opaque)
{
    int thread = GPOINTER_TO_INT(opaque);
    for (int n = 0; n < EVENTS_PER_THREAD; n++) {
        JsonObject *data = json_object_new();
        json_object_set_int_member(data, "thread", thread);
        json_object_set_int_member(data, "n", n);
        /* Long enough that the chardev's ring fills many times over. */
        json_object_set_string_member(data, "pad", "................................"
                                      "................................................");
        qmp_event_send("X-TEST", data);
    }
    return NULL;
}

/* Events from several threads at once (vCPUs in device handlers): none
 * lost, none cut, each thread's in the order it sent them. */
static void test_qmp_events_from_threads(void)
{
    char *path;
    Chardev *chr = qmp_on_new_socket(&path);
    int fd = unix_connect(path);
    g_ptr_array_unref(exchange(fd, NULL));     /* the greeting */
    g_autoptr(GPtrArray) neg = exchange(fd, "{\"execute\": \"qmp_capabilities\"}");
    g_assert_cmpuint(neg->len, ==, 1);

    GThread *threads[EVENT_THREADS];
    for (int t = 0; t < EVENT_THREADS; t++) {
        threads[t] = g_thread_new("events", send_events, GINT_TO_POINTER(t));
    }
    g_autoptr(GString) buf = g_string_new(NULL);
    g_autoptr(GPtrArray) events = g_ptr_array_new_with_free_func(
        (GDestroyNotify)json_node_unref);
    while (events->len < EVENT_THREADS * EVENTS_PER_THREAD) {
        guint before = events->len;
        drain_client(fd, buf);
        g_autoptr(GPtrArray) msgs = take_messages(buf);
        for (guint i = 0; i < msgs->len; i++) {
            g_ptr_array_add(events, json_node_ref(g_ptr_array_index(msgs, i)));
        }
        g_assert_cmpuint(events->len, >, before);   /* progress, or they were lost */
    }
    for (int t = 0; t < EVENT_THREADS; t++) {
        g_thread_join(threads[t]);
    }
    g_assert_cmpuint(events->len, ==, EVENT_THREADS * EVENTS_PER_THREAD);
    int next[EVENT_THREADS] = { 0 };
    for (guint i = 0; i < events->len; i++) {
        JsonObject *data = json_object_get_object_member(msg_at(events, i), "data");
        int t = json_object_get_int_member(data, "thread");
        g_assert_cmpint(json_object_get_int_member(data, "n"), ==, next[t]++);
    }

    close(fd);
    run_ready_sources();
    qmp_monitors_free_all();
    chardev_free(chr);
    remove_temp(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/chardev-socket/unix-one-client-at-a-time", test_unix_one_client_at_a_time);
    g_test_add_func("/chardev-socket/tcp", test_tcp_server);
    g_test_add_func("/chardev-socket/refusals", test_socket_refusals);
    g_test_add_func("/chardev-socket/other-backends-open-at-once",
                    test_other_backends_open_at_once);
    g_test_add_func("/qmp-server/session", test_qmp_session);
    g_test_add_func("/qmp-server/events-from-threads", test_qmp_events_from_threads);
    return g_test_run();
}
