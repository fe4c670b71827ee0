/*
 * virtio-net's receive path: a frame from the peer, through the receive
 * filter, into the driver's buffers of the pair's receiveq, behind the
 * header the driver expects.
 *
 * Threads: the peer calls virtio_net_receive on the device's context
 * with no lock held; it takes the pair's lock. It never waits: with no
 * buffers (or, with MRG_RXBUF, too few for the whole frame) it asks the
 * driver for a kick and returns 0, the peer keeps the frame and stops
 * sending, and the kick (virtio_net_rx_wake) tells it to send again.
 *
 * Mergeable buffers: a frame may span several chains; num_buffers in the
 * first says how many, and they are published with one used index store
 * (virtqueue_push_batch), because Linux drops a frame whose buffers it
 * finds only in part. Chains taken for a frame that did not fit are kept
 * (rx_stash) for the next attempt: the ring has no way to give them back.
 *
 * Filled in place (virtio_net_receive_filled): a tap whose header is the
 * guest's reads the frame straight into chains lent for the largest
 * frame it can give, so the bytes cross the host's memory once; the
 * chains it did not need go back to the stash.
 */
#include <stddef.h>
#include <string.h>
#include <glib.h>
#include "hw/virtio/virtio-net-internal.h"
#include "net/vnet-hdr.h"
#include "qemu/iov.h"
#include "qemu/log.h"

/* The most pieces a frame filled in place may be read into: the
 * kernel's limit on one readv (UIO_MAXIOV). */
#define VIRTIO_NET_RX_FILL_IOV  1024

/* Can the driver take frames on q's receiveq now? */
static bool virtio_net_rx_ready(VirtIONetQueue *q)
{
    return virtio_queue_runnable(q->rx_vq) && q->pair < q->n->curr_pairs;
}

void virtio_net_rx_wake(VirtIONetQueue *q)
{
    if (q->rx_waiting && virtio_net_rx_ready(q)) {
        q->rx_waiting = false;
        net_client_receive_ready(q->nc);
    }
}

void virtio_net_rx_reset(VirtIONetQueue *q)
{
    VirtQueueElement *elem;
    while ((elem = g_queue_pop_head(&q->rx_stash))) {
        g_free(elem);
    }
}

/* The next chain: a stashed one first. NULL: the ring is empty, or the
 * driver broke the rules. */
static VirtQueueElement *virtio_net_rx_take(VirtIONetQueue *q)
{
    VirtQueueElement *elem = g_queue_pop_head(&q->rx_stash);
    if (elem) {
        return elem;
    }
    return virtio_net_pop(q->rx_vq);
}

/* Give chains back to the stash, in their order, ahead of those there. */
static void virtio_net_rx_unstash(VirtIONetQueue *q, VirtQueueElement **elems, unsigned n)
{
    while (n > 0) {
        g_queue_push_head(&q->rx_stash, elems[--n]);
    }
}

typedef enum VirtIONetRxBuffers {
    VIRTIO_NET_RX_BUFFERS_OK,
    VIRTIO_NET_RX_BUFFERS_NONE,     /* not enough yet: wait for the driver */
    VIRTIO_NET_RX_BUFFERS_TOO_SMALL,/* can never hold it: drop the frame */
    VIRTIO_NET_RX_BUFFERS_BROKEN,   /* NEEDS_RESET */
} VirtIONetRxBuffers;

/*
 * Take chains until they hold total bytes: one chain without
 * MRG_RXBUF, as many as needed with it (at most the ring's size). On
 * anything but OK the chains taken are stashed again.
 */
static VirtIONetRxBuffers virtio_net_rx_buffers(VirtIONetQueue *q, size_t total,
                                                VirtQueueElement **elems, unsigned *count)
{
    VirtIONet *n = q->n;
    unsigned max = virtio_has_feature(&n->vdev, VIRTIO_NET_F_MRG_RXBUF) ? q->rx_vq->num : 1;
    size_t room = 0;
    unsigned got = 0;
    while (room < total && got < max) {
        VirtQueueElement *elem = virtio_net_rx_take(q);
        if (!elem) {
            virtio_net_rx_unstash(q, elems, got);
            return n->vdev.broken ? VIRTIO_NET_RX_BUFFERS_BROKEN : VIRTIO_NET_RX_BUFFERS_NONE;
        }
        if (elem->out_num || elem->in_len < virtio_net_guest_hdr_len(n)) {
            virtio_error(&n->vdev, "receive chain of %zu readable and %zu writable bytes "
                         "cannot hold a header", elem->out_len, elem->in_len);
            g_free(elem);
            virtio_net_rx_unstash(q, elems, got);
            return VIRTIO_NET_RX_BUFFERS_BROKEN;
        }
        elems[got++] = elem;
        room += elem->in_len;
    }
    if (room < total) {
        virtio_net_rx_unstash(q, elems, got);
        return VIRTIO_NET_RX_BUFFERS_TOO_SMALL;
    }
    *count = got;
    return VIRTIO_NET_RX_BUFFERS_OK;
}

