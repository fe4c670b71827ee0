/*
 * virtio-net-pci end to end, as Linux's virtio_net drives it: the device
 * realized on a fake netdev (a peer that records what it is sent and
 * sends what the test gives it), its queues in the test's guest RAM, kicks
 * through the notify region (served on the main loop, the device's
 * context), interrupts through MSI-X. Features with and without a
 * vnet-header peer; TX byte for byte, with the checksum the device
 * completes checked by an independent sum; mergeable RX across buffers;
 * flow control both ways; the control queue (RX modes, MAC table, VLAN,
 * MQ); hostile chains; the link; the vhost-net seam; two queue pairs
 * served at once from two threads under their own locks, and resets
 * racing them.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>
#include "hw/irq.h"
#include "hw/virtio/virtio-net.h"
#include "monitor/qmp.h"
#include "net/net.h"
#include "net/vnet-hdr.h"
#include "qemu/byte-order.h"
#include "qemu/iov.h"
#include "qemu/log.h"
#include "sysemu/iothread.h"
#include "virtio-pci-driver.h"

#define RAM_BASE        0x100000ULL
#define RAM_SIZE        (4 << 20)
#define RING_GPA(q)     (RAM_BASE + 0x1000 + (q) * 0x4000)
#define TXHDR_GPA       (RAM_BASE + 0x40000)    /* 16 bytes per TX slot */
#define CTRL_GPA        (RAM_BASE + 0x48000)
#define TXBUF_GPA       (RAM_BASE + 0x50000)    /* 2 KiB per TX slot */
#define RXBUF_GPA       (RAM_BASE + 0x200000)   /* 4 KiB per RX slot */
#define QSIZE           256
#define CTRL_QSIZE      64
#define MAX_VQ          5

#define F(bit)          VIRTIO_BIT(bit)
#define ALL_FEATURES    UINT64_MAX
#define ETH_HDR_END     14

static const MACAddr test_mac = { { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef } };
static uint8_t *ram;

static uint8_t *gpa(uint64_t addr)
{
    return ram + (addr - RAM_BASE);
}

/* ---- interrupts: MSI-X messages counted by vector ---- */

static unsigned msis[16];

static void rec_set_level(void *opaque, unsigned gsi, bool level)
{
}

static void rec_send_msi(void *opaque, uint64_t address, uint32_t data)
{
    g_assert_cmphex(address, ==, VPD_MSI_ADDRESS);
    g_assert_cmpuint(data - VPD_MSI_DATA_BASE, <, G_N_ELEMENTS(msis));
    msis[data - VPD_MSI_DATA_BASE]++;
}

static unsigned map_irq(unsigned slot, unsigned pin)
{
    return 16 + (slot + pin - 1) % 4;
}

/* ---- the fake netdev: one FakePeer per queue ---- */

typedef struct FakePeer {
    GPtrArray *frames;          /* SentFrame *: what the NIC sent */
    bool refuse;                /* receive returns 0 */
    bool vnet;                  /* has_vnet_hdr */
    unsigned hdr_len;           /* as set_vnet_hdr_len left it */
    NetOffloads offloads;
    unsigned send_ready;        /* send_ready calls */
    bool left_out;              /* set_queue_enabled(false) was the last word */
    int irq_fd;                 /* > 0: a vector's eventfd to look at as frames come */
    GArray *irq_raised;         /* bool per frame: irq_fd was signalled before it */
} FakePeer;

/* One frame as the peer got it. Plain g_malloc, not a GByteArray: the
 * pair tests record frames on two threads at once, and GLib before 2.76
 * hands slices between threads' magazines behind futexes that
 * ThreadSanitizer cannot see (it would report races that are not). */
typedef struct SentFrame {
    size_t len;
    uint8_t data[];
} SentFrame;

static ssize_t fake_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    FakePeer *p = nc->opaque;
    if (p->refuse) {
        return 0;
    }
    if (p->irq_fd > 0) {
        struct pollfd pfd = { .fd = p->irq_fd, .events = POLLIN };
        bool raised = poll(&pfd, 1, 0) == 1;
        g_array_append_val(p->irq_raised, raised);
    }
    size_t len = iov_size(iov, iovcnt);
    SentFrame *frame = g_malloc(sizeof(*frame) + len);
    frame->len = iov_to_buf(iov, iovcnt, 0, frame->data, len);
    g_ptr_array_add(p->frames, frame);
    return frame->len;
}

static void fake_send_ready(NetClientState *nc)
{
    ((FakePeer *)nc->opaque)->send_ready++;
}

static bool fake_has_vnet_hdr(NetClientState *nc)
{
    return ((FakePeer *)nc->opaque)->vnet;
}

static void fake_set_vnet_hdr_len(NetClientState *nc, unsigned len)
{
    ((FakePeer *)nc->opaque)->hdr_len = len;
}

static void fake_set_offload(NetClientState *nc, const NetOffloads *o)
{
    ((FakePeer *)nc->opaque)->offloads = *o;
}

static void fake_set_queue_enabled(NetClientState *nc, bool enabled)
{
    ((FakePeer *)nc->opaque)->left_out = !enabled;
}

static const NetClientInfo fake_info = {
    .type = "fake",
    .receive = fake_receive,
    .send_ready = fake_send_ready,
    .has_vnet_hdr = fake_has_vnet_hdr,
    .set_vnet_hdr_len = fake_set_vnet_hdr_len,
    .set_offload = fake_set_offload,
    .set_queue_enabled = fake_set_queue_enabled,
};

/* ---- the device ---- */

typedef struct TestOptions {
    bool vnet;                  /* the peer carries vnet headers */
    bool iothread;              /* the device's context is an I/O thread's */
    unsigned queues;            /* of the netdev; 0: 1 */
    bool mq;
    uint64_t driver_features;   /* 0: all the device offers */
    uint16_t tx_queue_size;     /* 0: 256 */
    bool no_irqfd;              /* x-irqfd=off: vectors sent from user space */
    bool no_rx_in_place;        /* x-rx-in-place=off: never lend receive chains */
    uint32_t tx_poll_ns;        /* x-tx-poll-ns (0: no transmit polling) */
} TestOptions;

typedef struct TestNet {
    VirtioPCIDriver d;
    QEMUDevice *qdev;
    IOThread *iothread;
    NetDev *netdev;
    FakePeer peers[2];
    TestVring vq[MAX_VQ];
    unsigned next_desc[MAX_VQ];
    unsigned nvq;               /* queues the driver set up */
    unsigned ctrl;              /* the controlq's index */
    uint64_t features;          /* negotiated */
} TestNet;

/* Linux's order: reset, features, MSI-X, queues, DRIVER_OK. */
static void driver_init(TestNet *t, const TestOptions *o)
{
    VirtioPCIDriver *d = &t->d;
    vpd_set_status(d, 0);
    vpd_set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    uint64_t want = o->driver_features ? o->driver_features : ALL_FEATURES;
    t->features = vpd_device_features(d) & want;
    vpd_set_driver_features(d, t->features);
    uint8_t s = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                VIRTIO_CONFIG_S_FEATURES_OK;
    vpd_set_status(d, s);
    g_assert_cmphex(vpd_status(d), ==, s);
    unsigned pairs = t->features & F(VIRTIO_NET_F_MQ) ? mem_read(d->device + 8, 2) : 1;
    bool ctrl = t->features & F(VIRTIO_NET_F_CTRL_VQ);
    t->nvq = 2 * pairs + ctrl;
    t->ctrl = ctrl ? 2 * pairs : UINT_MAX;
    vpd_enable_msix(d, t->nvq + 1);
    for (unsigned q = 0; q < t->nvq; q++) {
        uint16_t num = q == t->ctrl ? CTRL_QSIZE
                       : q % 2 && o->tx_queue_size ? o->tx_queue_size : QSIZE;
        tv_init(&t->vq[q], ram, RAM_BASE, num, RING_GPA(q));
        t->next_desc[q] = 0;
        vpd_setup_queue(d, q, &t->vq[q], q + 1);
    }
    vpd_set_status(d, s | VIRTIO_CONFIG_S_DRIVER_OK);
    memset(msis, 0, sizeof(msis));
}

static TestNet *net_new(const TestOptions *o)
{
    TestNet *t = g_new0(TestNet, 1);
    memset(ram, 0, RAM_SIZE);
    unsigned nq = o->queues ? o->queues : 1;
    Error *err = NULL;
    t->netdev = netdev_new("fake", "n0", nq, &fake_info, &err);
    g_assert_null(err);
    for (unsigned i = 0; i < nq; i++) {
        t->peers[i] = (FakePeer) { .frames = g_ptr_array_new_with_free_func(
                                       g_free),
                                   .vnet = o->vnet };
        t->netdev->queues[i]->opaque = &t->peers[i];
    }
    if (o->iothread) {
        t->iothread = iothread_new("vnet-io", &err);
        g_assert_nonnull(t->iothread);
    }
    VirtIOPCIConf pci = VIRTIO_PCI_CONF_DEFAULTS;
    pci.irqfd = !o->no_irqfd;
    VirtIONetConf conf = {
        .netdev = t->netdev, .mac = test_mac, .mq = o->mq, .rx_queue_size = 256, .pci = &pci,
        .iothread = t->iothread,
        .tx_queue_size = o->tx_queue_size ? o->tx_queue_size : 256, .features = ALL_FEATURES,
        .rx_in_place = !o->no_rx_in_place, .tx_poll_max_ns = o->tx_poll_ns,
    };
    PCIBus *bus = pci_bus_new(map_irq);
    t->qdev = virtio_net_pci_new(bus, -1, &conf, &err);
    g_assert_null(err);
    vpd_attach(&t->d, bus, ((PCIDevice *)t->qdev)->devfn);
    driver_init(t, o);
    return t;
}

/* Decoding off (the BARs leave the address space), reset, the netdev gone. */
static void net_free(TestNet *t)
{
    vpd_cfg_write(&t->d, PCI_COMMAND, 0, 2);
    device_lock(t->qdev);
    t->qdev->reset(t->qdev);
    device_unlock(t->qdev);
    vpd_settle();
    if (t->iothread) {
        iothread_free(t->iothread);
    }
    for (unsigned i = 0; i < t->netdev->num_queues; i++) {
        g_ptr_array_unref(t->peers[i].frames);
    }
    netdevs_free_all();
    g_free(t);
}

static bool needs_reset(TestNet *t)
{
    return vpd_status(&t->d) & VIRTIO_CONFIG_S_NEEDS_RESET;
}

/* ---- the driver's chains ---- */

static unsigned take_desc(TestNet *t, unsigned q, unsigned n)
{
    unsigned first = t->next_desc[q];
    t->next_desc[q] = (first + n) % t->vq[q].num;
    return first;
}

/*
 * A TX chain on queue q: the header in its own descriptor, the frame in
 * two; kicked. The frame is copied to slot's buffer.
 */
static uint16_t post_tx(TestNet *t, unsigned q, const VirtIONetHdr *hdr, unsigned hdr_len,
                        const uint8_t *frame, size_t len, unsigned slot)
{
    TestVring *tv = &t->vq[q];
    uint16_t d = take_desc(t, q, 3);
    uint64_t hgpa = TXHDR_GPA + 16 * slot, fgpa = TXBUF_GPA + 2048 * slot;
    memcpy(gpa(hgpa), hdr, hdr_len);
    memcpy(gpa(fgpa), frame, len);
    tv_desc(tv, d, hgpa, hdr_len, VRING_DESC_F_NEXT, (d + 1) % tv->num);
    tv_desc(tv, (d + 1) % tv->num, fgpa, len / 2, VRING_DESC_F_NEXT, (d + 2) % tv->num);
    tv_desc(tv, (d + 2) % tv->num, fgpa + len / 2, len - len / 2, 0, 0);
    tv_publish(tv, d);
    return d;
}

