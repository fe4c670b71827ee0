/*
 * virtio-net's transmit path: a chain of the transmitq is a header and a
 * frame; the frame goes to the peer with net_send.
 *
 * Threads: a kick is served on the device's context with the pair's lock
 * held (virtio-pci takes the queue's lock). As QEMU's default tx=bh, it
 * only turns further kicks off and schedules a bottom half on the same
 * context, which takes the lock again and sends: what the driver adds
 * meanwhile goes out in the same pass without a kick of its own. A pass
 * sends at most VIRTIO_NET_TX_BURST frames; the pair's receive path, or a
 * reset, gets the lock between passes. Other pairs never wait for this
 * one. When the peer refuses a frame (net_send returns 0) the chain is
 * kept, kicks stay off, and the peer's send_ready resumes the queue.
 *
 * With a peer that carries vnet headers (a tap) the chain goes out as it
 * is, header and all: the guest's and the peer's header lengths are the
 * same. Without one the header is dropped, and a checksum the driver left
 * to the device (NEEDS_CSUM: CSUM is offered) is completed here.
 */
#include <string.h>
#include <glib.h>
#include "hw/virtio/virtio-net-internal.h"
#include "net/checksum.h"
#include "net/vnet-hdr.h"
#include "qemu/iov.h"
#include "qemu/log.h"
#include "qemu/timer.h"

typedef enum VirtIONetTxResult {
    VIRTIO_NET_TX_DONE,         /* sent, or dropped: return the chain */
    VIRTIO_NET_TX_BLOCKED,      /* the peer refused it: keep the chain */
    VIRTIO_NET_TX_BROKEN,       /* the driver broke the rules: NEEDS_RESET */
} VirtIONetTxResult;

/* A GSO type the negotiated features allow. */
static bool virtio_net_tx_gso_allowed(VirtIONet *n, uint8_t gso_type)
{
    VirtIODevice *vdev = &n->vdev;
    if ((gso_type & VIRTIO_NET_HDR_GSO_ECN) && !virtio_has_feature(vdev, VIRTIO_NET_F_HOST_ECN)) {
        return false;
    }
    switch (gso_type & ~VIRTIO_NET_HDR_GSO_ECN) {
    case VIRTIO_NET_HDR_GSO_TCPV4:
        return virtio_has_feature(vdev, VIRTIO_NET_F_HOST_TSO4);
    case VIRTIO_NET_HDR_GSO_TCPV6:
        return virtio_has_feature(vdev, VIRTIO_NET_F_HOST_TSO6);
    default:
        return false;   /* UDP (UFO is never offered) and unknown types */
    }
}

/*
 * The driver's requirements on the header (virtio 1.x, "Packet
 * Transmission"): a checksum request only with CSUM and inside the frame,
 * segmentation only as negotiated, with a segment size and a checksum
 * request. A header that breaks them is the driver's bug: NEEDS_RESET.
 */
