/*
 * -netdev tap (net/tap.c) on real tap interfaces, in a network namespace
 * of the test's own (unshare(CLONE_NEWNET): created at start, gone with
 * the process, so nothing reaches the host's network). A packet socket on
 * the interface plays the host side. Frames both ways, the vnet header
 * stripped and prepended for a NIC that has none and passed through for
 * one that asked for it, reading stopped by a refusal until receive_ready,
 * vhost's hand-over, multiqueue, fd=, the ifup/ifdown scripts, and the
 * option errors. Needs root and /dev/net/tun; skips with the reason
 * otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <seccomp.h>
#include "net/tap.h"
#include "net/vnet-hdr.h"
#include "qemu/byte-order.h"
#include "net-stub.h"

#define TIMEOUT_MS 5000
#define IFNAME "pdltap0"
#define TEST_ETHERTYPE 0x88b5   /* IEEE's local experimental type */

static GMainContext *ctx;
static const char *skip_reason;

static bool skip_unless_tap_works(void)
{
    if (skip_reason) {
        g_test_skip(skip_reason);
    }
    return skip_reason != NULL;
}

/* A broadcast frame of our type with a recognisable payload. */
static GBytes *tap_test_frame(size_t size, unsigned seed)
{
    g_autoptr(GBytes) body = test_frame(size, seed);
    uint8_t *data = g_memdup2(g_bytes_get_data(body, NULL), size);
    memset(data, 0xff, 6);
    memcpy(data + 6, (uint8_t[]){ 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc }, 6);
    put_be16(data + 12, TEST_ETHERTYPE);
    return g_bytes_new_take(data, size);
}

static bool is_test_frame(GBytes *frame, size_t offset)
{
    gsize len;
    const uint8_t *data = g_bytes_get_data(frame, &len);
    return len >= offset + 14 && data[offset + 12] == TEST_ETHERTYPE >> 8 &&
           data[offset + 13] == (TEST_ETHERTYPE & 0xff);
}

/* Our frames among what the NIC got (a new interface may say things of
 * its own), the first `offset` bytes being a vnet header. */
static GPtrArray *test_frames_at(NicStub *nic, size_t offset)
{
    GPtrArray *ours = g_ptr_array_new();
    for (guint i = 0; i < nic->frames->len; i++) {
        if (is_test_frame(g_ptr_array_index(nic->frames, i), offset)) {
            g_ptr_array_add(ours, g_ptr_array_index(nic->frames, i));
        }
    }
    return ours;
}

static unsigned count_test_frames(NicStub *nic, size_t offset)
{
    g_autoptr(GPtrArray) ours = test_frames_at(nic, offset);
    return ours->len;
}

/* ---- the host side: the interface up, a packet socket on it ---- */

static void interface_up(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct ifreq ifr = { 0 };
    g_strlcpy(ifr.ifr_name, IFNAME, IFNAMSIZ);
    g_assert_cmpint(ioctl(fd, SIOCGIFFLAGS, &ifr), ==, 0);
    ifr.ifr_flags |= IFF_UP;
    g_assert_cmpint(ioctl(fd, SIOCSIFFLAGS, &ifr), ==, 0);
    close(fd);
}

static int host_socket(void)
{
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    g_assert_cmpint(fd, >=, 0);
    struct sockaddr_ll sll = {
        .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
        .sll_ifindex = if_nametoindex(IFNAME),
    };
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sll, sizeof(sll)), ==, 0);
    return fd;
}

/* The interface transmits frame: the tap's fd reads it. */
static void host_send(int fd, GBytes *frame)
{
    gsize len;
    const void *data = g_bytes_get_data(frame, &len);
    g_assert_cmpint(send(fd, data, len, 0), ==, (ssize_t)len);
}

/* The next frame of our type the interface received (one the tap's fd
 * wrote), or NULL when none comes within timeout_ms. */
static GBytes *host_receive_within(int fd, unsigned timeout_ms)
{
    uint8_t buf[65536];
    gint64 deadline = g_get_monotonic_time() + timeout_ms * 1000;
    while (g_get_monotonic_time() < deadline) {
        struct sockaddr_ll from;
        socklen_t len = sizeof(from);
        ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len);
        if (n < 0) {
            g_usleep(1000);
            continue;
        }
        GBytes *frame = g_bytes_new(buf, n);
        if (from.sll_pkttype != PACKET_OUTGOING && is_test_frame(frame, 0)) {
            return frame;
        }
        g_bytes_unref(frame);
    }
    return NULL;
}

