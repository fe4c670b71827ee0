/*
 * The netdev backend types and their creation (net/netdev-create.c): the
 * command line checks a -netdev's type against them and lists them for
 * -netdev help; the machine creates every kept NetdevConfig before its
 * devices, on the main thread (docs/network.md).
 */
#ifndef NET_NETDEV_CREATE_H
#define NET_NETDEV_CREATE_H

#include <stdbool.h>
#include <stdio.h>
#include <glib.h>
#include "net/netdev-config.h"
#include "qemu/error.h"

/* type is one of the backend types this build has ("tap", "socket", ...). */
bool netdev_type_is_known(const char *type);
/* -netdev help: "Available netdev backend types:" and one type a line. */
void netdev_types_print(FILE *out);

/* Create the netdev cfg describes; errors start with cfg->origin. */
bool netdev_create(const NetdevConfig *cfg, Error **errp);
/* Create every NetdevConfig of cfgs, in order. */
bool netdevs_create(GPtrArray *cfgs, Error **errp);
/* QEMU's warning for each netdev that no NIC took ("netdev n0 has no peer"). */
void netdevs_warn_unclaimed(GPtrArray *cfgs);

NetdevConfig *netdev_config_new(const char *type, const char *id, const char *origin);
void netdev_config_free(NetdevConfig *cfg);
/* The value of the last item named key (NULL when absent or bare). */
const char *netdev_config_get(const NetdevConfig *cfg, const char *key);
/* Every item's key is one of allowed (NULL-terminated) and has a value;
 * else QEMU's "Invalid parameter 'KEY'". */
bool netdev_config_check_keys(const NetdevConfig *cfg, const char *const *allowed,
                              Error **errp);
/* The boolean item key (on/off...), or dflt when absent. */
bool netdev_config_get_bool(const NetdevConfig *cfg, const char *key, bool dflt,
                            bool *value, Error **errp);

/* "qemu-system-x86_64: warning: ..." on stderr, as QEMU's warn_report. */
void net_warn(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

#endif
