/*
 * virtio-net-pci (hw/virtio/virtio-net.h): the device as the driver sees
 * it (features, configuration, status and reset, link state) and its
 * creation. The data path is in virtio-net-tx.c and virtio-net-rx.c, the
 * control queue in virtio-net-ctrl.c; docs/network.md ("virtio-net")
 * describes the threads.
 *
 * Queues: receiveq/transmitq of pair i at 2i and 2i + 1, then the
 * controlq at 2 * max_pairs. A driver without MQ uses one pair and finds
 * the controlq at 2 (virtio 1.x, "Virtqueues"): queue 2 is then the
 * control queue whatever the device's pair count.
 *
 * Locks: each queue pair's data path runs under the pair's own lock,
 * everything here under the device lock; the device lock may be held
 * when pair locks are taken (all of them, in order: a quiesce), never
 * taken under one (virtio-net-internal.h, docs/locking.md).
 */
#include <string.h>
#include <glib.h>
#include "hw/virtio/virtio-net-internal.h"
#include "hw/virtio/virtio-pci.h"
#include "net/vnet-hdr.h"
#include "qemu/byte-order.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"

#define PCI_CLASS_NETWORK_ETHERNET      0x020000
#define VIRTIO_NET_CTRL_QUEUE_SIZE      64
/* The features -device switches (every one on by default, as QEMU's). */
#define VIRTIO_NET_SWITCHED_FEATURES \
    (VIRTIO_BIT(VIRTIO_NET_F_CSUM) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) | \
     VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) | \
     VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) | \
     VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) | VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN) | \
     VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) | VIRTIO_BIT(VIRTIO_NET_F_STATUS) | \
     VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ) | VIRTIO_BIT(VIRTIO_NET_F_CTRL_RX) | \
     VIRTIO_BIT(VIRTIO_NET_F_CTRL_VLAN) | VIRTIO_BIT(VIRTIO_NET_F_CTRL_RX_EXTRA) | \
     VIRTIO_BIT(VIRTIO_NET_F_CTRL_MAC_ADDR) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_ANNOUNCE))

typedef struct VirtIONetPCI {
    VirtIOPCIProxy proxy;       /* first: the QEMUDevice */
    VirtIONet net;
} VirtIONetPCI;

unsigned virtio_net_guest_hdr_len(VirtIONet *n)
{
    return virtio_has_feature(&n->vdev, VIRTIO_F_VERSION_1) ||
           virtio_has_feature(&n->vdev, VIRTIO_NET_F_MRG_RXBUF)
           ? VIRTIO_NET_HDR_LEN : VIRTIO_NET_HDR_LEN_SHORT;
}

/* ---- queues ---- */

VirtQueueElement *virtio_net_pop(VirtQueue *vq)
{
    VirtQueueElement *elem = virtqueue_pop(vq);
    if (elem || vq->vdev->broken) {
        return elem;
    }
    virtqueue_set_notification(vq, true);
    if (!virtqueue_has_avail(vq)) {
        return NULL;
    }
    virtqueue_set_notification(vq, false);
    return virtqueue_pop(vq);
}

static unsigned virtio_net_ctrl_index(VirtIONet *n)
{
    return virtio_has_feature(&n->vdev, VIRTIO_NET_F_MQ) ? 2 * n->max_pairs : 2;
}

/* The controlq's commands, with the device lock held and no pair lock:
 * they change what the pairs read (filter, MAC, pairs in use). */
static void virtio_net_ctrl_run(VirtIONet *n, VirtQueue *vq)
{
    virtio_queues_quiesce(&n->vdev);
    virtio_net_ctrl_kick(n, vq);
    virtio_queues_resume(&n->vdev);
}

/* The bottom half of a controlq kick that came under a pair's lock. */
static void virtio_net_ctrl_bh(void *opaque)
{
    VirtIONet *n = opaque;
    VirtIODevice *vdev = &n->vdev;
    device_lock(vdev->qdev);
    /* Still the controlq, and still runnable: a reset may have come first. */
    VirtQueue *vq = virtio_get_queue(vdev, virtio_net_ctrl_index(n));
    if (vq && virtio_has_feature(vdev, VIRTIO_NET_F_CTRL_VQ) && virtio_queue_runnable(vq)) {
        virtio_net_ctrl_run(n, vq);
    }
    device_unlock(vdev->qdev);
}

