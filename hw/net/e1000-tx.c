/*
 * The e1000's transmit ring: legacy descriptors, context descriptors (the
 * checksum and TSO parameters) and data descriptors, gathered into one
 * packet per EOP; checksum insertion and TCP segmentation done here, in
 * the model, as the hardware does them (but for a TSO send to a tap that
 * takes offloads, which goes whole: e1000_tx_gso_prepare); status written back (DD) where
 * the driver asked (RS); TXDW (delayed by TIDV/TADV when IDE is set) and
 * TXQE.
 *
 * When it runs: a TDT write (or TCTL.EN) kicks the ring. With x-tx-defer
 * on (the default) the kick schedules a bottom half on the device's
 * context, so the vCPU returns to the guest at once and several TDT
 * writes in a row cost one pass; off, the vCPU transmits before its write
 * returns. Either way the pass holds the device lock and stops at TDT, so
 * one pass touches at most the ring's descriptors: a guest cannot make it
 * loop, and a TSO send gives the lock back every E1000_TSO_SEGS_PER_TURN
 * segments. The deferred pass also gives the lock back while each frame is
 * with the peer (e1000_tx_peer_send). A backend that refuses a frame
 * (net_send returns 0) stops the ring with the packet kept: its
 * descriptors stay at TDH until the peer's send_ready resumes the pass,
 * and a TSO send resumes at the segment that was refused.
 *
 * Guest input is checked: a ring outside RAM or with a bad length stops
 * the ring until it is reprogrammed; a descriptor with a buffer outside
 * RAM or over 16 KiB, a TSO packet over 64 KiB, a frame without TSO over
 * 16 KiB, a packet of no bytes, an unknown descriptor type or a TSO
 * context that cannot be (MSS 0, headers longer than the packet or the
 * header fields beyond the headers) drop that packet. All of it is logged
 * with -d guest_errors.
 */
#include <limits.h>
#include <string.h>
#include <glib.h>
#include "e1000-internal.h"
#include "net/checksum.h"
#include "net/tcp-segment.h"
#include "net/vnet-hdr.h"
#include "qemu/log.h"

#define TCP_MIN_HDR     20
#define UDP_LEN         4
#define UDP_HDR         8
#define IPV4_MIN_HDR    20
#define IPV6_HDR        40
#define TCP_CSUM        16
#define ETH_ADDRS       12      /* destination and source: where a VLAN tag goes */
#define ETH_CRC         4

/* Packets a deferred pass sends per turn of the device lock, and turns
 * per run of the bottom half (then it lets the rest of the context, the
 * received frames, have a go). */
#define E1000_TX_PACKETS_PER_LOCK   1
#define E1000_TX_TURNS_PER_BH       64
/*
 * TSO segments sent per turn of the device lock. A TSO send is legal with
 * any MSS from 1 (the hardware segments it at line rate), so a 64 KiB send
 * may be 65536 frames: the send pauses after this many and goes on in the
 * bottom half, lock released between turns, whether the pass runs there
 * or on the vCPU (x-tx-defer=off). A 64 KiB send at the usual MSS (1448:
 * 46 segments) goes in one turn.
 */
#define E1000_TSO_SEGS_PER_TURN     64

/* What became of a packet offered to the peer. */
typedef enum E1000TxResult {
    E1000_TX_DONE,              /* sent or dropped: its descriptors are done */
    E1000_TX_REFUSED,           /* the peer cannot take it now: wait for send_ready */
    E1000_TX_PAUSED,            /* a TSO send reached E1000_TSO_SEGS_PER_TURN */
    E1000_TX_RING_GONE,         /* reset or reprogrammed while a frame was out: stop */
} E1000TxResult;

static bool e1000_tx_run(E1000State *s, unsigned max_packets);

/*
 * The deferred pass gives the lock back after every packet, and while each
 * of its frames is with the peer: a vCPU that writes TDT again or reads ICR
 * meanwhile waits at most for one packet's descriptors and copies, not for
 * the peer nor for the whole ring.
 */
