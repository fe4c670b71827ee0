/*
 * -netdev tap's options as QEMU 7.2 takes them, checked against each
 * other before anything is opened (net/tap-options.c). Private to net/.
 */
#ifndef NET_TAP_OPTIONS_H
#define NET_TAP_OPTIONS_H

#include <stdbool.h>
#include "net/netdev-config.h"
#include "net/tap.h"
#include "tap-linux.h"

#define TAP_MAX_QUEUES          1024

/* The options as given, checked against each other. */
typedef struct TapOptions {
    const char *ifname, *script, *downscript;
    TapVnetHdrRequest vnet_hdr;
    unsigned queues;
    int fds[TAP_MAX_QUEUES];    /* fd=/fds=: the user's, queues of them */
    bool fds_given;
    int vhostfds[TAP_MAX_QUEUES];
    bool vhostfds_given;
    NetTapVhost vhost;
    uint32_t poll_us;
} TapOptions;

/* Parse and check cfg's options into o. */
bool tap_parse_options(const NetdevConfig *cfg, TapOptions *o, Error **errp);
/*
 * QEMU opens /dev/vhost-net when the netdev is created: without it,
 * vhostforce=on fails there and vhost=on warns and goes on in user space
 * (o->vhost becomes off). The device is only probed here; the vhost-net
 * glue opens its own.
 */
bool tap_probe_vhost(TapOptions *o, Error **errp);

#endif
