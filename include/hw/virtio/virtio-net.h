/*
 * virtio-net (virtio 1.x, "Network Device") on the PCI transport:
 * `-device virtio-net-pci,netdev=ID[,mac=MAC][,mq=on|off][,iothread=ID]
 * [,rx_queue_size=N][,tx_queue_size=N][,host_mtu=N][,addr=SLOT]` and
 * QEMU's feature switches (csum=, guest_csum=, host_tso4=, ...,
 * mrg_rxbuf=, ctrl_vq=, ...), as QEMU names the properties.
 * docs/network.md ("virtio-net") describes the data path and the threads.
 */
#ifndef HW_VIRTIO_VIRTIO_NET_H
#define HW_VIRTIO_VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/pci/pci.h"
#include "hw/qdev-registry.h"
#include "hw/virtio/virtio-pci.h"
#include "hw/virtio/virtio.h"
#include "net/net.h"
#include "qemu/error.h"
#include "qemu/event-notifier.h"
#include "sysemu/iothread.h"

/* Feature bits (virtio 1.x, "Network Device: Feature bits"). */
#define VIRTIO_NET_F_CSUM               0   /* the device completes partial checksums */
#define VIRTIO_NET_F_GUEST_CSUM         1   /* the driver takes partial checksums */
#define VIRTIO_NET_F_MTU                3
#define VIRTIO_NET_F_MAC                5
#define VIRTIO_NET_F_GUEST_TSO4         7
#define VIRTIO_NET_F_GUEST_TSO6         8
#define VIRTIO_NET_F_GUEST_ECN          9
#define VIRTIO_NET_F_GUEST_UFO          10
#define VIRTIO_NET_F_HOST_TSO4          11
#define VIRTIO_NET_F_HOST_TSO6          12
#define VIRTIO_NET_F_HOST_ECN           13
#define VIRTIO_NET_F_HOST_UFO           14
#define VIRTIO_NET_F_MRG_RXBUF          15
#define VIRTIO_NET_F_STATUS             16
#define VIRTIO_NET_F_CTRL_VQ            17
#define VIRTIO_NET_F_CTRL_RX            18
#define VIRTIO_NET_F_CTRL_VLAN          19
#define VIRTIO_NET_F_CTRL_RX_EXTRA      20
#define VIRTIO_NET_F_GUEST_ANNOUNCE     21
#define VIRTIO_NET_F_MQ                 22
#define VIRTIO_NET_F_CTRL_MAC_ADDR      23

/* struct virtio_net_config: offsets of the fields used here. */
#define VIRTIO_NET_CFG_MAC              0x00
#define VIRTIO_NET_CFG_STATUS           0x06
#define VIRTIO_NET_CFG_MAX_VQ_PAIRS     0x08
#define VIRTIO_NET_CFG_MTU              0x0a
#define VIRTIO_NET_CFG_SIZE             0x0c

/* The status field. */
#define VIRTIO_NET_S_LINK_UP            1
#define VIRTIO_NET_S_ANNOUNCE           2

/* The control queue: class, command, data..., then the ack byte. */
#define VIRTIO_NET_OK                   0
#define VIRTIO_NET_ERR                  1
#define VIRTIO_NET_CTRL_RX              0
#define  VIRTIO_NET_CTRL_RX_PROMISC     0
#define  VIRTIO_NET_CTRL_RX_ALLMULTI    1
#define  VIRTIO_NET_CTRL_RX_ALLUNI      2   /* the last three need CTRL_RX_EXTRA */
#define  VIRTIO_NET_CTRL_RX_NOMULTI     3
#define  VIRTIO_NET_CTRL_RX_NOUNI       4
#define  VIRTIO_NET_CTRL_RX_NOBCAST     5
#define VIRTIO_NET_CTRL_MAC             1
#define  VIRTIO_NET_CTRL_MAC_TABLE_SET  0
#define  VIRTIO_NET_CTRL_MAC_ADDR_SET   1
#define VIRTIO_NET_CTRL_VLAN            2
#define  VIRTIO_NET_CTRL_VLAN_ADD       0
#define  VIRTIO_NET_CTRL_VLAN_DEL       1
#define VIRTIO_NET_CTRL_ANNOUNCE        3
#define  VIRTIO_NET_CTRL_ANNOUNCE_ACK   0
#define VIRTIO_NET_CTRL_MQ              4
#define  VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET 0