static void e1000_tx_bh(void *opaque)
{
    E1000State *s = opaque;
    for (unsigned turn = 0; turn < E1000_TX_TURNS_PER_BH; turn++) {
        device_lock(&s->pci.qdev);
        bool more = e1000_tx_run(s, E1000_TX_PACKETS_PER_LOCK);
        device_unlock(&s->pci.qdev);
        if (!more) {
            return;
        }
    }
    qemu_bh_schedule(s->tx_bh);
}

void e1000_tx_init(E1000State *s)
{
    s->txp.buf = g_malloc(E1000_TX_MAX_PACKET);
    s->txp.seg = g_malloc(E1000_TX_MAX_SEGMENT);
    s->tx_bh = qemu_bh_new(s->ctx, e1000_tx_bh, s);
}

static void e1000_tx_packet_clear(E1000TxPacket *p)
{
    p->len = 0;
    p->bad = p->tse = p->ixsm = p->txsm = p->vle = p->legacy_ic = false;
    p->send_pending = false;
    p->segs_sent = 0;
}

void e1000_tx_reset(E1000State *s)
{
    memset(&s->txc, 0, sizeof(s->txc));
    e1000_tx_packet_clear(&s->txp);
    s->tx_waiting = false;
    s->tx_ring_epoch++;
}

/* ---- sending ---- */

static void e1000_tx_count(E1000State *s, const uint8_t *frame, size_t len)
{
    e1000_stat_inc(s, E1000_GPTC);
    e1000_stat_inc(s, E1000_TPT);
    e1000_stat_add64(s, E1000_GOTCL, len + ETH_CRC);
    e1000_stat_add64(s, E1000_TOTL, len + ETH_CRC);
    if (len && (frame[0] & 1)) {
        static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
        e1000_stat_inc(s, len >= 6 && !memcmp(frame, bcast, 6) ? E1000_BPTC : E1000_MPTC);
    }
}

/*
 * The peer takes the frame, with the device lock given back in the deferred
 * pass. A send is the longest step of the pass by far (a tap write carries
 * the host's receive path with it: a TSO send of 46 segments held the lock
 * for milliseconds), and the vCPUs that read ICR or write TDT meanwhile
 * waited for it. Without the lock the pass is still alone in sending: with
 * x-tx-defer every pass runs in the bottom half (e1000_tx_kick). What the
 * send reads stays put, as the frame is in p->buf or p->seg, which only the
 * pass writes. Registers may change meanwhile; a reset (CTRL.RST, the
 * machine's) or a new ring (TDBAL, TDBAH, TDLEN, TDH) moves tx_ring_epoch,
 * and then the pass ends at once: the descriptors it holds are no longer
 * the guest's ring, and its head must not overwrite the new TDH.
 */
static E1000TxResult e1000_tx_peer_send(E1000State *s, const struct iovec *iov, int n)
{
    if (!s->tx_deferred) {
        return net_send(s->nc, iov, n) ? E1000_TX_DONE : E1000_TX_REFUSED;
    }
    unsigned epoch = s->tx_ring_epoch;
    device_unlock(&s->pci.qdev);
    bool taken = net_send(s->nc, iov, n) != 0;
    device_lock(&s->pci.qdev);
    if (s->tx_ring_epoch != epoch) {
        return E1000_TX_RING_GONE;
    }
    return taken ? E1000_TX_DONE : E1000_TX_REFUSED;
}

/* One frame to the peer, with the VLAN tag inserted if the packet asked
 * (VLE) and CTRL.VME allows, behind a vnet header that asks for nothing
 * when the peer takes one (host_offloads). */