/* An RX buffer of len bytes (one writable descriptor) at slot. */
static uint16_t post_rx(TestNet *t, unsigned q, unsigned slot, uint32_t len)
{
    uint16_t d = take_desc(t, q, 1);
    memset(gpa(RXBUF_GPA + 4096 * slot), 0xee, len);
    tv_desc(&t->vq[q], d, RXBUF_GPA + 4096 * slot, len, VRING_DESC_F_WRITE, 0);
    tv_publish(&t->vq[q], d);
    return d;
}

/* Kick queue q after publishing from old_idx, only if the device asked
 * for it: Linux never kicks otherwise (its control commands then spin
 * for an answer that never comes). */
static void kick_as_linux(TestNet *t, unsigned q, uint16_t old_idx)
{
    vpd_kick_if_needed(&t->d, q, &t->vq[q], old_idx, t->features & F(VIRTIO_F_RING_EVENT_IDX));
}

static unsigned used_count(TestNet *t, unsigned q)
{
    return (uint16_t)(tv_used_idx(&t->vq[q]) - t->vq[q].used_seen);
}

/* A control command with data; returns the ack (0xee: none written). */
static uint8_t ctrl_cmd(TestNet *t, uint8_t class, uint8_t cmd, const void *data, size_t len)
{
    unsigned q = t->ctrl;
    TestVring *tv = &t->vq[q];
    uint16_t d = take_desc(t, q, 3), old = tv->avail_idx;
    uint8_t *c = gpa(CTRL_GPA);
    c[0] = class;
    c[1] = cmd;
    if (len) {
        memcpy(c + 16, data, len);
    }
    c[0x1000] = 0xee;
    tv_desc(tv, d, CTRL_GPA, 2, VRING_DESC_F_NEXT, (d + 1) % tv->num);
    tv_desc(tv, (d + 1) % tv->num, CTRL_GPA + 16, len, VRING_DESC_F_NEXT, (d + 2) % tv->num);
    tv_desc(tv, (d + 2) % tv->num, CTRL_GPA + 0x1000, 1, VRING_DESC_F_WRITE, 0);
    tv_publish(tv, d);
    kick_as_linux(t, q, old);
    vpd_settle();
    VRingUsedElem used = { 0 };
    g_assert_true(tv_take_used(tv, &used));
    g_assert_cmpuint(used.id, ==, d);
    g_assert_cmpuint(used.len, ==, 1);
    return c[0x1000];
}

/* ---- frames ---- */

/* An Ethernet frame to dst of len bytes (IPv4 ethertype, patterned). */
static void make_frame(uint8_t *f, size_t len, const uint8_t *dst, unsigned seed)
{
    static const uint8_t src[6] = { 0x02, 0, 0, 0, 0, 0x01 };
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x08;
    f[13] = 0x00;
    for (size_t i = ETH_HDR_END; i < len; i++) {
        f[i] = (uint8_t)(i * 7 + seed);
    }
}

/* An independent Internet checksum: every 16-bit big-endian word summed
 * in 64 bits, folded once at the end. */
static uint16_t ref_sum(const uint8_t *p, size_t len, uint64_t acc)
{
    for (size_t i = 0; i < len; i++) {
        acc += i % 2 ? p[i] : (uint64_t)p[i] << 8;
    }
    while (acc >> 16) {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    return acc;
}

static size_t send_to_nic(TestNet *t, unsigned queue, const uint8_t *f, size_t len)
{
    return net_send_buf(t->netdev->queues[queue], f, len);
}

/* ---- tests ---- */

static const uint64_t base_features =
    F(VIRTIO_F_VERSION_1) | F(VIRTIO_F_RING_EVENT_IDX) | F(VIRTIO_F_RING_INDIRECT_DESC) |
    F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_MAC) | F(VIRTIO_NET_F_MRG_RXBUF) |
    F(VIRTIO_NET_F_STATUS) | F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_CTRL_RX) |
    F(VIRTIO_NET_F_CTRL_VLAN) | F(VIRTIO_NET_F_CTRL_RX_EXTRA) |
    F(VIRTIO_NET_F_GUEST_ANNOUNCE) | F(VIRTIO_NET_F_CTRL_MAC_ADDR);
static const uint64_t vnet_features =
    F(VIRTIO_NET_F_GUEST_CSUM) | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6) |
    F(VIRTIO_NET_F_GUEST_ECN) | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6) |
    F(VIRTIO_NET_F_HOST_ECN);

/* A peer without vnet headers (user, socket): CSUM but no TSO and no
 * guest offloads; the configuration's MAC, link and pairs. */
static void test_features_plain_peer(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    uint16_t device_id = vpd_cfg_read(&t->d, PCI_DEVICE_ID, 2);
    /* Modern (1041), or transitional (1000) once the legacy BAR is in. */
    g_assert_true(device_id == 0x1041 || device_id == 0x1000);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_REVISION_ID, 4) >> 8, ==, 0x020000);
    g_assert_cmphex(vpd_device_features(&t->d), ==, base_features);
    for (unsigned i = 0; i < 6; i++) {
        g_assert_cmphex(mem_read(t->d.device + i, 1), ==, test_mac.a[i]);
    }
    g_assert_cmphex(mem_read(t->d.device + 6, 2), ==, VIRTIO_NET_S_LINK_UP);
    /* Without MQ or MTU the configuration ends after status, as QEMU's:
     * what lies past it reads as all ones. */
    g_assert_cmphex(mem_read(t->d.device + 8, 2), ==, 0xffff);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_NUMQ, 2), ==, 3);
    g_assert_cmpuint(t->peers[0].hdr_len, ==, 0);
    /* The driver cannot change the MAC in the configuration (VERSION_1). */
    mem_write(t->d.device, 0x11, 1);
    g_assert_cmphex(mem_read(t->d.device, 1), ==, test_mac.a[0]);
    net_free(t);
}

/* A tap-like peer: the offloads too; at DRIVER_OK the peer learns the
 * header length and the guest's offloads, and loses them at reset. */
static void test_features_vnet_peer(void)
{
    TestNet *t = net_new(&(TestOptions) { .vnet = true,
        .driver_features = ALL_FEATURES & ~F(VIRTIO_NET_F_GUEST_TSO6) });
    g_assert_cmphex(vpd_device_features(&t->d), ==, base_features | vnet_features);
    FakePeer *p = &t->peers[0];
    g_assert_cmpuint(p->hdr_len, ==, VIRTIO_NET_HDR_LEN);
    g_assert_true(p->offloads.csum && p->offloads.tso4 && p->offloads.ecn);
    g_assert_false(p->offloads.tso6 || p->offloads.ufo);
    vpd_set_status(&t->d, 0);
    g_assert_false(p->offloads.csum || p->offloads.tso4 || p->offloads.ecn);
    net_free(t);
}

/* A UDP/IPv4 frame with the checksum left to the device, to a peer
 * without vnet headers: the header is stripped and the checksum is the
 * one an independent sum over the pseudo-header and datagram gives. */
static void test_tx_checksum_completed(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    enum { LEN = 301, IP = 14, UDP = 34 };
    uint8_t f[LEN];
    make_frame(f, LEN, (const uint8_t[6]) { 0x02, 0, 0, 0, 0, 0x02 }, 3);
    f[IP] = 0x45;
    f[IP + 9] = 17;                             /* UDP */
    put_be16(f + UDP + 4, LEN - UDP);           /* UDP length */
    /* As Linux leaves it: the pseudo-header sum, not complemented, in
     * the checksum field. */
    uint8_t pseudo[12];
    memcpy(pseudo, f + IP + 12, 8);             /* source and destination */
    pseudo[8] = 0;
    pseudo[9] = 17;
    put_be16(pseudo + 10, LEN - UDP);
    uint16_t seed = ref_sum(pseudo, sizeof(pseudo), 0);
    put_be16(f + UDP + 6, seed);
    VirtIONetHdr hdr = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = UDP,
                         .csum_offset = 6 };
    uint16_t head = post_tx(t, 1, &hdr, sizeof(hdr), f, LEN, 0);
    vpd_kick(&t->d, 1);
    vpd_settle();
    VRingUsedElem used = { 0 };
    g_assert_true(tv_take_used(&t->vq[1], &used));
    g_assert_cmpuint(used.id, ==, head);
    g_assert_cmpuint(msis[2], ==, 1);
    GPtrArray *frames = t->peers[0].frames;
    g_assert_cmpuint(frames->len, ==, 1);
    SentFrame *out = g_ptr_array_index(frames, 0);
    g_assert_cmpuint(out->len, ==, LEN);
    /* Every byte as sent but the checksum field... */
    g_assert_cmpmem(out->data, UDP + 6, f, UDP + 6);
    g_assert_cmpmem(out->data + UDP + 8, LEN - UDP - 8, f + UDP + 8, LEN - UDP - 8);
    /* ...which is the complement of the sum with the field zeroed. */
    f[UDP + 6] = f[UDP + 7] = 0;
    uint16_t expected = ~ref_sum(f + UDP, LEN - UDP, ref_sum(pseudo, sizeof(pseudo), 0));
    g_assert_cmphex(get_be16(out->data + UDP + 6), ==, expected);
    g_assert_false(needs_reset(t));
    net_free(t);
}

/* To a vnet peer the chain goes out whole: the header, then the frame. */
static void test_tx_vnet_header_kept(void)
{
    TestNet *t = net_new(&(TestOptions) { .vnet = true });
    uint8_t f[1514];
    make_frame(f, sizeof(f), (const uint8_t[6]) { 0x02, 0, 0, 0, 0, 0x02 }, 1);
    VirtIONetHdr hdr = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                         .gso_type = VIRTIO_NET_HDR_GSO_TCPV4, .hdr_len = 54,
                         .gso_size = 1448, .csum_start = 34, .csum_offset = 16 };
    post_tx(t, 1, &hdr, sizeof(hdr), f, sizeof(f), 0);
    vpd_kick(&t->d, 1);
    vpd_settle();
    SentFrame *out = g_ptr_array_index(t->peers[0].frames, 0);
    g_assert_cmpuint(out->len, ==, sizeof(hdr) + sizeof(f));
    g_assert_cmpmem(out->data, sizeof(hdr), &hdr, sizeof(hdr));
    g_assert_cmpmem(out->data + sizeof(hdr), sizeof(f), f, sizeof(f));
    net_free(t);
}

/* n minimal frames with an empty header on transmitq q, no kick: whether
 * the device asked for one, as Linux's virtqueue_kick_prepare decides. */
static bool tx_post_small_frames(TestNet *t, unsigned q, unsigned n)
{
    uint8_t f[60];
    make_frame(f, sizeof(f), test_mac.a, 2);
    VirtIONetHdr hdr = { 0 };
    uint16_t old = t->vq[q].avail_idx;
    for (unsigned i = 0; i < n; i++) {
        post_tx(t, q, &hdr, sizeof(hdr), f, sizeof(f), i % 16);
    }
    return vpd_kick_needed(&t->vq[q], old, t->features & F(VIRTIO_F_RING_EVENT_IDX));
}

/* The same, then a kick if the device asked for one. */
static void tx_small_frames(TestNet *t, unsigned q, unsigned n)
{
    if (tx_post_small_frames(t, q, n)) {
        vpd_kick(&t->d, q);
    }
}