static GBytes *host_receive(int fd)
{
    return host_receive_within(fd, TIMEOUT_MS);
}

/* A tap netdev t0 on IFNAME with extra options, a NIC stub on it, the
 * interface up, and the host's packet socket. */
static int tap_setup(NicStub *nic, const char *extra)
{
    g_autofree char *spec = g_strdup_printf("tap,id=t0,ifname=" IFNAME
                                            ",script=no,downscript=no%s", extra);
    netdev_create_or_fail(spec);
    nic_stub_attach(nic, "nic0", netdev_find("t0"), ctx);
    interface_up();
    return host_socket();
}

static void tap_teardown(NicStub *nic, int host)
{
    close(host);
    nic_stub_free(nic);
    netdevs_free_all();
    run_pending(ctx);
}

static void nic_send(NicStub *nic, const void *data, size_t len)
{
    g_assert_cmpint(net_send_buf(nic->nc, data, len), ==, (ssize_t)len);
}

/* The NIC asks for the tap's 12-byte header; the host's frame in then
 * reaches it behind one that says nothing (no GSO). */
static void receive_with_vnet_hdr(NicStub *nic, int host, GBytes *in)
{
    net_peer_set_vnet_hdr_len(nic->nc, VIRTIO_NET_HDR_LEN);
    g_ptr_array_set_size(nic->frames, 0);
    host_send(host, in);
    RUN_UNTIL(ctx, count_test_frames(nic, VIRTIO_NET_HDR_LEN) == 1, TIMEOUT_MS);
    g_autoptr(GPtrArray) with_hdr = test_frames_at(nic, VIRTIO_NET_HDR_LEN);
    gsize len, in_len;
    const uint8_t *data = g_bytes_get_data(g_ptr_array_index(with_hdr, 0), &len);
    const uint8_t *sent = g_bytes_get_data(in, &in_len);
    VirtIONetHdr hdr;
    memcpy(&hdr, data, sizeof(hdr));
    g_assert_cmpuint(hdr.gso_type, ==, VIRTIO_NET_HDR_GSO_NONE);
    g_assert_cmpuint(len, ==, VIRTIO_NET_HDR_LEN + in_len);
    g_assert_cmpmem(data + VIRTIO_NET_HDR_LEN, in_len, sent, in_len);
}

/* ---- tests ---- */

/* Without a vnet header, frames pass unchanged both ways. */
static void test_frames_both_ways(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    NicStub nic;
    int host = tap_setup(&nic, ",vnet_hdr=off");
    g_assert_false(net_peer_has_vnet_hdr(nic.nc));

    g_autoptr(GBytes) in = tap_test_frame(1514, 1), out = tap_test_frame(60, 2);
    host_send(host, in);
    RUN_UNTIL(ctx, count_test_frames(&nic, 0) == 1, TIMEOUT_MS);
    g_autoptr(GPtrArray) got = test_frames_at(&nic, 0);
    assert_frame_equal(g_ptr_array_index(got, 0), in);

    nic_send(&nic, g_bytes_get_data(out, NULL), 60);
    g_autoptr(GBytes) seen = host_receive(host);
    g_assert_nonnull(seen);
    assert_frame_equal(seen, out);
    tap_teardown(&nic, host);
}

/*
 * With IFF_VNET_HDR and a NIC that never asked for a header (e1000), the
 * NIC sees bare frames and sends bare frames: the tap's header is taken
 * off on the way in and a zero one put ahead on the way out (without it
 * the kernel would read the frame's first bytes as a header). Once the NIC
 * asks for 12 bytes, frames carry them both ways.
 */
static void test_vnet_hdr_stripped_prepended_and_passed(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    NicStub nic;
    int host = tap_setup(&nic, ",vnet_hdr=on");
    g_assert_true(net_peer_has_vnet_hdr(nic.nc));

    g_autoptr(GBytes) in = tap_test_frame(1000, 3), out = tap_test_frame(70, 4);
    host_send(host, in);
    RUN_UNTIL(ctx, count_test_frames(&nic, 0) == 1, TIMEOUT_MS);
    g_autoptr(GPtrArray) bare = test_frames_at(&nic, 0);
    assert_frame_equal(g_ptr_array_index(bare, 0), in);
    nic_send(&nic, g_bytes_get_data(out, NULL), 70);
    g_autoptr(GBytes) seen = host_receive(host);
    g_assert_nonnull(seen);
    assert_frame_equal(seen, out);

    receive_with_vnet_hdr(&nic, host, in);

    uint8_t framed[VIRTIO_NET_HDR_LEN + 70] = { 0 };
    memcpy(framed + VIRTIO_NET_HDR_LEN, g_bytes_get_data(out, NULL), 70);
    nic_send(&nic, framed, sizeof(framed));
    g_autoptr(GBytes) seen2 = host_receive(host);
    g_assert_nonnull(seen2);
    assert_frame_equal(seen2, out);
    tap_teardown(&nic, host);
}