/* A kick: of the controlq with the device lock held, of a pair's queue
 * with the pair's lock held (virtio_queue_lock). */
static void virtio_net_handle_queue(VirtIODevice *vdev, VirtQueue *vq)
{
    VirtIONet *n = virtio_net_of(vdev);
    if (vq->index == virtio_net_ctrl_index(n) &&
        virtio_has_feature(vdev, VIRTIO_NET_F_CTRL_VQ)) {
        if (vq->lock) {
            qemu_bh_schedule(n->ctrl_bh);   /* a pair lock is held: not here */
        } else {
            virtio_net_ctrl_run(n, vq);
        }
        return;
    }
    unsigned pair = vq->index / 2;
    unsigned usable = virtio_has_feature(vdev, VIRTIO_NET_F_MQ) ? n->max_pairs : 1;
    if (pair >= usable) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: kick of queue %u, which is not in use: ignored\n",
                      virtio_name(vdev), vq->index);
        return;
    }
    if (n->queues[pair].vhost_started) {
        return;     /* a kick that reached the handler before vhost took over */
    }
    if (vq->index % 2) {
        virtio_net_tx_kick(&n->queues[pair]);
    } else {
        virtio_net_rx_wake(&n->queues[pair]);
    }
}

/* ---- link and configuration ---- */

static bool virtio_net_link_up(VirtIONet *n)
{
    NetClientState *nc = n->queues[0].nc;
    return !nc->link_down && !(nc->peer && nc->peer->link_down);
}

/* The configuration ends after the last field an offered feature makes
 * valid, as QEMU sizes it: mac and status always, max_virtqueue_pairs with
 * MQ, mtu with MTU. Drivers see it in the legacy BAR's size (32 bytes
 * for the default device, 64 with MQ or MTU). */
static size_t virtio_net_config_len(uint64_t features)
{
    if (features & VIRTIO_BIT(VIRTIO_NET_F_MTU)) {
        return VIRTIO_NET_CFG_SIZE;
    }
    if (features & VIRTIO_BIT(VIRTIO_NET_F_MQ)) {
        return VIRTIO_NET_CFG_MTU;
    }
    return VIRTIO_NET_CFG_MAX_VQ_PAIRS;
}

static void virtio_net_get_config(VirtIODevice *vdev, uint8_t *c)
{
    VirtIONet *n = virtio_net_of(vdev);
    memset(c, 0, VIRTIO_NET_CFG_SIZE);
    memcpy(c + VIRTIO_NET_CFG_MAC, n->mac.a, ETH_ALEN);
    put_le16(c + VIRTIO_NET_CFG_STATUS, (virtio_net_link_up(n) ? VIRTIO_NET_S_LINK_UP : 0) |
                                        (n->announce ? VIRTIO_NET_S_ANNOUNCE : 0));
    put_le16(c + VIRTIO_NET_CFG_MAX_VQ_PAIRS, n->max_pairs);
    put_le16(c + VIRTIO_NET_CFG_MTU, n->mtu);
}

/* Only a legacy driver without CTRL_MAC_ADDR sets its address here
 * (virtio 1.x makes mac read-only for the driver). */
static void virtio_net_set_config(VirtIODevice *vdev, const uint8_t *c)
{
    VirtIONet *n = virtio_net_of(vdev);
    if (!memcmp(c + VIRTIO_NET_CFG_MAC, n->mac.a, ETH_ALEN)) {
        return;
    }
    if (virtio_has_feature(vdev, VIRTIO_F_VERSION_1) ||
        virtio_has_feature(vdev, VIRTIO_NET_F_CTRL_MAC_ADDR)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: mac written in the configuration: ignored\n",
                      virtio_name(vdev));
        return;
    }
    memcpy(n->mac.a, c + VIRTIO_NET_CFG_MAC, ETH_ALEN);
}

