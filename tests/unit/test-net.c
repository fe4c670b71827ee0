/*
 * The network layer's peer pairs (net/net.c): frames straight to the
 * peer's receive, drops without a peer or a link, flow control by refusal
 * and receive_ready on the sender's context, the netdev registry and its
 * claims, default MACs. A fake backend stands in for tap.
 */
#include <string.h>
#include <glib.h>
#include "net/net.h"
#include "net-stub.h"

/* ---- a fake backend: keeps frames, refuses on demand, counts send_ready ---- */

typedef struct FakeBackend {
    NicStub side;               /* the same bookkeeping as the NIC stub */
    GMainContext *started_on;
    unsigned hdr_len;
} FakeBackend;

static ssize_t fake_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    return nic_stub_receive(nc, iov, iovcnt);
}

static void fake_start(NetClientState *nc, GMainContext *ctx)
{
    ((FakeBackend *)nc->opaque)->started_on = ctx;
}

static bool fake_has_vnet_hdr(NetClientState *nc)
{
    return true;
}

static void fake_set_vnet_hdr_len(NetClientState *nc, unsigned len)
{
    ((FakeBackend *)nc->opaque)->hdr_len = len;
}

static const NetClientInfo fake_info = {
    .type = "fake",
    .receive = fake_receive,
    .send_ready = nic_stub_send_ready,
    .start = fake_start,
    .has_vnet_hdr = fake_has_vnet_hdr,
    .set_vnet_hdr_len = fake_set_vnet_hdr_len,
};

static NetDev *fake_netdev_new(FakeBackend *b, const char *id)
{
    Error *err = NULL;
    NetDev *nd = netdev_new("fake", id, 1, &fake_info, &err);
    g_assert_null(err);
    memset(b, 0, sizeof(*b));
    b->side.frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    b->side.nc = nd->queues[0];
    nd->queues[0]->opaque = b;
    return nd;
}

static void fake_free(FakeBackend *b)
{
    g_ptr_array_unref(b->side.frames);
}

/* A frame sent by either side arrives whole at the other's receive, at
 * once on the sender's thread; the backend starts on the NIC's context. */
static void test_frames_go_straight_to_the_peer(void)
{
    GMainContext *ctx = g_main_context_new();
    FakeBackend b;
    NetDev *nd = fake_netdev_new(&b, "n0");
    NicStub nic;
    nic_stub_attach(&nic, "nic0", nd, ctx);
    g_assert_true(b.started_on == ctx);
    g_assert_cmpstr(nd->claimed_by, ==, "nic0");

    g_autoptr(GBytes) out = test_frame(1514, 1), in = test_frame(60, 2);
    g_assert_cmpint(net_send_buf(nic.nc, g_bytes_get_data(out, NULL), 1514), ==, 1514);
    g_assert_cmpuint(b.side.frames->len, ==, 1);
    assert_frame_equal(g_ptr_array_index(b.side.frames, 0), out);

    struct iovec iov[2] = {
        { .iov_base = (void *)g_bytes_get_data(in, NULL), .iov_len = 14 },
        { .iov_base = (uint8_t *)g_bytes_get_data(in, NULL) + 14, .iov_len = 46 },
    };
    g_assert_cmpint(net_send(b.side.nc, iov, 2), ==, 60);
    g_assert_cmpuint(nic.frames->len, ==, 1);
    assert_frame_equal(g_ptr_array_index(nic.frames, 0), in);

    nic_stub_free(&nic);
    netdevs_free_all();
    fake_free(&b);
    g_main_context_unref(ctx);
}

/* Without a peer, or with either link down, a frame is lost as on an
 * unplugged wire: its length comes back and nobody receives it. */