static bool virtio_net_tx_hdr_ok(VirtIONet *n, const VirtIONetHdr *hdr, size_t frame_len)
{
    VirtIODevice *vdev = &n->vdev;
    if (hdr->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
        if (!virtio_has_feature(vdev, VIRTIO_NET_F_CSUM)) {
            virtio_error(vdev, "transmit header asks for a checksum without CSUM");
            return false;
        }
        if ((size_t)hdr->csum_start + hdr->csum_offset + 2 > frame_len) {
            virtio_error(vdev, "transmit checksum at %u + %u is past the %zu-byte frame",
                         hdr->csum_start, hdr->csum_offset, frame_len);
            return false;
        }
    }
    if (hdr->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
        if (!virtio_net_tx_gso_allowed(n, hdr->gso_type)) {
            virtio_error(vdev, "transmit GSO type 0x%x was not negotiated", hdr->gso_type);
            return false;
        }
        if (hdr->gso_size == 0 || !(hdr->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
            virtio_error(vdev, "transmit GSO type 0x%x with segment size %u and flags 0x%x",
                         hdr->gso_type, hdr->gso_size, hdr->flags);
            return false;
        }
    }
    return true;
}

/* To a peer without vnet headers: the frame alone, its checksum completed
 * in a copy (the chain is the driver's, readable only). */
static ssize_t virtio_net_tx_send_plain(VirtIONetQueue *q, VirtQueueElement *elem,
                                        const VirtIONetHdr *hdr, size_t hdr_len,
                                        size_t frame_len)
{
    if (hdr->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
        iov_to_buf(elem->out_sg, elem->out_num, hdr_len, q->tx_buf, frame_len);
        /* Checked by virtio_net_tx_hdr_ok: it cannot fail. */
        net_checksum_insert(q->tx_buf, frame_len, hdr->csum_start, frame_len,
                            (size_t)hdr->csum_start + hdr->csum_offset);
        return net_send_buf(q->nc, q->tx_buf, frame_len);
    }
    unsigned niov = iov_slice(elem->out_sg, elem->out_num, hdr_len, frame_len, q->tx_iov,
                              VIRTQUEUE_MAX_IOV);
    return net_send(q->nc, q->tx_iov, niov);
}

static VirtIONetTxResult virtio_net_tx_one(VirtIONetQueue *q, VirtQueueElement *elem)
{
    VirtIONet *n = q->n;
    size_t hdr_len = virtio_net_guest_hdr_len(n);
    if (elem->in_num || elem->out_len < hdr_len) {
        virtio_error(&n->vdev, "transmit chain of %zu readable and %zu writable bytes has no "
                     "header or writable buffers", elem->out_len, elem->in_len);
        return VIRTIO_NET_TX_BROKEN;
    }
    VirtIONetHdr hdr = { 0 };
    iov_to_buf(elem->out_sg, elem->out_num, 0, &hdr, hdr_len);
    size_t frame_len = elem->out_len - hdr_len;
    if (!virtio_net_tx_hdr_ok(n, &hdr, frame_len)) {
        return VIRTIO_NET_TX_BROKEN;
    }
    if (frame_len < ETH_HLEN || frame_len > VIRTIO_NET_MAX_FRAME) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: transmit frame of %zu bytes is no Ethernet "
                      "frame: dropped\n", virtio_name(&n->vdev), frame_len);
        return VIRTIO_NET_TX_DONE;
    }
    ssize_t ret;
    if (n->host_hdr_len) {
        ret = net_send(q->nc, elem->out_sg, elem->out_num);
    } else {
        ret = virtio_net_tx_send_plain(q, elem, &hdr, hdr_len, frame_len);
    }
    return ret == 0 ? VIRTIO_NET_TX_BLOCKED : VIRTIO_NET_TX_DONE;
}

/* Can the queue run in user space now? */
static bool virtio_net_tx_runnable(VirtIONetQueue *q)
{
    return !q->vhost_started && virtio_queue_runnable(q->tx_vq);
}

/* Send up to a burst of chains with notifications off; the number sent,
 * or -1 when the queue stopped (the peer refused a chain, or the driver
 * broke the rules). */
static int virtio_net_tx_flush(VirtIONetQueue *q)
{
    int sent = 0;
    while (sent < VIRTIO_NET_TX_BURST) {
        VirtQueueElement *elem = q->tx_elem ? q->tx_elem : virtqueue_pop(q->tx_vq);
        q->tx_elem = NULL;
        if (!elem) {
            break;
        }
        VirtIONetTxResult res = virtio_net_tx_one(q, elem);
        if (res == VIRTIO_NET_TX_BLOCKED) {
            /* Kicks stay off: send_ready resumes the queue. */
            q->tx_elem = elem;
            return -1;
        }
        if (res == VIRTIO_NET_TX_BROKEN) {
            g_free(elem);
            return -1;
        }
        /* Each chain's interrupt is due as soon as it is used, not after
         * the pass: a driver that bounds what it has in flight (Linux's
         * TCP small queues) sends its next frame only when earlier ones
         * come back, so the pass's later frames must not hold them up. */
        virtqueue_push(q->tx_vq, elem, 0);
        virtio_queue_notify_pushed(q->tx_vq);
        sent++;
    }
    return sent;
}

/*
 * Transmit polling. Once a pass empties the ring, the driver's next frame
 * often follows within microseconds: its TCP was waiting for the
 * completion the pass just returned. Watching the available index for a
 * short window before turning kicks back on saves that frame its kick:
 * the guest's exit to the host kernel and this context's wake-up.
 *
 * The watch drops the pair's lock (with device-lock=off that is the global
 * lock, which every vCPU may need) and reads only the index, through an
 * address that stays valid whatever the driver does; a pass under the
 * lock checks what it saw.
 *
 * The window adapts as QEMU's I/O threads' polling (poll-max-ns): when a
 * kick comes within x-tx-poll-ns of the ring emptying, a longer watch
 * would have caught its chain, so the window doubles (from 4 us, up to
 * x-tx-poll-ns); when it comes later, the window drops to 0, so that a
 * quiet or slow driver costs nothing. A watch that catches a chain leaves
 * the window as it is.
 */
