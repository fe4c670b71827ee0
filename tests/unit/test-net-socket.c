/*
 * -netdev socket (net/socket.c) over real loopback and socketpair
 * streams: QEMU's framing checked byte for byte on the wire, frames of 1 to
 * 65535 bytes between two socket netdevs, a full send buffer that refuses
 * and resumes, a listener serving one peer at a time, a hostile length.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "loopback-port.h"
#include "net-stub.h"

#define TIMEOUT_MS 10000

static GMainContext *ctx;

static int raw_connect(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    return fd;
}

static void read_exactly(int fd, void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t n = read(fd, (uint8_t *)buf + got, len - got);
        g_assert_cmpint(n, >, 0);
        got += n;
    }
}

static void write_all(int fd, const void *buf, size_t len)
{
    g_assert_cmpint(write(fd, buf, len), ==, (ssize_t)len);
}

/* A frame as QEMU puts it on the stream: a 32-bit big-endian length, then
 * the bytes. */
static void write_framed(int fd, GBytes *frame)
{
    gsize len;
    const uint8_t *data = g_bytes_get_data(frame, &len);
    uint32_t be = htonl(len);
    write_all(fd, &be, 4);
    write_all(fd, data, len);
}

/* Send frame from nic, waiting out refusals for send_ready as a NIC does. */
static void nic_send_waiting(NicStub *nic, GBytes *frame)
{
    gsize len;
    const uint8_t *data = g_bytes_get_data(frame, &len);
    while (net_send_buf(nic->nc, data, len) == 0) {
        unsigned ready = nic->send_ready_calls;
        RUN_UNTIL(ctx, nic->send_ready_calls > ready, TIMEOUT_MS);
    }
}

/* The connecting side's frames wait in the stream until the listener has
 * accepted; the listener's would be lost before. One frame through says
 * the listener has its peer. */
static void wait_accepted(NicStub *connecting, NicStub *listening)
{
    g_assert_cmpint(net_send_buf(connecting->nc, "x", 1), ==, 1);
    RUN_UNTIL(ctx, listening->frames->len == 1, TIMEOUT_MS);
    g_ptr_array_set_size(listening->frames, 0);
}

static void teardown(NicStub *a, NicStub *b)
{
    nic_stub_free(a);
    if (b) {
        nic_stub_free(b);
    }
    netdevs_free_all();
    run_pending(ctx);
}

/* What the NIC sends leaves as length + bytes; what the peer writes in
 * any pieces arrives as one frame each. */
static void test_framing_on_the_wire(void)
{
    int sv[2];
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_autofree char *spec = g_strdup_printf("socket,id=s0,fd=%d", sv[0]);
    netdev_create_or_fail(spec);
    NicStub nic;
    nic_stub_attach(&nic, "nic0", netdev_find("s0"), ctx);

    static const size_t sizes[] = { 1, 2, 60, 1514, 9000, 65535 };
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autoptr(GBytes) frame = test_frame(sizes[i], i);
        nic_send_waiting(&nic, frame);
        uint8_t len_be[4];
        g_autofree uint8_t *got = g_malloc(sizes[i]);
        read_exactly(sv[1], len_be, 4);
        g_assert_cmpmem(len_be, 4, ((uint8_t[]){ sizes[i] >> 24, sizes[i] >> 16 & 0xff,
                                                 sizes[i] >> 8 & 0xff, sizes[i] & 0xff }), 4);
        read_exactly(sv[1], got, sizes[i]);
        g_assert_cmpmem(got, sizes[i], g_bytes_get_data(frame, NULL), sizes[i]);
    }

    /* The other way, cut at awkward places: inside the length, inside the
     * frame, and two frames in one write. */
    g_autoptr(GBytes) f1 = test_frame(1000, 7), f2 = test_frame(3, 8);
    uint32_t be1 = htonl(1000);
    write_all(sv[1], &be1, 1);
    run_pending(ctx);
    write_all(sv[1], (uint8_t *)&be1 + 1, 3);
    write_all(sv[1], g_bytes_get_data(f1, NULL), 500);
    run_pending(ctx);
    g_assert_cmpuint(nic.frames->len, ==, 0);
    uint8_t rest[500 + 4 + 3];
    memcpy(rest, (uint8_t *)g_bytes_get_data(f1, NULL) + 500, 500);
    uint32_t be2 = htonl(3);
    memcpy(rest + 500, &be2, 4);
    memcpy(rest + 504, g_bytes_get_data(f2, NULL), 3);
    write_all(sv[1], rest, sizeof(rest));
    RUN_UNTIL(ctx, nic.frames->len == 2, TIMEOUT_MS);
    assert_frame_equal(g_ptr_array_index(nic.frames, 0), f1);
    assert_frame_equal(g_ptr_array_index(nic.frames, 1), f2);

    teardown(&nic, NULL);
    close(sv[1]);
}