/*
 * A NIC that lends buffers and asked for the tap's header gets its frames
 * read straight into them, the header as the tap wrote it; while the tap
 * strips its header (the NIC asked for none) it reads into its own buffer
 * and the NIC gets the bare frame through receive.
 */
static void test_frames_filled_in_place(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    NicStub nic;
    int host = tap_setup(&nic, ",vnet_hdr=on");
    nic.lend = 65536 + 4096;
    g_autoptr(GBytes) in = tap_test_frame(1400, 5);
    host_send(host, in);
    RUN_UNTIL(ctx, count_test_frames(&nic, 0) == 1, TIMEOUT_MS);
    g_assert_cmpuint(nic.fills, ==, 0);

    receive_with_vnet_hdr(&nic, host, in);
    g_assert_cmpuint(nic.fills, >=, 1);
    tap_teardown(&nic, host);
}

/* From here on this process's TUNSETVNETHDRSZ fails with EINVAL, as on a
 * tap that cannot change its header length. Only in a test subprocess: a
 * seccomp filter cannot be taken back. */
static void refuse_vnet_hdr_len(void)
{
    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
    g_assert_nonnull(filter);
    g_assert_cmpint(seccomp_rule_add(filter, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_EQ, TUNSETVNETHDRSZ)), ==, 0);
    g_assert_cmpint(seccomp_load(filter), ==, 0);
    seccomp_release(filter);
}

/* Run the calling test again in a subprocess; true in the parent, which
 * then checks the child passed (and wrote stderr_pattern, if not NULL). */
