/*
 * vhost-net (hw/virtio/vhost-net.h): a virtio-net queue pair served by the
 * host kernel. Ring 0 is the receive queue and ring 1 the transmit queue,
 * both attached to the tap queue's fd (VHOST_NET_SET_BACKEND).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "hw/virtio/vhost-net.h"
#include "hw/virtio/vhost.h"
#include "net/tap.h"

#define VHOST_NET_RINGS     2       /* rx, tx: the kernel's fixed order */
#define VHOST_NET_DEV_PATH  "/dev/vhost-net"

struct VhostNet {
    VhostDev dev;
    NetClientState *nic;
    NetClientState *tap;
    bool started;
    VirtIODevice *vdev;                 /* while started */
    unsigned queues[VHOST_NET_RINGS];   /* the virtqueues started: rx, tx */
};

/* The fd to use: a dup of vhostfd= (the tap backend keeps its own), or
 * /dev/vhost-net opened. */
static int vhost_net_open_fd(NetClientState *tap, Error **errp)
{
    int given = net_tap_vhostfd(tap);
    if (given >= 0) {
        int fd = fcntl(given, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) {
            error_setg_errno(errp, errno, "vhostfd=%d", given);
        }
        return fd;
    }
    int fd = open(VHOST_NET_DEV_PATH, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        error_setg_errno(errp, errno, "cannot open %s", VHOST_NET_DEV_PATH);
    }
    return fd;
}

static VhostNet *vhost_net_open(NetClientState *nic, Error **errp)
{
    NetClientState *tap = nic->peer;
    int fd = vhost_net_open_fd(tap, errp);
    if (fd < 0) {
        return NULL;
    }
    VhostNet *vn = g_new0(VhostNet, 1);
    g_autofree char *name = g_strdup_printf("vhost-net %s", tap->name);
    if (!vhost_dev_init(&vn->dev, fd, VHOST_NET_RINGS, name, errp)) {
        g_free(vn);
        return NULL;
    }
    /* Without the tap's vnet header the kernel must add and strip it. */
    if (!net_peer_has_vnet_hdr(nic) &&
        !(vn->dev.features & VIRTIO_BIT(VHOST_UAPI_NET_F_VIRTIO_NET_HDR))) {
        error_setg(errp, "%s: the tap has no vnet header and vhost cannot add one", name);
        vhost_dev_cleanup(&vn->dev);
        g_free(vn);
        return NULL;
    }
    vn->nic = nic;
    vn->tap = tap;
    return vn;
}

bool vhost_net_create(NetClientState *nic, VhostNet **vn, Error **errp)
{
    static atomic_bool warned;
    *vn = NULL;
    NetClientState *tap = nic->peer;
    if (!tap || !net_is_tap(tap) || net_tap_vhost(tap) == NET_TAP_VHOST_OFF) {
        return true;
    }
    Error *err = NULL;
    *vn = vhost_net_open(nic, &err);
    if (*vn) {
        return true;
    }
    if (net_tap_vhost(tap) == NET_TAP_VHOST_FORCE) {
        error_setg(errp, "-netdev %s: vhostforce=on: %s", tap->name, err->msg);
        error_free(err);
        return false;
    }
    if (!atomic_exchange(&warned, true)) {
        error_report("warning: -netdev %s: vhost=on: %s; the network runs in user space",
                     tap->name, err->msg);
    }
    error_free(err);
    return true;
}

uint64_t vhost_net_get_features(const VhostNet *vn, uint64_t offered)
{
    return vn ? vhost_net_mask_features(vn->dev.features, offered) : offered;
}

EventNotifier *vhost_net_kick_notifier(VhostNet *vn, unsigned ring)
{
    g_assert(ring < VHOST_NET_RINGS);
    return &vn->dev.rings[ring].kick;
}

bool vhost_net_started(const VhostNet *vn)
{
    return vn && vn->started;
}

/* The queue as user space left it: enabled, mapped, nothing popped. */
static bool vhost_net_ring_setup(VhostNet *vn, VirtIODevice *vdev, unsigned index,
                                 EventNotifier *call, VhostRingSetup *setup, Error **errp)
{
    VirtQueue *vq = virtio_get_queue(vdev, index);
    if (!vq || !vq->enabled || !vring_is_mapped(&vq->ring)) {
        error_setg(errp, "%s: queue %u is not enabled", virtio_name(vdev), index);
        return false;
    }
    if (vq->ring.inuse) {
        error_setg(errp, "%s: queue %u has %u chains in user space", virtio_name(vdev), index,
                   vq->ring.inuse);
        return false;
    }
    *setup = (VhostRingSetup) {
        .num = vq->num, .last_avail_idx = vq->ring.last_avail_idx,
        .desc = vq->desc_addr, .avail = vq->driver_addr, .used = vq->device_addr,
        .call = call, .busyloop_us = net_tap_poll_us(vn->tap),
    };
    return true;
}

