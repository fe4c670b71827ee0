/*
 * The network layer: a NIC (frontend, hw/net, hw/virtio) and a netdev
 * (backend, net/: tap, user, socket) joined as a peer pair, one pair per
 * queue. Frames go straight from one side's send to the other side's
 * receive on the sender's thread; there is no hub and no copy in between.
 *
 * Threads and locks (docs/network.md):
 *  - Every NetClientState belongs to one GMainContext, its context: a NIC's
 *    is its device's (its iothread's, or the main loop's); a backend queue
 *    takes the context of the NIC that attaches to it (net_nic_new), and
 *    polls its host fd there.
 *  - A NIC sends with its device lock held (from a vCPU's register write,
 *    or from a kick served on its context). The backend's receive must not
 *    block and takes no device lock (a write to a tap fd; the socket
 *    backend's own leaf mutex).
 *  - A backend sends from its context with no lock held; the NIC's receive
 *    takes its own device lock.
 *  - Flow control: a receive that cannot take a frame now returns 0 and
 *    keeps nothing; the sender keeps the frame and stops sending. When the
 *    receiver can take frames again it calls net_client_receive_ready(),
 *    and the sender's info->send_ready runs on the sender's context. So a
 *    full guest RX ring stops the backend reading its fd (nothing dropped,
 *    nothing spinning) until the guest refills the ring.
 */
#ifndef NET_NET_H
#define NET_NET_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include "hw/qdev.h"
#include "hw/qdev-properties.h"
#include "qemu/bh.h"
#include "qemu/error.h"

typedef struct NetClientState NetClientState;
typedef struct NetDev NetDev;

/* The offloads a guest accepts on frames it receives (virtio-net's
 * GUEST_CSUM/TSO4/TSO6/ECN/UFO), which a tap may then hand it unsegmented. */
typedef struct NetOffloads {
    bool csum, tso4, tso6, ecn, ufo;
} NetOffloads;

/*
 * A backend puts a frame straight into a NIC's buffers: at most the iov's
 * bytes (a tap: one readv). Returns the frame's length, 0 when there is
 * none now, or -errno. Runs under the NIC's lock: it must not block and
 * takes no lock.
 */
typedef ssize_t (*NetFillFunc)(void *opaque, const struct iovec *iov, int iovcnt);

/* receive_filled lent no buffers (not an errno: those are small). */
#define NET_FILL_DECLINED       ((ssize_t)INT_MIN)

typedef struct NetClientInfo {
    const char *type;           /* "nic", "tap", "user", "socket" */
    /*
     * A frame from the peer. Returns its length once it is taken (sent on,
     * or dropped as the medium would drop it: a NIC with its receiver off,
     * a filter that rejects it), or 0 when it cannot be taken now: nothing
     * is kept, and the caller will be told (net_client_receive_ready) when
     * to send again. Never blocks.
     */
    ssize_t (*receive)(NetClientState *nc, const struct iovec *iov, int iovcnt);
    /*
     * A NIC: lend the peer the guest's buffers for one frame of at most
     * max bytes, and let fill write it there, under the NIC's lock, so the
     * frame is not copied twice (docs/network.md, "Receiving in place").
     * Returns fill's result: a length once the frame is taken (delivered,
     * or dropped as receive would drop it), or 0 or -errno with the
     * buffers the NIC's again. NET_FILL_DECLINED, without calling fill:
     * not enough buffers now (or none to lend at all); the peer reads the
     * frame itself and sends it through receive, which refuses it and
     * brings send_ready if the guest has no room. NULL: never lends.
     */
    ssize_t (*receive_filled)(NetClientState *nc, size_t max, NetFillFunc fill, void *opaque);
    /* The peer takes frames again after refusing one (on nc's context). */
    void (*send_ready)(NetClientState *nc);
    /* A backend: a NIC attached; start reading the host side on ctx. */
    void (*start)(NetClientState *nc, GMainContext *ctx);
    /* The link of nc or of its peer went up or down (set_link). May be NULL. */
    void (*link_changed)(NetClientState *nc);
    /* Frames may carry a virtio_net_hdr ahead of them (tap with vnet_hdr).
     * NULL: never. */
    bool (*has_vnet_hdr)(NetClientState *nc);
    /* From now on frames in both directions start with a header of len bytes
     * (10, or 12 with mergeable buffers / VERSION_1); 0: none. */
    void (*set_vnet_hdr_len)(NetClientState *nc, unsigned len);
    /* What the guest accepts unsegmented/unchecksummed (tap: TUNSETOFFLOAD). */
    void (*set_offload)(NetClientState *nc, const NetOffloads *offloads);
    /* A queue of a multiqueue backend: the NIC reads it (true) or has left
     * it out (false, e.g. virtio-net pairs beyond those in use), so the
     * host's frames go to the other queues (tap: TUNSETQUEUE). NULL: the
     * backend has nothing to do. */
    void (*set_queue_enabled)(NetClientState *nc, bool enabled);
    /* Free what the client owns (the layer frees nc itself). May be NULL. */
    void (*cleanup)(NetClientState *nc);
    /* A NIC's receive filter for query-rx-filter, in QEMU's RxFilterInfo
     * shape, read under the NIC's lock; it also re-arms the NIC's
     * NIC_RX_FILTER_CHANGED event. Main thread, no lock held. NULL: the
     * NIC cannot say (QEMU's e1000 cannot either). */
    JsonObject *(*query_rx_filter)(NetClientState *nc);
} NetClientInfo;