static bool in_parent_of_subprocess(const char *stderr_pattern)
{
    if (g_test_subprocess()) {
        return false;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    if (stderr_pattern) {
        g_test_trap_assert_stderr(stderr_pattern);
    }
    return true;
}

/*
 * A tap that cannot change its header length (TUNSETVNETHDRSZ refused)
 * would leave a NIC reading frames with a header of the wrong size.
 * vnet_hdr=on is then an error naming it; without vnet_hdr= the tap is
 * opened without a header (no offloads for the NIC) and frames pass bare;
 * an fd= whose caller chose IFF_VNET_HDR, which cannot be undone, is an
 * error.
 */
static void test_vnet_hdr_len_refused_at_open(void)
{
    if (skip_unless_tap_works() || in_parent_of_subprocess(NULL)) {
        return;
    }
    refuse_vnet_hdr_len();
    Error *err = NULL;
    g_assert_false(netdev_create_from("tap,id=t0,ifname=" IFNAME ",script=no,downscript=no,"
                                      "vnet_hdr=on", &err));
    g_assert_nonnull(strstr(err->msg, "vnet_hdr=on: the tap cannot set its virtio-net header "
                            "length (TUNSETVNETHDRSZ): Invalid argument"));
    error_free(err);
    err = NULL;
    g_assert_null(netdev_find("t0"));

    NicStub nic;
    int host = tap_setup(&nic, "");
    g_assert_false(net_peer_has_vnet_hdr(nic.nc));
    struct ifreq ifr = { 0 };
    g_assert_cmpint(ioctl(net_tap_fd(nic.nc->peer), TUNGETIFF, &ifr), ==, 0);
    g_assert_false(ifr.ifr_flags & IFF_VNET_HDR);
    g_autoptr(GBytes) in = tap_test_frame(600, 5), out = tap_test_frame(80, 6);
    host_send(host, in);
    RUN_UNTIL(ctx, count_test_frames(&nic, 0) == 1, TIMEOUT_MS);
    g_autoptr(GPtrArray) got = test_frames_at(&nic, 0);
    assert_frame_equal(g_ptr_array_index(got, 0), in);
    nic_send(&nic, g_bytes_get_data(out, NULL), 80);
    g_autoptr(GBytes) seen = host_receive(host);
    g_assert_nonnull(seen);
    assert_frame_equal(seen, out);

    int own = open("/dev/net/tun", O_RDWR);
    struct ifreq req = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
    g_strlcpy(req.ifr_name, "pdltap1", IFNAMSIZ);
    g_assert_cmpint(ioctl(own, TUNSETIFF, &req), ==, 0);
    g_autofree char *spec = g_strdup_printf("tap,id=byfd,fd=%d", own);
    g_assert_false(netdev_create_from(spec, &err));
    g_autofree char *expected = g_strdup_printf("file descriptor %d: the tap cannot set", own);
    g_assert_nonnull(strstr(err->msg, expected));
    error_free(err);
    close(own);
    tap_teardown(&nic, host);
}

/* Frames of ours the NIC got, whatever header it would have had. */
static unsigned count_test_frames_any_header(NicStub *nic)
{
    return count_test_frames(nic, 0) + count_test_frames(nic, VIRTIO_NET_HDR_LEN_SHORT) +
           count_test_frames(nic, VIRTIO_NET_HDR_LEN);
}

/* A header length the tap refuses once a NIC asks for it: one warning,
 * and the queue stops both ways instead of passing frames whose header
 * has the wrong size. */
static void test_vnet_hdr_len_refused_later(void)
{
    if (skip_unless_tap_works() ||
        in_parent_of_subprocess("*tap,id=t0: the tap refused a 12-byte virtio-net header "
                                "(TUNSETVNETHDRSZ: Invalid argument); the queue stops*")) {
        return;
    }
    NicStub nic;
    int host = tap_setup(&nic, ",vnet_hdr=on");
    g_assert_true(net_peer_has_vnet_hdr(nic.nc));
    refuse_vnet_hdr_len();
    net_peer_set_vnet_hdr_len(nic.nc, VIRTIO_NET_HDR_LEN);

    g_autoptr(GBytes) in = tap_test_frame(500, 7), out = tap_test_frame(90, 8);
    host_send(host, in);
    assert_settles_quiet(ctx);
    g_assert_cmpuint(count_test_frames_any_header(&nic), ==, 0);
    uint8_t framed[VIRTIO_NET_HDR_LEN + 90] = { 0 };
    memcpy(framed + VIRTIO_NET_HDR_LEN, g_bytes_get_data(out, NULL), 90);
    nic_send(&nic, framed, sizeof(framed));
    g_autoptr(GBytes) seen = host_receive_within(host, 300);
    g_assert_null(seen);
    tap_teardown(&nic, host);
}

/* A NIC that refuses a frame is offered it once; the tap reads nothing
 * more until receive_ready, then everything arrives in order. */
static void test_refusal_stops_reading_until_ready(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    NicStub nic;
    int host = tap_setup(&nic, "");
    nic.refuse = true;
    GBytes *frames[3];
    for (unsigned i = 0; i < 3; i++) {
        frames[i] = tap_test_frame(100 + i, 10 + i);
        host_send(host, frames[i]);
    }
    RUN_UNTIL(ctx, nic.refusals == 1, TIMEOUT_MS);
    assert_settles_quiet(ctx);
    g_assert_cmpuint(nic.refusals, ==, 1);

    nic.refuse = false;
    net_client_receive_ready(nic.nc);
    RUN_UNTIL(ctx, count_test_frames(&nic, 0) == 3, TIMEOUT_MS);
    g_autoptr(GPtrArray) got = test_frames_at(&nic, 0);
    for (unsigned i = 0; i < 3; i++) {
        assert_frame_equal(g_ptr_array_index(got, i), frames[i]);
        g_bytes_unref(frames[i]);
    }
    tap_teardown(&nic, host);
}

/* While vhost-net owns the queue the backend neither reads nor writes its
 * fd; handed back, it reads what waited. */
static void test_vhost_owned_keeps_off_the_fd(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    NicStub nic;
    int host = tap_setup(&nic, "");
    NetClientState *queue = nic.nc->peer;
    g_assert_true(net_is_tap(queue));
    g_assert_false(net_is_tap(nic.nc));
    g_assert_cmpint(net_tap_fd(queue), >=, 0);
    g_assert_cmpint(net_tap_vhost(queue), ==, NET_TAP_VHOST_OFF);
    g_assert_cmpint(net_tap_vhostfd(queue), ==, -1);

    net_tap_set_vhost_owned(queue, true);
    run_pending(ctx);
    g_autoptr(GBytes) in = tap_test_frame(200, 20);
    host_send(host, in);
    assert_settles_quiet(ctx);
    g_assert_cmpuint(count_test_frames(&nic, 0), ==, 0);

    net_tap_set_vhost_owned(queue, false);
    RUN_UNTIL(ctx, count_test_frames(&nic, 0) == 1, TIMEOUT_MS);
    tap_teardown(&nic, host);
}

/* What vhost-net's glue reads: vhost=on falls back to user space (off)
 * without /dev/vhost-net; a vhostfd= is handed over as given, and
 * vhostforce=on with it is a forced vhost; poll-us= for every queue, 0
 * when not given. */
static void test_vhost_options(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    bool have_vhost = access("/dev/vhost-net", R_OK | W_OK) == 0;
    netdev_create_or_fail("tap,id=v0,ifname=" IFNAME ",script=no,downscript=no,vhost=on,"
                          "poll-us=50");
    NetDev *nd = netdev_find("v0");
    g_assert_cmpint(net_tap_vhost(nd->queues[0]), ==,
                    have_vhost ? NET_TAP_VHOST_ON : NET_TAP_VHOST_OFF);
    g_assert_cmpint(net_tap_vhostfd(nd->queues[0]), ==, -1);
    g_assert_cmpuint(net_tap_poll_us(nd->queues[0]), ==, 50);
    netdevs_free_all();

    int fds[2] = { open("/dev/null", O_RDWR), open("/dev/null", O_RDWR) };
    g_autofree char *spec = g_strdup_printf("tap,id=v1,ifname=" IFNAME ",script=no,"
                                            "downscript=no,queues=2,vhostforce=on,"
                                            "vhostfds=%d:%d", fds[0], fds[1]);
    netdev_create_or_fail(spec);
    nd = netdev_find("v1");
    for (unsigned i = 0; i < 2; i++) {
        g_assert_cmpint(net_tap_vhost(nd->queues[i]), ==, NET_TAP_VHOST_FORCE);
        g_assert_cmpint(net_tap_vhostfd(nd->queues[i]), ==, fds[i]);
        g_assert_cmpuint(net_tap_poll_us(nd->queues[i]), ==, 0);
    }
    netdevs_free_all();
}

/* The interface deleted under the backend: its fd reports an error for
 * ever after, which must not keep the context spinning. */
static void test_deleted_interface_goes_quiet(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    NicStub nic;
    int host = tap_setup(&nic, "");
    close(host);
    g_assert_true(g_spawn_command_line_sync("ip link del " IFNAME, NULL, NULL, NULL, NULL));
    g_assert_cmpuint(if_nametoindex(IFNAME), ==, 0);
    assert_settles_quiet(ctx);
    nic_stub_free(&nic);
    netdevs_free_all();
    run_pending(ctx);
}

/* queues=N opens N fds on one multiqueue interface; fd= adopts a tap the
 * caller opened, its vnet header read from the fd's flags. */
static void test_multiqueue_and_fd(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    netdev_create_or_fail("tap,id=mq,ifname=" IFNAME ",script=no,downscript=no,queues=2");
    NetDev *nd = netdev_find("mq");
    g_assert_cmpuint(nd->num_queues, ==, 2);
    int fd0 = net_tap_fd(nd->queues[0]), fd1 = net_tap_fd(nd->queues[1]);
    g_assert_cmpint(fd0, !=, fd1);
    struct ifreq ifr = { 0 };
    g_assert_cmpint(ioctl(fd1, TUNGETIFF, &ifr), ==, 0);
    g_assert_true(ifr.ifr_flags & IFF_MULTI_QUEUE);
    g_assert_cmpstr(ifr.ifr_name, ==, IFNAME);
    /* info network: QEMU names the scripts for the first queue only. */
    g_autofree char *info1 = net_client_info(nd->queues[1]);
    g_assert_cmpstr(info1, ==, "ifname=" IFNAME ",script=no,downscript=no");

    int own = open("/dev/net/tun", O_RDWR);
    struct ifreq req = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
    g_strlcpy(req.ifr_name, "pdltap1", IFNAMSIZ);
    g_assert_cmpint(ioctl(own, TUNSETIFF, &req), ==, 0);
    g_autofree char *spec = g_strdup_printf("tap,id=byfd,fd=%d", own);
    netdev_create_or_fail(spec);
    NicStub nic;
    nic_stub_attach(&nic, "nic0", netdev_find("byfd"), ctx);
    g_assert_true(net_peer_has_vnet_hdr(nic.nc));
    g_assert_cmpint(net_tap_fd(nic.nc->peer), ==, own);
    g_autofree char *fd_info = net_client_info(nic.nc->peer);
    g_autofree char *fd_expected = g_strdup_printf("fd=%d", own);
    g_assert_cmpstr(fd_info, ==, fd_expected);
    nic_stub_free(&nic);
    netdevs_free_all();
    g_assert_cmpint(fcntl(own, F_GETFD), ==, -1);   /* the backend closed it */
}

/* An IPv4/UDP frame from 10.0.0.1:sport to 10.0.0.2:FLOW_PORT: the
 * kernel hashes each source port, a flow, onto one of the tap's queues. */
#define FLOW_PORT 2000

static void host_send_flow(int fd, uint16_t sport)
{
    uint8_t f[14 + 20 + 8 + 32] = { 0 };
    memset(f, 0xff, 6);
    memcpy(f + 6, (uint8_t[]){ 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc }, 6);
    f[12] = 0x08;
    uint8_t *ip = f + 14, *udp = ip + 20;
    ip[0] = 0x45;
    ip[3] = sizeof(f) - 14;
    ip[8] = 64;
    ip[9] = 17;
    memcpy(ip + 12, (uint8_t[]){ 10, 0, 0, 1, 10, 0, 0, 2 }, 8);
    udp[0] = sport >> 8;
    udp[1] = sport;
    udp[2] = FLOW_PORT >> 8;
    udp[3] = FLOW_PORT & 0xff;
    udp[5] = sizeof(f) - 34;
    g_autoptr(GBytes) frame = g_bytes_new(f, sizeof(f));
    host_send(fd, frame);
}

static unsigned count_flow_frames(NicStub *nic)
{
    unsigned n = 0;
    for (guint i = 0; i < nic->frames->len; i++) {
        gsize len;
        const uint8_t *d = g_bytes_get_data(g_ptr_array_index(nic->frames, i), &len);
        n += len >= 38 && d[12] == 0x08 && d[13] == 0 && d[23] == 17 &&
             (d[36] << 8 | d[37]) == FLOW_PORT;
    }
    return n;
}

static unsigned count_flows_at(NicStub *nic0, NicStub *nic1)
{
    return count_flow_frames(nic0) + (nic1 ? count_flow_frames(nic1) : 0);
}

/* 32 flows from the host: they arrive, spread over the attached queues
 * (nic1 NULL: all at nic0). */
static void send_flows(int host, uint16_t first_port, NicStub *nic0, NicStub *nic1)
{
    unsigned before = count_flows_at(nic0, nic1);
    for (uint16_t port = first_port; port < first_port + 32; port++) {
        host_send_flow(host, port);
    }
    RUN_UNTIL(ctx, count_flows_at(nic0, nic1) == before + 32, TIMEOUT_MS);
}

/*
 * A queue its NIC leaves out (virtio-net pairs beyond those the driver
 * set) is detached from the multiqueue tap, so the kernel hashes no flow
 * onto it: every flow reaches the queue still read, and the context goes
 * quiet. Enabled again, it is attached and takes flows again.
 */
static void test_multiqueue_detach(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    netdev_create_or_fail("tap,id=mq,ifname=" IFNAME ",script=no,downscript=no,vnet_hdr=off,"
                          "queues=2");
    NetDev *nd = netdev_find("mq");
    NicStub nic0, nic1;
    nic_stub_attach_queue(&nic0, "nic0", nd, 0, ctx);
    nic_stub_attach_queue(&nic1, "nic1", nd, 1, ctx);
    interface_up();
    int host = host_socket();
    send_flows(host, 1000, &nic0, &nic1);
    g_assert_cmpuint(count_flow_frames(&nic1), >, 0);   /* both queues take flows */

    net_peer_set_queue_enabled(nic1.nc, false);
    unsigned on_queue1 = count_flow_frames(&nic1);
    send_flows(host, 2000, &nic0, &nic1);
    g_assert_cmpuint(count_flow_frames(&nic1), ==, on_queue1);
    assert_settles_quiet(ctx);

    net_peer_set_queue_enabled(nic1.nc, true);
    send_flows(host, 3000, &nic0, &nic1);
    g_assert_cmpuint(count_flow_frames(&nic1), >, on_queue1);
    close(host);
    nic_stub_free(&nic0);
    nic_stub_free(&nic1);
    netdevs_free_all();
    run_pending(ctx);
}

/* A queue no NIC takes (a virtio-net with mq=off, or an e1000, on a tap
 * with queues=2) is detached once the machine's NICs are made: every flow
 * reaches the one queue read. */
static void test_unused_queue_detached(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    netdev_create_or_fail("tap,id=mq,ifname=" IFNAME ",script=no,downscript=no,vnet_hdr=off,"
                          "queues=2");
    NicStub nic0;
    nic_stub_attach_queue(&nic0, "nic0", netdev_find("mq"), 0, ctx);
    netdevs_detach_unused_queues();
    interface_up();
    int host = host_socket();
    send_flows(host, 1000, &nic0, NULL);
    close(host);
    nic_stub_free(&nic0);
    netdevs_free_all();
    run_pending(ctx);
}

/* script= runs with the interface name when the tap is created,
 * downscript= when the netdev goes; a failing script is an error. */
static void test_scripts(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    g_autofree char *dir = g_dir_make_tmp("tap-scripts-XXXXXX", NULL);
    g_autofree char *up = g_build_filename(dir, "up", NULL);
    g_autofree char *down = g_build_filename(dir, "down", NULL);
    g_autofree char *log = g_build_filename(dir, "log", NULL);
    g_autofree char *up_text = g_strdup_printf("#!/bin/sh\necho up $1 >> %s\n", log);
    g_autofree char *down_text = g_strdup_printf("#!/bin/sh\necho down $1 >> %s\n", log);
    g_assert_true(g_file_set_contents(up, up_text, -1, NULL));
    g_assert_true(g_file_set_contents(down, down_text, -1, NULL));
    g_assert_cmpint(chmod(up, 0755) | chmod(down, 0755), ==, 0);

    g_autofree char *spec = g_strdup_printf("tap,id=s,ifname=" IFNAME ",script=%s,downscript=%s",
                                            up, down);
    netdev_create_or_fail(spec);
    g_autofree char *info = net_client_info(netdev_find("s")->queues[0]);
    g_autofree char *expected = g_strdup_printf("ifname=" IFNAME ",script=%s,downscript=%s",
                                                up, down);
    g_assert_cmpstr(info, ==, expected);
    g_autofree char *after_up = NULL;
    g_assert_true(g_file_get_contents(log, &after_up, NULL, NULL));
    g_assert_cmpstr(after_up, ==, "up " IFNAME "\n");
    netdevs_free_all();
    g_autofree char *after_down = NULL;
    g_assert_true(g_file_get_contents(log, &after_down, NULL, NULL));
    g_assert_cmpstr(after_down, ==, "up " IFNAME "\ndown " IFNAME "\n");

    Error *err = NULL;
    g_assert_false(netdev_create_from("tap,id=f,ifname=" IFNAME ",script=/bin/false", &err));
    g_assert_nonnull(strstr(err->msg, "network script /bin/false failed with status"));
    error_free(err);
    g_assert_null(netdev_find("f"));
    unlink(up);
    unlink(down);
    unlink(log);
    rmdir(dir);
}

/* QEMU takes poll-us= without vhost and does nothing with it; we take it
 * too, and say that it does nothing. */
static void test_poll_us_without_vhost_warns(void)
{
    if (skip_unless_tap_works()) {
        return;
    }
    if (g_test_subprocess()) {
        netdev_create_or_fail("tap,id=p0,ifname=" IFNAME ",script=no,downscript=no,poll-us=50");
        g_assert_cmpint(net_tap_vhost(netdev_find("p0")->queues[0]), ==, NET_TAP_VHOST_OFF);
        netdevs_free_all();
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*warning: tap: poll-us= applies to vhost-net only, "
                              "and vhost is off*");
}

/* The option errors, found before any tap is opened. */
static void test_bad_options(void)
{
    bool have_vhost = access("/dev/vhost-net", F_OK) == 0;
    static const struct {
        const char *spec, *error;
    } cases[] = {
        { "tap,id=t0,bogus=1", "Invalid parameter 'bogus'" },
        { "tap,id=t0,vnet_hdr=maybe", "Parameter 'vnet_hdr' expects 'on' or 'off'" },
        { "tap,id=t0,queues=0", "Parameter 'queues' expects a number from 1 to 1024" },
        { "tap,id=t0,ifname=" "abcdefghijklmnop", "Parameter 'ifname' expects a name" },
        { "tap,id=t0,fd=1,fds=1:2", "fd= and fds= are mutually exclusive" },
        { "tap,id=t0,fd=1,ifname=x", "are invalid with fd=/fds=" },
        { "tap,id=t0,fd=999999", "file descriptor 999999 is not open" },
        { "tap,id=t0,vhost=on,poll-us=-1", "Parameter 'poll-us' expects a number of microseconds" },
        { "tap,id=t0,vhost=on,poll-us=4294967296", "Parameter 'poll-us' expects a number" },

        { "tap,id=t0,vhost=off,vhostforce=on",
          "vhostforce=on needs vhost-net, but vhost=off was given" },
        { "tap,id=t0,vhost=off,vhostfd=0", "vhostfd(s)= is not valid without vhost" },
        { "tap,id=t0,vhostfds=0:1", "vhostfds= gives 2 file descriptor(s) for 1 queue(s)" },
        { "tap,id=t0,vhostforce=on", "tap: open vhost char device failed" },
    };
    /* An open fd that is no tap. */
    int null_fd = open("/dev/null", O_RDWR);
    g_autofree char *not_tap = g_strdup_printf("tap,id=t0,fd=%d", null_fd);
    Error *err = NULL;
    g_assert_false(netdev_create_from(not_tap, &err));
    g_assert_nonnull(strstr(err->msg, "is not a tap device"));
    error_free(err);
    close(null_fd);

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        if (have_vhost && strstr(cases[i].error, "open vhost char device")) {
            continue;           /* this host has vhost-net: nothing to refuse */
        }
        Error *err = NULL;
        g_assert_false(netdev_create_from(cases[i].spec, &err));
        if (!strstr(err->msg, cases[i].error)) {
            g_error("%s: '%s' lacks '%s'", cases[i].spec, err->msg, cases[i].error);
        }
        error_free(err);
        g_assert_null(netdev_find("t0"));
    }
}

