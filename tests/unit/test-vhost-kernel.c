/*
 * vhost against the real kernel: hw/virtio/vhost.c drives /dev/vhost-net
 * with rings in a test's guest RAM and a tap as the backend, and frames
 * cross in both directions with no user space in the data path. Needs
 * /dev/vhost-net (modprobe vhost_net) and root (a tap, in a network
 * namespace of its own so no frame leaves it); skipped otherwise, as on a
 * machine without the module. The bench's L1 has both (docs/network.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/virtio/vhost.h"
#include "hw/virtio/virtio.h"
#include "net/vnet-hdr.h"
#include "qemu/byte-order.h"
#include "test-ram.h"
#include "vring-driver.h"

#define RAM_BASE        0x100000ULL
#define RAM_SIZE        (1 << 20)
#define QSIZE           16
#define RX_RING_GPA     (RAM_BASE + 0x1000)
#define TX_RING_GPA     (RAM_BASE + 0x4000)
#define BUF_GPA(i)      (RAM_BASE + 0x10000 + (i) * 0x1000)
#define RX_BUFS         4
#define TAP_NAME        "vhosttest0"
#define ETHERTYPE_TEST  0x88b5      /* IEEE local experimental */
#define FRAME_LEN       60

static uint8_t *ram;

static void *gpa(uint64_t addr)
{
    return ram + (addr - RAM_BASE);
}

/* A frame of ours: broadcast, the test ethertype, a pattern from seed. */
static void make_frame(uint8_t *f, unsigned seed)
{
    memset(f, 0xff, 6);
    memcpy(f + 6, "\x52\x54\x00\x12\x34\x56", 6);
    put_be16(f + 12, ETHERTYPE_TEST);
    for (unsigned i = 14; i < FRAME_LEN; i++) {
        f[i] = seed + i;
    }
}

static bool is_ours(const uint8_t *f, size_t len)
{
    return len >= 14 && f[12] == ETHERTYPE_TEST >> 8 && f[13] == (ETHERTYPE_TEST & 0xff);
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    if (fd >= 0) {
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t)strlen(text));
        close(fd);
    }
}

/* A tap with a 12-byte vnet header, up, in this namespace; its ifindex. */
static int tap_open(int *ifindex)
{
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
    g_strlcpy(ifr.ifr_name, TAP_NAME, IFNAMSIZ);
    g_assert_cmpint(ioctl(fd, TUNSETIFF, &ifr), ==, 0);
    int hdr_len = VIRTIO_NET_HDR_LEN;
    g_assert_cmpint(ioctl(fd, TUNSETVNETHDRSZ, &hdr_len), ==, 0);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(ioctl(s, SIOCGIFFLAGS, &ifr), ==, 0);
    ifr.ifr_flags |= IFF_UP;
    g_assert_cmpint(ioctl(s, SIOCSIFFLAGS, &ifr), ==, 0);
    close(s);
    *ifindex = if_nametoindex(TAP_NAME);
    g_assert_cmpint(*ifindex, >, 0);
    return fd;
}

/* The host's side of the tap: frames the guest sends arrive here, frames
 * sent here go to the guest. */
static int packet_socket(int ifindex)
{
    int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    g_assert_cmpint(s, >=, 0);
    struct sockaddr_ll sll = {
        .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = ifindex,
    };
    g_assert_cmpint(bind(s, (struct sockaddr *)&sll, sizeof(sll)), ==, 0);
    return s;
}

static bool wait_readable(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, 5000) == 1;
}

/* The next used element of tv, waiting up to 5 s for it. */
static VRingUsedElem wait_used(TestVring *tv)
{
    gint64 deadline = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;
    VRingUsedElem used;
    while (!tv_take_used(tv, &used)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(1000);
    }
    return used;
}