/*
 * NetClientInfo.link_changed: main thread, no lock held. A link that
 * comes back up also asks the driver to announce itself (GUEST_ANNOUNCE:
 * Linux sends gratuitous ARPs and unsolicited neighbour advertisements),
 * so that switches that forgot its MAC meanwhile learn it again.
 */
static void virtio_net_link_changed(NetClientState *nc)
{
    VirtIONetQueue *q = nc->opaque;
    VirtIONet *n = q->n;
    VirtIODevice *vdev = &n->vdev;
    device_lock(vdev->qdev);
    if (virtio_net_link_up(n) && virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_ANNOUNCE)) {
        n->announce = true;
    }
    if (virtio_has_feature(vdev, VIRTIO_NET_F_STATUS)) {
        virtio_notify_config(vdev);
    }
    device_unlock(vdev->qdev);
}

/* ---- starting and stopping the host side ---- */

/* What the guest takes unsegmented or unchecksummed from the peer. */
static void virtio_net_apply_offloads(VirtIONet *n)
{
    VirtIODevice *vdev = &n->vdev;
    NetOffloads o = {
        .csum = virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_CSUM),
        .tso4 = virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_TSO4),
        .tso6 = virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_TSO6),
        .ecn = virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_ECN),
    };
    for (unsigned i = 0; i < n->max_pairs; i++) {
        net_peer_set_offload(n->queues[i].nc, &o);
    }
}

static void virtio_net_set_host_hdr_len(VirtIONet *n, unsigned len)
{
    n->host_hdr_len = n->peer_vnet_hdr ? len : 0;
    for (unsigned i = 0; i < n->max_pairs; i++) {
        net_peer_set_vnet_hdr_len(n->queues[i].nc, n->host_hdr_len);
    }
}

/* The kernel gave the pairs back: the peer's header is user space's again
 * (vhost_net_start set the guest's). */
static void virtio_net_vhost_stop_all(VirtIONet *n)
{
    if (virtio_net_vhost_stop(n)) {
        virtio_net_set_host_hdr_len(n, n->host_hdr_len);
    }
}

/* DRIVER_OK: the features are final; the peer learns what it carries. A
 * driver that clears DRIVER_OK gets its pairs back from the kernel. */
static void virtio_net_status_changed(VirtIODevice *vdev, uint8_t old_status)
{
    VirtIONet *n = virtio_net_of(vdev);
    bool was_ok = old_status & VIRTIO_CONFIG_S_DRIVER_OK;
    bool is_ok = vdev->status & VIRTIO_CONFIG_S_DRIVER_OK;
    if (was_ok && !is_ok) {
        virtio_net_vhost_stop_all(n);
    }
    if (!is_ok || was_ok) {
        return;
    }
    virtio_net_set_host_hdr_len(n, virtio_net_guest_hdr_len(n));
    virtio_net_apply_offloads(n);
    virtio_net_vhost_start(n);
    for (unsigned i = 0; i < n->max_pairs; i++) {
        virtio_net_rx_wake(&n->queues[i]);
    }
}

static void virtio_net_reset(VirtIODevice *vdev)
{
    VirtIONet *n = virtio_net_of(vdev);
    if (!n->queues) {
        return;     /* virtio_init's reset, before realize has built them */
    }
    virtio_net_vhost_stop_all(n);
    for (unsigned i = 0; i < n->max_pairs; i++) {
        virtio_net_rx_reset(&n->queues[i]);
        virtio_net_tx_reset(&n->queues[i]);
    }
    n->mac = n->perm_mac;
    n->announce = false;
    virtio_net_set_pairs(n, 1);
    virtio_net_filter_reset(&n->filter);
    /* No offloads until a driver accepts them. */
    virtio_net_apply_offloads(n);
}

static const VirtIODeviceOps virtio_net_ops = {
    .get_config = virtio_net_get_config,
    .set_config = virtio_net_set_config,
    .reset = virtio_net_reset,
    .status_changed = virtio_net_status_changed,
};