static E1000TxResult e1000_tx_send_frame(E1000State *s, const uint8_t *frame, size_t len)
{
    static const uint8_t no_offload[VIRTIO_NET_HDR_LEN_SHORT];
    struct iovec iov[4];
    int n = 0;
    uint8_t tag[4];
    if (!len) {
        /* Nothing goes on a wire, and a peer's 0 for it would read as
         * "not now": the ring would wait for a send_ready never sent. */
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: TX packet of no bytes dropped\n");
        return E1000_TX_DONE;
    }
    if (s->host_offloads) {
        iov[n++] = (struct iovec) { .iov_base = (void *)no_offload, .iov_len = sizeof(no_offload) };
    }
    if (s->txp.vle && (E1000_REG(s, E1000_CTRL) & E1000_CTRL_VME) && len >= ETH_ADDRS) {
        put_be16(tag, E1000_REG(s, E1000_VET));
        put_be16(tag + 2, s->txp.vlan_tci);
        iov[n++] = (struct iovec) { .iov_base = (void *)frame, .iov_len = ETH_ADDRS };
        iov[n++] = (struct iovec) { .iov_base = tag, .iov_len = sizeof(tag) };
        iov[n++] = (struct iovec) { .iov_base = (void *)(frame + ETH_ADDRS),
                                    .iov_len = len - ETH_ADDRS };
    } else {
        iov[n++] = (struct iovec) { .iov_base = (void *)frame, .iov_len = len };
    }
    E1000TxResult res = e1000_tx_peer_send(s, iov, n);
    if (res == E1000_TX_DONE) {
        e1000_tx_count(s, frame, len);
    }
    return res;
}

/* Sum [start, end) with the seed already in the field, plus extra (the
 * TCP/UDP length a TSO pseudo-header seed leaves out), and store it. */
static bool e1000_tx_insert_sum(uint8_t *frame, size_t len, size_t start, size_t end,
                                size_t offset, uint32_t extra)
{
    if (start > end || end > len || offset + 2 > len) {
        return false;
    }
    uint32_t sum = net_checksum_add(extra, frame + start, end - start);
    put_be16(frame + offset, net_checksum_finish(sum));
    return true;
}

/* The end of a checksummed range: CSE is the last byte, 0 the frame's end. */
static size_t e1000_tx_sum_end(uint16_t cse, size_t len)
{
    return cse ? MIN((size_t)cse + 1, len) : len;
}

static void e1000_tx_offload_sums(E1000State *s, uint8_t *frame, size_t len)
{
    const E1000TxContext *c = &s->txc;
    E1000TxPacket *p = &s->txp;
    bool ok = true;
    if (p->legacy_ic) {
        ok &= e1000_tx_insert_sum(frame, len, p->css, len, p->cso, 0);
    }
    if (p->ixsm) {
        ok &= e1000_tx_insert_sum(frame, len, c->ipcss, e1000_tx_sum_end(c->ipcse, len),
                                  c->ipcso, 0);
    }
    if (p->txsm) {
        ok &= e1000_tx_insert_sum(frame, len, c->tucss, e1000_tx_sum_end(c->tucse, len),
                                  c->tucso, 0);
    }
    if (!ok) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: checksum offsets beyond a %zu-byte frame; sent "
                      "without the checksum\n", len);
    }
}

static bool e1000_tso_context_valid(const E1000TxContext *c, size_t len)
{
    unsigned ip_hdr = c->ipv4 ? IPV4_MIN_HDR : IPV6_HDR;
    unsigned l4_hdr = c->tcp ? TCP_MIN_HDR : UDP_HDR;
    const char *why = NULL;
    if (!c->mss) {
        why = "MSS 0";
    } else if (!c->hdr_len || c->hdr_len > len) {
        why = "header length 0 or beyond the packet";
    } else if ((size_t)c->hdr_len + c->mss > E1000_TX_MAX_SEGMENT) {
        why = "segments larger than 16 KiB";
    } else if (c->ipcss + ip_hdr > c->hdr_len || c->tucss + l4_hdr > c->hdr_len ||
               c->ipcso + 2u > c->hdr_len || c->tucso + 2u > c->hdr_len) {
        why = "IP or TCP/UDP header beyond the header length";
    }
    if (why) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: TSO context (hdrlen %u, MSS %u, %zu bytes): %s; "
                      "packet dropped\n", c->hdr_len, c->mss, len, why);
        return false;
    }
    return true;
}