/* The peer refuses: the chain stays with the device until send_ready. */
static void test_tx_flow_control(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    FakePeer *p = &t->peers[0];
    p->refuse = true;
    tx_small_frames(t, 1, 2);
    vpd_settle();
    g_assert_cmpuint(used_count(t, 1), ==, 0);
    p->refuse = false;
    net_client_receive_ready(t->netdev->queues[0]);    /* the peer can take frames */
    vpd_settle();
    g_assert_cmpuint(used_count(t, 1), ==, 2);
    g_assert_cmpuint(p->frames->len, ==, 2);
    net_free(t);
}

/* A kick turns kicks off and leaves the sending to a bottom half: frames
 * the driver adds before it runs need no kick and go in its pass. A pass
 * is bounded (256 frames, then another); the pass that empties the ring
 * turns kicks back on. */
static void test_tx_kick_defers_and_burst_bounded(void)
{
    TestNet *t = net_new(&(TestOptions) { .tx_queue_size = 1024 });
    FakePeer *p = &t->peers[0];
    tx_small_frames(t, 1, 200);
    g_main_context_iteration(main_loop_context(), TRUE);    /* the kick */
    g_assert_cmpuint(p->frames->len, ==, 0);
    g_assert_false(tx_post_small_frames(t, 1, 100));
    g_main_context_iteration(main_loop_context(), TRUE);    /* the first pass */
    g_assert_cmpuint(p->frames->len, ==, 256);
    vpd_settle();                                           /* the second */
    g_assert_cmpuint(p->frames->len, ==, 300);
    g_assert_cmpuint(used_count(t, 1), ==, 300);
    g_assert_true(tx_post_small_frames(t, 1, 1));
    net_free(t);
}

/* With EVENT_IDX, a chain's interrupt goes out as soon as the used index
 * passes the driver's used_event, before the rest of the pass is sent:
 * Linux's TCP small queues send more only once sent frames come back. */
static void test_tx_interrupt_per_chain(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    g_assert_true(t->features & F(VIRTIO_F_RING_EVENT_IDX));
    FakePeer *p = &t->peers[0];
    tx_small_frames(t, 1, 1);
    vpd_settle();
    g_assert_cmpuint(msis[2], ==, 1);       /* queue 1's vector */
    /* An interrupt once the next chain is used, and none for the rest. */
    tv_set_used_event(&t->vq[1], tv_used_idx(&t->vq[1]));
    VirtIOPCIProxy *proxy = (VirtIOPCIProxy *)t->qdev;
    p->irq_fd = proxy->vector_notifiers[2].fd;
    p->irq_raised = g_array_new(false, false, sizeof(bool));
    tx_small_frames(t, 1, 3);
    vpd_settle();
    g_assert_cmpuint(p->irq_raised->len, ==, 3);
    g_assert_false(g_array_index(p->irq_raised, bool, 0));
    g_assert_true(g_array_index(p->irq_raised, bool, 1));
    g_assert_true(g_array_index(p->irq_raised, bool, 2));
    g_assert_cmpuint(msis[2], ==, 2);
    g_assert_cmpuint(used_count(t, 1), ==, 4);
    g_array_free(p->irq_raised, true);
    p->irq_fd = 0;
    net_free(t);
}

typedef struct LatePost {
    TestNet *t;
    bool kick_asked;            /* the device asked for a kick for the chain */
} LatePost;

/* A chain added 10 ms after the pass began, while the device watches. */
static gpointer post_late(gpointer opaque)
{
    LatePost *lp = opaque;
    g_usleep(10000);
    lp->kick_asked = tx_post_small_frames(lp->t, 1, 1);
    return NULL;
}

/* Kicks that each come as soon as the pass before ended: each doubles
 * the polling window, from 4 us after the second. */
static void tx_poll_warm_up(TestNet *t, unsigned kicks)
{
    for (unsigned i = 0; i < kicks; i++) {
        g_assert_true(tx_post_small_frames(t, 1, 1));
        vpd_kick(&t->d, 1);
        vpd_settle();
    }
}

/* One chain and its kick, and another chain 10 ms later, while the pass
 * for the first may still watch the ring: did the device ask for a kick
 * for the late one? */
static bool tx_post_during_window(TestNet *t)
{
    LatePost lp = { .t = t };
    g_assert_true(tx_post_small_frames(t, 1, 1));
    GThread *th = g_thread_new("late-post", post_late, &lp);
    vpd_kick(&t->d, 1);
    vpd_settle();
    g_thread_join(th);
    vpd_settle();
    return lp.kick_asked;
}

/*
 * Transmit polling: once a pass empties the ring, the device watches it
 * for a window before asking for kicks again; a chain the driver adds in
 * the window goes out with no kick. The window grows from 0 only as kicks
 * keep coming soon after the ring emptied (here all of them: the cap is
 * 1 s), doubling from 4 us: the 18th kick takes it to 262 ms, far beyond
 * the 10 ms the late chain takes.
 */
static void test_tx_poll(void)
{
    TestNet *t = net_new(&(TestOptions) { .tx_poll_ns = 1000000000 });
    FakePeer *p = &t->peers[0];
    tx_poll_warm_up(t, 17);
    g_assert_cmpuint(p->frames->len, ==, 17);
    g_assert_false(tx_post_during_window(t));
    g_assert_cmpuint(p->frames->len, ==, 19);
    g_assert_cmpuint(used_count(t, 1), ==, 19);
    net_free(t);
}

/*
 * A kick that comes after the ring was empty for longer than the cap
 * (200 ms here) drops the window to 0: the pass it starts asks for the
 * next kick at once, so a chain added 10 ms later needs one. Without the
 * drop the window would be the cap, and would catch it.
 */
static void test_tx_poll_backs_off(void)
{
    TestNet *t = net_new(&(TestOptions) { .tx_poll_ns = 200000000 });
    FakePeer *p = &t->peers[0];
    tx_poll_warm_up(t, 18);
    g_usleep(300000);
    g_assert_true(tx_post_during_window(t));
    vpd_kick(&t->d, 1);
    vpd_settle();
    g_assert_cmpuint(p->frames->len, ==, 20);
    g_assert_cmpuint(used_count(t, 1), ==, 20);
    net_free(t);
}

/* A frame across three mergeable buffers: num_buffers 3, published
 * together, the bytes in order behind the header. */
static void test_rx_mergeable(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    uint16_t heads[3];
    for (unsigned i = 0; i < 3; i++) {
        heads[i] = post_rx(t, 0, i, 1000);
    }
    vpd_kick(&t->d, 0);
    vpd_settle();
    uint8_t f[2500];
    make_frame(f, sizeof(f), test_mac.a, 5);
    g_assert_cmpuint(send_to_nic(t, 0, f, sizeof(f)), ==, sizeof(f));
    vpd_settle();       /* the vector's notifier */
    g_assert_cmpuint(used_count(t, 0), ==, 3);
    uint8_t got[12 + 2500];
    uint32_t lens[3] = { 1000, 1000, 512 };
    size_t off = 0;
    for (unsigned i = 0; i < 3; i++) {
        VRingUsedElem used = { 0 };
        g_assert_true(tv_take_used(&t->vq[0], &used));
        g_assert_cmpuint(used.id, ==, heads[i]);
        g_assert_cmpuint(used.len, ==, lens[i]);
        memcpy(got + off, gpa(RXBUF_GPA + 4096 * i), used.len);
        off += used.len;
    }
    VirtIONetHdr hdr;
    memcpy(&hdr, got, sizeof(hdr));
    g_assert_cmpuint(hdr.num_buffers, ==, 3);
    g_assert_cmpuint(hdr.flags, ==, 0);
    g_assert_cmpuint(hdr.gso_type, ==, VIRTIO_NET_HDR_GSO_NONE);
    g_assert_cmpmem(got + 12, sizeof(f), f, sizeof(f));
    g_assert_cmpuint(msis[1], ==, 1);
    net_free(t);
}

/* Not enough buffers: 0, nothing used, a kick asked for; the driver's
 * kick after adding one wakes the peer; the frame then spans the kept
 * and the new one. */
static void test_rx_no_buffers_then_kick(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    uint8_t f[1400];
    make_frame(f, sizeof(f), test_mac.a, 9);
    g_assert_cmpuint(send_to_nic(t, 0, f, sizeof(f)), ==, 0);
    uint16_t first = post_rx(t, 0, 0, 1000);
    kick_as_linux(t, 0, 0);
    vpd_settle();
    g_assert_cmpuint(t->peers[0].send_ready, ==, 1);
    g_assert_cmpuint(send_to_nic(t, 0, f, sizeof(f)), ==, 0);  /* 1000 < 12 + 1400 */
    g_assert_cmpuint(used_count(t, 0), ==, 0);
    post_rx(t, 0, 1, 1000);
    kick_as_linux(t, 0, 1);
    vpd_settle();
    g_assert_cmpuint(t->peers[0].send_ready, ==, 2);
    g_assert_cmpuint(send_to_nic(t, 0, f, sizeof(f)), ==, sizeof(f));
    VRingUsedElem used = { 0 };
    g_assert_true(tv_take_used(&t->vq[0], &used));
    g_assert_cmpuint(used.id, ==, first);
    g_assert_cmpuint(((VirtIONetHdr *)gpa(RXBUF_GPA))->num_buffers, ==, 2);
    g_assert_cmpmem(gpa(RXBUF_GPA + 4096) , 412, f + 988, 412);
    net_free(t);
}

/* Without MRG_RXBUF a frame must fit one buffer; a vnet peer's header
 * reaches the driver as the peer wrote it. */
static void test_rx_single_buffer_vnet(void)
{
    TestNet *t = net_new(&(TestOptions) { .vnet = true,
        .driver_features = ALL_FEATURES & ~F(VIRTIO_NET_F_MRG_RXBUF) });
    post_rx(t, 0, 0, 600);
    post_rx(t, 0, 1, 2048);
    vpd_kick(&t->d, 0);
    vpd_settle();
    uint8_t f[12 + 1000];
    VirtIONetHdr hdr = { .flags = VIRTIO_NET_HDR_F_DATA_VALID, .num_buffers = 0 };
    memcpy(f, &hdr, sizeof(hdr));
    make_frame(f + 12, 1000, test_mac.a, 4);
    /* Too big for the first buffer: dropped (the buffer is kept). */
    g_assert_cmpuint(send_to_nic(t, 0, f, sizeof(f)), ==, sizeof(f));
    g_assert_cmpuint(used_count(t, 0), ==, 0);
    /* A small one takes the first buffer, the next big one the second. */
    g_assert_cmpuint(send_to_nic(t, 0, f, 12 + 500), ==, 12 + 500);
    g_assert_cmpuint(send_to_nic(t, 0, f, sizeof(f)), ==, sizeof(f));
    VRingUsedElem used = { 0 };
    g_assert_true(tv_take_used(&t->vq[0], &used));
    g_assert_cmpuint(used.len, ==, 12 + 500);
    g_assert_true(tv_take_used(&t->vq[0], &used));
    g_assert_cmpuint(used.len, ==, sizeof(f));
    VirtIONetHdr *got = (VirtIONetHdr *)gpa(RXBUF_GPA + 4096);
    g_assert_cmpuint(got->flags, ==, VIRTIO_NET_HDR_F_DATA_VALID);
    g_assert_cmpuint(got->num_buffers, ==, 1);
    g_assert_cmpmem(gpa(RXBUF_GPA + 4096 + 12), 1000, f + 12, 1000);
    net_free(t);
}