static const NetClientInfo virtio_net_client_info = {
    .type = "nic",
    .receive = virtio_net_receive,
    .receive_filled = virtio_net_receive_filled,
    .send_ready = virtio_net_tx_resume,
    .link_changed = virtio_net_link_changed,
    .query_rx_filter = virtio_net_query_rx_filter,
};

/* ---- creation ---- */

/* The features offered: those the user left on, less those the peer
 * cannot carry and those whose prerequisites are off. */
static uint64_t virtio_net_features(const VirtIONetConf *conf, bool peer_vnet_hdr)
{
    const uint64_t vnet_only = VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) |
        VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) |
        VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) |
        VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) | VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN);
    const uint64_t need_ctrl_vq = VIRTIO_BIT(VIRTIO_NET_F_CTRL_RX) |
        VIRTIO_BIT(VIRTIO_NET_F_CTRL_VLAN) | VIRTIO_BIT(VIRTIO_NET_F_CTRL_RX_EXTRA) |
        VIRTIO_BIT(VIRTIO_NET_F_GUEST_ANNOUNCE) | VIRTIO_BIT(VIRTIO_NET_F_MQ) |
        VIRTIO_BIT(VIRTIO_NET_F_CTRL_MAC_ADDR);
    uint64_t f = (conf->features & VIRTIO_NET_SWITCHED_FEATURES) | VIRTIO_BIT(VIRTIO_NET_F_MAC);
    if (!peer_vnet_hdr) {
        f &= ~vnet_only;
    }
    if (conf->mq) {
        f |= VIRTIO_BIT(VIRTIO_NET_F_MQ);
    }
    if (conf->host_mtu) {
        f |= VIRTIO_BIT(VIRTIO_NET_F_MTU);
    }
    if (!(f & VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ))) {
        f &= ~need_ctrl_vq;
    }
    if (!(f & VIRTIO_BIT(VIRTIO_NET_F_CTRL_RX))) {
        f &= ~VIRTIO_BIT(VIRTIO_NET_F_CTRL_RX_EXTRA);
    }
    /* The host offloads need the checksum offload (virtio 1.x, "Feature
     * bit requirements"), the guest ones the guest's checksum. */
    if (!(f & VIRTIO_BIT(VIRTIO_NET_F_CSUM))) {
        f &= ~(VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) |
               VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN));
    }
    if (!(f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM))) {
        f &= ~(VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) |
               VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN));
    }
    return f;
}

static bool virtio_queue_size_ok(uint16_t size)
{
    return size >= 256 && size <= VIRTQUEUE_MAX_SIZE && !(size & (size - 1));
}

static bool virtio_net_conf_check(const VirtIONetConf *conf, Error **errp)
{
    if (!virtio_queue_size_ok(conf->rx_queue_size)) {
        error_setg(errp, "Invalid rx_queue_size (= %u), must be a power of 2 between 256 "
                   "and %u.", conf->rx_queue_size, VIRTQUEUE_MAX_SIZE);
        return false;
    }
    if (!virtio_queue_size_ok(conf->tx_queue_size)) {
        error_setg(errp, "Invalid tx_queue_size (= %u), must be a power of 2 between 256 "
                   "and %u.", conf->tx_queue_size, VIRTQUEUE_MAX_SIZE);
        return false;
    }
    if (conf->host_mtu && conf->host_mtu < 68) {
        error_setg(errp, "host_mtu must be at least 68 (the IPv4 minimum), not %u",
                   conf->host_mtu);
        return false;
    }
    if (conf->mq && !(conf->features & VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ))) {
        error_setg(errp, "mq=on needs ctrl_vq=on");
        return false;
    }
    if (conf->mq && conf->netdev && conf->netdev->num_queues > VIRTIO_NET_MAX_QUEUE_PAIRS) {
        error_setg(errp, "netdev '%s' has %u queues; virtio-net takes at most %u",
                   conf->netdev->id, conf->netdev->num_queues, VIRTIO_NET_MAX_QUEUE_PAIRS);
        return false;
    }
    return true;
}