static void test_no_peer_or_link_down_drops(void)
{
    GMainContext *ctx = g_main_context_new();
    NicStub lonely;
    nic_stub_attach(&lonely, "nic0", NULL, ctx);
    g_assert_cmpint(net_send_buf(lonely.nc, "abc", 3), ==, 3);

    FakeBackend b;
    NetDev *nd = fake_netdev_new(&b, "n0");
    NicStub nic;
    nic_stub_attach(&nic, "nic1", nd, ctx);
    net_client_set_link(nic.nc, false);
    g_assert_cmpint(net_send_buf(nic.nc, "abcd", 4), ==, 4);
    g_assert_cmpint(net_send_buf(b.side.nc, "abcde", 5), ==, 5);
    g_assert_cmpuint(b.side.frames->len + nic.frames->len, ==, 0);
    net_client_set_link(nic.nc, true);
    g_assert_cmpint(net_send_buf(nic.nc, "abcd", 4), ==, 4);
    g_assert_cmpuint(b.side.frames->len, ==, 1);

    nic_stub_free(&lonely);
    nic_stub_free(&nic);
    netdevs_free_all();
    fake_free(&b);
    g_main_context_unref(ctx);
}

/* A NIC's thread sends while the monitor's pulls and plugs the cable:
 * the link flag is shared between them without a lock (ThreadSanitizer
 * in make check sees a plain flag as a race). Every frame either arrives
 * or is dropped as on an unplugged wire. */
#define LINK_RACE_FRAMES 20000

static gpointer link_race_sender(gpointer opaque)
{
    NicStub *nic = opaque;
    for (unsigned i = 0; i < LINK_RACE_FRAMES; i++) {
        g_assert_cmpint(net_send_buf(nic->nc, "abcd", 4), ==, 4);
    }
    return NULL;
}

static void test_set_link_while_sending(void)
{
    GMainContext *ctx = g_main_context_new();
    FakeBackend b;
    NetDev *nd = fake_netdev_new(&b, "n0");
    NicStub nic;
    nic_stub_attach(&nic, "nic0", nd, ctx);
    GThread *sender = g_thread_new("nic", link_race_sender, &nic);
    for (unsigned i = 0; i < 2000; i++) {
        net_client_set_link(i % 2 ? nic.nc : b.side.nc, i % 4 >= 2);
    }
    g_thread_join(sender);
    g_assert_cmpuint(b.side.frames->len, <=, LINK_RACE_FRAMES);
    nic_stub_free(&nic);
    netdevs_free_all();
    fake_free(&b);
    g_main_context_unref(ctx);
}

/*
 * A NIC that cannot take a frame returns 0 and keeps nothing; the backend
 * learns it from net_send's 0. The NIC's receive_ready later runs the
 * backend's send_ready on the backend's context, once, not before that
 * context runs; and the same the other way round.
 */
static void test_flow_control_both_ways(void)
{
    GMainContext *ctx = g_main_context_new();
    FakeBackend b;
    NetDev *nd = fake_netdev_new(&b, "n0");
    NicStub nic;
    nic_stub_attach(&nic, "nic0", nd, ctx);

    nic.refuse = true;
    g_assert_cmpint(net_send_buf(b.side.nc, "frame", 5), ==, 0);
    g_assert_cmpuint(nic.refusals, ==, 1);
    g_assert_cmpuint(nic.frames->len, ==, 0);
    run_pending(ctx);
    g_assert_cmpuint(b.side.send_ready_calls, ==, 0);   /* nobody said ready */

    nic.refuse = false;
    net_client_receive_ready(nic.nc);
    net_client_receive_ready(nic.nc);
    g_assert_cmpuint(b.side.send_ready_calls, ==, 0);   /* not on the caller's stack */
    run_pending(ctx);
    g_assert_cmpuint(b.side.send_ready_calls, ==, 1);   /* twice scheduled, run once */
    g_assert_cmpint(net_send_buf(b.side.nc, "frame", 5), ==, 5);

    b.side.refuse = true;
    g_assert_cmpint(net_send_buf(nic.nc, "tx", 2), ==, 0);
    b.side.refuse = false;
    net_client_receive_ready(b.side.nc);
    run_pending(ctx);
    g_assert_cmpuint(nic.send_ready_calls, ==, 1);

    nic_stub_free(&nic);
    netdevs_free_all();
    fake_free(&b);
    g_main_context_unref(ctx);
}

