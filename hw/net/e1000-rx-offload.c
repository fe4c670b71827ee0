/*
 * The e1000 on a tap with a vnet header: the host's offloads done in the
 * device. The 82540EM has no receive offload a host could use, yet most
 * of what a busy host to guest stream costs is in the host: its TCP stack
 * cuts every 64 KiB send into 44 frames for a tap that cannot take more,
 * and each frame is then one read, one wake-up and one pass of the main
 * loop here. So the e1000 asks its tap for virtio-net's header with the
 * checksum and TSO4/TSO6 offloads (QEMU's e1000 does not), and does that
 * work as it receives:
 *  - a frame whose header says NEEDS_CSUM gets its checksum stored at
 *    csum_start + csum_offset;
 *  - a GSO packet (TCPV4, TCPV6) is cut into frames of gso_size bytes of
 *    payload, each with its IP length and id, TCP sequence and flags and
 *    both checksums computed from scratch, stored in the ring one after
 *    the other as if they had come off the wire (filters, VLAN, RXCSUM,
 *    interrupts: e1000_rx_put);
 *  - frames it sends carry a header of zeros (no offload asked), but for
 *    TSO sends, which go to the host whole (e1000-tx.c,
 *    e1000_tx_gso_prepare).
 * The guest sees the frames the host would have cut: Linux's GSO also
 * numbers the IPv4 ids up from the packet's and keeps CWR on the first
 * segment only.
 *
 * Flow control: a packet none of whose frames fits the ring is refused as
 * any frame is (the tap keeps it). One that fits partway is taken: its
 * remaining frames wait in rx_gso.buf, every frame from the tap is refused
 * meanwhile, and the RDTs that give buffers back resume it on ctx
 * (rx_gso_bh); once it is all in, the tap hears it may send again.
 *
 * The header is host input, checked as strictly as the guest's
 * descriptors: an unknown GSO type (UDP: never offered), a NEEDS_CSUM
 * range beyond the frame, GSO without its checksum flag, headers that are
 * not TCP over IPv4/IPv6 as the GSO type says, an MSS of 0 or frames
 * larger than the NIC's 16 KiB: the packet is dropped, logged with
 * -d guest_errors (the category for what the VMM refuses of its inputs).
 */
#include <string.h>
#include <glib.h>
#include "e1000-internal.h"
#include "net/checksum.h"
#include "net/vnet-hdr.h"
#include "qemu/iov.h"
#include "qemu/log.h"

#define VNET_HDR_LEN        VIRTIO_NET_HDR_LEN_SHORT
#define TCP_FLAGS           13
#define TCP_FLAG_CWR        0x80
/* Enough of a packet's start for every header the segments copy: Ethernet
 * with a VLAN tag, IPv4 with options or IPv6, TCP with options. */
#define GSO_HEADERS_MAX     256

static void e1000_rx_gso_bh(void *opaque);

void e1000_rx_offload_init(E1000State *s, bool wanted)
{
    if (!wanted || !net_peer_has_vnet_hdr(s->nc)) {
        return;
    }
    /* Set before the first frame: realize runs before the main loop
     * polls the tap. */
    net_peer_set_vnet_hdr_len(s->nc, VNET_HDR_LEN);
    net_peer_set_offload(s->nc, &(NetOffloads) { .csum = true, .tso4 = true, .tso6 = true });
    s->host_offloads = true;
    s->rx_gso.buf = g_malloc(E1000_RX_MAX_GSO_PACKET);
    s->rx_gso_bh = qemu_bh_new(s->ctx, e1000_rx_gso_bh, s);
}

void e1000_rx_offload_reset(E1000State *s)
{
    s->rx_gso.pending = false;
}

/* Store the packet's segments from rx_gso.next on, reading it from iov
 * after skip bytes. True once every one is stored (or dropped as the wire
 * drops frames); false: no room for segment rx_gso.next. */
static bool e1000_rx_gso_put(E1000State *s, const struct iovec *iov, int iovcnt, size_t skip)
{
    E1000RxGso *g = &s->rx_gso;
    size_t hdr = g->h.hdr_len, payload = g->len - hdr;
    unsigned nsegs = payload ? (payload + g->mss - 1) / g->mss : 1;
    for (; g->next < nsegs; g->next++) {
        size_t off = (size_t)g->next * g->mss, take = MIN((size_t)g->mss, payload - off);
        uint8_t *seg = s->rx_frame;
        iov_to_buf(iov, iovcnt, skip, seg, hdr);
        iov_to_buf(iov, iovcnt, skip + hdr + off, seg + hdr, take);
        net_tcp_segment_fields(seg, hdr + take, &g->h, g->next, off, g->next + 1 == nsegs);
        if (g->next) {
            seg[g->h.l4 + TCP_FLAGS] &= ~TCP_FLAG_CWR;      /* as the host's GSO does */
        }
        net_tcp_fill_checksums(seg, hdr + take, &g->h);
        if (!e1000_rx_put(s, hdr + take, true)) {
            return false;
        }
    }
    return true;
}