/* ---- frames filled in place (receive_filled) ---- */

/* What the fake tap writes when the NIC lends it buffers. */
typedef struct FakeFill {
    const uint8_t *frame;       /* a 12-byte header, then the frame */
    size_t len;
    ssize_t ret;                /* what fill returns (0: len) */
    unsigned calls;
    size_t lent;                /* the bytes of the last loan */
} FakeFill;

/* As a tap writes a 12-byte header: its first 10 bytes, then the frame;
 * bytes 10-11 (num_buffers) are skipped, not written. */
static ssize_t fake_fill(void *opaque, const struct iovec *iov, int iovcnt)
{
    FakeFill *f = opaque;
    f->calls++;
    f->lent = iov_size(iov, iovcnt);
    g_assert_cmpuint(f->lent, >=, f->len);
    iov_from_buf(iov, iovcnt, 0, f->frame, 10);
    iov_from_buf(iov, iovcnt, 12, f->frame + 12, f->len - 12);
    return f->ret ? f->ret : (ssize_t)f->len;
}

/* As the tap offers a frame on netdev queue `queue`: its largest, 68 KiB. */
static ssize_t fill_nic(TestNet *t, unsigned queue, FakeFill *f)
{
    return net_send_filled(t->netdev->queues[queue], 65536 + 4096, fake_fill, f);
}

/* A frame of len bytes behind a vnet header for dst. */
static uint8_t *filled_frame(size_t len, const uint8_t *dst, unsigned seed)
{
    uint8_t *f = g_malloc(12 + len);
    VirtIONetHdr hdr = { .flags = VIRTIO_NET_HDR_F_DATA_VALID };
    memcpy(f, &hdr, sizeof(hdr));
    make_frame(f + 12, len, dst, seed);
    return f;
}

/* The used chain that must come next: id, length, and the frame behind
 * its header, num_buffers as filled in. */
static void check_filled(TestNet *t, uint16_t head, unsigned slot, const uint8_t *f,
                         size_t len, uint16_t num_buffers)
{
    VRingUsedElem used = { 0 };
    g_assert_true(tv_take_used(&t->vq[0], &used));
    g_assert_cmpuint(used.id, ==, head);
    g_assert_cmpuint(used.len, ==, MIN(12 + len, 4096));
    VirtIONetHdr *hdr = (VirtIONetHdr *)gpa(RXBUF_GPA + 4096 * slot);
    g_assert_cmpuint(hdr->flags, ==, VIRTIO_NET_HDR_F_DATA_VALID);
    g_assert_cmpuint(hdr->num_buffers, ==, num_buffers);
    g_assert_cmpmem(gpa(RXBUF_GPA + 4096 * slot + 12), MIN(len, 4096 - 12), f + 12,
                    MIN(len, 4096 - 12));
}

/*
 * A vnet peer's frames read straight into mergeable buffers: chains lent
 * for the largest frame, the ones used published with num_buffers filled
 * in, the rest kept for the next frame in their order; a frame the filter
 * rejects, one longer than the loan and a read that found nothing give
 * every chain back; too few buffers for the largest frame declines the loan, and the
 * copying path still delivers.
 */
static void test_rx_filled(void)
{
    TestNet *t = net_new(&(TestOptions) { .vnet = true });
    g_assert_cmpuint(t->peers[0].hdr_len, ==, 12);
    uint16_t heads[21];
    for (unsigned i = 0; i < 21; i++) {
        heads[i] = post_rx(t, 0, i, 4096);
    }
    vpd_kick(&t->d, 0);
    vpd_settle();
    g_autofree uint8_t *small = filled_frame(2500, test_mac.a, 1);
    FakeFill f = { .frame = small, .len = 12 + 2500 };
    g_assert_cmpint(fill_nic(t, 0, &f), ==, 12 + 2500);
    g_assert_cmpuint(f.lent, ==, 17 * 4096);    /* enough for 65536 + 4096 */
    vpd_settle();
    g_assert_cmpuint(used_count(t, 0), ==, 1);
    check_filled(t, heads[0], 0, small, 2500, 1);
    g_assert_cmpuint(msis[1], ==, 1);

    /* Three chains for the next, the ones after the first. */
    g_autofree uint8_t *big = filled_frame(9000, test_mac.a, 2);
    f = (FakeFill) { .frame = big, .len = 12 + 9000 };
    g_assert_cmpint(fill_nic(t, 0, &f), ==, 12 + 9000);
    g_assert_cmpuint(used_count(t, 0), ==, 3);
    check_filled(t, heads[1], 1, big, 9000, 3);
    for (unsigned i = 2; i < 4; i++) {
        VRingUsedElem used = { 0 };
        g_assert_true(tv_take_used(&t->vq[0], &used));
        g_assert_cmpuint(used.id, ==, heads[i]);
    }
    g_assert_cmpmem(gpa(RXBUF_GPA + 4096 * 3), 9012 - 2 * 4096, big + 2 * 4096,
                    9012 - 2 * 4096);

    /* Not for us, longer than the loan, nothing read: nothing used, chains
     * kept. */
    uint8_t off = 0;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &off, 1), ==,
                     VIRTIO_NET_OK);
    static const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x99 };
    g_autofree uint8_t *stranger = filled_frame(100, other, 3);
    f = (FakeFill) { .frame = stranger, .len = 12 + 100 };
    g_assert_cmpint(fill_nic(t, 0, &f), ==, 12 + 100);
    f = (FakeFill) { .frame = small, .len = 12 + 2500, .ret = 65536 + 4096 + 1 };
    g_assert_cmpint(fill_nic(t, 0, &f), ==, 65536 + 4096 + 1);
    f = (FakeFill) { .frame = small, .len = 12 + 2500, .ret = -EAGAIN };
    g_assert_cmpint(fill_nic(t, 0, &f), ==, -EAGAIN);
    g_assert_cmpuint(used_count(t, 0), ==, 0);
    f = (FakeFill) { .frame = small, .len = 12 + 2500 };
    g_assert_cmpint(fill_nic(t, 0, &f), ==, 12 + 2500);
    check_filled(t, heads[4], 4, small, 2500, 1);

    /* 16 chains left: too few to lend, so the copying path takes it. */
    f = (FakeFill) { .frame = small, .len = 12 + 2500 };
    g_assert_cmpint(fill_nic(t, 0, &f), ==, NET_FILL_DECLINED);
    g_assert_cmpuint(f.calls, ==, 0);
    g_assert_cmpuint(send_to_nic(t, 0, small, 12 + 2500), ==, 12 + 2500);
    check_filled(t, heads[5], 5, small, 2500, 1);

    /* Link down: no loan, and the copy is dropped as a cable drops it. */
    for (unsigned i = 21; i < 40; i++) {
        post_rx(t, 0, i, 4096);
    }
    vpd_kick(&t->d, 0);
    vpd_settle();
    net_client_set_link(t->netdev->queues[0], false);
    g_assert_cmpint(fill_nic(t, 0, &f), ==, NET_FILL_DECLINED);
    net_client_set_link(t->netdev->queues[0], true);
    g_assert_cmpint(fill_nic(t, 0, &f), ==, 12 + 2500);
    check_filled(t, heads[6], 6, small, 2500, 1);
    net_free(t);
}

/* Nothing is filled in place for a peer without vnet headers (its
 * frames need the guest's header put ahead), nor with x-rx-in-place=off;
 * the frames still arrive, copied. */
static void test_rx_filled_declined(void)
{
    const TestOptions cases[] = { { 0 }, { .vnet = true, .no_rx_in_place = true } };
    for (unsigned c = 0; c < G_N_ELEMENTS(cases); c++) {
        TestNet *t = net_new(&cases[c]);
        for (unsigned i = 0; i < 20; i++) {
            post_rx(t, 0, i, 4096);
        }
        vpd_kick(&t->d, 0);
        vpd_settle();
        g_autofree uint8_t *small = filled_frame(100, test_mac.a, 1);
        FakeFill f = { .frame = small, .len = 12 + 100 };
        g_assert_cmpint(fill_nic(t, 0, &f), ==, NET_FILL_DECLINED);
        g_assert_cmpuint(f.calls, ==, 0);
        g_assert_cmpuint(used_count(t, 0), ==, 0);
        size_t offset = cases[c].vnet ? 0 : 12;
        g_assert_cmpuint(send_to_nic(t, 0, small + offset, 112 - offset), ==, 112 - offset);
        g_assert_cmpuint(used_count(t, 0), ==, 1);
        net_free(t);
    }
}

/* Deliver one frame to dst; true if the driver got it. */
static bool delivered(TestNet *t, const uint8_t *dst, bool vlan, uint16_t vid)
{
    static unsigned slot;
    uint8_t f[100];
    make_frame(f, sizeof(f), dst, 0);
    if (vlan) {
        put_be16(f + 12, 0x8100);
        put_be16(f + 14, vid);
    }
    post_rx(t, 0, slot++ % 32, 2048);
    vpd_kick(&t->d, 0);
    vpd_settle();
    g_assert_cmpuint(send_to_nic(t, 0, f, sizeof(f)), ==, sizeof(f));
    VRingUsedElem used = { 0 };
    bool got = tv_take_used(&t->vq[0], &used);
    if (!got) {
        /* The buffer stays the device's: give the next frame one less. */
        t->next_desc[0] = (t->next_desc[0] + t->vq[0].num - 1) % t->vq[0].num;
        t->vq[0].avail_idx--;
        tv_set_avail_idx(&t->vq[0], t->vq[0].avail_idx);
    }
    return got;
}