/* Build segment i of the TSO send in p->seg: the headers with lengths,
 * IP id, TCP sequence and flags of that segment, its checksums. */
static size_t e1000_tso_segment(E1000State *s, unsigned i, unsigned nsegs)
{
    const E1000TxContext *c = &s->txc;
    E1000TxPacket *p = &s->txp;
    size_t hdr = c->hdr_len, payload = p->len - hdr;
    size_t off = (size_t)i * c->mss, take = MIN((size_t)c->mss, payload - off);
    size_t len = hdr + take;
    uint8_t *seg = p->seg;
    memcpy(seg, p->buf, hdr);
    memcpy(seg + hdr, p->buf + hdr + off, take);
    if (c->tcp) {
        NetTcpHeaders h = { .l3 = c->ipcss, .l4 = c->tucss, .hdr_len = hdr, .ipv4 = c->ipv4 };
        net_tcp_segment_fields(seg, len, &h, i, off, i + 1 == nsegs);
    } else {
        net_ip_segment_fields(seg, len, c->ipcss, c->ipv4, i);
        put_be16(seg + c->tucss + UDP_LEN, len - c->tucss);
    }
    if (p->ixsm && c->ipv4) {
        e1000_tx_insert_sum(seg, len, c->ipcss, e1000_tx_sum_end(c->ipcse, len), c->ipcso, 0);
    }
    if (p->txsm) {
        /* The driver's seed is the pseudo-header without the length, which
         * differs per segment: the hardware adds it (8254x SDM, TCP
         * segmentation). The sum runs to the segment's end. */
        e1000_tx_insert_sum(seg, len, c->tucss, len, c->tucso, len - c->tucss);
    }
    return len;
}

/*
 * A TSO send to a peer that takes the host's offloads (host_offloads: a
 * tap) goes whole, behind a virtio-net header that asks the host to cut it
 * at the MSS (TCPV4/TCPV6, the TCP checksum left at NEEDS_CSUM), as
 * virtio-net's sends go. The host cuts it only where it must (a route out
 * of a NIC without TSO); a local receiver takes it whole, so the 46 writes
 * of a 64 KiB send, each a trip through the host's stack, become one.
 * What the host needs that the guest left to the hardware goes in a copy
 * of the headers in p->seg (p->buf stays as the guest gave it, should the
 * peer refuse): the whole packet's IPv4 total length and header checksum
 * (IPv6: payload length), and the TCP seed with the length added (the
 * hardware adds each segment's; the host's GSO wants the whole one's).
 * Only a packet whose headers parse as TCP over IPv4/IPv6 where the
 * context says (its checksum where TCP has it), with TXSM, without VLAN
 * insertion, of more than one segment and with lengths that fit the
 * fields goes this way; the rest is cut here. Fills vh and p->seg; false:
 * cut it here.
 */