/* Copy len bytes of src from src_off into the chain's writable buffers. */
static void virtio_net_rx_copy(VirtQueueElement *elem, const struct iovec *src, unsigned nsrc,
                               size_t src_off, size_t len)
{
    size_t done = 0;
    for (unsigned i = 0; i < elem->in_num && done < len; i++) {
        size_t piece = MIN(elem->in_sg[i].iov_len, len - done);
        iov_to_buf(src, nsrc, src_off + done, elem->in_sg[i].iov_base, piece);
        done += piece;
    }
}

/* Is this frame more than the MTU the device announced lets in? */
static bool virtio_net_rx_over_mtu(VirtIONet *n, const VirtIONetHdr *hdr, size_t frame_len)
{
    return virtio_has_feature(&n->vdev, VIRTIO_NET_F_MTU) &&
           (hdr->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) == VIRTIO_NET_HDR_GSO_NONE &&
           frame_len > (size_t)n->mtu + ETH_HLEN + 4;
}

/*
 * Does the frame of size bytes (the peer's header, then the Ethernet
 * frame) in iov go to the driver? Reads the peer's header into hdr (the
 * guest's format when there is one, else zeroes). The bytes are read
 * once, into copies: with a frame filled in place the driver may change
 * them under us, and nothing here may depend on them twice.
 */
static bool virtio_net_rx_accepts(VirtIONet *n, const struct iovec *iov, int iovcnt,
                                  size_t size, VirtIONetHdr *hdr)
{
    if (size < n->host_hdr_len + ETH_HLEN || size > n->host_hdr_len + VIRTIO_NET_MAX_FRAME) {
        return false;   /* not an Ethernet frame */
    }
    /* Enough of the Ethernet header for the filter (a VLAN tag included). */
    *hdr = (VirtIONetHdr) { 0 };
    iov_to_buf(iov, iovcnt, 0, hdr, n->host_hdr_len);
    uint8_t eth[ETH_HLEN + 4];
    size_t eth_len = iov_to_buf(iov, iovcnt, n->host_hdr_len, eth, sizeof(eth));
    return virtio_net_filter_accepts(n, eth, eth_len) &&
           !virtio_net_rx_over_mtu(n, hdr, size - n->host_hdr_len);
}

/* How many of the count chains total bytes fill, and each one's share. */
static unsigned virtio_net_rx_shares(VirtQueueElement **elems, unsigned count, size_t total,
                                     uint32_t *lens)
{
    size_t off = 0;
    unsigned used = 0;
    while (used < count && off < total) {
        lens[used] = MIN(elems[used]->in_len, total - off);
        off += lens[used++];
    }
    return used;
}

/* Hand the first count chains to the driver, with one used index store
 * and at most one interrupt. */
static void virtio_net_rx_publish(VirtIONetQueue *q, VirtQueueElement **elems,
                                  const uint32_t *lens, unsigned count)
{
    virtqueue_push_batch(q->rx_vq, elems, lens, count);
    virtio_queue_notify_pushed(q->rx_vq);
}

/* With the pair's lock held: the frame's length once taken (delivered or
 * dropped), 0 if the peer must keep it. */
static ssize_t virtio_net_rx_frame(VirtIONetQueue *q, const struct iovec *iov, int iovcnt,
                                   size_t size)
{
    VirtIONet *n = q->n;
    if (q->vhost_started) {
        return size;    /* vhost owns the queue: nothing comes this way */
    }
    if (!virtio_net_rx_ready(q)) {
        q->rx_waiting = true;
        return 0;
    }
    VirtIONetHdr hdr;
    if (!virtio_net_rx_accepts(n, iov, iovcnt, size, &hdr)) {
        return size;
    }
    size_t hdr_len = virtio_net_guest_hdr_len(n);
    size_t frame_len = size - n->host_hdr_len;
    VirtQueueElement **elems = g_newa(VirtQueueElement *, q->rx_vq->num);
    unsigned count = 0;
    switch (virtio_net_rx_buffers(q, hdr_len + frame_len, elems, &count)) {
    case VIRTIO_NET_RX_BUFFERS_OK:
        /* Buffers are there: no kicks wanted until they run out. */
        virtqueue_set_notification(q->rx_vq, false);
        break;
    case VIRTIO_NET_RX_BUFFERS_NONE:
        q->rx_waiting = true;
        return 0;
    case VIRTIO_NET_RX_BUFFERS_TOO_SMALL:
        qemu_log_mask(LOG_GUEST_ERROR, "%s: receive buffers too small for a %zu-byte frame: "
                      "dropped\n", virtio_name(&n->vdev), frame_len);
        return size;
    case VIRTIO_NET_RX_BUFFERS_BROKEN:
        return size;
    }
    /* The stream the chains take in turn: the guest's header, the frame. */
    hdr.num_buffers = count;
    struct iovec *src = g_newa(struct iovec, iovcnt + 1);
    src[0] = (struct iovec) { .iov_base = &hdr, .iov_len = hdr_len };
    unsigned nsrc = 1 + iov_slice(iov, iovcnt, n->host_hdr_len, frame_len, src + 1, iovcnt);
    uint32_t *lens = g_newa(uint32_t, count);
    virtio_net_rx_shares(elems, count, hdr_len + frame_len, lens);
    size_t off = 0;
    for (unsigned i = 0; i < count; i++) {
        virtio_net_rx_copy(elems[i], src, nsrc, off, lens[i]);
        off += lens[i];
    }
    virtio_net_rx_publish(q, elems, lens, count);
    return size;
}