static bool vhost_net_set_backend(VhostNet *vn, int fd, Error **errp)
{
    for (unsigned i = 0; i < VHOST_NET_RINGS; i++) {
        VhostUapiVringFile backend = { .index = i, .fd = fd };
        if (ioctl(vn->dev.fd, VHOST_UAPI_NET_SET_BACKEND, &backend) < 0) {
            error_setg_errno(errp, errno, "%s: VHOST_NET_SET_BACKEND", vn->dev.name);
            return false;
        }
    }
    return true;
}

bool vhost_net_start(VhostNet *vn, VirtIODevice *vdev, unsigned rx_index, unsigned tx_index,
                     EventNotifier *calls[2], Error **errp)
{
    if (vn->started) {
        return true;
    }
    VhostRingSetup setup[VHOST_NET_RINGS];
    if (!vhost_net_ring_setup(vn, vdev, rx_index, calls[0], &setup[0], errp) ||
        !vhost_net_ring_setup(vn, vdev, tx_index, calls[1], &setup[1], errp)) {
        return false;
    }
    bool vnet_hdr = net_peer_has_vnet_hdr(vn->nic);
    uint64_t ack = vhost_net_ack_features(vn->dev.features, vdev->guest_features, vnet_hdr);
    if (!vhost_dev_start(&vn->dev, ack, setup, errp)) {
        return false;
    }
    /* The kernel passes the guest's header to the tap as it is. */
    if (vnet_hdr) {
        net_peer_set_vnet_hdr_len(vn->nic, vhost_net_hdr_len(vdev->guest_features));
    }
    net_tap_set_vhost_owned(vn->tap, true);
    if (!vhost_net_set_backend(vn, net_tap_fd(vn->tap), errp)) {
        vhost_net_set_backend(vn, VHOST_UAPI_FILE_UNBIND, NULL);
        net_tap_set_vhost_owned(vn->tap, false);
        return false;
    }
    vn->vdev = vdev;
    vn->queues[0] = rx_index;
    vn->queues[1] = tx_index;
    vn->started = true;
    /* Chains made available before the kicks reached the kernel. */
    for (unsigned i = 0; i < VHOST_NET_RINGS; i++) {
        event_notifier_set(&vn->dev.rings[i].kick);
    }
    return true;
}

/* User space goes on where the kernel stopped: it took every chain up to
 * last_avail and published every one it finished in the used index. */
static void vring_resume_after_kernel(VRing *r, uint16_t last_avail)
{
    r->last_avail_idx = last_avail;
    r->used_idx = __atomic_load_n(&r->used_hdr[1], __ATOMIC_ACQUIRE);
    /* The kernel's interrupt decisions are not known here: the next one
     * interrupts, which virtio allows. */
    r->signalled_used_valid = false;
}

void vhost_net_stop(VhostNet *vn, VirtIODevice *vdev)
{
    if (!vn || !vn->started) {
        return;
    }
    Error *err = NULL;
    if (!vhost_net_set_backend(vn, VHOST_UAPI_FILE_UNBIND, &err)) {
        error_report_err(err);
    }
    uint16_t last_avail[VHOST_NET_RINGS];
    for (unsigned i = 0; i < VHOST_NET_RINGS; i++) {
        last_avail[i] = virtio_get_queue(vdev, vn->queues[i])->ring.last_avail_idx;
    }
    vhost_dev_stop(&vn->dev, last_avail);
    for (unsigned i = 0; i < VHOST_NET_RINGS; i++) {
        VirtQueue *vq = virtio_get_queue(vdev, vn->queues[i]);
        /* A reset unmaps the rings before the device's reset op stops us. */
        if (vring_is_mapped(&vq->ring)) {
            vring_resume_after_kernel(&vq->ring, last_avail[i]);
        }
    }
    net_tap_set_vhost_owned(vn->tap, false);
    vn->started = false;
    vn->vdev = NULL;
}

void vhost_net_free(VhostNet *vn)
{
    if (!vn) {
        return;
    }
    vhost_net_stop(vn, vn->vdev);
    vhost_dev_cleanup(&vn->dev);
    g_free(vn);
}