/* Sources of an I/O thread's context are attached from that thread. */
static void virtio_net_create_bhs(void *opaque)
{
    VirtIONet *n = opaque;
    for (unsigned i = 0; i < n->max_pairs; i++) {
        n->queues[i].tx_bh = qemu_bh_new(n->ctx, virtio_net_tx_bh, &n->queues[i]);
    }
    n->ctrl_bh = qemu_bh_new(n->ctx, virtio_net_ctrl_bh, n);
}

/* The pairs' NIC clients, pair i on netdev queue i, on the device's context. */
static bool virtio_net_attach(VirtIONet *n, const VirtIONetConf *conf, Error **errp)
{
    n->queues = g_new0(VirtIONetQueue, n->max_pairs);
    for (unsigned i = 0; i < n->max_pairs; i++) {
        VirtIONetQueue *q = &n->queues[i];
        g_autofree char *name = g_strdup_printf("virtio-net.%u", i);
        q->n = n;
        q->pair = i;
        q->rx_vq = &n->vdev.vqs[2 * i];
        q->tx_vq = &n->vdev.vqs[2 * i + 1];
        g_queue_init(&q->rx_stash);
        q->nc = net_nic_new(&virtio_net_client_info, name, conf->netdev, i,
                            virtio_net_pci_type.name, n->ctx, q, errp);
        if (!q->nc) {
            return false;
        }
        q->tx_iov = g_new(struct iovec, VIRTQUEUE_MAX_IOV);
    }
    /* Every queue of a netdev is of one kind. */
    n->peer_vnet_hdr = net_peer_has_vnet_hdr(n->queues[0].nc);
    for (unsigned i = 0; i < n->max_pairs && !n->peer_vnet_hdr; i++) {
        n->queues[i].tx_buf = g_malloc(VIRTIO_NET_MAX_FRAME);
    }
    return virtio_net_vhost_init(n, errp);
}

/* A device that failed to realize: nothing of it runs anywhere yet. */
static void virtio_net_free(VirtIONetPCI *d)
{
    VirtIONet *n = &d->net;
    virtio_net_vhost_free(n);
    for (unsigned i = 0; i < n->max_pairs; i++) {
        net_client_free(n->queues[i].nc);
        g_free(n->queues[i].tx_iov);
        g_free(n->queues[i].tx_buf);
    }
    g_free(n->queues);
    virtio_cleanup(&n->vdev);
    g_free(d);
}

/* Queue sizes: rx_queue_size and tx_queue_size for the pairs, the
 * control queue's own; each queue offers its size from reset on. */
static void virtio_net_size_queues(VirtIONet *n, const VirtIONetConf *conf)
{
    VirtIODevice *vdev = &n->vdev;
    for (unsigned i = 0; i < vdev->num_queues; i++) {
        vdev->vqs[i].num_max = i == 2 * n->max_pairs ? VIRTIO_NET_CTRL_QUEUE_SIZE
                               : i % 2 ? conf->tx_queue_size : conf->rx_queue_size;
    }
    virtio_reset(vdev);
}

