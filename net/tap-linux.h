/*
 * Linux's tun/tap driver (/dev/net/tun) as the tap backend uses it: open a
 * tap queue, find out what an fd the user passed can do, and the vnet
 * header and offload ioctls. Private to net/.
 */
#ifndef NET_TAP_LINUX_H
#define NET_TAP_LINUX_H

#include <stdbool.h>
#include <net/if.h>
#include "net/net.h"
#include "qemu/error.h"

typedef enum TapVnetHdrRequest {
    TAP_VNET_HDR_AUTO,          /* vnet_hdr not given: use it if the kernel has it */
    TAP_VNET_HDR_OFF,
    TAP_VNET_HDR_ON,            /* vnet_hdr=on: an error if the kernel lacks it */
} TapVnetHdrRequest;

/*
 * Open one queue of the tap named ifname (empty: the kernel picks
 * "tapN"; the name it got is written back), non-blocking, with
 * IFF_MULTI_QUEUE when multi_queue. *vnet_hdr says whether frames carry a
 * virtio-net header (10 bytes, no offloads until tap_set_offload). A tap
 * that cannot change its header length (TUNSETVNETHDRSZ to 12 and 10)
 * has none: an error with vnet_hdr=on, else the tap is opened without.
 * Returns the fd, or -1 with QEMU's error.
 */
int tap_open(char ifname[IFNAMSIZ], TapVnetHdrRequest request, bool multi_queue,
             bool *vnet_hdr, Error **errp);
/* An fd the user passed (fd=, fds=): a tap, made non-blocking; *vnet_hdr
 * from its flags (an error if it has one but cannot change its length). */
bool tap_adopt_fd(int fd, char ifname[IFNAMSIZ], bool *vnet_hdr, Error **errp);
/* TUNSETVNETHDRSZ. */
bool tap_set_vnet_hdr_len(int fd, unsigned len);
/* TUNSETOFFLOAD: what may come from the tap unsegmented or unchecksummed. */
void tap_set_offload(int fd, const NetOffloads *offloads);
/* TUNSETQUEUE: a queue of a multiqueue tap joins (IFF_ATTACH_QUEUE) or
 * leaves (IFF_DETACH_QUEUE) the queues the kernel spreads frames over.
 * False with errno. */
bool tap_set_queue_attached(int fd, bool attached);

#endif