static void test_ctrl_rx_filter(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    const uint8_t other[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
    const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
    const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    uint8_t on = 1, off = 0;
    /* Promiscuous after reset, as QEMU. */
    g_assert_true(delivered(t, other, false, 0));
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &off, 1), ==,
                     VIRTIO_NET_OK);
    g_assert_false(delivered(t, other, false, 0));
    g_assert_true(delivered(t, test_mac.a, false, 0));
    g_assert_true(delivered(t, bcast, false, 0));
    g_assert_false(delivered(t, mcast, false, 0));
    /* The tables: one unicast (other), one multicast (mcast). */
    uint8_t table[4 + 6 + 4 + 6] = { 1, 0, 0, 0 };
    memcpy(table + 4, other, 6);
    table[10] = 1;
    memcpy(table + 14, mcast, 6);
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, table,
                              sizeof(table)), ==, VIRTIO_NET_OK);
    g_assert_true(delivered(t, other, false, 0));
    g_assert_true(delivered(t, mcast, false, 0));
    /* A malformed table (a count past the data) changes nothing. */
    table[0] = 9;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, table,
                              sizeof(table)), ==, VIRTIO_NET_ERR);
    g_assert_true(delivered(t, other, false, 0));
    /* NOBCAST and ALLMULTI (CTRL_RX_EXTRA). */
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_NOBCAST, &on, 1), ==,
                     VIRTIO_NET_OK);
    g_assert_false(delivered(t, bcast, false, 0));
    const uint8_t mcast2[6] = { 0x33, 0x33, 0, 0, 0, 1 };
    g_assert_false(delivered(t, mcast2, false, 0));
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &on, 1), ==,
                     VIRTIO_NET_OK);
    g_assert_true(delivered(t, mcast2, false, 0));
    /* The primary address moves (CTRL_MAC_ADDR) and the config shows it. */
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, bcast + 1,
                              5), ==, VIRTIO_NET_ERR);
    const uint8_t newmac[6] = { 0x52, 0x54, 0, 0, 0, 0x99 };
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, newmac, 6),
                     ==, VIRTIO_NET_OK);
    g_assert_cmphex(mem_read(t->d.device + 5, 1), ==, 0x99);
    g_assert_true(delivered(t, newmac, false, 0));
    g_assert_false(delivered(t, test_mac.a, false, 0));
    /* VLAN: a tagged frame only once its VID is added. */
    uint16_t vid = 100;
    g_assert_false(delivered(t, newmac, true, vid));
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_VLAN, VIRTIO_NET_CTRL_VLAN_ADD, &vid, 2), ==,
                     VIRTIO_NET_OK);
    g_assert_true(delivered(t, newmac, true, vid));
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_VLAN, VIRTIO_NET_CTRL_VLAN_DEL, &vid, 2), ==,
                     VIRTIO_NET_OK);
    g_assert_false(delivered(t, newmac, true, vid));
    vid = 4096;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_VLAN, VIRTIO_NET_CTRL_VLAN_ADD, &vid, 2), ==,
                     VIRTIO_NET_ERR);
    /* Unknown classes and commands, and wrong lengths: ERR. */
    g_assert_cmpuint(ctrl_cmd(t, 99, 0, NULL, 0), ==, VIRTIO_NET_ERR);
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, 77, &on, 1), ==, VIRTIO_NET_ERR);
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, table, 2), ==,
                     VIRTIO_NET_ERR);
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_ANNOUNCE, VIRTIO_NET_CTRL_ANNOUNCE_ACK, NULL,
                              0), ==, VIRTIO_NET_OK);
    /* MQ was not offered (one queue): VQ_PAIRS_SET is refused. */
    uint16_t pairs = 1;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &pairs, 2),
                     ==, VIRTIO_NET_ERR);
    /* Reset: promiscuous again, the permanent MAC back. */
    driver_init(t, &(TestOptions) { 0 });
    g_assert_cmphex(mem_read(t->d.device + 5, 1), ==, test_mac.a[5]);
    g_assert_true(delivered(t, other, false, 0));
    g_assert_false(needs_reset(t));
    net_free(t);
}

/* Two netdev queues with mq=on: two pairs, the controlq at 4; the second
 * pair takes frames only once the driver sets two pairs in use, and until
 * then (and again after a reset) its netdev queue is left out, so a
 * multiqueue tap hands it none of the host's flows. */
static void test_multiqueue(void)
{
    TestNet *t = net_new(&(TestOptions) { .queues = 2, .mq = true });
    g_assert_false(t->peers[0].left_out);
    g_assert_true(t->peers[1].left_out);
    g_assert_true(t->features & F(VIRTIO_NET_F_MQ));
    g_assert_cmpuint(mem_read(t->d.device + 8, 2), ==, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_NUMQ, 2), ==, 5);
    g_assert_cmpuint(t->ctrl, ==, 4);
    post_rx(t, 2, 0, 2048);
    vpd_kick(&t->d, 2);
    vpd_settle();
    uint8_t f[200];
    make_frame(f, sizeof(f), test_mac.a, 6);
    g_assert_cmpuint(send_to_nic(t, 1, f, sizeof(f)), ==, 0);  /* pair 1 not in use */
    uint16_t pairs = 3;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &pairs, 2),
                     ==, VIRTIO_NET_ERR);
    g_assert_true(t->peers[1].left_out);
    pairs = 2;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &pairs, 2),
                     ==, VIRTIO_NET_OK);
    g_assert_false(t->peers[0].left_out);
    g_assert_false(t->peers[1].left_out);
    g_assert_cmpuint(t->peers[1].send_ready, ==, 1);
    g_assert_cmpuint(send_to_nic(t, 1, f, sizeof(f)), ==, sizeof(f));
    g_assert_cmpuint(used_count(t, 2), ==, 1);
    g_assert_cmpuint(used_count(t, 0), ==, 0);
    /* TX on pair 1 goes to netdev queue 1. */
    VirtIONetHdr hdr = { 0 };
    post_tx(t, 3, &hdr, sizeof(hdr), f, sizeof(f), 0);
    vpd_kick(&t->d, 3);
    vpd_settle();
    g_assert_cmpuint(t->peers[1].frames->len, ==, 1);
    g_assert_cmpuint(t->peers[0].frames->len, ==, 0);
    g_assert_cmpuint(msis[4], ==, 1);   /* queue 3's vector */
    /* A driver without MQ: one pair, the controlq at 2. */
    driver_init(t, &(TestOptions) { .driver_features = ALL_FEATURES & ~F(VIRTIO_NET_F_MQ) });
    g_assert_cmpuint(t->ctrl, ==, 2);
    g_assert_false(t->peers[0].left_out);
    g_assert_true(t->peers[1].left_out);
    uint8_t off = 0;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &off, 1), ==,
                     VIRTIO_NET_OK);
    net_free(t);
}

/* What a driver must not do, each ending in NEEDS_RESET, and a device
 * that works again after a reset. */
typedef void HostileChain(TestNet *t);

static void tx_without_header(TestNet *t)
{
    tv_desc(&t->vq[1], 0, TXHDR_GPA, 6, 0, 0);
    tv_publish(&t->vq[1], 0);
    vpd_kick(&t->d, 1);
}

/* A zeroed 60-byte frame behind hdr on transmitq 0, kicked. */
static void tx_with_header(TestNet *t, VirtIONetHdr hdr)
{
    uint8_t f[60] = { 0 };
    post_tx(t, 1, &hdr, sizeof(hdr), f, sizeof(f), 0);
    vpd_kick(&t->d, 1);
}

static void tx_csum_past_frame(TestNet *t)
{
    tx_with_header(t, (VirtIONetHdr) { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 50,
                                       .csum_offset = 9 });
}

static void tx_gso_without_size(TestNet *t)
{
    tx_with_header(t, (VirtIONetHdr) { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                                       .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
                                       .csum_start = 34, .csum_offset = 16 });
}

static void tx_gso_not_offered(TestNet *t)
{
    tx_with_header(t, (VirtIONetHdr) { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                                       .gso_type = VIRTIO_NET_HDR_GSO_UDP, .gso_size = 100,
                                       .csum_start = 34, .csum_offset = 6 });
}

static void rx_readable_buffer(TestNet *t)
{
    tv_desc(&t->vq[0], 0, RXBUF_GPA, 1000, 0, 0);
    tv_publish(&t->vq[0], 0);
    vpd_kick(&t->d, 0);
    uint8_t f[100];
    make_frame(f, sizeof(f), test_mac.a, 1);
    send_to_nic(t, 0, f, sizeof(f));
}

static void ctrl_without_ack(TestNet *t)
{
    tv_desc(&t->vq[2], 0, CTRL_GPA, 2, 0, 0);
    tv_publish(&t->vq[2], 0);
    vpd_kick(&t->d, 2);
}

static void test_hostile_chains(void)
{
    static HostileChain *const cases[] = {
        tx_without_header, tx_csum_past_frame, tx_gso_without_size, tx_gso_not_offered,
        rx_readable_buffer, ctrl_without_ack,
    };
    TestNet *t = net_new(&(TestOptions) { .vnet = true });
    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        cases[i](t);
        vpd_settle();
        g_assert_true(needs_reset(t));
        g_assert_cmpuint(msis[0], ==, 1);       /* the configuration vector */
        driver_init(t, &(TestOptions) { .vnet = true });
    }
    /* A short control command is refused, not fatal. */
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, NULL, 0),
                     ==, VIRTIO_NET_ERR);
    tx_small_frames(t, 1, 1);
    vpd_settle();
    g_assert_cmpuint(t->peers[0].frames->len, ==, 1);
    g_assert_false(needs_reset(t));
    net_free(t);
}

/* set_link: the status follows, with a configuration interrupt; the
 * link back up asks for an announcement. */
static void test_link(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    net_client_set_link(t->netdev->queues[0], false);
    vpd_settle();
    g_assert_cmphex(mem_read(t->d.device + 6, 2), ==, 0);
    g_assert_cmpuint(msis[0], ==, 1);
    /* Frames sent while it is down go nowhere (but are taken). */
    tx_small_frames(t, 1, 1);
    vpd_settle();
    g_assert_cmpuint(used_count(t, 1), ==, 1);
    g_assert_cmpuint(t->peers[0].frames->len, ==, 0);
    net_client_set_link(t->netdev->queues[0], true);
    vpd_settle();
    /* Up again: the driver is asked to announce itself, until it acks. */
    g_assert_cmphex(mem_read(t->d.device + 6, 2), ==,
                    VIRTIO_NET_S_LINK_UP | VIRTIO_NET_S_ANNOUNCE);
    g_assert_cmpuint(msis[0], ==, 2);
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_ANNOUNCE, VIRTIO_NET_CTRL_ANNOUNCE_ACK, NULL,
                              0), ==, VIRTIO_NET_OK);
    g_assert_cmphex(mem_read(t->d.device + 6, 2), ==, VIRTIO_NET_S_LINK_UP);
    net_free(t);
}

/* A QMP command that must succeed, its arguments as JSON text. */
static JsonNode *qmp_ok(const char *name, const char *args_json)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert_true(json_parser_load_from_data(parser, args_json, -1, NULL));
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch(name, json_node_get_object(json_parser_get_root(parser)), &err);
    g_assert_cmpstr(err ? err->msg : NULL, ==, NULL);
    return ret;
}

static void record_rx_filter_event(const char *name, JsonObject *data, int64_t ts, void *opaque)
{
    if (!strcmp(name, "NIC_RX_FILTER_CHANGED")) {
        g_string_append_printf(opaque, "%s %s;", json_object_has_member(data, "name")
                               ? json_object_get_string_member(data, "name") : "-",
                               json_object_get_string_member(data, "path"));
    }
}

/* set_link by id: the config status and its interrupt. */
static void test_qmp_set_link(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    device_set_id(t->qdev, "vn-link");
    json_node_unref(qmp_ok("set_link", "{\"name\": \"vn-link\", \"up\": false}"));
    vpd_settle();
    g_assert_cmphex(mem_read(t->d.device + 6, 2), ==, 0);
    g_assert_cmpuint(msis[0], ==, 1);
    json_node_unref(qmp_ok("set_link", "{\"name\": \"vn-link\", \"up\": true}"));
    vpd_settle();
    g_assert_cmphex(mem_read(t->d.device + 6, 2) & VIRTIO_NET_S_LINK_UP, ==,
                    VIRTIO_NET_S_LINK_UP);
    g_assert_cmpuint(msis[0], ==, 2);
    net_free(t);
}