static void test_frames_both_ways(void)
{
    int vhost_fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
    if (vhost_fd < 0) {
        g_test_skip("no /dev/vhost-net (modprobe vhost_net)");
        return;
    }
    if (unshare(CLONE_NEWNET) < 0) {
        close(vhost_fd);
        g_test_skip("cannot make a network namespace (not root)");
        return;
    }
    /* No IPv6 chatter from the tap into the receive ring. */
    write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
    int ifindex;
    int tap = tap_open(&ifindex);
    int host = packet_socket(ifindex);

    VhostDev d;
    Error *err = NULL;
    g_assert_true(vhost_dev_init(&d, vhost_fd, 2, "vhost-net test", &err));
    g_assert_true(d.features & VIRTIO_BIT(VIRTIO_F_VERSION_1));
    TestVring rx, tx;
    tv_init(&rx, ram, RAM_BASE, QSIZE, RX_RING_GPA);
    tv_init(&tx, ram, RAM_BASE, QSIZE, TX_RING_GPA);
    EventNotifier calls[2];
    g_assert_true(event_notifier_init(&calls[0], NULL));
    g_assert_true(event_notifier_init(&calls[1], NULL));
    /* The transmit ring polls (-netdev tap,poll-us=50), the other not. */
    VhostRingSetup setup[2] = {
        { .num = QSIZE, .desc = rx.desc, .avail = rx.avail, .used = rx.used, .call = &calls[0] },
        { .num = QSIZE, .desc = tx.desc, .avail = tx.avail, .used = tx.used, .call = &calls[1],
          .busyloop_us = 50 },
    };
    g_assert_true(vhost_dev_start(&d, VIRTIO_BIT(VIRTIO_F_VERSION_1), setup, &err));
    for (unsigned i = 0; i < 2; i++) {
        VhostUapiVringState busyloop = { .index = i, .num = 1234 };
        g_assert_cmpint(ioctl(vhost_fd, VHOST_UAPI_GET_VRING_BUSYLOOP_TIMEOUT, &busyloop), ==, 0);
        g_assert_cmpuint(busyloop.num, ==, setup[i].busyloop_us);
    }
    for (unsigned i = 0; i < 2; i++) {
        VhostUapiVringFile backend = { .index = i, .fd = tap };
        g_assert_cmpint(ioctl(vhost_fd, VHOST_UAPI_NET_SET_BACKEND, &backend), ==, 0);
    }

    /* Guest to host: a header of zeros and the frame, one buffer. */
    uint8_t frame[FRAME_LEN], got[2048];
    make_frame(frame, 1);
    memset(gpa(BUF_GPA(0)), 0, VIRTIO_NET_HDR_LEN);
    memcpy((uint8_t *)gpa(BUF_GPA(0)) + VIRTIO_NET_HDR_LEN, frame, FRAME_LEN);
    tv_desc(&tx, 0, BUF_GPA(0), VIRTIO_NET_HDR_LEN + FRAME_LEN, 0, 0);
    tv_publish(&tx, 0);
    event_notifier_set(&d.rings[1].kick);
    ssize_t n;
    do {
        g_assert_true(wait_readable(host));
        n = recv(host, got, sizeof(got), 0);
    } while (!is_ours(got, n));
    g_assert_cmpint(n, ==, FRAME_LEN);
    g_assert_cmpmem(got, n, frame, FRAME_LEN);
    g_assert_cmpuint(wait_used(&tx).id, ==, 0);
    g_assert_true(wait_readable(calls[1].fd));

    /* Host to guest: buffers posted, a frame sent on the tap's host side. */
    for (unsigned i = 0; i < RX_BUFS; i++) {
        tv_desc(&rx, i, BUF_GPA(1 + i), 2048, VRING_DESC_F_WRITE, 0);
        tv_publish(&rx, i);
    }
    event_notifier_set(&d.rings[0].kick);
    make_frame(frame, 7);
    struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = ifindex, .sll_halen = 6 };
    memset(to.sll_addr, 0xff, 6);
    g_assert_cmpint(sendto(host, frame, FRAME_LEN, 0, (struct sockaddr *)&to, sizeof(to)), ==,
                    FRAME_LEN);
    VRingUsedElem used;
    const uint8_t *buf;
    do {
        used = wait_used(&rx);
        g_assert_cmpuint(used.id, <, RX_BUFS);
        buf = (const uint8_t *)gpa(BUF_GPA(1 + used.id)) + VIRTIO_NET_HDR_LEN;
    } while (!is_ours(buf, used.len - VIRTIO_NET_HDR_LEN));
    g_assert_cmpuint(used.len, ==, VIRTIO_NET_HDR_LEN + FRAME_LEN);
    g_assert_cmpmem(buf, FRAME_LEN, frame, FRAME_LEN);
    g_assert_true(wait_readable(calls[0].fd));

    /* Stopped: the kernel says how far it got, for user space to go on. */
    for (unsigned i = 0; i < 2; i++) {
        VhostUapiVringFile backend = { .index = i, .fd = VHOST_UAPI_FILE_UNBIND };
        g_assert_cmpint(ioctl(vhost_fd, VHOST_UAPI_NET_SET_BACKEND, &backend), ==, 0);
    }
    uint16_t last_avail[2] = { 0, 0 };
    vhost_dev_stop(&d, last_avail);
    g_assert_cmpuint(last_avail[1], ==, 1);
    g_assert_cmpuint(last_avail[0], ==, rx.used_seen);

    vhost_dev_cleanup(&d);
    event_notifier_cleanup(&calls[0]);
    event_notifier_cleanup(&calls[1]);
    close(host);
    close(tap);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    ram = test_ram_map(RAM_BASE, RAM_SIZE);
    g_test_add_func("/vhost-kernel/frames-both-ways", test_frames_both_ways);
    return g_test_run();
}
