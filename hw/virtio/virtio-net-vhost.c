/*
 * virtio-net's side of vhost-net (include/hw/virtio/virtio-net.h, "The
 * vhost-net seam"): which pairs the kernel serves, handed over at
 * DRIVER_OK and taken back at reset. Device lock held, except at realize.
 */
#include <glib.h>
#include "hw/virtio/virtio-net-internal.h"
#include "hw/virtio/vhost-net.h"
#include "hw/virtio/virtio-pci.h"
#include "net/vnet-hdr.h"

static const VirtIONetVhostOps vhost_net_ops = {
    .create = vhost_net_create, .get_features = vhost_net_get_features,
    .start = vhost_net_start, .kick_notifier = vhost_net_kick_notifier,
    .stop = vhost_net_stop, .free = vhost_net_free,
    .redirect_kicks = virtio_pci_redirect_kicks,
    .queue_call_notifier = virtio_pci_queue_call_notifier,
};

static const VirtIONetVhostOps *vhost_ops = &vhost_net_ops;

void virtio_net_set_vhost_ops(const VirtIONetVhostOps *ops)
{
    vhost_ops = ops ? ops : &vhost_net_ops;
}

bool virtio_net_vhost_init(VirtIONet *n, Error **errp)
{
    for (unsigned i = 0; i < n->max_pairs; i++) {
        if (!vhost_ops->create(n->queues[i].nc, &n->queues[i].vhost, errp)) {
            return false;
        }
    }
    return true;
}

uint64_t virtio_net_vhost_features(VirtIONet *n, uint64_t offered)
{
    VhostNet *vn = n->queues[0].vhost;
    return vn ? vhost_ops->get_features(vn, offered) : offered;
}

/* Pair q to the kernel; false leaves it to user space. */
static bool virtio_net_vhost_start_pair(VirtIONet *n, VirtIONetQueue *q)
{
    VirtIOPCIProxy *proxy = n->vdev.transport;
    unsigned rx = q->rx_vq->index, tx = q->tx_vq->index;
    EventNotifier *calls[2] = {
        vhost_ops->queue_call_notifier(proxy, rx), vhost_ops->queue_call_notifier(proxy, tx),
    };
    if (!calls[0] || !calls[1]) {
        return false;   /* INTx, or no vector: the ISR is user space's */
    }
    Error *err = NULL;
    if (!vhost_ops->start(q->vhost, &n->vdev, rx, tx, calls, &err)) {
        error_prepend(&err, "%s: queue pair %u stays in user space: ", virtio_name(&n->vdev),
                      q->pair);
        error_report_err(err);
        return false;
    }
    vhost_ops->redirect_kicks(proxy, rx, vhost_ops->kick_notifier(q->vhost, 0));
    vhost_ops->redirect_kicks(proxy, tx, vhost_ops->kick_notifier(q->vhost, 1));
    return true;
}

void virtio_net_vhost_start(VirtIONet *n)
{
    for (unsigned i = 0; i < n->max_pairs; i++) {
        VirtIONetQueue *q = &n->queues[i];
        q->vhost_started = q->vhost && virtio_net_vhost_start_pair(n, q);
    }
}

bool virtio_net_vhost_stop(VirtIONet *n)
{
    VirtIOPCIProxy *proxy = n->vdev.transport;
    bool stopped = false;
    for (unsigned i = 0; i < n->max_pairs; i++) {
        VirtIONetQueue *q = &n->queues[i];
        if (q->vhost_started) {
            vhost_ops->redirect_kicks(proxy, q->rx_vq->index, NULL);
            vhost_ops->redirect_kicks(proxy, q->tx_vq->index, NULL);
            vhost_ops->stop(q->vhost, &n->vdev);
            q->vhost_started = false;
            stopped = true;
        }
    }
    return stopped;
}

void virtio_net_vhost_free(VirtIONet *n)
{
    for (unsigned i = 0; i < n->max_pairs; i++) {
        if (n->queues[i].vhost) {
            vhost_ops->free(n->queues[i].vhost);
        }
    }
}