static bool virtio_net_tx_poll(VirtIONetQueue *q)
{
    VirtQueueAvailWatch watch;
    if (q->tx_poll_ns == 0 || !virtqueue_avail_watch(q->tx_vq, &watch)) {
        return false;
    }
    int64_t until = clock_get_ns() + q->tx_poll_ns;
    bool moved;
    virtio_queue_unlock(q->tx_vq);
    while (!(moved = virtqueue_avail_moved(&watch)) && clock_get_ns() < until) {
        __builtin_ia32_pause();
    }
    virtio_queue_lock(q->tx_vq);
    return moved;
}

/* A kick came: size the window by how long the ring was empty. */
static void virtio_net_tx_poll_adapt(VirtIONetQueue *q)
{
    if (q->tx_empty_since == 0) {
        return;
    }
    int64_t empty_ns = clock_get_ns() - q->tx_empty_since;
    int64_t max = q->n->tx_poll_max_ns;
    q->tx_empty_since = 0;
    if (empty_ns > max) {
        q->tx_poll_ns = 0;
    } else if (q->tx_poll_ns < max) {
        q->tx_poll_ns = MIN(q->tx_poll_ns ? 2 * q->tx_poll_ns : VIRTIO_NET_TX_POLL_START_NS, max);
    }
}

/* No kicks until the bottom half's pass, which sends what the driver added
 * meanwhile. */
static void virtio_net_tx_defer(VirtIONetQueue *q)
{
    virtqueue_set_notification(q->tx_vq, false);
    qemu_bh_schedule(q->tx_bh);
}

/*
 * One pass, with the pair's lock held. Kicks stay off while the driver is
 * still adding chains: a full burst, or chains found after kicks were
 * turned back on, leave the next pass to the bottom half, so the context
 * serves its other sources (the peer's frames into the guest) in between
 * and the driver fills the ring meanwhile without a kick. Only a pass
 * that leaves the ring empty turns kicks on.
 */
static void virtio_net_tx_run(VirtIONetQueue *q)
{
    if (!virtio_net_tx_runnable(q)) {
        return;
    }
    q->tx_empty_since = 0;
    virtqueue_set_notification(q->tx_vq, false);
    int sent = virtio_net_tx_flush(q);
    if (sent == VIRTIO_NET_TX_BURST) {
        qemu_bh_schedule(q->tx_bh);     /* kicks are still off */
        return;
    }
    if (sent < 0) {
        return;
    }
    int64_t empty_since = clock_get_ns();
    if (virtio_net_tx_poll(q)) {
        qemu_bh_schedule(q->tx_bh);     /* kicks are still off */
        return;
    }
    if (!virtio_net_tx_runnable(q)) {
        return;                         /* reset while the watch ran */
    }
    virtqueue_set_notification(q->tx_vq, true);
    q->tx_empty_since = empty_since;
    if (virtqueue_has_avail(q->tx_vq)) {
        virtio_net_tx_defer(q);
    }
}

/* A kick only turns kicks off and leaves the sending to the bottom half
 * (as QEMU's default tx=bh does): what the driver adds until the pass
 * runs goes out in the same pass, for no further kick. */
void virtio_net_tx_kick(VirtIONetQueue *q)
{
    virtio_net_tx_poll_adapt(q);
    /* A chain the peer refused goes first, when the peer says so. */
    if (!q->tx_elem && virtio_net_tx_runnable(q)) {
        virtio_net_tx_defer(q);
    }
}

static void virtio_net_tx_run_locked(VirtIONetQueue *q)
{
    virtio_queue_lock(q->tx_vq);
    virtio_net_tx_run(q);
    virtio_queue_unlock(q->tx_vq);
}

void virtio_net_tx_resume(NetClientState *nc)
{
    virtio_net_tx_run_locked(nc->opaque);
}

void virtio_net_tx_bh(void *opaque)
{
    virtio_net_tx_run_locked(opaque);
}

void virtio_net_tx_reset(VirtIONetQueue *q)
{
    g_free(q->tx_elem);
    q->tx_elem = NULL;
    q->tx_poll_ns = 0;
    q->tx_empty_since = 0;
}