/* NIC_RX_FILTER_CHANGED once per query-rx-filter, and what the query says. */
static void test_qmp_rx_filter(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    device_set_id(t->qdev, "vn-rx");
    g_autoptr(GString) events = g_string_new("");
    qmp_event_add_sink(record_rx_filter_event, events);
    uint8_t on = 1, off = 0;
    /* A refused command changes nothing and says nothing. */
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, 99, &on, 1), ==, VIRTIO_NET_ERR);
    g_assert_cmpstr(events->str, ==, "");
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &off, 1), ==,
                     VIRTIO_NET_OK);
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &on, 1), ==,
                     VIRTIO_NET_OK);
    g_assert_cmpstr(events->str, ==, "vn-rx /machine/peripheral/vn-rx/virtio-backend;");

    const uint8_t uni[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
    uint8_t table[4 + 6 + 4] = { 1, 0, 0, 0 };
    memcpy(table + 4, uni, 6);
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, table,
                              sizeof(table)), ==, VIRTIO_NET_OK);
    JsonNode *ret = qmp_ok("query-rx-filter", "{\"name\": \"vn-rx\"}");
    JsonArray *list = json_node_get_array(ret);
    g_assert_cmpuint(json_array_get_length(list), ==, 1);
    JsonObject *f = json_array_get_object_element(list, 0);
    g_assert_cmpstr(json_object_get_string_member(f, "name"), ==, "vn-rx");
    g_assert_false(json_object_get_boolean_member(f, "promiscuous"));
    g_assert_cmpstr(json_object_get_string_member(f, "multicast"), ==, "all");
    g_assert_cmpstr(json_object_get_string_member(f, "unicast"), ==, "normal");
    g_assert_cmpstr(json_object_get_string_member(f, "main-mac"), ==, "52:54:00:ab:cd:ef");
    g_assert_true(json_object_get_boolean_member(f, "broadcast-allowed"));
    JsonArray *unicast = json_object_get_array_member(f, "unicast-table");
    g_assert_cmpuint(json_array_get_length(unicast), ==, 1);
    g_assert_cmpstr(json_array_get_string_element(unicast, 0), ==, "02:11:22:33:44:55");
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(f, "multicast-table")),
                     ==, 0);
    /* ALL_FEATURES has CTRL_VLAN: filtering, with no VLAN let in yet. */
    g_assert_cmpstr(json_object_get_string_member(f, "vlan"), ==, "normal");
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(f, "vlan-table")), ==,
                     0);
    json_node_unref(ret);

    /* Read: the next change is announced again, once. */
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_NOBCAST, &on, 1), ==,
                     VIRTIO_NET_OK);
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_NOBCAST, &off, 1), ==,
                     VIRTIO_NET_OK);
    g_assert_cmpstr(events->str, ==, "vn-rx /machine/peripheral/vn-rx/virtio-backend;"
                                     "vn-rx /machine/peripheral/vn-rx/virtio-backend;");
    /* Without a name, every NIC that has a filter: this one among them. */
    ret = qmp_ok("query-rx-filter", "{}");
    list = json_node_get_array(ret);
    bool found = false;
    for (guint i = 0; i < json_array_get_length(list); i++) {
        found |= !strcmp(json_object_get_string_member(json_array_get_object_element(list, i),
                                                       "name"), "vn-rx");
    }
    g_assert_true(found);
    json_node_unref(ret);
    qmp_event_remove_sink(record_rx_filter_event, events);
    net_free(t);
}

/* A NIC without an id: no "name", and the path of QEMU's anonymous
 * devices (with our automatic id in place of QEMU's device[N]). */
static void test_qmp_rx_filter_anonymous(void)
{
    TestNet *t = net_new(&(TestOptions) { 0 });
    g_autoptr(GString) events = g_string_new("");
    qmp_event_add_sink(record_rx_filter_event, events);
    uint8_t off = 0;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &off, 1), ==,
                     VIRTIO_NET_OK);
    qmp_event_remove_sink(record_rx_filter_event, events);
    g_autofree char *expect = g_strdup_printf("- /machine/peripheral-anon/%s/virtio-backend;",
                                              t->qdev->id);
    g_assert_cmpstr(events->str, ==, expect);
    net_free(t);
}

/* Wait (the I/O thread serves the queue) until queue q has n more used
 * elements; the used index is released after everything the device did
 * for them, the peer's records included. */
static void wait_used(TestNet *t, unsigned q, unsigned n)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (used_count(t, q) < n) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100);
    }
}

/* iothread=: kicks, sends and the receive path run on the I/O thread. */
static void test_iothread(void)
{
    TestNet *t = net_new(&(TestOptions) { .iothread = true });
    tx_small_frames(t, 1, 3);
    wait_used(t, 1, 3);
    g_assert_cmpuint(t->peers[0].frames->len, ==, 3);
    post_rx(t, 0, 0, 2048);
    vpd_kick(&t->d, 0);
    uint8_t f[300];
    make_frame(f, sizeof(f), test_mac.a, 8);
    g_assert_cmpuint(send_to_nic(t, 0, f, sizeof(f)), ==, sizeof(f));
    wait_used(t, 0, 1);
    g_assert_cmpmem(gpa(RXBUF_GPA + 12), sizeof(f), f, sizeof(f));
    net_free(t);
}

/* ---- queue pairs under their own locks, from several threads ---- */

#define PAIR_RX_FRAMES  200     /* receive buffers posted per pair */
#define PAIR_TX_FRAMES  80      /* transmit chains (3 descriptors) per pair */
#define PAIR_FRAME_LEN  120

/* Frame i of pair p: its number in the payload, so each one is known. */
static void numbered_frame(uint8_t *f, unsigned pair, unsigned i)
{
    make_frame(f, PAIR_FRAME_LEN, test_mac.a, pair * 131 + i);
    f[ETH_HDR_END] = pair;
    put_le16(f + ETH_HDR_END + 1, i);
}

/* Two pairs in use, every receive buffer of both posted; the driver's
 * used-ring view and the peers' records start empty. vnet: the peers
 * carry vnet headers, as a tap does (frames may be filled in place). */
static TestNet *two_pairs_new(bool irqfd, bool vnet)
{
    TestNet *t = net_new(&(TestOptions) { .queues = 2, .mq = true, .no_irqfd = !irqfd,
                                          .vnet = vnet });
    uint16_t pairs = 2;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &pairs, 2),
                     ==, VIRTIO_NET_OK);
    for (unsigned p = 0; p < 2; p++) {
        for (unsigned i = 0; i < PAIR_RX_FRAMES; i++) {
            post_rx(t, 2 * p, p * PAIR_RX_FRAMES + i, 2048);
        }
    }
    vpd_settle();
    memset(msis, 0, sizeof(msis));
    return t;
}

typedef struct PairWorker {
    TestNet *t;
    unsigned pair;
    bool kick;                  /* TX by doorbell (served on the main loop),
                                 * else by the NIC's send_ready on this thread */
    bool vnet;                  /* the peer has vnet headers: RX as a tap does it,
                                 * filled in place or, when declined, copied */
    unsigned rx_taken;          /* receives that returned the frame's size */
    unsigned rx_filled;         /* of those, filled in place */
} PairWorker;

/* A frame into the worker's pair, behind a vnet header when the peer has
 * them: filled in place if the pair lends buffers, else copied (as
 * tap_read_frame). Whether it was taken whole. */
static bool pair_receive(PairWorker *w, const uint8_t *f, size_t len)
{
    if (!w->vnet) {
        return send_to_nic(w->t, w->pair, f, len) == len;
    }
    uint8_t frame[VIRTIO_NET_HDR_LEN + PAIR_FRAME_LEN] = { 0 };
    memcpy(frame + VIRTIO_NET_HDR_LEN, f, len);
    FakeFill fill = { .frame = frame, .len = VIRTIO_NET_HDR_LEN + len };
    ssize_t ret = fill_nic(w->t, w->pair, &fill);
    if (ret != NET_FILL_DECLINED) {
        w->rx_filled++;
        return ret == (ssize_t)fill.len;
    }
    return send_to_nic(w->t, w->pair, frame, fill.len) == fill.len;
}

/* One thread's pair: a frame in from the peer, a chain out, in turn. */
static gpointer pair_worker(gpointer opaque)
{
    PairWorker *w = opaque;
    TestNet *t = w->t;
    unsigned txq = 2 * w->pair + 1;
    NetClientState *nic = t->netdev->queues[w->pair]->peer;
    VirtIONetHdr hdr = { 0 };
    uint8_t f[PAIR_FRAME_LEN];
    for (unsigned i = 0; i < PAIR_RX_FRAMES; i++) {
        if (i < PAIR_TX_FRAMES) {
            numbered_frame(f, w->pair, i);
            post_tx(t, txq, &hdr, VIRTIO_NET_HDR_LEN, f, sizeof(f), w->pair * PAIR_TX_FRAMES + i);
            if (w->kick) {
                vpd_kick(&t->d, txq);
            } else {
                nic->info->send_ready(nic);
            }
        }
        numbered_frame(f, w->pair, 1000 + i);
        w->rx_taken += pair_receive(w, f, sizeof(f));
    }
    return NULL;
}

/* Both pairs' workers (kicked: TX through the doorbells; vnet: peers with
 * vnet headers), each on a thread of its own, run to the end. */
static void run_pair_workers(TestNet *t, PairWorker w[2], bool kicked, bool vnet)
{
    w[0] = (PairWorker) { t, 0, kicked, vnet, 0, 0 };
    w[1] = (PairWorker) { t, 1, kicked, vnet, 0, 0 };
    GThread *th[2];
    for (unsigned p = 0; p < 2; p++) {
        th[p] = g_thread_new("pair", pair_worker, &w[p]);
    }
    for (unsigned p = 0; p < 2; p++) {
        g_thread_join(th[p]);
    }
}

/* Every frame arrived exactly once, in order, on its own pair: in the
 * guest's buffers (RX) and at the pair's peer (TX; behind the driver's
 * header when the peer has vnet headers). */
static void check_pair_frames(TestNet *t, unsigned pair, bool vnet)
{
    size_t sent_hdr = vnet ? VIRTIO_NET_HDR_LEN : 0;
    uint8_t f[PAIR_FRAME_LEN];
    unsigned rxq = 2 * pair;
    g_assert_cmpuint(used_count(t, rxq), ==, PAIR_RX_FRAMES);
    for (unsigned i = 0; i < PAIR_RX_FRAMES; i++) {
        VRingUsedElem used = { 0 };
        g_assert_true(tv_take_used(&t->vq[rxq], &used));
        g_assert_cmpuint(used.len, ==, VIRTIO_NET_HDR_LEN + PAIR_FRAME_LEN);
        numbered_frame(f, pair, 1000 + i);
        uint8_t *buf = gpa(RXBUF_GPA + 4096 * (pair * PAIR_RX_FRAMES + i));
        g_assert_cmpmem(buf + VIRTIO_NET_HDR_LEN, PAIR_FRAME_LEN, f, PAIR_FRAME_LEN);
    }
    GPtrArray *sent = t->peers[pair].frames;
    g_assert_cmpuint(sent->len, ==, PAIR_TX_FRAMES);
    for (unsigned i = 0; i < PAIR_TX_FRAMES; i++) {
        SentFrame *frame = g_ptr_array_index(sent, i);
        numbered_frame(f, pair, i);
        g_assert_cmpmem(frame->data + sent_hdr, frame->len - sent_hdr, f, sizeof(f));
    }
    g_assert_cmpuint(used_count(t, rxq + 1), ==, PAIR_TX_FRAMES);
}

static DeviceLockStats lock_stats(DeviceLock *lock)
{
    return device_lock_stats_read(lock, false);
}

static void reset_lock_stats(TestNet *t)
{
    device_lock_stats_read(&t->qdev->lock, true);
    device_lock_stats_read(device_global_lock(), true);
    for (DeviceLock *sub = t->qdev->sublocks; sub; sub = sub->next_sub) {
        device_lock_stats_read(sub, true);
    }
}

/* x-query-device-locks lists each pair's lock right after the function's,
 * naming the function, with the count the statistics hold; so does the
 * lock-stats=on print. */
