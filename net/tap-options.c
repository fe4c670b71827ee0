/*
 * -netdev tap's options (net/tap-options.h): what each means is in
 * net/tap.c and docs/network.md ("tap").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include "net/netdev-create.h"
#include "tap-options.h"

static const char *const tap_keys[] = {
    "ifname", "script", "downscript", "vnet_hdr", "queues", "fd", "fds",
    "vhost", "vhostforce", "vhostfd", "vhostfds", "poll-us", NULL,
};

/* An fd the process inherited, by number. */
static bool tap_parse_fd(const char *key, const char *text, int *fd, Error **errp)
{
    uint64_t n;
    if (!parse_uint(text, INT_MAX, &n)) {
        error_setg(errp, "Parameter '%s' expects a file descriptor number", key);
        return false;
    }
    if (fcntl((int)n, F_GETFD) < 0) {
        error_setg(errp, "Parameter '%s': file descriptor %s is not open", key, text);
        return false;
    }
    *fd = n;
    return true;
}

/* fd=N (one) or fds=N:M:... (one per queue) into fds; returns the count. */
static unsigned tap_parse_fd_list(const char *key, const char *text, int *fds,
                                  Error **errp)
{
    g_auto(GStrv) parts = g_strsplit(text, ":", -1);
    unsigned n = g_strv_length(parts);
    if (n == 0 || n > TAP_MAX_QUEUES) {
        error_setg(errp, "Parameter '%s' expects 1 to %d file descriptors", key,
                   TAP_MAX_QUEUES);
        return 0;
    }
    for (unsigned i = 0; i < n; i++) {
        if (!tap_parse_fd(key, parts[i], &fds[i], errp)) {
            return 0;
        }
    }
    return n;
}

static bool tap_parse_fds(const NetdevConfig *cfg, TapOptions *o, Error **errp)
{
    const char *fd = netdev_config_get(cfg, "fd"), *fds = netdev_config_get(cfg, "fds");
    if (fd && fds) {
        error_setg(errp, "fd= and fds= are mutually exclusive");
        return false;
    }
    if (!fd && !fds) {
        return true;
    }
    if (o->ifname || o->script || o->downscript || o->vnet_hdr != TAP_VNET_HDR_AUTO ||
        netdev_config_get(cfg, "queues")) {
        error_setg(errp, "ifname=, script=, downscript=, vnet_hdr= and queues= are invalid "
                   "with fd=/fds=");
        return false;
    }
    unsigned n = tap_parse_fd_list(fd ? "fd" : "fds", fd ? fd : fds, o->fds, errp);
    if (n == 0) {
        return false;
    }
    if (fd && n != 1) {
        error_setg(errp, "Parameter 'fd' expects one file descriptor (fds= takes several)");
        return false;
    }
    o->queues = n;
    o->fds_given = true;
    return true;
}

static bool tap_parse_vhostfds(const NetdevConfig *cfg, TapOptions *o, Error **errp)
{
    const char *one = netdev_config_get(cfg, "vhostfd");
    const char *many = netdev_config_get(cfg, "vhostfds");
    if (!one && !many) {
        return true;
    }
    if (one && many) {
        error_setg(errp, "vhostfd= and vhostfds= are mutually exclusive");
        return false;
    }
    unsigned n = tap_parse_fd_list(one ? "vhostfd" : "vhostfds", one ? one : many,
                                   o->vhostfds, errp);
    if (n == 0) {
        return false;
    }
    if (n != o->queues) {
        error_setg(errp, "%s= gives %u file descriptor(s) for %u queue(s)",
                   one ? "vhostfd" : "vhostfds", n, o->queues);
        return false;
    }
    o->vhostfds_given = true;
    return true;
}

/* poll-us=: vhost-net's busy polling per ring (VHOST_SET_VRING_BUSYLOOP_
 * TIMEOUT). QEMU takes it without vhost and does nothing with it; here
 * that is said. */
