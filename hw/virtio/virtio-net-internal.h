/*
 * virtio-net's state, shared by its files: virtio-net.c (the device:
 * features, configuration, status and reset, link, realize),
 * virtio-net-tx.c and virtio-net-rx.c (the data path, one queue pair at a
 * time) and virtio-net-ctrl.c (the control queue and the receive filter
 * it programs).
 *
 * Locking (docs/locking.md, "virtio-net queue pairs"): each queue pair
 * has a lock of its own (VirtIONetQueue.lock, a sub-lock of the device
 * named "<id>.qp<N>"), and the pair's data path runs under it alone: the
 * peer's receive into the pair's receiveq, the transmitq's kicks, bottom
 * half and send_ready, the used-ring pushes and the queues' interrupts.
 * Two pairs never share a lock, so two threads (vCPUs, I/O threads)
 * serve two pairs at once. Everything else (configuration, status and
 * reset, features, the control queue and the receive filter it programs,
 * link, vhost) is under the device lock (vdev.qdev), and whatever of it a
 * pair reads (features, status, curr_pairs, host_hdr_len, the filter, the
 * MAC, vhost_started) is written only while every pair lock is held as
 * well (virtio_queues_quiesce), so a reset never races a frame in flight.
 *
 * Lock order: the device lock, then pair locks (all of them, in pair
 * order, only under the device lock); a thread holding a pair lock takes
 * no other lock of this device, and the device lock never under one. An
 * interrupt that needs the device lock (MSI-X off, x-irqfd=off) is sent
 * after the pair lock is dropped (virtio_queue_unlock). The argument that
 * this cannot deadlock is in docs/locking.md.
 */
#ifndef HW_VIRTIO_VIRTIO_NET_INTERNAL_H
#define HW_VIRTIO_VIRTIO_NET_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <glib.h>
#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio.h"
#include "net/net.h"
#include "qemu/bh.h"

#define ETH_ALEN                6
#define ETH_HLEN                14
#define ETH_P_VLAN              0x8100
#define VIRTIO_NET_MAX_VLAN     4096
/* The largest frame either direction carries: a 64 KiB GSO frame and its
 * Ethernet and VLAN headers. */
#define VIRTIO_NET_MAX_FRAME    (65536 + ETH_HLEN + 4)
/* Frames sent per TX kick before the rest waits for a bottom half, so
 * one busy queue cannot hold the context (and the pair's lock) for long. */
#define VIRTIO_NET_TX_BURST     256
/* Transmit polling (virtio-net-tx.c): the window's default cap
 * (x-tx-poll-ns), as measured on the bench (docs/benchmarks.md), and where
 * a window of 0 starts growing from. */
#define VIRTIO_NET_TX_POLL_MAX_NS   50000
#define VIRTIO_NET_TX_POLL_START_NS 4000

/* What the device accepts (virtio 1.x, "Packet Receive Filtering"). */
typedef struct VirtIONetFilter {
    bool promisc, allmulti, alluni, nomulti, nouni, nobcast;
    bool uni_overflow, multi_overflow;     /* more entries than the tables hold */
    unsigned n_uni, n_multi;
    MACAddr uni[VIRTIO_NET_MAC_TABLE_ENTRIES];
    MACAddr multi[VIRTIO_NET_MAC_TABLE_ENTRIES];
    uint32_t vlans[VIRTIO_NET_MAX_VLAN / 32];   /* with CTRL_VLAN: the VIDs let in */
} VirtIONetFilter;

typedef struct VirtIONet VirtIONet;

/* One queue pair: receiveq (2 * pair), transmitq (2 * pair + 1), and the
 * NIC client on the netdev's queue pair. */
typedef struct VirtIONetQueue {
    VirtIONet *n;
    unsigned pair;
    DeviceLock lock;            /* the pair's data path (see Locking above) */
    char lock_suffix[8];        /* "qp<pair>": the lock's name after the device id */
    VirtQueue *rx_vq, *tx_vq;
    NetClientState *nc;

    /* RX: chains taken from the ring but not filled yet (a mergeable
     * frame that needed more buffers than were there), oldest first. */
    GQueue rx_stash;
    /* receive returned 0: wake the peer once the driver adds buffers. */
    bool rx_waiting;

    /* TX: the chain the peer refused, sent first on send_ready. */
    VirtQueueElement *tx_elem;
    QEMUBH *tx_bh;              /* on the device's context: the next burst */
    struct iovec *tx_iov;       /* VIRTQUEUE_MAX_IOV: a frame without its header */
    uint8_t *tx_buf;            /* a frame whose checksum the device completes */
    /* Transmit polling (virtio-net-tx.c): how long an emptied ring is
     * watched now (0: not at all), and since when it has been empty with
     * kicks on (0: a kick or a pass came since). */
    int64_t tx_poll_ns;
    int64_t tx_empty_since;

    /* vhost-net for this pair (NULL: user space only), and whether the
     * kernel serves the pair now. */
    VhostNet *vhost;
    bool vhost_started;
} VirtIONetQueue;