QEMUDevice *virtio_net_pci_new(PCIBus *bus, int devfn, const VirtIONetConf *conf,
                               Error **errp)
{
    if (!virtio_net_conf_check(conf, errp)) {
        return NULL;
    }
    VirtIONetPCI *d = g_new0(VirtIONetPCI, 1);
    VirtIONet *n = &d->net;
    n->max_pairs = conf->mq && conf->netdev ? MAX(conf->netdev->num_queues, 1) : 1;
    n->perm_mac = n->mac = conf->mac;
    n->mtu = conf->host_mtu;
    n->rx_in_place = conf->rx_in_place;
    n->tx_poll_max_ns = conf->tx_poll_max_ns;
    n->ctx = conf->iothread ? iothread_context(conf->iothread) : main_loop_context();
    virtio_net_filter_reset(&n->filter);
    bool ctrl_vq = conf->features & VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ);
    virtio_init(&n->vdev, VIRTIO_ID_NET, &virtio_net_ops, 0, VIRTIO_NET_CFG_SIZE,
                2 * n->max_pairs + ctrl_vq, conf->rx_queue_size, virtio_net_handle_queue);
    if (!virtio_net_attach(n, conf, errp)) {
        virtio_net_free(d);
        return NULL;
    }
    virtio_net_set_pairs(n, 1);     /* until a driver sets more */
    n->vdev.host_features = virtio_net_vhost_features(
        n, n->vdev.host_features | virtio_net_features(conf, n->peer_vnet_hdr));
    virtio_set_config_len(&n->vdev, virtio_net_config_len(n->vdev.host_features));
    virtio_net_size_queues(n, conf);
    if (!virtio_pci_init(&d->proxy, &n->vdev, bus, devfn, "virtio-net-pci", "virtio-net",
                         PCI_CLASS_NETWORK_ETHERNET, conf->iothread, conf->pci, errp)) {
        virtio_net_free(d);
        return NULL;
    }
    /* set_link and query-rx-filter name the NIC by the device's id. Each
     * pair's data path gets its lock, a sub-lock of the function. */
    for (unsigned i = 0; i < n->max_pairs; i++) {
        VirtIONetQueue *q = &n->queues[i];
        q->nc->owner = n->vdev.qdev;
        g_snprintf(q->lock_suffix, sizeof(q->lock_suffix), "qp%u", i);
        device_sublock_init(n->vdev.qdev, &q->lock, q->lock_suffix);
        virtio_queue_set_lock(q->rx_vq, &q->lock);
        virtio_queue_set_lock(q->tx_vq, &q->lock);
    }
    /* QEMU describes the first queue only ("index=1,type=nic," for the rest). */
    net_nic_set_info(n->queues[0].nc, &n->mac);
    if (conf->iothread) {
        iothread_run_sync(conf->iothread, virtio_net_create_bhs, n);
    } else {
        virtio_net_create_bhs(n);
    }
    /* Until a driver says otherwise, a vnet peer's frames carry the
     * header a virtio 1.x driver uses. */
    virtio_net_set_host_hdr_len(n, VIRTIO_NET_HDR_LEN);
    return &d->proxy.pci.qdev;
}

/* ---- -device virtio-net-pci ---- */

typedef struct VirtIONetPCIOptions {
    PCIDeviceOptions pcidev;
    int32_t bootindex;
    DeviceLink netdev;
    DeviceLink iothread;
    MACAddr mac;
    bool mq;
    uint16_t rx_queue_size;
    uint16_t tx_queue_size;
    uint16_t host_mtu;
    bool rx_in_place;
    uint32_t tx_poll_max_ns;
    bool feature[64];           /* by bit number: QEMU's on/off switches */
    VirtIOPCIConf pci;
} VirtIONetPCIOptions;

#define FEATURE_PROP(name_, bit_) \
    DEFINE_PROP_BOOL(name_, VirtIONetPCIOptions, feature[bit_], true, NULL)