/* Ids are unique; one NIC claims a netdev; queues exist or not. */
static void test_registry_and_claims(void)
{
    GMainContext *ctx = g_main_context_new();
    FakeBackend b;
    NetDev *nd = fake_netdev_new(&b, "n0");
    Error *err = NULL;
    g_assert_null(netdev_new("fake", "n0", 1, &fake_info, &err));
    g_assert_cmpstr(err->msg, ==, "Duplicate ID 'n0' for netdev");
    error_free(err);
    err = NULL;
    g_assert_true(netdev_find("n0") == nd);
    g_assert_null(netdev_find("n1"));

    NicStub first;
    nic_stub_attach(&first, "nic0", nd, ctx);
    g_assert_null(net_nic_new(&nic_stub_info, "nic1", nd, 0, "nic1", ctx, NULL, &err));
    g_assert_cmpstr(err->msg, ==, "Property 'nic1.netdev' can't take value 'n0', it's in use");
    error_free(err);
    err = NULL;
    g_assert_null(net_nic_new(&nic_stub_info, "nic1", nd, 1, "nic1", ctx, NULL, &err));
    g_assert_nonnull(strstr(err->msg, "has 1 queue(s)"));
    error_free(err);

    nic_stub_free(&first);
    netdevs_free_all();
    g_assert_null(netdev_find("n0"));
    fake_free(&b);
    g_main_context_unref(ctx);
}

/* The vnet header wrappers reach a peer that has headers, and say no
 * without a peer. */
static void test_vnet_hdr_wrappers(void)
{
    GMainContext *ctx = g_main_context_new();
    NicStub lonely;
    nic_stub_attach(&lonely, "nic0", NULL, ctx);
    g_assert_false(net_peer_has_vnet_hdr(lonely.nc));
    net_peer_set_vnet_hdr_len(lonely.nc, 12);     /* harmless */

    FakeBackend b;
    NicStub nic;
    nic_stub_attach(&nic, "nic1", fake_netdev_new(&b, "n0"), ctx);
    g_assert_true(net_peer_has_vnet_hdr(nic.nc));
    net_peer_set_vnet_hdr_len(nic.nc, 12);
    g_assert_cmpuint(b.hdr_len, ==, 12);

    nic_stub_free(&lonely);
    nic_stub_free(&nic);
    netdevs_free_all();
    fake_free(&b);
    g_main_context_unref(ctx);
}

/* QEMU's default MACs: 52:54:00:12:34:56 and up, one per call. */
static void test_default_macs_count_up(void)
{
    MACAddr a, b;
    char text[18];
    net_default_mac(&a);
    net_default_mac(&b);
    g_assert_cmpmem(a.a, 5, ((uint8_t[]){ 0x52, 0x54, 0x00, 0x12, 0x34 }), 5);
    g_assert_cmpuint(b.a[5], ==, (uint8_t)(a.a[5] + 1));
    net_format_mac(&(MACAddr){ { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 } }, text);
    g_assert_cmpstr(text, ==, "52:54:00:12:34:56");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net/frames-go-straight-to-the-peer", test_frames_go_straight_to_the_peer);
    g_test_add_func("/net/no-peer-or-link-down-drops", test_no_peer_or_link_down_drops);
    g_test_add_func("/net/set-link-while-sending", test_set_link_while_sending);
    g_test_add_func("/net/flow-control-both-ways", test_flow_control_both_ways);
    g_test_add_func("/net/registry-and-claims", test_registry_and_claims);
    g_test_add_func("/net/vnet-hdr-wrappers", test_vnet_hdr_wrappers);
    g_test_add_func("/net/default-macs-count-up", test_default_macs_count_up);
    return g_test_run();
}