static bool e1000_tx_gso_prepare(E1000State *s, uint8_t vh[VIRTIO_NET_HDR_LEN_SHORT])
{
    const E1000TxContext *c = &s->txc;
    E1000TxPacket *p = &s->txp;
    NetTcpHeaders h;
    const char *why;
    if (!s->host_offloads || !c->tcp || !p->txsm || p->vle ||
        !net_tcp_find_headers(p->buf, p->len, c->ipv4, &h, &why) ||
        h.l3 != c->ipcss || h.l4 != c->tucss || h.hdr_len != c->hdr_len ||
        c->tucso != c->tucss + TCP_CSUM ||
        p->len - h.l3 > 0xffff || p->len <= h.hdr_len + c->mss) {
        return false;
    }
    uint8_t *hdr = p->seg;
    memcpy(hdr, p->buf, h.hdr_len);
    net_ip_segment_fields(hdr, p->len, h.l3, h.ipv4, 0);
    if (h.ipv4) {
        net_ipv4_fill_header_checksum(hdr + h.l3, h.l4 - h.l3);
    }
    uint32_t seed = get_be16(hdr + h.l4 + TCP_CSUM) + (uint32_t)(p->len - h.l4);
    put_be16(hdr + h.l4 + TCP_CSUM, (uint16_t)~net_checksum_finish(seed));
    vh[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
    vh[1] = h.ipv4 ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6;
    put_le16(vh + 2, h.hdr_len);
    put_le16(vh + 4, c->mss);
    put_le16(vh + 6, h.l4);
    put_le16(vh + 8, TCP_CSUM);
    return true;
}

/* The prepared GSO packet to the peer; counted as the frames the host
 * cuts it into, as the hardware counts a TSO send's. */
static E1000TxResult e1000_tx_gso_send(E1000State *s, uint8_t vh[VIRTIO_NET_HDR_LEN_SHORT])
{
    const E1000TxContext *c = &s->txc;
    E1000TxPacket *p = &s->txp;
    struct iovec iov[3] = {
        { .iov_base = vh, .iov_len = VIRTIO_NET_HDR_LEN_SHORT },
        { .iov_base = p->seg, .iov_len = c->hdr_len },
        { .iov_base = p->buf + c->hdr_len, .iov_len = p->len - c->hdr_len },
    };
    E1000TxResult res = e1000_tx_peer_send(s, iov, 3);
    if (res == E1000_TX_DONE) {
        for (size_t off = 0; off < p->len - c->hdr_len; off += c->mss) {
            e1000_tx_count(s, p->buf, c->hdr_len + MIN((size_t)c->mss,
                                                       p->len - c->hdr_len - off));
        }
        e1000_stat_inc(s, E1000_TSCTC);
    }
    return res;
}

/* The segments of a TSO send from the one it reached (segs_sent), at most
 * E1000_TSO_SEGS_PER_TURN of them. */
static E1000TxResult e1000_tx_tso(E1000State *s)
{
    const E1000TxContext *c = &s->txc;
    E1000TxPacket *p = &s->txp;
    if (!e1000_tso_context_valid(c, p->len)) {
        return E1000_TX_DONE;       /* dropped */
    }
    uint8_t vh[VIRTIO_NET_HDR_LEN_SHORT];
    if (!p->segs_sent && e1000_tx_gso_prepare(s, vh)) {
        return e1000_tx_gso_send(s, vh);
    }
    size_t payload = p->len - c->hdr_len;
    unsigned nsegs = payload ? (payload + c->mss - 1) / c->mss : 1;
    unsigned first = p->segs_sent;
    for (unsigned i = first; i < nsegs; i++) {
        if (i - first == E1000_TSO_SEGS_PER_TURN) {
            p->segs_sent = i;
            return E1000_TX_PAUSED;
        }
        size_t len = e1000_tso_segment(s, i, nsegs);
        E1000TxResult res = e1000_tx_send_frame(s, p->seg, len);
        if (res != E1000_TX_DONE) {
            p->segs_sent = i;   /* refused: resume here; ring gone: cleared by the pass */
            return res;
        }
    }
    e1000_stat_inc(s, E1000_TSCTC);
    return E1000_TX_DONE;
}

/* The gathered packet (p->len bytes, its checksums in) to the peer; one
 * not done stays as it is. */
static E1000TxResult e1000_tx_send_packet(E1000State *s)
{
    E1000TxPacket *p = &s->txp;
    if (p->bad) {
        return E1000_TX_DONE;
    }
    if (p->tse) {
        return e1000_tx_tso(s);
    }
    return e1000_tx_send_frame(s, p->buf, p->len);
}

/* ---- descriptors ---- */

static void e1000_tx_context(E1000State *s, const uint8_t *d, uint32_t lower, uint32_t upper)
{
    E1000TxContext *c = &s->txc;
    c->ipcss = d[E1000_TXC_IPCSS];
    c->ipcso = d[E1000_TXC_IPCSO];
    c->ipcse = get_le16(d + E1000_TXC_IPCSE);
    c->tucss = d[E1000_TXC_TUCSS];
    c->tucso = d[E1000_TXC_TUCSO];
    c->tucse = get_le16(d + E1000_TXC_TUCSE);
    c->paylen = lower & E1000_TXC_PAYLEN_MASK;
    c->tcp = lower & E1000_TXC_TUCMD_TCP;
    c->ipv4 = lower & E1000_TXC_TUCMD_IP;
    c->tse = lower & E1000_TXD_CMD_TSE;
    c->hdr_len = upper >> E1000_TXC_HDRLEN_SHIFT;
    c->mss = upper >> E1000_TXC_MSS_SHIFT;
}

static void e1000_tx_gather(E1000State *s, uint64_t addr, uint32_t len)
{
    E1000TxPacket *p = &s->txp;
    if (p->bad) {
        return;
    }
    /* Only TSO makes frames of its packet: without it the packet is one
     * frame, which the hardware cannot send beyond 16 KiB. */
    uint32_t max = p->tse ? E1000_TX_MAX_PACKET : E1000_TX_MAX_FRAME;
    if (len > E1000_MAX_DESC_DATA || p->len + len > max) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: TX descriptor of %u bytes (packet so far %u): "
                      "beyond the %u bytes of a%s packet; packet dropped\n", len, p->len, max,
                      p->tse ? " TSO" : " non-TSO");
        p->bad = true;
        return;
    }
    if (!dma_memory_read(addr, p->buf + p->len, len)) {
        p->bad = true;      /* logged by DMA */
        return;
    }
    p->len += len;
}