static void check_pair_locks_reported(TestNet *t, uint64_t per_pair)
{
    g_autoptr(JsonNode) ret = qmp_ok("x-query-device-locks", "{}");
    JsonArray *locks = json_object_get_array_member(json_node_get_object(ret), "locks");
    unsigned n = json_array_get_length(locks), own = n;
    for (unsigned i = 0; i < n; i++) {
        JsonObject *l = json_array_get_object_element(locks, i);
        if (!strcmp(json_object_get_string_member(l, "name"), t->qdev->id)) {
            own = i;
            g_assert_false(json_object_has_member(l, "device"));
        }
    }
    g_assert_cmpuint(own + 2, <, n);
    for (unsigned p = 0; p < 2; p++) {
        JsonObject *l = json_array_get_object_element(locks, own + 1 + p);
        g_autofree char *name = g_strdup_printf("%s.qp%u", t->qdev->id, p);
        g_assert_cmpstr(json_object_get_string_member(l, "name"), ==, name);
        g_assert_cmpstr(json_object_get_string_member(l, "device"), ==, t->qdev->id);
        g_assert_cmpstr(json_object_get_string_member(l, "type"), ==, "virtio-net-pci");
        g_assert_cmpint(json_object_get_int_member(l, "acquisitions"), ==, per_pair);
    }
    g_autofree char *printed = NULL;
    size_t len;
    FILE *out = open_memstream(&printed, &len);
    device_lock_stats_print(out);
    fclose(out);
    /* The device's own line (no acquisitions), then its pairs'. */
    g_autofree char *own_line = g_strdup_printf("\n  %-16s %-16s %12d ", t->qdev->id,
                                                "virtio-net-pci", 0);
    g_autofree char *qp1_name = g_strdup_printf("%s.qp1", t->qdev->id);
    g_autofree char *qp1 = g_strdup_printf("\n  %-16s %-16s %12" PRIu64 " ", qp1_name,
                                           "virtio-net-pci", per_pair);
    const char *at = strstr(printed, own_line);
    g_assert_nonnull(at);
    g_assert_nonnull(strstr(at, qp1));
}

/*
 * Two threads, one per queue pair, each receiving frames into its pair
 * and sending through it at once, with nothing else running: every frame
 * arrives exactly once, and the statistics show who locked what. With
 * device-lock=on each receive and each send_ready took its pair's lock
 * once and nothing took the device lock; with off, the global lock did
 * all of it (the baseline), and the pair locks stay at zero.
 */
static void pairs_from_two_threads(bool per_device)
{
    device_lock_set_per_device(per_device);
    TestNet *t = two_pairs_new(true, false);
    DeviceLock *pair_lock[2] = { t->qdev->sublocks, t->qdev->sublocks->next_sub };
    g_autofree char *name0 = g_strdup_printf("%s.qp0", t->qdev->id);
    g_autofree char *name1 = g_strdup_printf("%s.qp1", t->qdev->id);
    g_assert_cmpstr(pair_lock[0]->name, ==, name0);
    g_assert_cmpstr(pair_lock[1]->name, ==, name1);
    g_assert_null(pair_lock[1]->next_sub);
    reset_lock_stats(t);
    PairWorker w[2];
    run_pair_workers(t, w, false, false);
    const uint64_t per_pair = PAIR_RX_FRAMES + PAIR_TX_FRAMES;
    for (unsigned p = 0; p < 2; p++) {
        g_assert_cmpuint(w[p].rx_taken, ==, PAIR_RX_FRAMES);
        g_assert_cmpuint(lock_stats(pair_lock[p]).acquisitions, ==, per_device ? per_pair : 0);
    }
    g_assert_cmpuint(lock_stats(&t->qdev->lock).acquisitions, ==, 0);
    g_assert_cmpuint(lock_stats(device_global_lock()).acquisitions, ==,
                     per_device ? 0 : 2 * per_pair);
    check_pair_locks_reported(t, per_device ? per_pair : 0);
    /* The vectors went out through their notifiers; the main loop
     * delivers them (no KVM here). Queue q has vector q + 1. */
    vpd_settle();
    for (unsigned q = 0; q < 4; q++) {
        g_assert_cmpuint(msis[q + 1], >=, 1);
    }
    for (unsigned p = 0; p < 2; p++) {
        check_pair_frames(t, p, false);
    }
    g_assert_false(needs_reset(t));
    net_free(t);
    device_lock_set_per_device(true);
}

static void test_pairs_two_threads(void)
{
    pairs_from_two_threads(true);
}

static void test_pairs_two_threads_global_lock(void)
{
    pairs_from_two_threads(false);
}

/*
 * The same with peers that carry vnet headers, as taps do: each thread's
 * frames are filled in place, into chains its pair lends under its lock,
 * while the other thread does the same on the other pair. A loan is for
 * the largest frame (68 KiB: 34 of these 2 KiB buffers), so the last 33
 * frames of each pair find too few and are copied. Every frame arrives
 * once, in order, on its own pair.
 */
static void test_pairs_two_threads_filled(void)
{
    TestNet *t = two_pairs_new(true, true);
    PairWorker w[2];
    run_pair_workers(t, w, false, true);
    for (unsigned p = 0; p < 2; p++) {
        g_assert_cmpuint(w[p].rx_taken, ==, PAIR_RX_FRAMES);
        g_assert_cmpuint(w[p].rx_filled, ==, PAIR_RX_FRAMES - 33);
    }
    vpd_settle();
    for (unsigned p = 0; p < 2; p++) {
        check_pair_frames(t, p, true);
    }
    g_assert_false(needs_reset(t));
    net_free(t);
}

/*
 * x-irqfd=off: a vector is sent from user space, which reads the MSI-X
 * table (device state), so a pair sends it under the device lock after
 * dropping its own. Each such send is one device-lock acquisition and
 * one message, on the pair's thread (nothing runs the main loop here).
 */
static void test_pairs_user_space_vectors(void)
{
    TestNet *t = two_pairs_new(false, false);
    DeviceLock *pair_lock[2] = { t->qdev->sublocks, t->qdev->sublocks->next_sub };
    reset_lock_stats(t);
    PairWorker w[2];
    run_pair_workers(t, w, false, false);
    for (unsigned p = 0; p < 2; p++) {
        g_assert_cmpuint(lock_stats(pair_lock[p]).acquisitions, ==,
                         PAIR_RX_FRAMES + PAIR_TX_FRAMES);
    }
    unsigned sent = 0;
    for (unsigned q = 0; q < 4; q++) {
        g_assert_cmpuint(msis[q + 1], >=, 1);
        sent += msis[q + 1];
    }
    g_assert_cmpuint(lock_stats(&t->qdev->lock).acquisitions, ==, sent);
    for (unsigned p = 0; p < 2; p++) {
        check_pair_frames(t, p, false);
    }
    net_free(t);
}

/* The same with TX kicked through the doorbells, served on the main loop
 * (under each pair's lock) while the two threads receive. */
static void test_pairs_kicked(void)
{
    TestNet *t = two_pairs_new(true, false);
    PairWorker w[2] = { { .t = t, .pair = 0, .kick = true }, { .t = t, .pair = 1, .kick = true } };
    GThread *th[2];
    for (unsigned p = 0; p < 2; p++) {
        th[p] = g_thread_new("pair", pair_worker, &w[p]);
    }
    gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (used_count(t, 1) < PAIR_TX_FRAMES || used_count(t, 3) < PAIR_TX_FRAMES) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(main_loop_context(), FALSE);
    }
    for (unsigned p = 0; p < 2; p++) {
        g_thread_join(th[p]);
        g_assert_cmpuint(w[p].rx_taken, ==, PAIR_RX_FRAMES);
    }
    vpd_settle();
    for (unsigned p = 0; p < 2; p++) {
        check_pair_frames(t, p, false);
    }
    net_free(t);
}

/* ---- a reset against a pair's transmission in progress ---- */

typedef struct StalledPeer {
    gint in_receive;            /* the peer's receive has started */
    gint released;              /* the test lets it finish */
} StalledPeer;
static StalledPeer stall;

/* The peer of pair 0, for this test: holds the TX path (and so the
 * pair's lock) until the test releases it. */
static ssize_t stalling_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    g_atomic_int_set(&stall.in_receive, 1);
    while (!g_atomic_int_get(&stall.released)) {
        g_usleep(100);
    }
    return fake_receive(nc, iov, iovcnt);
}

static gpointer send_ready_once(gpointer opaque)
{
    NetClientState *nic = opaque;
    nic->info->send_ready(nic);
    return NULL;
}

static gpointer reset_device(gpointer opaque)
{
    vpd_set_status(opaque, 0);
    return NULL;
}

/*
 * A driver reset (a status write on a vCPU, under the device lock) while
 * a pair is in the middle of a transmission (under the pair's lock): the
 * reset waits for the pair (it quiesces every pair lock), so the chain in
 * progress is returned to the used ring before the rings are forgotten,
 * and nothing of the pair runs after the reset.
 */
static void test_pairs_reset_waits(void)
{
    TestNet *t = two_pairs_new(true, false);
    NetClientInfo stalling = fake_info;
    stalling.receive = stalling_receive;
    stall = (StalledPeer) { 0 };
    t->netdev->queues[0]->info = &stalling;
    uint8_t f[PAIR_FRAME_LEN];
    numbered_frame(f, 0, 0);
    VirtIONetHdr hdr = { 0 };
    post_tx(t, 1, &hdr, VIRTIO_NET_HDR_LEN, f, sizeof(f), 0);
    GThread *tx = g_thread_new("tx", send_ready_once, t->netdev->queues[0]->peer);
    while (!g_atomic_int_get(&stall.in_receive)) {
        g_usleep(100);
    }
    GThread *reset = g_thread_new("reset", reset_device, &t->d);
    g_usleep(20000);
    /* Still waiting for the pair, holding the device lock. */
    g_assert_cmpuint(used_count(t, 1), ==, 0);
    g_assert_cmpuint(lock_stats(&t->qdev->lock).acquisitions, >, 0);
    g_atomic_int_set(&stall.released, 1);
    g_thread_join(reset);
    g_thread_join(tx);
    /* The reset came after the chain was returned, not in the middle. */
    g_assert_cmpuint(used_count(t, 1), ==, 1);
    g_assert_cmpuint(t->peers[0].frames->len, ==, 1);
    g_assert_cmpuint(vpd_status(&t->d), ==, 0);
    /* Reset: pair 1 takes nothing now. */
    g_assert_cmpuint(send_to_nic(t, 1, f, sizeof(f)), ==, 0);
    t->netdev->queues[0]->info = &fake_info;
    net_free(t);
}

/* Traffic on both pairs from two threads while the main thread resets
 * the device again and again: each frame a receive took is in the used
 * ring, whole, and no pair touches the rings after a reset. */
typedef struct RacingWorker {
    TestNet *t;
    unsigned pair;
    gint *stop;
    gint taken, refused;        /* atomics: the main thread waits on them */
} RacingWorker;

static gpointer racing_worker(gpointer opaque)
{
    RacingWorker *w = opaque;
    NetClientState *nic = w->t->netdev->queues[w->pair]->peer;
    uint8_t f[PAIR_FRAME_LEN];
    while (!g_atomic_int_get(w->stop)) {
        numbered_frame(f, w->pair, g_atomic_int_get(&w->taken));  /* buffer k: frame k */
        if (send_to_nic(w->t, w->pair, f, sizeof(f)) == sizeof(f)) {
            g_atomic_int_inc(&w->taken);
        } else {
            g_atomic_int_inc(&w->refused);
        }
        nic->info->send_ready(nic);
    }
    return NULL;
}

/* Until *count (a worker's atomic) reaches n, for at most 10 s. */
static void wait_for_count(gint *count, gint n)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (g_atomic_int_get(count) < n) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(50);
    }
}

