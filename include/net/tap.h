/*
 * What the vhost-net glue (hw/virtio) needs of a tap netdev's queue: its
 * fd and what the user asked of vhost (-netdev tap,vhost=,vhostforce=,
 * vhostfd=,poll-us=).
 */
#ifndef NET_TAP_H
#define NET_TAP_H

#include <stdbool.h>
#include "net/net.h"

typedef enum NetTapVhost {
    NET_TAP_VHOST_OFF,          /* vhost=off (the default) */
    NET_TAP_VHOST_ON,           /* vhost=on: fall back to user space with a warning */
    NET_TAP_VHOST_FORCE,        /* vhostforce=on: no vhost is an error */
} NetTapVhost;

/* The downscript some tap netdev will run at exit, or NULL. */
const char *net_tap_pending_downscript(void);
/* True if nc is a queue of a tap netdev. */
bool net_is_tap(const NetClientState *nc);
/* The queue's tap fd (for VHOST_NET_SET_BACKEND). */
int net_tap_fd(const NetClientState *nc);
NetTapVhost net_tap_vhost(const NetClientState *nc);
/* An fd the user passed with vhostfd= (fds= for queues), or -1: open /dev/vhost-net.
 * The netdev owns it and closes it with the queue: do not close it. */
int net_tap_vhostfd(const NetClientState *nc);
/* poll-us=: how long vhost-net's worker polls each ring before it waits
 * for a kick, in microseconds (0: the default, not at all). */
uint32_t net_tap_poll_us(const NetClientState *nc);
/*
 * vhost takes the queue over (on): the tap backend stops reading and
 * writing its fd until handed back (off). The NIC calls it with its
 * device lock held; it does not block.
 */
void net_tap_set_vhost_owned(NetClientState *nc, bool owned);

#endif
