/*
 * virtio-net's control queue (virtio 1.x, "Control Virtqueue") and the
 * receive filter it programs: RX modes, the MAC tables and the primary
 * address, the VLAN filter, the announce acknowledgement and the number
 * of queue pairs in use. Device lock held throughout.
 *
 * A command is class and command bytes, its data, then one writable ack
 * byte. A command the device does not know, one whose feature was not
 * negotiated or whose data is malformed gets VIRTIO_NET_ERR and changes
 * nothing; a chain with no room for the command or the ack is a driver
 * bug: NEEDS_RESET.
 */
#include <string.h>
#include <glib.h>
#include "hw/virtio/virtio-net-internal.h"
#include "qemu/byte-order.h"
#include "qemu/iov.h"
#include "qemu/log.h"

/* Larger command data than any legal command needs (a MAC table of a few
 * thousand entries): refused without being copied. */
#define VIRTIO_NET_CTRL_MAX_DATA    (64 * 1024)

/* ---- the filter ---- */

void virtio_net_filter_reset(VirtIONetFilter *f)
{
    memset(f, 0, sizeof(*f));
    f->promisc = true;
}

static bool mac_in(const MACAddr *table, unsigned n, const uint8_t *mac)
{
    for (unsigned i = 0; i < n; i++) {
        if (!memcmp(table[i].a, mac, ETH_ALEN)) {
            return true;
        }
    }
    return false;
}

static bool virtio_net_vlan_accepts(const VirtIONet *n, const uint8_t *eth, size_t len)
{
    if (!virtio_has_feature(&n->vdev, VIRTIO_NET_F_CTRL_VLAN) || len < ETH_HLEN + 2 ||
        get_be16(eth + 12) != ETH_P_VLAN) {
        return true;
    }
    unsigned vid = get_be16(eth + 14) & (VIRTIO_NET_MAX_VLAN - 1);
    return n->filter.vlans[vid / 32] & (1u << (vid % 32));
}