/* A legacy or data descriptor; not done: its packet is still to send. */
static E1000TxResult e1000_tx_data(E1000State *s, const uint8_t *d, uint32_t lower,
                                   uint32_t upper)
{
    E1000TxPacket *p = &s->txp;
    if (!p->send_pending) {
        bool first = !p->len && !p->bad;
        if (lower & E1000_TXD_CMD_DEXT) {
            if (first) {
                p->tse = (lower & E1000_TXD_CMD_TSE) && s->txc.tse;
                p->ixsm = upper & E1000_TXD_POPTS_IXSM;
                p->txsm = upper & E1000_TXD_POPTS_TXSM;
            }
            e1000_tx_gather(s, get_le64(d), lower & E1000_TXD_LEN_MASK);
        } else {
            if (first) {
                p->legacy_ic = lower & E1000_TXD_CMD_IC;
                p->cso = lower >> 16;
                p->css = upper >> 8;
            }
            e1000_tx_gather(s, get_le64(d), lower & 0xffff);
        }
        if (!(lower & E1000_TXD_CMD_EOP)) {
            return E1000_TX_DONE;
        }
        p->vle = lower & E1000_TXD_CMD_VLE;
        p->vlan_tci = upper >> 16;
        p->send_pending = true;
        /* Once, here: the sums cover the checksum fields' seeds, so summing
         * again a packet the peer refused would sum the inserted checksums.
         * TSO builds its segments' sums in a copy. */
        if (!p->bad && !p->tse) {
            e1000_tx_offload_sums(s, p->buf, p->len);
        }
    }
    E1000TxResult res = e1000_tx_send_packet(s);
    if (res == E1000_TX_DONE) {
        e1000_tx_packet_clear(p);
    }
    return res;
}

/* One descriptor; not done: stop here, the descriptor stays at TDH. */
static E1000TxResult e1000_tx_descriptor(E1000State *s, const uint8_t *d)
{
    uint32_t lower = get_le32(d + E1000_TXD_LOWER);
    uint32_t upper = get_le32(d + E1000_TXD_UPPER);
    if (!(lower & E1000_TXD_CMD_DEXT) || (lower & E1000_TXD_DTYP_MASK) == E1000_TXD_DTYP_D) {
        return e1000_tx_data(s, d, lower, upper);
    }
    if ((lower & E1000_TXD_DTYP_MASK) == 0) {
        e1000_tx_context(s, d, lower, upper);
    } else {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: TX descriptor type %u ignored\n",
                      (lower & E1000_TXD_DTYP_MASK) >> 20);
    }
    return E1000_TX_DONE;
}