/* Queue pairs: each -netdev queue is one; the MSI-X table (one vector per
 * queue, plus one) bounds them. */
#define VIRTIO_NET_MAX_QUEUE_PAIRS      63
/* The entries of each of the unicast and multicast tables; a longer
 * table makes the device accept every address of its kind. */
#define VIRTIO_NET_MAC_TABLE_ENTRIES    64

typedef struct VirtIONetConf {
    NetDev *netdev;             /* NULL: no backend, frames sent are dropped */
    MACAddr mac;
    IOThread *iothread;         /* NULL: the main loop */
    const VirtIOPCIConf *pci;   /* the transport's switches; NULL: defaults */
    bool mq;                    /* one queue pair per netdev queue (MQ) */
    uint16_t rx_queue_size;     /* powers of two, 256..VIRTQUEUE_MAX_SIZE */
    uint16_t tx_queue_size;
    uint16_t host_mtu;          /* 0: no VIRTIO_NET_F_MTU */
    /* x-rx-in-place: lend the peer the receive chains, so a tap reads
     * frames straight into them (docs/network.md); off: always copy. */
    bool rx_in_place;
    /* x-tx-poll-ns: the longest a transmitq that was just emptied is
     * watched for the driver's next chain before kicks are turned back
     * on (virtio-net-tx.c); 0: never. */
    uint32_t tx_poll_max_ns;
    /* The features the user leaves on (QEMU's switches); those the peer
     * cannot carry are not offered anyway. */
    uint64_t features;
} VirtIONetConf;

/* A virtio-net-pci at devfn (-1: first free slot), its queue pair i
 * attached to queue i of conf->netdev. */
QEMUDevice *virtio_net_pci_new(PCIBus *bus, int devfn, const VirtIONetConf *conf,
                               Error **errp);

extern const DeviceTypeInfo virtio_net_pci_type;

/*
 * The vhost-net seam: what virtio-net calls of hw/virtio/vhost-net.c
 * (include/hw/virtio/vhost-net.h) and of the transport for it
 * (virtio_pci_redirect_kicks, virtio_pci_queue_call_notifier), as a table
 * so that a unit test can put a fake kernel behind it. The default table
 * holds those very functions. What virtio-net does with them is
 * vhost-net.h's protocol: create at realize (one per queue pair), mask the
 * offered features, start each pair at DRIVER_OK and redirect its kicks,
 * give them back and stop at reset (or when DRIVER_OK is cleared).
 */
typedef struct VhostNet VhostNet;
struct VirtIOPCIProxy;
typedef struct VirtIONetVhostOps {
    bool (*create)(NetClientState *nic, VhostNet **vn, Error **errp);
    uint64_t (*get_features)(const VhostNet *vn, uint64_t offered);
    bool (*start)(VhostNet *vn, VirtIODevice *vdev, unsigned rx_index, unsigned tx_index,
                  EventNotifier *calls[2], Error **errp);
    EventNotifier *(*kick_notifier)(VhostNet *vn, unsigned ring);
    void (*stop)(VhostNet *vn, VirtIODevice *vdev);
    void (*free)(VhostNet *vn);
    void (*redirect_kicks)(struct VirtIOPCIProxy *proxy, unsigned queue, EventNotifier *to);
    EventNotifier *(*queue_call_notifier)(struct VirtIOPCIProxy *proxy, unsigned queue);
} VirtIONetVhostOps;

/* Put another table behind the seam (before devices are realized); NULL
 * restores the default. */
void virtio_net_set_vhost_ops(const VirtIONetVhostOps *ops);

#endif