bool virtio_net_filter_accepts(const VirtIONet *n, const uint8_t *eth, size_t len)
{
    const VirtIONetFilter *f = &n->filter;
    static const uint8_t broadcast[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    if (f->promisc) {
        return true;
    }
    if (!virtio_net_vlan_accepts(n, eth, len)) {
        return false;
    }
    if (!memcmp(eth, broadcast, ETH_ALEN)) {
        return !f->nobcast;
    }
    if (eth[0] & 1) {   /* multicast */
        return !f->nomulti &&
               (f->allmulti || f->multi_overflow || mac_in(f->multi, f->n_multi, eth));
    }
    return !f->nouni && (f->alluni || f->uni_overflow || !memcmp(eth, n->mac.a, ETH_ALEN) ||
                         mac_in(f->uni, f->n_uni, eth));
}

/* ---- commands ---- */

/* The mode a CTRL_RX command sets; those after ALLMULTI need
 * CTRL_RX_EXTRA. NULL: no such command. */
static bool *virtio_net_rx_mode(VirtIONet *n, uint8_t cmd)
{
    VirtIONetFilter *f = &n->filter;
    bool *const modes[] = {
        [VIRTIO_NET_CTRL_RX_PROMISC] = &f->promisc, [VIRTIO_NET_CTRL_RX_ALLMULTI] = &f->allmulti,
        [VIRTIO_NET_CTRL_RX_ALLUNI] = &f->alluni, [VIRTIO_NET_CTRL_RX_NOMULTI] = &f->nomulti,
        [VIRTIO_NET_CTRL_RX_NOUNI] = &f->nouni, [VIRTIO_NET_CTRL_RX_NOBCAST] = &f->nobcast,
    };
    if (cmd >= G_N_ELEMENTS(modes) || (cmd > VIRTIO_NET_CTRL_RX_ALLMULTI &&
                                       !virtio_has_feature(&n->vdev, VIRTIO_NET_F_CTRL_RX_EXTRA))) {
        return NULL;
    }
    return modes[cmd];
}

static uint8_t virtio_net_ctrl_rx(VirtIONet *n, uint8_t cmd, const uint8_t *data, size_t len)
{
    bool *mode = virtio_net_rx_mode(n, cmd);
    if (!mode || len != 1) {
        return VIRTIO_NET_ERR;
    }
    *mode = data[0] != 0;
    return VIRTIO_NET_OK;
}

/*
 * One table of TABLE_SET at data[*off]: le32 entries, then 6 bytes each.
 * Keeps up to VIRTIO_NET_MAC_TABLE_ENTRIES; more sets overflow.
 */
static bool virtio_net_parse_mac_table(const uint8_t *data, size_t len, size_t *off,
                                       MACAddr *table, unsigned *count, bool *overflow)
{
    uint32_t entries;
    if (len - *off < sizeof(entries)) {
        return false;
    }
    entries = get_le32(data + *off);
    *off += sizeof(entries);
    if (entries > (len - *off) / ETH_ALEN) {
        return false;
    }
    *overflow = entries > VIRTIO_NET_MAC_TABLE_ENTRIES;
    *count = *overflow ? 0 : entries;
    memcpy(table, data + *off, (size_t)*count * ETH_ALEN);
    *off += (size_t)entries * ETH_ALEN;
    return true;
}

static uint8_t virtio_net_ctrl_mac(VirtIONet *n, uint8_t cmd, const uint8_t *data, size_t len)
{
    VirtIODevice *vdev = &n->vdev;
    if (cmd == VIRTIO_NET_CTRL_MAC_ADDR_SET) {
        if (!virtio_has_feature(vdev, VIRTIO_NET_F_CTRL_MAC_ADDR) || len != ETH_ALEN) {
            return VIRTIO_NET_ERR;
        }
        memcpy(n->mac.a, data, ETH_ALEN);
        return VIRTIO_NET_OK;
    }
    if (cmd != VIRTIO_NET_CTRL_MAC_TABLE_SET) {
        return VIRTIO_NET_ERR;
    }
    /* Parsed aside: a malformed table changes nothing. */
    VirtIONetFilter f = n->filter;
    size_t off = 0;
    if (!virtio_net_parse_mac_table(data, len, &off, f.uni, &f.n_uni, &f.uni_overflow) ||
        !virtio_net_parse_mac_table(data, len, &off, f.multi, &f.n_multi, &f.multi_overflow) ||
        off != len) {
        return VIRTIO_NET_ERR;
    }
    n->filter = f;
    return VIRTIO_NET_OK;
}

static uint8_t virtio_net_ctrl_vlan(VirtIONet *n, uint8_t cmd, const uint8_t *data, size_t len)
{
    uint16_t vid;
    if (len != sizeof(vid) || cmd > VIRTIO_NET_CTRL_VLAN_DEL) {
        return VIRTIO_NET_ERR;
    }
    vid = get_le16(data);
    if (vid >= VIRTIO_NET_MAX_VLAN) {
        return VIRTIO_NET_ERR;
    }
    if (cmd == VIRTIO_NET_CTRL_VLAN_ADD) {
        n->filter.vlans[vid / 32] |= 1u << (vid % 32);
    } else {
        n->filter.vlans[vid / 32] &= ~(1u << (vid % 32));
    }
    return VIRTIO_NET_OK;
}

/* A multiqueue tap spreads the host's flows over the queues it has
 * attached: one no pair reads would hold its flows' frames for nobody. */
void virtio_net_set_pairs(VirtIONet *n, unsigned pairs)
{
    n->curr_pairs = pairs;
    for (unsigned i = 0; i < n->max_pairs; i++) {
        net_peer_set_queue_enabled(n->queues[i].nc, i < pairs);
    }
}

static uint8_t virtio_net_ctrl_mq(VirtIONet *n, uint8_t cmd, const uint8_t *data, size_t len)
{
    uint16_t pairs;
    if (cmd != VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET || len != sizeof(pairs)) {
        return VIRTIO_NET_ERR;
    }
    pairs = get_le16(data);
    if (pairs < 1 || pairs > n->max_pairs) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: %u queue pairs asked of %u\n",
                      virtio_name(&n->vdev), pairs, n->max_pairs);
        return VIRTIO_NET_ERR;
    }
    virtio_net_set_pairs(n, pairs);
    /* A pair now in use may have a peer waiting for it. */
    for (unsigned i = 0; i < pairs; i++) {
        virtio_net_rx_wake(&n->queues[i]);
    }
    return VIRTIO_NET_OK;
}