static void test_pairs_reset_racing_traffic(void)
{
    TestNet *t = two_pairs_new(true, false);
    uint8_t f[PAIR_FRAME_LEN];
    VirtIONetHdr hdr = { 0 };
    for (unsigned p = 0; p < 2; p++) {
        for (unsigned i = 0; i < PAIR_TX_FRAMES; i++) {
            numbered_frame(f, p, i);
            post_tx(t, 2 * p + 1, &hdr, VIRTIO_NET_HDR_LEN, f, sizeof(f), p * PAIR_TX_FRAMES + i);
        }
    }
    gint stop = 0;
    RacingWorker w[2] = { { t, 0, &stop, 0, 0 }, { t, 1, &stop, 0, 0 } };
    GThread *th[2];
    for (unsigned p = 0; p < 2; p++) {
        th[p] = g_thread_new("pair", racing_worker, &w[p]);
    }
    /* Both pairs busy, then the reset. */
    wait_for_count(&w[0].taken, 10);
    wait_for_count(&w[1].taken, 10);
    vpd_set_status(&t->d, 0);
    /* From here on the pairs are stopped: what the rings show now stays. */
    unsigned rx_used[2], tx_used[2];
    for (unsigned p = 0; p < 2; p++) {
        rx_used[p] = used_count(t, 2 * p);
        tx_used[p] = used_count(t, 2 * p + 1);
    }
    /* Both pairs tried again after it. */
    wait_for_count(&w[0].refused, 10);
    wait_for_count(&w[1].refused, 10);
    g_atomic_int_set(&stop, 1);
    for (unsigned p = 0; p < 2; p++) {
        g_thread_join(th[p]);
        g_assert_cmpuint(used_count(t, 2 * p), ==, rx_used[p]);
        g_assert_cmpuint(used_count(t, 2 * p + 1), ==, tx_used[p]);
        /* Every frame a receive took before the reset filled a buffer;
         * after it, receives are refused. */
        g_assert_cmpuint(w[p].taken, ==, rx_used[p]);
        g_assert_cmpuint(t->peers[p].frames->len, ==, tx_used[p]);
        for (unsigned i = 0; i < rx_used[p]; i++) {
            numbered_frame(f, p, i);
            uint8_t *buf = gpa(RXBUF_GPA + 4096 * (p * PAIR_RX_FRAMES + i));
            g_assert_cmpmem(buf + VIRTIO_NET_HDR_LEN, PAIR_FRAME_LEN, f, PAIR_FRAME_LEN);
        }
    }
    net_free(t);
}

/* ---- the vhost-net seam, with a fake vhost ---- */

static struct {
    unsigned creates, starts, stops;
    unsigned rx_index, tx_index;
    EventNotifier *calls[2];
    EventNotifier kick[2];
    EventNotifier *redirected[MAX_VQ];
    bool fail_start;
} fv;

struct VhostNet {
    int dummy;
};
static VhostNet fake_vn;

static bool fv_create(NetClientState *nic, VhostNet **vn, Error **errp)
{
    fv.creates++;
    *vn = &fake_vn;
    return true;
}

static uint64_t fv_get_features(const VhostNet *vn, uint64_t offered)
{
    return offered & ~F(VIRTIO_NET_F_MRG_RXBUF);
}

static bool fv_start(VhostNet *vn, VirtIODevice *vdev, unsigned rx, unsigned tx,
                     EventNotifier *calls[2], Error **errp)
{
    if (fv.fail_start) {
        error_setg(errp, "no vhost today");
        return false;
    }
    fv.starts++;
    fv.rx_index = rx;
    fv.tx_index = tx;
    fv.calls[0] = calls[0];
    fv.calls[1] = calls[1];
    return true;
}

static EventNotifier *fv_kick_notifier(VhostNet *vn, unsigned ring)
{
    return &fv.kick[ring];
}

static void fv_stop(VhostNet *vn, VirtIODevice *vdev)
{
    fv.stops++;
}

static void fv_redirect(struct VirtIOPCIProxy *proxy, unsigned queue, EventNotifier *to)
{
    fv.redirected[queue] = to;
}

static EventNotifier *fv_call_notifier(struct VirtIOPCIProxy *proxy, unsigned queue)
{
    return &proxy->vector_notifiers[proxy->vdev->vqs[queue].vector];
}

static void fv_free(VhostNet *vn)
{
    g_assert_true(vn == &fake_vn);  /* static: nothing to free */
}

static const VirtIONetVhostOps fake_vhost_ops = {
    .create = fv_create, .get_features = fv_get_features, .start = fv_start,
    .kick_notifier = fv_kick_notifier, .stop = fv_stop, .free = fv_free,
    .redirect_kicks = fv_redirect,
    .queue_call_notifier = fv_call_notifier,
};

static void test_vhost_seam(void)
{
    memset(&fv, 0, sizeof(fv));
    virtio_net_set_vhost_ops(&fake_vhost_ops);
    TestNet *t = net_new(&(TestOptions) { .vnet = true });
    VirtIOPCIProxy *proxy = (VirtIOPCIProxy *)t->qdev;
    g_assert_cmpuint(fv.creates, ==, 1);
    g_assert_false(vpd_device_features(&t->d) & F(VIRTIO_NET_F_MRG_RXBUF));
    /* DRIVER_OK: the pair to the kernel, with its vectors' notifiers. */
    g_assert_cmpuint(fv.starts, ==, 1);
    g_assert_cmpuint(fv.rx_index, ==, 0);
    g_assert_cmpuint(fv.tx_index, ==, 1);
    g_assert_true(fv.calls[0] == &proxy->vector_notifiers[1]);
    g_assert_true(fv.calls[1] == &proxy->vector_notifiers[2]);
    g_assert_true(fv.redirected[0] == &fv.kick[0] && fv.redirected[1] == &fv.kick[1]);
    g_assert_null(fv.redirected[2]);        /* the controlq stays here */
    /* User space leaves the pair alone: a kick reaching the handler and a
     * frame from the peer do nothing. */
    uint8_t f[60];
    make_frame(f, sizeof(f), test_mac.a, 1);
    VirtIONetHdr hdr = { 0 };
    post_tx(t, 1, &hdr, sizeof(hdr), f, sizeof(f), 0);
    mem_write(t->d.notify + 4, 1, 4);       /* a width the ioeventfd does not take */
    vpd_settle();
    g_assert_cmpuint(used_count(t, 1), ==, 0);
    g_assert_cmpuint(t->peers[0].frames->len, ==, 0);
    uint8_t ack_on = 1;
    g_assert_cmpuint(ctrl_cmd(t, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &ack_on, 1),
                     ==, VIRTIO_NET_OK);
    /* Reset: the kicks back, the kernel stopped. */
    vpd_set_status(&t->d, 0);
    g_assert_cmpuint(fv.stops, ==, 1);
    g_assert_null(fv.redirected[0]);
    g_assert_null(fv.redirected[1]);
    /* A start that fails leaves the pair to user space. */
    fv.fail_start = true;
    driver_init(t, &(TestOptions) { .vnet = true });
    g_assert_cmpuint(fv.starts, ==, 1);
    g_assert_null(fv.redirected[1]);
    tx_small_frames(t, 1, 1);
    vpd_settle();
    g_assert_cmpuint(t->peers[0].frames->len, ==, 1);
    net_free(t);
    g_assert_cmpuint(fv.stops, ==, 1);
    virtio_net_set_vhost_ops(NULL);
}

/* Bad -device values: one error naming the property. */
static void test_bad_configuration(void)
{
    Error *err = NULL;
    VirtIONetConf conf = { .mac = test_mac, .rx_queue_size = 100,
                           .tx_queue_size = 256, .features = ALL_FEATURES };
    /* Refused before the bus is touched. */
    PCIBus *bus = NULL;
    g_assert_null(virtio_net_pci_new(bus, -1, &conf, &err));
    g_assert_nonnull(strstr(err->msg, "rx_queue_size"));
    error_free(err);
    err = NULL;
    conf.rx_queue_size = 256;
    conf.mq = true;
    conf.features = ALL_FEATURES & ~F(VIRTIO_NET_F_CTRL_VQ);
    g_assert_null(virtio_net_pci_new(bus, -1, &conf, &err));
    g_assert_nonnull(strstr(err->msg, "ctrl_vq"));
    error_free(err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    static const IrqBackend backend = { .set_level = rec_set_level, .send_msi = rec_send_msi };
    ram = vpd_machine_init(&backend, RAM_BASE, RAM_SIZE);
    for (unsigned i = 0; i < 2; i++) {
        g_assert_true(event_notifier_init(&fv.kick[i], NULL));
    }

    g_test_add_func("/virtio-net/features-plain-peer", test_features_plain_peer);
    g_test_add_func("/virtio-net/features-vnet-peer", test_features_vnet_peer);
    g_test_add_func("/virtio-net/tx-checksum-completed", test_tx_checksum_completed);
    g_test_add_func("/virtio-net/tx-vnet-header-kept", test_tx_vnet_header_kept);
    g_test_add_func("/virtio-net/tx-flow-control", test_tx_flow_control);
    g_test_add_func("/virtio-net/tx-kick-defers-burst-bounded", test_tx_kick_defers_and_burst_bounded);
    g_test_add_func("/virtio-net/tx-interrupt-per-chain", test_tx_interrupt_per_chain);
    g_test_add_func("/virtio-net/tx-poll", test_tx_poll);
    g_test_add_func("/virtio-net/tx-poll-backs-off", test_tx_poll_backs_off);
    g_test_add_func("/virtio-net/rx-mergeable", test_rx_mergeable);
    g_test_add_func("/virtio-net/rx-no-buffers-then-kick", test_rx_no_buffers_then_kick);
    g_test_add_func("/virtio-net/rx-single-buffer-vnet", test_rx_single_buffer_vnet);
    g_test_add_func("/virtio-net/rx-filled", test_rx_filled);
    g_test_add_func("/virtio-net/rx-filled-declined", test_rx_filled_declined);
    g_test_add_func("/virtio-net/ctrl-rx-filter", test_ctrl_rx_filter);
    g_test_add_func("/virtio-net/multiqueue", test_multiqueue);
    g_test_add_func("/virtio-net/hostile-chains", test_hostile_chains);
    g_test_add_func("/virtio-net/link", test_link);
    g_test_add_func("/virtio-net/qmp-set-link", test_qmp_set_link);
    g_test_add_func("/virtio-net/qmp-rx-filter", test_qmp_rx_filter);
    g_test_add_func("/virtio-net/qmp-rx-filter-anonymous", test_qmp_rx_filter_anonymous);
    g_test_add_func("/virtio-net/iothread", test_iothread);
    g_test_add_func("/virtio-net/pairs/two-threads", test_pairs_two_threads);
    g_test_add_func("/virtio-net/pairs/two-threads-global-lock",
                    test_pairs_two_threads_global_lock);
    g_test_add_func("/virtio-net/pairs/two-threads-filled", test_pairs_two_threads_filled);
    g_test_add_func("/virtio-net/pairs/user-space-vectors", test_pairs_user_space_vectors);
    g_test_add_func("/virtio-net/pairs/kicked", test_pairs_kicked);
    g_test_add_func("/virtio-net/pairs/reset-waits", test_pairs_reset_waits);
    g_test_add_func("/virtio-net/pairs/reset-racing-traffic", test_pairs_reset_racing_traffic);
    g_test_add_func("/virtio-net/vhost-seam", test_vhost_seam);
    g_test_add_func("/virtio-net/bad-configuration", test_bad_configuration);
    return g_test_run();
}