static bool tap_parse_poll_us(const NetdevConfig *cfg, TapOptions *o, Error **errp)
{
    const char *text = netdev_config_get(cfg, "poll-us");
    uint64_t us;
    if (!text) {
        return true;
    }
    if (!parse_uint(text, UINT32_MAX, &us)) {
        error_setg(errp, "Parameter 'poll-us' expects a number of microseconds "
                   "from 0 to %" PRIu32, UINT32_MAX);
        return false;
    }
    o->poll_us = us;
    if (us && o->vhost == NET_TAP_VHOST_OFF) {
        net_warn("tap: poll-us= applies to vhost-net only, and vhost is off");
    }
    return true;
}

/*
 * As QEMU 7.2: vhost=on, or without vhost= any of vhostforce=on, vhostfd=,
 * vhostfds=, asks for vhost-net; vhostforce=on makes its absence an error
 * instead of a warning. vhost=off with vhostforce=on (which QEMU takes
 * silently, forcing nothing) is refused as the contradiction it is.
 */
static bool tap_parse_vhost(const NetdevConfig *cfg, TapOptions *o, Error **errp)
{
    bool vhost, force;
    const char *vhost_text = netdev_config_get(cfg, "vhost");
    if (!netdev_config_get_bool(cfg, "vhost", false, &vhost, errp) ||
        !netdev_config_get_bool(cfg, "vhostforce", false, &force, errp) ||
        !tap_parse_vhostfds(cfg, o, errp)) {
        return false;
    }
    if (vhost_text && !vhost) {
        if (force) {
            error_setg(errp, "vhostforce=on needs vhost-net, but vhost=off was given");
            return false;
        }
        if (o->vhostfds_given) {
            error_setg(errp, "vhostfd(s)= is not valid without vhost");
            return false;
        }
    }
    if (!vhost_text) {
        vhost = force || o->vhostfds_given;
    }
    o->vhost = !vhost ? NET_TAP_VHOST_OFF : force ? NET_TAP_VHOST_FORCE : NET_TAP_VHOST_ON;
    return tap_parse_poll_us(cfg, o, errp);
}

bool tap_parse_options(const NetdevConfig *cfg, TapOptions *o, Error **errp)
{
    *o = (TapOptions){ .queues = 1, .vnet_hdr = TAP_VNET_HDR_AUTO };
    if (!netdev_config_check_keys(cfg, tap_keys, errp)) {
        return false;
    }
    o->ifname = netdev_config_get(cfg, "ifname");
    o->script = netdev_config_get(cfg, "script");
    o->downscript = netdev_config_get(cfg, "downscript");
    if (o->ifname && strlen(o->ifname) >= IFNAMSIZ) {
        error_setg(errp, "Parameter 'ifname' expects a name of at most %d characters",
                   IFNAMSIZ - 1);
        return false;
    }
    if (netdev_config_get(cfg, "vnet_hdr")) {
        bool on;
        if (!netdev_config_get_bool(cfg, "vnet_hdr", false, &on, errp)) {
            return false;
        }
        o->vnet_hdr = on ? TAP_VNET_HDR_ON : TAP_VNET_HDR_OFF;
    }
    const char *queues = netdev_config_get(cfg, "queues");
    uint64_t n;
    if (queues && (!parse_uint(queues, TAP_MAX_QUEUES, &n) || n == 0)) {
        error_setg(errp, "Parameter 'queues' expects a number from 1 to %d", TAP_MAX_QUEUES);
        return false;
    }
    if (queues) {
        o->queues = n;
    }
    return tap_parse_fds(cfg, o, errp) && tap_parse_vhost(cfg, o, errp);
}

bool tap_probe_vhost(TapOptions *o, Error **errp)
{
    if (o->vhost == NET_TAP_VHOST_OFF || o->vhostfds_given) {
        return true;
    }
    int fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return true;
    }
    if (o->vhost == NET_TAP_VHOST_FORCE) {
        error_setg_errno(errp, errno, "tap: open vhost char device failed");
        return false;
    }
    net_warn("tap: open vhost char device failed: %s", g_strerror(errno));
    o->vhost = NET_TAP_VHOST_OFF;
    return true;
}