/* Each class and the feature that enables it. */
static uint8_t virtio_net_ctrl_command(VirtIONet *n, uint8_t class, uint8_t cmd,
                                       const uint8_t *data, size_t len)
{
    VirtIODevice *vdev = &n->vdev;
    switch (class) {
    case VIRTIO_NET_CTRL_RX:
        return virtio_has_feature(vdev, VIRTIO_NET_F_CTRL_RX)
               ? virtio_net_ctrl_rx(n, cmd, data, len) : VIRTIO_NET_ERR;
    case VIRTIO_NET_CTRL_MAC:
        /* The tables come with CTRL_RX, the address with CTRL_MAC_ADDR. */
        return virtio_has_feature(vdev, VIRTIO_NET_F_CTRL_RX) ||
               cmd == VIRTIO_NET_CTRL_MAC_ADDR_SET
               ? virtio_net_ctrl_mac(n, cmd, data, len) : VIRTIO_NET_ERR;
    case VIRTIO_NET_CTRL_VLAN:
        return virtio_has_feature(vdev, VIRTIO_NET_F_CTRL_VLAN)
               ? virtio_net_ctrl_vlan(n, cmd, data, len) : VIRTIO_NET_ERR;
    case VIRTIO_NET_CTRL_ANNOUNCE:
        if (!virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_ANNOUNCE) ||
            cmd != VIRTIO_NET_CTRL_ANNOUNCE_ACK || len != 0) {
            return VIRTIO_NET_ERR;
        }
        n->announce = false;
        return VIRTIO_NET_OK;
    case VIRTIO_NET_CTRL_MQ:
        return virtio_has_feature(vdev, VIRTIO_NET_F_MQ)
               ? virtio_net_ctrl_mq(n, cmd, data, len) : VIRTIO_NET_ERR;
    default:
        return VIRTIO_NET_ERR;
    }
}

/* One chain: its command run (or refused), its ack written. */
static void virtio_net_ctrl_handle(VirtIONet *n, VirtQueue *vq, VirtQueueElement *elem)
{
    uint8_t head[2];
    uint8_t ack = VIRTIO_NET_ERR;
    iov_to_buf(elem->out_sg, elem->out_num, 0, head, sizeof(head));
    size_t len = elem->out_len - sizeof(head);
    if (len <= VIRTIO_NET_CTRL_MAX_DATA) {
        g_autofree uint8_t *data = g_malloc(len + 1);
        iov_to_buf(elem->out_sg, elem->out_num, sizeof(head), data, len);
        ack = virtio_net_ctrl_command(n, head[0], head[1], data, len);
    }
    if (ack == VIRTIO_NET_OK && (head[0] == VIRTIO_NET_CTRL_RX || head[0] == VIRTIO_NET_CTRL_MAC ||
                                 head[0] == VIRTIO_NET_CTRL_VLAN)) {
        virtio_net_rx_filter_changed(n);
    }
    if (ack != VIRTIO_NET_OK) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: control command %u.%u with %zu bytes of data "
                      "refused\n", virtio_name(&n->vdev), head[0], head[1], len);
    }
    iov_from_buf(elem->in_sg, elem->in_num, 0, &ack, sizeof(ack));
    virtqueue_push(vq, elem, sizeof(ack));
}

/* Every command there is, and a kick asked for the next one: Linux kicks
 * only when asked (EVENT_IDX), then spins for the ack. */
void virtio_net_ctrl_kick(VirtIONet *n, VirtQueue *vq)
{
    VirtQueueElement *elem;
    while ((elem = virtio_net_pop(vq))) {
        if (elem->out_len < 2 || elem->in_len < 1) {
            virtio_error(&n->vdev, "control chain of %zu readable and %zu writable bytes has "
                         "no command or no ack", elem->out_len, elem->in_len);
            g_free(elem);
            break;
        }
        virtio_net_ctrl_handle(n, vq, elem);
    }
    virtio_queue_notify_pushed(vq);
}