/* On ctx, as receive: the coalesced ring is replayed first for the same
 * reason (e1000_receive), so the packet meets every buffer given back. */
static void e1000_rx_gso_bh(void *opaque)
{
    E1000State *s = opaque;
    bool tell_peer = false;
    if (s->coalesced_mmio) {
        memory_coalesced_drain();
    }
    device_lock(&s->pci.qdev);
    if (s->rx_gso.pending) {
        struct iovec iov = { .iov_base = s->rx_gso.buf, .iov_len = s->rx_gso.len };
        if (e1000_rx_gso_put(s, &iov, 1, 0)) {
            s->rx_gso.pending = false;
            tell_peer = s->rx_blocked;
            s->rx_blocked = false;
        }
    }
    device_unlock(&s->pci.qdev);
    if (tell_peer) {
        net_client_receive_ready(s->nc);
    }
}

bool e1000_rx_gso_resume(E1000State *s)
{
    if (!s->rx_gso.pending) {
        return false;
    }
    qemu_bh_schedule(s->rx_gso_bh);
    return true;
}

/* A GSO packet of len bytes after the header in iov. */
static ssize_t e1000_rx_gso(E1000State *s, const struct iovec *iov, int iovcnt, size_t size,
                            uint8_t gso_type, uint16_t mss)
{
    size_t len = size - VNET_HDR_LEN;
    uint8_t head[GSO_HEADERS_MAX];
    size_t head_len = iov_to_buf(iov, iovcnt, VNET_HDR_LEN, head, MIN(len, sizeof(head)));
    NetTcpHeaders h;
    const char *why = NULL;
    if (net_tcp_find_headers(head, head_len, gso_type == VIRTIO_NET_HDR_GSO_TCPV4, &h, &why)) {
        if (!mss) {
            why = "gso_size 0";
        } else if (h.hdr_len + mss > E1000_RX_MAX_FRAME) {
            why = "frames larger than 16 KiB";
        } else if (len > E1000_RX_MAX_GSO_PACKET) {
            why = "a packet larger than 68 KiB";
        }
    }
    if (why) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: the host's GSO packet (%zu bytes, gso_size %u) "
                      "has %s; dropped\n", len, mss, why);
        return size;
    }
    E1000RxGso *g = &s->rx_gso;
    *g = (E1000RxGso) { .h = h, .len = len, .mss = mss, .buf = g->buf };
    if (e1000_rx_gso_put(s, iov, iovcnt, VNET_HDR_LEN)) {
        return size;
    }
    if (!g->next) {
        return 0;               /* nothing stored: the tap keeps it */
    }
    iov_to_buf(iov, iovcnt, VNET_HDR_LEN, g->buf, len);
    g->pending = true;
    return size;
}

ssize_t e1000_rx_offloaded(E1000State *s, const struct iovec *iov, int iovcnt, size_t size)
{
    if (s->rx_gso.pending) {
        s->rx_blocked = true;   /* after the rest of the packet before it */
        return 0;
    }
    uint8_t vh[VNET_HDR_LEN];
    if (iov_to_buf(iov, iovcnt, 0, vh, sizeof(vh)) < sizeof(vh)) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: a %zu-byte frame from the host, shorter than "
                      "its vnet header; dropped\n", size);
        return size;
    }
    uint8_t flags = vh[0], gso_type = vh[1];
    uint16_t mss = get_le16(vh + 4), csum_start = get_le16(vh + 6);
    uint16_t csum_offset = get_le16(vh + 8);
    uint8_t gso = gso_type & ~VIRTIO_NET_HDR_GSO_ECN;
    if (gso != VIRTIO_NET_HDR_GSO_NONE) {
        if ((gso != VIRTIO_NET_HDR_GSO_TCPV4 && gso != VIRTIO_NET_HDR_GSO_TCPV6) ||
            !(flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
            qemu_log_mask(LOG_GUEST_ERROR, "e1000: the host's GSO type %#x (flags %#x) was not "
                          "offered; packet dropped\n", gso_type, flags);
            return size;
        }
        return e1000_rx_gso(s, iov, iovcnt, size, gso, mss);
    }
    size_t len = size - VNET_HDR_LEN;
    if (!len) {
        return size;            /* a header without a frame: nothing to receive */
    }
    if (len <= E1000_RX_MAX_FRAME) {
        iov_to_buf(iov, iovcnt, VNET_HDR_LEN, s->rx_frame, len);
        if ((flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
            !net_checksum_insert(s->rx_frame, len, csum_start, len,
                                 (size_t)csum_start + csum_offset)) {
            qemu_log_mask(LOG_GUEST_ERROR, "e1000: the host's checksum at %u + %u is beyond its "
                          "%zu-byte frame; dropped\n", csum_start, csum_offset, len);
            return size;
        }
    }
    bool l4_sum_good = flags & (VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID);
    return e1000_rx_put(s, len, l4_sum_good) ? (ssize_t)size : 0;
}
