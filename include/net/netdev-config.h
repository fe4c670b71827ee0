/*
 * A -netdev (or the backend half of a -nic) as the user wrote it, kept by
 * the command line and created once the machine's contexts exist, and the
 * constructors of the backend types (net/tap.c, net/slirp.c,
 * net/socket.c). Main thread (machine build).
 */
#ifndef NET_NETDEV_CONFIG_H
#define NET_NETDEV_CONFIG_H

#include <stdbool.h>
#include <glib.h>
#include "qemu/error.h"
#include "qemu/keyval.h"

typedef struct NetdevConfig {
    char *type;                 /* "tap", "user", "socket" */
    char *id;
    /* KeyvalItem *: the options other than type and id, in command-line
     * order (hostfwd= may repeat). */
    GPtrArray *items;
    char *origin;               /* "-netdev user,id=n0,...": errors start with it */
} NetdevConfig;

/*
 * Create the netdev cfg describes (netdev_new, include/net/net.h). Errors
 * name the option as QEMU does ("Invalid parameter 'foo'", "Parameter
 * 'hostfwd' expects ...") and the caller prefixes cfg->origin.
 */
bool net_tap_init(const NetdevConfig *cfg, Error **errp);
bool net_user_init(const NetdevConfig *cfg, Error **errp);
bool net_socket_init(const NetdevConfig *cfg, Error **errp);

#endif