/* The test's own network namespace, or why there cannot be one. */
static const char *enter_network_namespace(void)
{
    if (geteuid() != 0) {
        return "tap tests need root (a tap interface in a network namespace)";
    }
    if (access("/dev/net/tun", R_OK | W_OK) != 0) {
        return "no /dev/net/tun";
    }
    if (unshare(CLONE_NEWNET) != 0) {
        return "cannot create a network namespace (unshare(CLONE_NEWNET) failed)";
    }
    /* No IPv6 chatter from the new interface. */
    g_file_set_contents("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1", -1, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    skip_reason = enter_network_namespace();
    ctx = g_main_context_new();
    g_test_add_func("/net-tap/frames-both-ways", test_frames_both_ways);
    g_test_add_func("/net-tap/vnet-hdr-stripped-prepended-and-passed",
                    test_vnet_hdr_stripped_prepended_and_passed);
    g_test_add_func("/net-tap/frames-filled-in-place", test_frames_filled_in_place);
    g_test_add_func("/net-tap/vnet-hdr-len-refused-at-open", test_vnet_hdr_len_refused_at_open);
    g_test_add_func("/net-tap/vnet-hdr-len-refused-later", test_vnet_hdr_len_refused_later);
    g_test_add_func("/net-tap/refusal-stops-reading-until-ready",
                    test_refusal_stops_reading_until_ready);
    g_test_add_func("/net-tap/vhost-owned-keeps-off-the-fd", test_vhost_owned_keeps_off_the_fd);
    g_test_add_func("/net-tap/vhost-options", test_vhost_options);
    g_test_add_func("/net-tap/poll-us-without-vhost-warns", test_poll_us_without_vhost_warns);
    g_test_add_func("/net-tap/deleted-interface-goes-quiet", test_deleted_interface_goes_quiet);
    g_test_add_func("/net-tap/multiqueue-and-fd", test_multiqueue_and_fd);
    g_test_add_func("/net-tap/multiqueue-detach", test_multiqueue_detach);
    g_test_add_func("/net-tap/unused-queue-detached", test_unused_queue_detached);
    g_test_add_func("/net-tap/scripts", test_scripts);
    g_test_add_func("/net-tap/bad-options", test_bad_options);
    int rc = g_test_run();
    g_main_context_unref(ctx);
    return rc;
}