static const DeviceProperty virtio_net_pci_properties[] = {
    DEFINE_PCI_DEVICE_PROPERTIES(VirtIONetPCIOptions, pcidev),
    DEFINE_PROP_BOOTINDEX(VirtIONetPCIOptions, bootindex),
    DEFINE_PROP_LINK("netdev", DEVICE_PROP_NETDEV, VirtIONetPCIOptions, netdev),
    DEFINE_PROP_LINK("iothread", DEVICE_PROP_IOTHREAD, VirtIONetPCIOptions, iothread),
    DEFINE_PROP_MACADDR("mac", VirtIONetPCIOptions, mac),
    /* QEMU's, described as QEMU's help describes them (docs/network.md
     * says what they do): one queue pair per netdev queue; queue sizes a
     * power of two, 256-1024; host_mtu 0 offers no VIRTIO_NET_F_MTU. */
    DEFINE_PROP_BOOL("mq", VirtIONetPCIOptions, mq, false, NULL),
    DEFINE_PROP_UINT16("rx_queue_size", VirtIONetPCIOptions, rx_queue_size, 256, NULL),
    DEFINE_PROP_UINT16("tx_queue_size", VirtIONetPCIOptions, tx_queue_size, 256, NULL),
    DEFINE_PROP_UINT16("host_mtu", VirtIONetPCIOptions, host_mtu, 0, NULL),
    /* Ours: off measures what receiving in place buys (docs/benchmarks.md). */
    DEFINE_PROP_BOOL("x-rx-in-place", VirtIONetPCIOptions, rx_in_place, true, NULL),
    /* Ours: 0 measures what transmit polling buys (docs/network.md). */
    DEFINE_PROP_UINT32("x-tx-poll-ns", VirtIONetPCIOptions, tx_poll_max_ns,
                       VIRTIO_NET_TX_POLL_MAX_NS, NULL),
    DEFINE_VIRTIO_PCI_PROPERTIES(VirtIONetPCIOptions, pci),
    FEATURE_PROP("csum", VIRTIO_NET_F_CSUM),
    FEATURE_PROP("guest_csum", VIRTIO_NET_F_GUEST_CSUM),
    FEATURE_PROP("guest_tso4", VIRTIO_NET_F_GUEST_TSO4),
    FEATURE_PROP("guest_tso6", VIRTIO_NET_F_GUEST_TSO6),
    FEATURE_PROP("guest_ecn", VIRTIO_NET_F_GUEST_ECN),
    FEATURE_PROP("host_tso4", VIRTIO_NET_F_HOST_TSO4),
    FEATURE_PROP("host_tso6", VIRTIO_NET_F_HOST_TSO6),
    FEATURE_PROP("host_ecn", VIRTIO_NET_F_HOST_ECN),
    FEATURE_PROP("mrg_rxbuf", VIRTIO_NET_F_MRG_RXBUF),
    FEATURE_PROP("status", VIRTIO_NET_F_STATUS),
    FEATURE_PROP("ctrl_vq", VIRTIO_NET_F_CTRL_VQ),
    FEATURE_PROP("ctrl_rx", VIRTIO_NET_F_CTRL_RX),
    FEATURE_PROP("ctrl_vlan", VIRTIO_NET_F_CTRL_VLAN),
    FEATURE_PROP("ctrl_rx_extra", VIRTIO_NET_F_CTRL_RX_EXTRA),
    FEATURE_PROP("ctrl_mac_addr", VIRTIO_NET_F_CTRL_MAC_ADDR),
    FEATURE_PROP("guest_announce", VIRTIO_NET_F_GUEST_ANNOUNCE),
};

static QEMUDevice *virtio_net_pci_realize(const void *options, const DeviceBuses *buses,
                                          Error **errp)
{
    const VirtIONetPCIOptions *o = options;
    static const MACAddr unset;
    VirtIONetConf conf = {
        .netdev = o->netdev.backend, .mac = o->mac, .iothread = o->iothread.backend,
        .mq = o->mq, .rx_queue_size = o->rx_queue_size, .tx_queue_size = o->tx_queue_size,
        .host_mtu = o->host_mtu, .rx_in_place = o->rx_in_place,
        .tx_poll_max_ns = o->tx_poll_max_ns, .pci = &o->pci,
    };
    if (!memcmp(&conf.mac, &unset, sizeof(unset))) {
        net_default_mac(&conf.mac);
    }
    for (unsigned bit = 0; bit < G_N_ELEMENTS(o->feature); bit++) {
        conf.features |= o->feature[bit] ? VIRTIO_BIT(bit) : 0;
    }
    return virtio_net_pci_new(buses->pci, o->pcidev.addr, &conf, errp);
}

static void virtio_net_pci_chosen_options(QEMUDevice *dev, void *options)
{
    VirtIONetPCIOptions *o = options;
    virtio_pci_chosen_conf(dev, &o->pci);
}

const DeviceTypeInfo virtio_net_pci_type = {
    .name = "virtio-net-pci",
    .alias = "virtio-net",          /* QEMU's on x86 */
    .bus = DEVICE_BUS_PCI,
    .category = DEVICE_CATEGORY_NETWORK,
    .description = "virtio network device (transitional 1af4:1000, or 1af4:1041 with disable-legacy=on)",
    DEVICE_PROPERTIES(virtio_net_pci_properties),
    .options_size = sizeof(VirtIONetPCIOptions),
    .realize = virtio_net_pci_realize,
    .chosen_options = virtio_net_pci_chosen_options,
};
