/*
 * The e1000's receive path: a frame from the peer passes the filters
 * (unicast addresses RAL/RAH, the multicast hash table, promiscuous
 * modes, broadcast, the VLAN table), has its VLAN tag stripped (CTRL.VME),
 * its IPv4/TCP/UDP checksums checked (RXCSUM), and lands in the guest's
 * buffers from RDH on, one or more descriptors of BSIZE bytes, the last
 * with EOP; then RXT0 (after RDTR/RADV) and RXDMT0 when few buffers are
 * left.
 *
 * On a tap with the host's offloads, frames come with a virtio-net header
 * and may be GSO packets: e1000-rx-offload.c completes or cuts them and
 * stores each frame through e1000_rx_put.
 *
 * Threads: receive runs on the device's context, where the backend reads
 * its host side, with no lock held; it takes the device lock for the
 * whole frame. Flow control (net/net.h): when the ring has no room for
 * the frame, receive returns 0, the backend keeps the frame and stops
 * reading, and the next RDT write (or RCTL.EN) calls
 * net_client_receive_ready. Most register writes are coalesced
 * (e1000.c), so receive first replays KVM's coalesced ring, where the
 * driver's last writes (buffers given back, the receiver enabled) may
 * wait (e1000_receive). Frames the NIC would not take (receiver
 * off, filtered, too long, a broken ring) are dropped as the wire drops
 * them: the frame's length is returned. So is a frame that needs more
 * buffers than the ring can ever hold (counted in MPC): waiting for room
 * would stop the backend for good.
 *
 * Without SECRC the hardware stores the 4-byte Ethernet CRC after the
 * frame; the backend has none, so four zero bytes stand in for it (Linux's
 * e1000 strips them).
 */
#include <string.h>
#include <glib.h>
#include "e1000-internal.h"
#include "net/checksum.h"
#include "qemu/iov.h"
#include "qemu/log.h"

#define ETH_ALEN        6
#define ETH_TYPE        12
#define ETH_HLEN        14
#define ETH_MIN_FRAME   60      /* without CRC: shorter frames are padded */
#define ETH_MAX_FRAME   1518    /* without CRC, with a VLAN tag, when LPE is off */
#define ETH_CRC         4
#define VLAN_TAG_LEN    4
#define ETHERTYPE_IPV4  0x0800
#define IPPROTO_TCP_NR  6
#define IPPROTO_UDP_NR  17