/* Two socket netdevs, listen and connect, as two VMMs would use them:
 * frames of every size class from 1 to 65535 bytes, both ways, in order
 * and intact. */
static void test_listen_connect_pair(void)
{
    unsigned port = loopback_free_port();
    g_autofree char *listen = g_strdup_printf("socket,id=l0,listen=127.0.0.1:%u", port);
    g_autofree char *connect = g_strdup_printf("socket,id=c0,connect=127.0.0.1:%u", port);
    netdev_create_or_fail(listen);
    netdev_create_or_fail(connect);
    NicStub a, b;
    nic_stub_attach(&a, "nic-a", netdev_find("l0"), ctx);
    nic_stub_attach(&b, "nic-b", netdev_find("c0"), ctx);
    /* info network's text, as QEMU's: nothing until a peer connects. */
    g_autofree char *before = net_client_info(a.nc->peer);
    g_assert_cmpstr(before, ==, "");
    wait_accepted(&b, &a);
    g_autofree char *listener = net_client_info(a.nc->peer);
    g_autofree char *connector = net_client_info(b.nc->peer);
    g_assert_true(g_str_has_prefix(listener, "socket: connection from 127.0.0.1:"));
    g_autofree char *expected = g_strdup_printf("socket: connect to 127.0.0.1:%u", port);
    g_assert_cmpstr(connector, ==, expected);

    GPtrArray *sent = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    for (size_t size = 1; size <= 65535; size = size < 70 ? size + 1 : size * 5 / 4) {
        g_ptr_array_add(sent, test_frame(size, sent->len));
    }
    g_ptr_array_add(sent, test_frame(65535, sent->len));
    for (guint i = 0; i < sent->len; i++) {
        nic_send_waiting(&a, g_ptr_array_index(sent, i));
        nic_send_waiting(&b, g_ptr_array_index(sent, sent->len - 1 - i));
        run_pending(ctx);
    }
    RUN_UNTIL(ctx, a.frames->len == sent->len && b.frames->len == sent->len, TIMEOUT_MS);
    for (guint i = 0; i < sent->len; i++) {
        assert_frame_equal(g_ptr_array_index(b.frames, i), g_ptr_array_index(sent, i));
        assert_frame_equal(g_ptr_array_index(a.frames, i),
                           g_ptr_array_index(sent, sent->len - 1 - i));
    }
    g_ptr_array_unref(sent);
    teardown(&a, &b);
}

/*
 * A receiver that refuses makes the stream back up: its backend stops
 * reading, TCP fills, the sender's backend buffers what the socket would
 * not take and then refuses (0) without blocking. Once the receiver takes
 * frames again, everything arrives in order, the sender hears
 * send_ready, and the refused frame goes through.
 */