/* Transmit from TDH towards TDT, at most max_packets packets (EOPs), and
 * of a TSO send at most E1000_TSO_SEGS_PER_TURN segments. Returns whether
 * work is left for another pass. */
static bool e1000_tx_run(E1000State *s, unsigned max_packets)
{
    if (!(E1000_REG(s, E1000_TCTL) & E1000_TCTL_EN) || s->tx_ring_error || s->tx_waiting) {
        return false;
    }
    if (!pci_bus_master_enabled(&s->pci)) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: transmit without bus mastering enabled\n");
        return false;
    }
    E1000Ring r;
    if (!e1000_ring_get(s, E1000_TDBAL, "TX", &r)) {
        s->tx_ring_error = true;
        return false;
    }
    unsigned packets = 0;
    bool txdw_now = false, txdw_delayed = false, paused = false;
    /* head moves towards the tail and stops there: at most r.count steps. */
    while (r.head != r.tail && packets < max_packets) {
        uint64_t addr = r.base + (uint64_t)r.head * E1000_DESC_SIZE;
        uint8_t d[E1000_DESC_SIZE];
        if (!dma_memory_read(addr, d, sizeof(d))) {
            s->tx_ring_error = true;    /* the ring left RAM under us */
            break;
        }
        E1000TxResult res = e1000_tx_descriptor(s, d);
        if (res == E1000_TX_RING_GONE) {
            e1000_tx_packet_clear(&s->txp);     /* its descriptors went with the ring */
            return false;
        }
        if (res == E1000_TX_REFUSED) {
            s->tx_waiting = true;
            break;
        }
        if (res == E1000_TX_PAUSED) {
            paused = true;
            break;
        }
        uint32_t lower = get_le32(d + E1000_TXD_LOWER);
        bool is_data = !(lower & E1000_TXD_CMD_DEXT) ||
                       (lower & E1000_TXD_DTYP_MASK) == E1000_TXD_DTYP_D;
        packets += is_data && (lower & E1000_TXD_CMD_EOP);
        if (lower & (E1000_TXD_CMD_RS | E1000_TXD_CMD_RPS)) {
            uint8_t sta = d[E1000_TXD_STA] | E1000_TXD_STAT_DD;
            dma_memory_write(addr + E1000_TXD_STA, &sta, 1);
            if (lower & E1000_TXD_CMD_IDE) {
                txdw_delayed = true;
            } else {
                txdw_now = true;
            }
        }
        r.head = (r.head + 1) % r.count;
        E1000_REG(s, E1000_TDH) = r.head;
    }
    if (txdw_now) {
        e1000_delay_cause(s, &s->tx_delay, 0, 0);
    } else if (txdw_delayed) {
        e1000_delay_cause(s, &s->tx_delay, E1000_REG(s, E1000_TIDV), E1000_REG(s, E1000_TADV));
    }
    if (r.head == r.tail) {
        e1000_set_interrupt_cause(s, E1000_ICR_TXQE);
    }
    return paused || (r.head != r.tail && !s->tx_waiting && !s->tx_ring_error);
}

void e1000_tx_kick(E1000State *s)
{
    /* On the vCPU, the pass ends at TDT unless a long TSO send paused: its
     * rest goes on in the bottom half. */
    if (s->tx_deferred || e1000_tx_run(s, UINT_MAX)) {
        qemu_bh_schedule(s->tx_bh);
    }
}

void e1000_tx_resume(E1000State *s)
{
    s->tx_waiting = false;
    e1000_tx_kick(s);
}