static bool e1000_is_broadcast(const uint8_t *dst)
{
    static const uint8_t bcast[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    return !memcmp(dst, bcast, ETH_ALEN);
}

static bool e1000_ra_match(E1000State *s, const uint8_t *dst)
{
    uint32_t low = get_le32(dst);
    uint32_t high = get_le16(dst + 4);
    for (unsigned i = 0; i < E1000_RA_ENTRIES; i++) {
        uint32_t rah = E1000_REG(s, E1000_RA + 8 * i + 4);
        if ((rah & E1000_RAH_AV) && (rah & 0xffff) == high &&
            E1000_REG(s, E1000_RA + 8 * i) == low) {
            return true;
        }
    }
    return false;
}

/* The multicast table: 12 bits of the destination chosen by RCTL.MO. */
static bool e1000_mta_match(E1000State *s, const uint8_t *dst)
{
    static const unsigned shift[4] = { 4, 3, 2, 0 };
    unsigned mo = (E1000_REG(s, E1000_RCTL) >> E1000_RCTL_MO_SHIFT) & 3;
    uint32_t hash = ((dst[4] >> shift[mo]) | (uint32_t)dst[5] << (8 - shift[mo])) & 0xfff;
    return E1000_REG(s, E1000_MTA + 4 * (hash >> 5)) & (1u << (hash & 31));
}

static bool e1000_vlan_tagged(E1000State *s, const uint8_t *frame, size_t len)
{
    return len >= ETH_HLEN + VLAN_TAG_LEN &&
           get_be16(frame + ETH_TYPE) == (E1000_REG(s, E1000_VET) & 0xffff);
}

static bool e1000_rx_accept(E1000State *s, const uint8_t *frame, size_t len)
{
    uint32_t rctl = E1000_REG(s, E1000_RCTL);
    if ((rctl & E1000_RCTL_VFE) && e1000_vlan_tagged(s, frame, len)) {
        unsigned vid = get_be16(frame + ETH_HLEN) & 0xfff;
        if (!(E1000_REG(s, E1000_VFTA + 4 * (vid >> 5)) & (1u << (vid & 31)))) {
            return false;
        }
    }
    const uint8_t *dst = frame;
    if (e1000_ra_match(s, dst)) {
        return true;
    }
    if (e1000_is_broadcast(dst)) {
        return rctl & (E1000_RCTL_BAM | E1000_RCTL_MPE);
    }
    if (dst[0] & 1) {
        return (rctl & E1000_RCTL_MPE) || e1000_mta_match(s, dst);
    }
    return rctl & E1000_RCTL_UPE;
}

/* RXCSUM: the IPv4 header checksum (IPOFL) and the TCP/UDP checksum over
 * the pseudo-header (TUOFL) of an unfragmented IPv4 packet, the latter
 * taken as right without a sum when l4_sum_good. Returns the descriptor's
 * status bits, errors in *errors. */
static uint8_t e1000_rx_checksum(E1000State *s, const uint8_t *frame, size_t len,
                                 bool l4_sum_good, uint8_t *errors)
{
    uint32_t rxcsum = E1000_REG(s, E1000_RXCSUM);
    *errors = 0;
    if (!(rxcsum & (E1000_RXCSUM_IPOFL | E1000_RXCSUM_TUOFL))) {
        return E1000_RXD_STAT_IXSM;
    }
    size_t l3 = ETH_HLEN;
    if (e1000_vlan_tagged(s, frame, len)) {
        l3 += VLAN_TAG_LEN;     /* still tagged: VME is off */
    }
    if (len < l3 + 20 || get_be16(frame + l3 - 2) != ETHERTYPE_IPV4) {
        return 0;
    }
    const uint8_t *ip = frame + l3;
    size_t ihl = (ip[0] & 0xf) * 4u, total = get_be16(ip + 2);
    if ((ip[0] >> 4) != 4 || ihl < 20 || total < ihl || l3 + total > len) {
        return 0;
    }
    uint8_t status = 0;
    if (rxcsum & E1000_RXCSUM_IPOFL) {
        status |= E1000_RXD_STAT_IPCS;
        if (net_checksum_finish(net_checksum_add(0, ip, ihl))) {
            *errors |= E1000_RXD_ERR_IPE;
        }
    }
    bool fragment = get_be16(ip + 6) & 0x3fff;     /* MF or an offset */
    uint8_t proto = ip[9];
    if (!(rxcsum & E1000_RXCSUM_TUOFL) || fragment ||
        (proto != IPPROTO_TCP_NR && proto != IPPROTO_UDP_NR)) {
        return status;
    }
    const uint8_t *l4 = ip + ihl;
    size_t l4_len = total - ihl;
    if (proto == IPPROTO_UDP_NR && (l4_len < 8 || !get_be16(l4 + 6))) {
        return status;          /* no UDP checksum to check */
    }
    status |= E1000_RXD_STAT_TCPCS;
    if (l4_sum_good) {
        return status;
    }
    uint32_t sum = net_checksum_add(proto + (uint32_t)l4_len, ip + 12, 8);
    if (net_checksum_finish(net_checksum_add(sum, l4, l4_len))) {
        *errors |= E1000_RXD_ERR_TCPE;
    }
    return status;
}

static uint32_t e1000_rx_buf_size(uint32_t rctl)
{
    unsigned bsize = (rctl >> E1000_RCTL_BSIZE_SHIFT) & 3;
    if ((rctl & E1000_RCTL_BSEX) && bsize) {
        return 32768 >> bsize;      /* 16384, 8192, 4096 */
    }
    return 2048 >> bsize;           /* 2048, 1024, 512, 256 */
}

/* Descriptors the hardware owns: from head up to tail - 1. */
static uint32_t e1000_ring_owned(const E1000Ring *r)
{
    return (r->tail + r->count - r->head) % r->count;
}

static void e1000_rx_count(E1000State *s, const uint8_t *frame, size_t len)
{
    e1000_stat_inc(s, E1000_GPRC);
    e1000_stat_inc(s, E1000_TPR);
    e1000_stat_add64(s, E1000_GORCL, len + ETH_CRC);
    e1000_stat_add64(s, E1000_TORL, len + ETH_CRC);
    if (e1000_is_broadcast(frame)) {
        e1000_stat_inc(s, E1000_BPRC);
    } else if (frame[0] & 1) {
        e1000_stat_inc(s, E1000_MPRC);
    }
}

/* Store total bytes of frame in the ring from head on; false: the ring is
 * broken (logged) and stopped. */
static bool e1000_rx_store(E1000State *s, E1000Ring *r, const uint8_t *frame, size_t total,
                           uint32_t bufsize, uint8_t status, uint8_t errors, uint16_t special)
{
    for (size_t done = 0; done < total;) {
        uint64_t desc = r->base + (uint64_t)r->head * E1000_DESC_SIZE;
        uint8_t buf_addr[8], wb[8];
        size_t chunk = MIN((size_t)bufsize, total - done);
        if (!dma_memory_read(desc, buf_addr, sizeof(buf_addr)) ||
            !dma_memory_write(get_le64(buf_addr), frame + done, chunk)) {
            qemu_log_mask(LOG_GUEST_ERROR, "e1000: RX descriptor %u or its buffer is not in "
                          "RAM; ring stopped until reprogrammed\n", r->head);
            return false;
        }
        done += chunk;
        /* length, packet checksum (unused since the 82543), status, errors,
         * special */
        put_le16(wb, chunk);
        wb[2] = wb[3] = 0;
        wb[4] = E1000_RXD_STAT_DD | (done == total ? E1000_RXD_STAT_EOP | status : 0);
        wb[5] = done == total ? errors : 0;
        put_le16(wb + 6, special);
        dma_memory_write(desc + E1000_RXD_LENGTH, wb, sizeof(wb));
        r->head = (r->head + 1) % r->count;
        E1000_REG(s, E1000_RDH) = r->head;
    }
    return true;
}

bool e1000_rx_put(E1000State *s, size_t len, bool l4_sum_good)
{
    uint32_t rctl = E1000_REG(s, E1000_RCTL);
    if (!(rctl & E1000_RCTL_EN) || !e1000_link_up(s) || s->rx_ring_error ||
        !pci_bus_master_enabled(&s->pci)) {
        return true;
    }
    size_t max = (rctl & E1000_RCTL_LPE) ? E1000_RX_MAX_FRAME : ETH_MAX_FRAME;
    if (len > max) {
        e1000_stat_inc(s, E1000_ROC);
        return true;
    }
    uint8_t *frame = s->rx_frame;
    if (len < ETH_MIN_FRAME) {
        memset(frame + len, 0, ETH_MIN_FRAME - len);
        len = ETH_MIN_FRAME;
    }
    if (!e1000_rx_accept(s, frame, len)) {
        return true;
    }
    E1000Ring r;
    if (!e1000_ring_get(s, E1000_RDBAL, "RX", &r)) {
        s->rx_ring_error = true;
        return true;
    }
    uint8_t errors;
    uint8_t status = e1000_rx_checksum(s, frame, len, l4_sum_good, &errors);
    uint16_t special = 0;
    if ((E1000_REG(s, E1000_CTRL) & E1000_CTRL_VME) && e1000_vlan_tagged(s, frame, len)) {
        special = get_be16(frame + ETH_HLEN);
        memmove(frame + ETH_TYPE, frame + ETH_TYPE + VLAN_TAG_LEN, len - ETH_TYPE - VLAN_TAG_LEN);
        len -= VLAN_TAG_LEN;
        status |= E1000_RXD_STAT_VP;
    }
    size_t total = len;
    if (!(rctl & E1000_RCTL_SECRC)) {
        memset(frame + len, 0, ETH_CRC);
        total += ETH_CRC;
    }
    uint32_t bufsize = e1000_rx_buf_size(rctl);
    size_t needed = (total + bufsize - 1) / bufsize;
    if (needed >= r.count) {
        /* The ring never lends more than count - 1 buffers: refused, the
         * frame would stop the backend for good. */
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: a %zu-byte frame needs %zu buffers of %u, "
                      "more than a ring of %u can lend; dropped\n", total, needed, bufsize,
                      r.count);
        e1000_stat_inc(s, E1000_MPC);
        return true;
    }
    if (e1000_ring_owned(&r) < needed) {
        s->rx_blocked = true;
        return false;
    }
    if (!e1000_rx_store(s, &r, frame, total, bufsize, status, errors, special)) {
        s->rx_ring_error = true;
        return true;
    }
    e1000_rx_count(s, frame, len);
    e1000_delay_cause(s, &s->rx_delay, E1000_REG(s, E1000_RDTR), E1000_REG(s, E1000_RADV));
    unsigned rdmts = (rctl >> E1000_RCTL_RDMTS_SHIFT) & 3;
    if (e1000_ring_owned(&r) <= r.count >> (rdmts + 1)) {
        e1000_set_interrupt_cause(s, E1000_ICR_RXDMT0);
    }
    return true;
}