static void test_full_buffer_refuses_and_resumes(void)
{
    unsigned port = loopback_free_port();
    g_autofree char *listen = g_strdup_printf("socket,id=l0,listen=127.0.0.1:%u", port);
    g_autofree char *connect = g_strdup_printf("socket,id=c0,connect=127.0.0.1:%u", port);
    netdev_create_or_fail(listen);
    netdev_create_or_fail(connect);
    NicStub tx, rx;
    nic_stub_attach(&rx, "rx", netdev_find("l0"), ctx);
    nic_stub_attach(&tx, "tx", netdev_find("c0"), ctx);
    wait_accepted(&tx, &rx);

    rx.refuse = true;
    GPtrArray *sent = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    GBytes *refused = NULL;
    for (unsigned i = 0; i < 2000 && !refused; i++) {
        GBytes *frame = test_frame(65535, i);
        gint64 t0 = g_get_monotonic_time();
        ssize_t n = net_send_buf(tx.nc, g_bytes_get_data(frame, NULL), 65535);
        g_assert_cmpint(g_get_monotonic_time() - t0, <, 1000000);    /* never blocks */
        if (n == 0) {
            refused = frame;
        } else {
            g_ptr_array_add(sent, frame);
        }
        run_pending(ctx);
    }
    g_assert_nonnull(refused);
    g_assert_cmpuint(sent->len, >, 1);
    /* The receiver was offered one frame and then left alone. */
    assert_settles_quiet(ctx);
    g_assert_cmpuint(rx.refusals, ==, 1);
    g_assert_cmpuint(tx.send_ready_calls, ==, 0);

    rx.refuse = false;
    net_client_receive_ready(rx.nc);
    RUN_UNTIL(ctx, tx.send_ready_calls == 1, TIMEOUT_MS);
    nic_send_waiting(&tx, refused);
    g_ptr_array_add(sent, refused);
    RUN_UNTIL(ctx, rx.frames->len == sent->len, TIMEOUT_MS);
    for (guint i = 0; i < sent->len; i++) {
        assert_frame_equal(g_ptr_array_index(rx.frames, i), g_ptr_array_index(sent, i));
    }
    g_ptr_array_unref(sent);
    teardown(&tx, &rx);
}

/* One peer at a time: a second connection waits in the backlog until the
 * first goes, then is served; frames the NIC sends with no peer are lost. */
static void test_listener_serves_one_peer_at_a_time(void)
{
    unsigned port = loopback_free_port();
    g_autofree char *listen = g_strdup_printf("socket,id=l0,listen=127.0.0.1:%u", port);
    netdev_create_or_fail(listen);
    NicStub nic;
    nic_stub_attach(&nic, "nic0", netdev_find("l0"), ctx);
    g_assert_cmpint(net_send_buf(nic.nc, "lost", 4), ==, 4);

    g_autoptr(GBytes) f1 = test_frame(100, 1), f2 = test_frame(200, 2);
    int first = raw_connect(port);
    write_framed(first, f1);
    RUN_UNTIL(ctx, nic.frames->len == 1, TIMEOUT_MS);
    int second = raw_connect(port);
    write_framed(second, f2);
    for (int i = 0; i < 50; i++) {
        run_pending(ctx);
        g_usleep(1000);
    }
    g_assert_cmpuint(nic.frames->len, ==, 1);
    close(first);
    RUN_UNTIL(ctx, nic.frames->len == 2, TIMEOUT_MS);
    assert_frame_equal(g_ptr_array_index(nic.frames, 0), f1);
    assert_frame_equal(g_ptr_array_index(nic.frames, 1), f2);

    /* The NIC's frames reach the peer being served. */
    g_autoptr(GBytes) back = test_frame(300, 3);
    nic_send_waiting(&nic, back);
    uint8_t got[4 + 300];
    read_exactly(second, got, sizeof(got));
    g_assert_cmpmem(got + 4, 300, g_bytes_get_data(back, NULL), 300);
    close(second);
    teardown(&nic, NULL);
}

/* A length no frame can have ends the connection (the peer sees it
 * closed), and the listener serves the next peer. */