struct VirtIONet {
    VirtIODevice vdev;          /* first */
    MACAddr mac;                /* as the driver set it (CTRL_MAC_ADDR) */
    MACAddr perm_mac;           /* mac=, restored at reset */
    bool announce;              /* VIRTIO_NET_S_ANNOUNCE until the driver acks */
    uint16_t mtu;               /* host_mtu=, 0: none */
    bool rx_in_place;           /* x-rx-in-place: lend receive chains to the peer */
    int64_t tx_poll_max_ns;     /* x-tx-poll-ns: the transmit polling window's cap */
    unsigned max_pairs;
    unsigned curr_pairs;        /* MQ: VQ_PAIRS_SET; else 1 */
    VirtIONetQueue *queues;     /* max_pairs */
    /* A driver without MQ finds the controlq at 2, which is pair 1's
     * receiveq by its lock: its kicks arrive under that pair lock, and
     * the commands, which need the device lock, run from this bottom half. */
    QEMUBH *ctrl_bh;
    GMainContext *ctx;          /* the device's (its iothread's, or the main loop's) */
    /* The peer carries vnet headers (a tap): then frames in both
     * directions start with one of host_hdr_len bytes, the guest's own
     * length; without, host_hdr_len is 0 and the device does the work. */
    bool peer_vnet_hdr;
    unsigned host_hdr_len;
    VirtIONetFilter filter;
    /* NIC_RX_FILTER_CHANGED went out and no query-rx-filter came since:
     * the next change stays quiet (QEMU's rate limit for management). */
    bool rx_filter_event_sent;
};

static inline VirtIONet *virtio_net_of(VirtIODevice *vdev)
{
    return (VirtIONet *)vdev;
}

/* The header the driver puts before every frame: 12 bytes with
 * VERSION_1 or MRG_RXBUF (num_buffers), else 10. */
unsigned virtio_net_guest_hdr_len(VirtIONet *n);
/* The next chain of vq; if there is none, ask the driver for a kick, and
 * look once more for a chain made available before it could see the
 * request. NULL: none (kicks wanted), or the driver broke the rules. */
VirtQueueElement *virtio_net_pop(VirtQueue *vq);

/* ---- virtio-net-tx.c ---- */
/* The transmitq was kicked (the pair's lock held). */
void virtio_net_tx_kick(VirtIONetQueue *q);
/* NetClientInfo.send_ready and the burst bottom half (no lock held). */
void virtio_net_tx_resume(NetClientState *nc);
void virtio_net_tx_bh(void *opaque);
/* Forget the chain the peer refused (reset: the driver let go of it). */
void virtio_net_tx_reset(VirtIONetQueue *q);

/* ---- virtio-net-rx.c ---- */
/* NetClientInfo.receive (on the device's context, no lock held; takes
 * the pair's lock). */
ssize_t virtio_net_receive(NetClientState *nc, const struct iovec *iov, int iovcnt);
/* NetClientInfo.receive_filled: the same, the frame read by the peer
 * straight into the receiveq's chains. */
ssize_t virtio_net_receive_filled(NetClientState *nc, size_t max, NetFillFunc fill,
                                  void *opaque);
/* The receiveq was kicked, or the pair became usable: wake a waiting
 * peer. The pair's lock held (or every pair's: a quiesce). */
void virtio_net_rx_wake(VirtIONetQueue *q);
/* Drop the stashed chains (reset). */
void virtio_net_rx_reset(VirtIONetQueue *q);

/* ---- virtio-net-vhost.c (the seam in include/hw/virtio/virtio-net.h) ---- */
/* Realize: a VhostNet for each pair whose peer asks for one; false only
 * when vhostforce=on cannot be met. */
bool virtio_net_vhost_init(VirtIONet *n, Error **errp);
/* The features to offer, less what the kernel cannot do. */
uint64_t virtio_net_vhost_features(VirtIONet *n, uint64_t offered);
/* DRIVER_OK: each pair with a VhostNet to the kernel, if it takes it. */
void virtio_net_vhost_start(VirtIONet *n);
/* Reset: every pair back to user space; true if any was the kernel's. */
bool virtio_net_vhost_stop(VirtIONet *n);
/* Free the pairs' vhost-net (a realize that failed after creating them). */
void virtio_net_vhost_free(VirtIONet *n);

/* ---- virtio-net-ctrl.c ---- */
/* The controlq was kicked (device lock held, every pair quiesced). */
void virtio_net_ctrl_kick(VirtIONet *n, VirtQueue *vq);
/* The pairs in use (VQ_PAIRS_SET; 1 at realize and reset): the peer's
 * queues of the others are left out (device lock held, pairs quiesced). */
void virtio_net_set_pairs(VirtIONet *n, unsigned pairs);
/* The filter after reset: promiscuous, as QEMU, for drivers without CTRL_RX. */
void virtio_net_filter_reset(VirtIONetFilter *f);
/* Does the filter let this frame (len bytes from its Ethernet header) in? */
bool virtio_net_filter_accepts(const VirtIONet *n, const uint8_t *eth, size_t len);

/* ---- virtio-net-qmp.c ---- */
/* The driver changed the filter (device lock held): NIC_RX_FILTER_CHANGED,
 * unless one is out that no query-rx-filter has answered yet. */
void virtio_net_rx_filter_changed(VirtIONet *n);
/* NetClientInfo.query_rx_filter (main thread, no lock held). */
JsonObject *virtio_net_query_rx_filter(NetClientState *nc);

#endif