static ssize_t e1000_rx_frame(E1000State *s, const struct iovec *iov, int iovcnt, size_t size)
{
    if (size <= E1000_RX_MAX_FRAME) {
        iov_to_buf(iov, iovcnt, 0, s->rx_frame, size);
    }
    return e1000_rx_put(s, size, false) ? (ssize_t)size : 0;
}

/*
 * Writes the driver made before the frame arrived may still wait in KVM's
 * coalesced ring (e1000.c coalesces RDT, RCTL and the filters among
 * others), and a guest that halts after them makes no exit that would
 * replay them (HLT stays in the kernel with the in-kernel irqchip): the
 * frame would wait for buffers given back long ago, or be dropped by a
 * receiver that looks disabled, until some unrelated exit. So receive
 * replays the ring first. It holds no lock then: the replay takes its
 * targets' device locks, ours included, and drain_lock comes before any
 * device lock (docs/locking.md). An RDT write that reaches the ring after
 * the replay waits for the guest's next exit, as any coalesced write
 * does; Linux's driver follows its refill with the IMS write that ends
 * its poll, which is not coalesced and so exits.
 */
ssize_t e1000_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    E1000State *s = nc->opaque;
    size_t size = iov_size(iov, iovcnt);
    if (s->coalesced_mmio) {
        memory_coalesced_drain();
    }
    device_lock(&s->pci.qdev);
    ssize_t ret = s->host_offloads ? e1000_rx_offloaded(s, iov, iovcnt, size)
                                   : e1000_rx_frame(s, iov, iovcnt, size);
    device_unlock(&s->pci.qdev);
    return ret;
}

void e1000_rx_ring_refilled(E1000State *s)
{
    if (e1000_rx_gso_resume(s)) {
        return;             /* the peer hears once the packet is all in */
    }
    if (s->rx_blocked) {
        s->rx_blocked = false;
        net_client_receive_ready(s->nc);
    }
}