static void test_hostile_length_drops_the_peer(void)
{
    unsigned port = loopback_free_port();
    g_autofree char *listen = g_strdup_printf("socket,id=l0,listen=127.0.0.1:%u", port);
    netdev_create_or_fail(listen);
    NicStub nic;
    nic_stub_attach(&nic, "nic0", netdev_find("l0"), ctx);

    int bad = raw_connect(port);
    uint32_t huge = htonl(0x7fffffff);
    write_all(bad, &huge, 4);
    char c;
    RUN_UNTIL(ctx, recv(bad, &c, 1, MSG_DONTWAIT) == 0, TIMEOUT_MS);
    close(bad);

    g_autoptr(GBytes) frame = test_frame(64, 9);
    int good = raw_connect(port);
    write_framed(good, frame);
    RUN_UNTIL(ctx, nic.frames->len == 1, TIMEOUT_MS);
    assert_frame_equal(g_ptr_array_index(nic.frames, 0), frame);
    close(good);
    teardown(&nic, NULL);
}

/*
 * The peer goes while both directions wait (the NIC refuses what came in,
 * and frames for the peer fill the send buffer): the connection ends
 * instead of being polled forever, the NIC is told to send again, and
 * the listener serves the next peer.
 */
static void test_peer_gone_while_both_directions_wait(void)
{
    unsigned port = loopback_free_port();
    g_autofree char *listen = g_strdup_printf("socket,id=l0,listen=127.0.0.1:%u", port);
    netdev_create_or_fail(listen);
    NicStub nic;
    nic_stub_attach(&nic, "nic0", netdev_find("l0"), ctx);
    nic.refuse = true;

    int peer = raw_connect(port);
    g_autoptr(GBytes) in = test_frame(100, 1), big = test_frame(65535, 2);
    write_framed(peer, in);
    RUN_UNTIL(ctx, nic.refusals == 1, TIMEOUT_MS);
    unsigned sent = 0;
    while (net_send_buf(nic.nc, g_bytes_get_data(big, NULL), 65535) != 0) {
        g_assert_cmpuint(++sent, <, 2000);
        run_pending(ctx);
    }
    close(peer);    /* with data unread: the kernel resets the connection */
    RUN_UNTIL(ctx, nic.send_ready_calls == 1, TIMEOUT_MS);
    assert_settles_quiet(ctx);

    int next = raw_connect(port);
    g_autoptr(GBytes) out = test_frame(50, 3);
    RUN_UNTIL(ctx, ({ net_send_buf(nic.nc, g_bytes_get_data(out, NULL), 50);
                      uint8_t got[54];
                      recv(next, got, sizeof(got), MSG_DONTWAIT) == sizeof(got) &&
                      !memcmp(got + 4, g_bytes_get_data(out, NULL), 50); }), TIMEOUT_MS);
    close(next);
    teardown(&nic, NULL);
}

/* ---- a NIC sending from its own thread, as a vCPU does ---- */

typedef struct ThreadedNic {
    NetClientState *nc;
    atomic_uint send_ready_calls;   /* bumped on the context's thread */
    GPtrArray *frames;              /* what it sends, in order */
} ThreadedNic;

static ssize_t threaded_nic_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    return iov_size(iov, iovcnt);
}

static void threaded_nic_send_ready(NetClientState *nc)
{
    atomic_fetch_add(&((ThreadedNic *)nc->opaque)->send_ready_calls, 1);
}

static const NetClientInfo threaded_nic_info = {
    .type = "nic",
    .receive = threaded_nic_receive,
    .send_ready = threaded_nic_send_ready,
};

static gpointer threaded_nic_run(gpointer opaque)
{
    ThreadedNic *nic = opaque;
    for (guint i = 0; i < nic->frames->len; i++) {
        gsize len;
        const uint8_t *data = g_bytes_get_data(g_ptr_array_index(nic->frames, i), &len);
        unsigned ready = atomic_load(&nic->send_ready_calls);
        while (net_send_buf(nic->nc, data, len) == 0) {
            while (atomic_load(&nic->send_ready_calls) == ready) {
                g_usleep(100);
            }
            ready = atomic_load(&nic->send_ready_calls);
        }
    }
    return NULL;
}