/* The writable buffers of the count chains as one vector (at most max
 * pieces): false if they need more. */
static bool virtio_net_rx_gather(VirtQueueElement **elems, unsigned count, struct iovec *iov,
                                 unsigned max, unsigned *niov)
{
    unsigned n = 0;
    for (unsigned i = 0; i < count; i++) {
        if (elems[i]->in_num > max - n) {
            return false;
        }
        memcpy(iov + n, elems[i]->in_sg, elems[i]->in_num * sizeof(*iov));
        n += elems[i]->in_num;
    }
    *niov = n;
    return true;
}

/*
 * With the pair's lock held: lend the peer chains for a frame of up to
 * max bytes and let fill write it (NetClientInfo.receive_filled). The
 * peer's header lands where the guest's goes, so this needs the two to be
 * one length; num_buffers, which the peer does not write (a tap skips the
 * last two bytes of a 12-byte header), is filled in afterwards. Chains
 * the frame did not need, or a frame not taken, go back to the stash in
 * their order, for the next frame.
 */
static ssize_t virtio_net_rx_filled(VirtIONetQueue *q, size_t max, NetFillFunc fill,
                                    void *opaque)
{
    VirtIONet *n = q->n;
    size_t hdr_len = virtio_net_guest_hdr_len(n);
    if (!n->rx_in_place || q->vhost_started || !virtio_net_rx_ready(q) ||
        n->host_hdr_len != hdr_len) {
        return NET_FILL_DECLINED;
    }
    VirtQueueElement **elems = g_newa(VirtQueueElement *, q->rx_vq->num);
    unsigned count = 0;
    if (virtio_net_rx_buffers(q, max, elems, &count) != VIRTIO_NET_RX_BUFFERS_OK) {
        return NET_FILL_DECLINED;   /* the copying path waits, drops or breaks */
    }
    struct iovec *iov = g_newa(struct iovec, VIRTIO_NET_RX_FILL_IOV);
    unsigned niov;
    if (!virtio_net_rx_gather(elems, count, iov, VIRTIO_NET_RX_FILL_IOV, &niov)) {
        virtio_net_rx_unstash(q, elems, count);
        return NET_FILL_DECLINED;
    }
    ssize_t size = fill(opaque, iov, niov);
    VirtIONetHdr hdr;
    /* Longer than the largest frame the peer said it could give: a
     * peer's bug, the frame dropped rather than trusted. */
    if (size <= 0 || (size_t)size > max || !virtio_net_rx_accepts(n, iov, niov, size, &hdr)) {
        virtio_net_rx_unstash(q, elems, count);
        return size;
    }
    /* Buffers are there: no kicks wanted until they run out. */
    virtqueue_set_notification(q->rx_vq, false);
    uint32_t *lens = g_newa(uint32_t, count);
    unsigned used = virtio_net_rx_shares(elems, count, size, lens);
    if (hdr_len == sizeof(hdr)) {
        hdr.num_buffers = used;
        iov_from_buf(iov, niov, offsetof(VirtIONetHdr, num_buffers), &hdr.num_buffers,
                     sizeof(hdr.num_buffers));
    }
    virtio_net_rx_unstash(q, elems + used, count - used);
    virtio_net_rx_publish(q, elems, lens, used);
    return size;
}

ssize_t virtio_net_receive_filled(NetClientState *nc, size_t max, NetFillFunc fill, void *opaque)
{
    VirtIONetQueue *q = nc->opaque;
    virtio_queue_lock(q->rx_vq);
    ssize_t ret = virtio_net_rx_filled(q, max, fill, opaque);
    virtio_queue_unlock(q->rx_vq);
    return ret;
}

ssize_t virtio_net_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    VirtIONetQueue *q = nc->opaque;
    size_t size = iov_size(iov, iovcnt);
    virtio_queue_lock(q->rx_vq);
    ssize_t ret = virtio_net_rx_frame(q, iov, iovcnt, size);
    virtio_queue_unlock(q->rx_vq);
    return ret;
}
