/*
 * The options of -netdev user, as QEMU 7.2 takes them, turned into what
 * libslirp's slirp_new() and slirp_add_hostxfwd() take. Used by net/slirp.c
 * (and its unit test): pure parsing, no sockets.
 */
#ifndef NET_SLIRP_OPTIONS_H
#define NET_SLIRP_OPTIONS_H

#include <stdbool.h>
#include <netinet/in.h>
#include <glib.h>
#include <slirp/libslirp.h>
#include "qemu/error.h"

/* hostfwd=[tcp|udp]:[hostaddr]:hostport-[guestaddr]:guestport */
typedef struct UserNetHostFwd {
    const char *rule;           /* as written, for the error that names it */
    bool udp;
    struct sockaddr_in host;    /* address 0.0.0.0 when none is given */
    struct sockaddr_in guest;   /* address 0.0.0.0: slirp's first DHCP address */
} UserNetHostFwd;

typedef struct UserNetOptions {
    /* The strings it points to are the option values (items passed to
     * user_net_options_parse) and dnssearch below: keep both alive until
     * slirp_new() has copied them. */
    SlirpConfig cfg;
    GPtrArray *dnssearch;       /* const char *, NULL-terminated (cfg.vdnssearch) */
    GArray *hostfwds;           /* UserNetHostFwd, in command-line order */
} UserNetOptions;

/*
 * Parse items (KeyvalItem *, without type= and id=) into opts, with QEMU's
 * defaults (10.0.2.0/24, host .2, DNS .3, DHCP from .15; IPv4 and IPv6 on)
 * and QEMU's checks and messages ("Invalid parameter 'foo'", "Host doesn't
 * belong to network", "Invalid host forwarding rule '...' (Bad host port)").
 * Free opts with user_net_options_free, also after a failure.
 */
bool user_net_options_parse(GPtrArray *items, UserNetOptions *opts, Error **errp);
void user_net_options_free(UserNetOptions *opts);

#endif
