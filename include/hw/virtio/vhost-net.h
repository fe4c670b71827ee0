/*
 * vhost-net: one queue pair of virtio-net served by the host kernel
 * (/dev/vhost-net) instead of user space. The kernel reads the TX ring and
 * writes the tap, reads the tap and fills the RX ring, takes the guest's
 * kicks straight from KVM's ioeventfds and interrupts it through the
 * MSI-X vectors' irqfds: no frame and no kick crosses user space.
 *
 * One VhostNet per tap queue (multiqueue: one per queue pair). What
 * virtio-net does with it (docs/network.md, "vhost-net"):
 *
 *   realize:    vhost_net_create(nic, &vn, errp) for each queue pair; false
 *               fails the realize (vhostforce=on and no vhost). vn NULL:
 *               user space (vhost=off, or vhost=on without /dev/vhost-net,
 *               warned once).
 *               Offer vhost_net_get_features(vn, offered).
 *   DRIVER_OK:  with the device lock held, for each queue pair:
 *                 EventNotifier *calls[2] = {
 *                     virtio_pci_queue_call_notifier(proxy, rx),
 *                     virtio_pci_queue_call_notifier(proxy, tx) };
 *                 if (calls[0] && calls[1] &&
 *                     vhost_net_start(vn, vdev, rx, tx, calls, &err)) {
 *                     virtio_pci_redirect_kicks(proxy, rx, vhost_net_kick_notifier(vn, 0));
 *                     virtio_pci_redirect_kicks(proxy, tx, vhost_net_kick_notifier(vn, 1));
 *                 } else { log err (if any); serve the pair in user space }
 *               While started, the pair's queue handlers are not called
 *               (the kicks go to the kernel) and the tap backend leaves its
 *               fd alone (net_tap_set_vhost_owned).
 *   reset, or the driver clears DRIVER_OK (device lock held):
 *                 virtio_pci_redirect_kicks(proxy, rx, NULL); (and tx)
 *                 vhost_net_stop(vn, vdev);
 *               The rings' indexes are written back into the VirtQueues,
 *               so user space could go on where the kernel stopped; after
 *               a reset the VirtQueues are reset anyway.
 *               Afterwards virtio-net sets the tap's header length its
 *               user-space path wants (vhost_net_start set the guest's).
 *   unrealize:  vhost_net_free(vn) (stopped first if started).
 *
 * (virtio.h's VirtIODeviceOps has no status hook yet: virtio-net needs one
 * at DRIVER_OK. Its reset op runs after virtio_reset has unmapped the
 * rings; vhost_net_stop copes, and the kernel only touches the old rings
 * until then, inside the driver's own status write.)
 *
 * Threads: every call with the device lock held (or at realize/unrealize).
 * The memory table follows the guest's RAM by itself (a memory listener).
 */
#ifndef HW_VIRTIO_VHOST_NET_H
#define HW_VIRTIO_VHOST_NET_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/virtio/virtio.h"
#include "net/net.h"
#include "qemu/error.h"
#include "qemu/event-notifier.h"

typedef struct VhostNet VhostNet;

/*
 * The vhost for nic's peer, as its -netdev asks: *vn is set to a started-
 * ready VhostNet (the /dev/vhost-net or vhostfd= fd opened, owned, its
 * features read), or to NULL when the pair stays in user space: the peer
 * is not a tap, vhost=off, or vhost=on and vhost cannot be had (one
 * warning per process says why). Returns false, with errp set to one line
 * naming vhostforce=on and the reason, only when vhostforce=on and vhost
 * cannot be had.
 */
bool vhost_net_create(NetClientState *nic, VhostNet **vn, Error **errp);

/*
 * The device features to offer: offered without the bits the kernel must
 * implement itself and this vhost does not (the ring features INDIRECT_DESC,
 * EVENT_IDX, VERSION_1, NOTIFY_ON_EMPTY, ANY_LAYOUT, and MRG_RXBUF), and
 * without those it can never do here (ACCESS_PLATFORM, RING_PACKED). The
 * other bits (CSUM, TSO, MAC, STATUS, CTRL_VQ, MQ...) are the tap's or user
 * space's and pass through. vn NULL: offered unchanged.
 */
uint64_t vhost_net_get_features(const VhostNet *vn, uint64_t offered);

/*
 * Hand virtqueues rx_index and tx_index of vdev to the kernel, with the
 * driver's accepted features, from where user space left them (their last
 * available index; no chain may be popped and not pushed). calls[0] and
 * calls[1] are the notifiers that interrupt the driver for rx and tx (the
 * queues' MSI-X vector notifiers). The tap's vnet header length becomes the
 * guest's (12 with MRG_RXBUF or VERSION_1, else 10) and vhost owns the tap
 * queue. False, with errp set and nothing left changed, if the queues are
 * not enabled, their rings are not wholly in RAM, or the kernel refuses.
 * The kick notifiers (vhost_net_kick_notifier) are signalled once, so
 * chains made available before the start are seen.
 */
bool vhost_net_start(VhostNet *vn, VirtIODevice *vdev, unsigned rx_index, unsigned tx_index,
                     EventNotifier *calls[2], Error **errp);

/*
 * The notifier the kernel takes kicks from for ring 0 (rx) or 1 (tx): the
 * transport signals it for every kick of that queue while started
 * (virtio_pci_redirect_kicks). Valid from vhost_net_create to
 * vhost_net_free.
 */
EventNotifier *vhost_net_kick_notifier(VhostNet *vn, unsigned ring);

/*
 * Take the queues back from the kernel: the tap queue is handed back and
 * each VirtQueue's last available index and used index become what the
 * kernel reached. Does nothing if not started.
 */
void vhost_net_stop(VhostNet *vn, VirtIODevice *vdev);
bool vhost_net_started(const VhostNet *vn);

/* Stop (if started), close the vhost fd and free vn; NULL is allowed. */
void vhost_net_free(VhostNet *vn);

/* ---- the feature arithmetic (hw/virtio/vhost-net-features.c; pure) ---- */

/* vhost_net_get_features with the kernel's features given. */
uint64_t vhost_net_mask_features(uint64_t kernel, uint64_t offered);
/*
 * What to ack to the kernel (VHOST_SET_FEATURES) for the driver's accepted
 * features: its ring features and MRG_RXBUF, which the kernel implements.
 * Never bit 27, which the guest knows as ANY_LAYOUT but vhost-net reads as
 * VHOST_NET_F_VIRTIO_NET_HDR ("add and strip the header yourself"), unless
 * the tap carries no vnet header (tap_vnet_hdr false), when it is wanted.
 */
uint64_t vhost_net_ack_features(uint64_t kernel, uint64_t guest, bool tap_vnet_hdr);
/* The vnet header the guest puts ahead of its frames: 12 bytes with
 * MRG_RXBUF or VERSION_1, else 10 (include/net/vnet-hdr.h). */
unsigned vhost_net_hdr_len(uint64_t guest);

#endif