struct NetClientState {
    const NetClientInfo *info;
    char *name;                 /* "e1000.0", or the netdev id ("n0", "n0.1" for queue 1) */
    NetClientState *peer;
    NetDev *netdev;             /* a backend queue: the -netdev it belongs to */
    GMainContext *ctx;
    QEMUBH *send_ready_bh;      /* runs info->send_ready on ctx */
    /* Written by set_link (the monitor's thread), read by both sides'
     * threads without a lock: atomic, so plain reads and writes are. */
    atomic_bool link_down;
    void *opaque;
    /* A NIC: its device, whose id names it to set_link and query-rx-filter
     * (set by the NIC model after net_nic_new). NULL: named by name. */
    QEMUDevice *owner;
    /* What `info network` says of it after "type=...,": "model=e1000,
     * macaddr=...", "ifname=tap0,script=no,downscript=no"... Set through
     * net_client_set_info (any thread: a socket backend sets it when a
     * peer connects), read through net_client_info. NULL: nothing. */
    char *info_str;
    MACAddr mac;                /* a NIC: as net_nic_set_info was given it */
};

/* One -netdev: its queues (tap queues=N; one for the others). */
struct NetDev {
    char *id;
    const char *type;
    unsigned num_queues;
    NetClientState **queues;
    char *claimed_by;           /* the NIC's id, once a NIC has it */
};

/* ---- both sides ---- */

/*
 * Send one frame to nc's peer; returns what the peer's receive returned:
 * its length (taken), or 0 (not now: keep it, wait for send_ready). A
 * client without a peer, or with either link down, drops the frame and
 * returns its length, as an unplugged cable does. Never send an empty
 * frame: its length, 0, reads as a refusal no send_ready will follow.
 */
ssize_t net_send(NetClientState *nc, const struct iovec *iov, int iovcnt);
ssize_t net_send_buf(NetClientState *nc, const void *buf, size_t len);
/* Fill a frame of at most max bytes straight into the peer's buffers
 * (its receive_filled). NET_FILL_DECLINED when the peer lends none, or
 * when either link is down or there is no peer: then read the frame and
 * net_send it, which drops it as a cable would. */
ssize_t net_send_filled(NetClientState *nc, size_t max, NetFillFunc fill, void *opaque);
/* nc refused a frame earlier and can take frames again: its peer's
 * send_ready runs on the peer's context. Any thread, any lock. */
void net_client_receive_ready(NetClientState *nc);
/* set_link: both sides' link_changed run. Main thread. */
void net_client_set_link(NetClientState *nc, bool up);
/* The clients a QMP name means, as QEMU resolves set_link's: every queue
 * of the NIC whose device has that id (or, for a NIC without a device,
 * whose name it is), else every queue of the netdev with that id. Empty
 * when nothing has the name. Main thread. */
GPtrArray *net_clients_find(const char *name);
/* Every NIC client, in creation order, for query-rx-filter. Main thread. */
GPtrArray *net_nic_clients(void);

/* Replace nc's info_str with the formatted text (a leaf lock guards it). */
void net_client_set_info(NetClientState *nc, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* A copy of nc's info_str ("" when it has none); g_free it. */
char *net_client_info(NetClientState *nc);
/* Every netdev, in creation order, for `info network`. Main thread. */
GPtrArray *net_netdevs(void);
/* `info network`, as QEMU 7.2's human monitor prints it (net/net-info.c). */
void net_info_print(GString *out);

/* ---- backends (net/) ---- */

/* A new -netdev of type with num_queues queues, each a client of info;
 * registered under id (an id already taken is an error, QEMU's message:
 * "Duplicate ID 'n0' for netdev"). The caller fills each queue's opaque. */
NetDev *netdev_new(const char *type, const char *id, unsigned num_queues,
                   const NetClientInfo *info, Error **errp);
NetDev *netdev_find(const char *id);
/* Once the machine's NICs are made: detach every queue of a multiqueue
 * netdev that no NIC took (virtio-net with mq=off, or an e1000, on a tap
 * with queues=2), so the kernel hashes no flow onto a queue nobody reads. */
void netdevs_detach_unused_queues(void);
/* Remove and free every netdev (after the NICs are gone). */
void netdevs_free_all(void);

/* ---- NICs (hw/) ---- */

/*
 * A NIC client named name, on ctx, attached to queue `queue` of netdev
 * (NULL: no backend; everything sent is dropped). The netdev is claimed by
 * the NIC whose id is dev_id (QEMU's error if another NIC has it; the
 * first queue's claim covers all) and its queue starts on ctx.
 */
NetClientState *net_nic_new(const NetClientInfo *info, const char *name, NetDev *netdev,
                            unsigned queue, const char *dev_id, GMainContext *ctx,
                            void *opaque, Error **errp);
void net_client_free(NetClientState *nc);
/* A NIC's info_str as QEMU sets it when the NIC is created:
 * "model=TYPE,macaddr=MAC", TYPE its owner's. Call after setting owner. */
void net_nic_set_info(NetClientState *nc, const MACAddr *mac);
/* The MAC the NIC whose device is owner was created with (its first
 * queue's net_nic_set_info): false if owner has no NIC client. */
bool net_nic_mac(const QEMUDevice *owner, MACAddr *mac);

/* The peer can carry vnet headers (wrappers that answer false without a
 * peer or without the op). */
bool net_peer_has_vnet_hdr(NetClientState *nc);
void net_peer_set_vnet_hdr_len(NetClientState *nc, unsigned len);
void net_peer_set_offload(NetClientState *nc, const NetOffloads *offloads);
/* The NIC uses its queue nc (true) or not: the peer's set_queue_enabled. */
void net_peer_set_queue_enabled(NetClientState *nc, bool enabled);

/* QEMU's default MACs: 52:54:00:12:34:56, then :57, ... one per NIC that
 * has none given, in creation order. */
void net_default_mac(MACAddr *mac);
/* "52:54:00:12:34:56" into buf (18 bytes). */
void net_format_mac(const MACAddr *mac, char buf[18]);

#endif