/* The backend's receive runs on the NIC's thread while the context's
 * thread drains the send buffer and reads the other netdev: every frame
 * arrives in order (and ThreadSanitizer watches the locking). */
static void test_sender_on_its_own_thread(void)
{
    unsigned port = loopback_free_port();
    g_autofree char *listen = g_strdup_printf("socket,id=l0,listen=127.0.0.1:%u", port);
    g_autofree char *connect = g_strdup_printf("socket,id=c0,connect=127.0.0.1:%u", port);
    netdev_create_or_fail(listen);
    netdev_create_or_fail(connect);
    NicStub rx;
    nic_stub_attach(&rx, "rx", netdev_find("l0"), ctx);
    ThreadedNic tx = { .frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref) };
    Error *err = NULL;
    tx.nc = net_nic_new(&threaded_nic_info, "tx", netdev_find("c0"), 0, "tx", ctx, &tx, &err);
    g_assert_null(err);
    for (unsigned i = 0; i < 200; i++) {
        g_ptr_array_add(tx.frames, test_frame(i % 2 ? 65535 : 1 + i * 97, i));
    }
    GThread *thread = g_thread_new("vcpu", threaded_nic_run, &tx);
    RUN_UNTIL(ctx, rx.frames->len == tx.frames->len, TIMEOUT_MS);
    g_thread_join(thread);
    for (guint i = 0; i < tx.frames->len; i++) {
        assert_frame_equal(g_ptr_array_index(rx.frames, i), g_ptr_array_index(tx.frames, i));
    }
    net_client_free(tx.nc);
    g_ptr_array_unref(tx.frames);
    teardown(&rx, NULL);
}

/* The command line's refusals, as the backend words them. */
static void test_bad_options(void)
{
    static const struct {
        const char *spec, *error;
    } cases[] = {
        { "socket,id=s0", "exactly one of listen=, connect= and fd= is required" },
        { "socket,id=s0,listen=:1,connect=127.0.0.1:1", "exactly one of" },
        { "socket,id=s0,udp=127.0.0.1:1", "Parameter 'udp' is not supported" },
        { "socket,id=s0,mcast=230.0.0.1:1234", "Parameter 'mcast' is not supported" },
        { "socket,id=s0,listen=nocolon", "Parameter 'listen' expects HOST:PORT" },
        { "socket,id=s0,fd=0x", "Parameter 'fd' expects a file descriptor number" },
        { "socket,id=s0,fd=0", "fd=0 is not a stream socket" },
        { "socket,id=s0,bogus=1", "Invalid parameter 'bogus'" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Error *err = NULL;
        g_assert_false(netdev_create_from(cases[i].spec, &err));
        if (!strstr(err->msg, cases[i].error)) {
            g_error("%s: '%s' lacks '%s'", cases[i].spec, err->msg, cases[i].error);
        }
        g_assert_true(g_str_has_prefix(err->msg, cases[i].spec));
        error_free(err);
        g_assert_null(netdev_find("s0"));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ctx = g_main_context_new();
    g_test_add_func("/net-socket/framing-on-the-wire", test_framing_on_the_wire);
    g_test_add_func("/net-socket/listen-connect-pair", test_listen_connect_pair);
    g_test_add_func("/net-socket/full-buffer-refuses-and-resumes",
                    test_full_buffer_refuses_and_resumes);
    g_test_add_func("/net-socket/listener-serves-one-peer-at-a-time",
                    test_listener_serves_one_peer_at_a_time);
    g_test_add_func("/net-socket/hostile-length-drops-the-peer",
                    test_hostile_length_drops_the_peer);
    g_test_add_func("/net-socket/peer-gone-while-both-directions-wait",
                    test_peer_gone_while_both_directions_wait);
    g_test_add_func("/net-socket/sender-on-its-own-thread", test_sender_on_its_own_thread);
    g_test_add_func("/net-socket/bad-options", test_bad_options);
    int rc = g_test_run();
    g_main_context_unref(ctx);
    return rc;
}
