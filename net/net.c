/*
 * The network layer's peer pairs, the netdev registry and QEMU's default
 * MAC addresses (include/net/net.h).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "hw/qdev-registry.h"
#include "net/net.h"
#include "qemu/iov.h"

/* -netdev ids, in creation order: main thread only (machine build, exit). */
static GPtrArray *netdevs;
/* NIC clients, in creation order: main thread only (build, exit). */
static GPtrArray *nic_clients;

ssize_t net_send(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    NetClientState *peer = nc->peer;
    if (!peer || nc->link_down || peer->link_down) {
        return iov_size(iov, iovcnt);
    }
    return peer->info->receive(peer, iov, iovcnt);
}

ssize_t net_send_filled(NetClientState *nc, size_t max, NetFillFunc fill, void *opaque)
{
    NetClientState *peer = nc->peer;
    if (!peer || nc->link_down || peer->link_down || !peer->info->receive_filled) {
        return NET_FILL_DECLINED;
    }
    return peer->info->receive_filled(peer, max, fill, opaque);
}

ssize_t net_send_buf(NetClientState *nc, const void *buf, size_t len)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    return net_send(nc, &iov, 1);
}

static void net_client_send_ready(void *opaque)
{
    NetClientState *nc = opaque;
    if (nc->info->send_ready) {
        nc->info->send_ready(nc);
    }
}

void net_client_receive_ready(NetClientState *nc)
{
    if (nc->peer && nc->peer->send_ready_bh) {
        qemu_bh_schedule(nc->peer->send_ready_bh);
    }
}

void net_client_set_link(NetClientState *nc, bool up)
{
    nc->link_down = !up;
    if (nc->info->link_changed) {
        nc->info->link_changed(nc);
    }
    if (nc->peer && nc->peer->info->link_changed) {
        nc->peer->info->link_changed(nc->peer);
    }
}

/* A copy the caller may keep while the registry changes. */
static GPtrArray *list_copy(GPtrArray *registry)
{
    GPtrArray *list = g_ptr_array_new();
    for (guint i = 0; registry && i < registry->len; i++) {
        g_ptr_array_add(list, g_ptr_array_index(registry, i));
    }
    return list;
}

GPtrArray *net_nic_clients(void)
{
    return list_copy(nic_clients);
}

GPtrArray *net_netdevs(void)
{
    return list_copy(netdevs);
}

bool net_nic_mac(const QEMUDevice *owner, MACAddr *mac)
{
    for (guint i = 0; nic_clients && i < nic_clients->len; i++) {
        NetClientState *nc = g_ptr_array_index(nic_clients, i);
        if (nc->owner == owner) {
            *mac = nc->mac;     /* the first queue: the one described */
            return true;
        }
    }
    return false;
}

/* Guards every client's info_str: a leaf lock, held for a copy only. */
static GMutex info_lock;

void net_client_set_info(NetClientState *nc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_mutex_lock(&info_lock);
    char *old = nc->info_str;
    nc->info_str = text;
    g_mutex_unlock(&info_lock);
    g_free(old);
}

char *net_client_info(NetClientState *nc)
{
    g_mutex_lock(&info_lock);
    char *text = g_strdup(nc->info_str ? nc->info_str : "");
    g_mutex_unlock(&info_lock);
    return text;
}

void net_nic_set_info(NetClientState *nc, const MACAddr *mac)
{
    char buf[18];
    nc->mac = *mac;
    net_format_mac(mac, buf);
    net_client_set_info(nc, "model=%s,macaddr=%s", nc->owner ? nc->owner->type : nc->name, buf);
}

static const char *net_nic_name(const NetClientState *nc)
{
    return nc->owner ? nc->owner->id : nc->name;
}

GPtrArray *net_clients_find(const char *name)
{
    GPtrArray *found = g_ptr_array_new();
    for (guint i = 0; nic_clients && i < nic_clients->len; i++) {
        NetClientState *nc = g_ptr_array_index(nic_clients, i);
        if (!strcmp(net_nic_name(nc), name)) {
            g_ptr_array_add(found, nc);
        }
    }
    NetDev *nd = found->len ? NULL : netdev_find(name);
    for (unsigned q = 0; nd && q < nd->num_queues; q++) {
        g_ptr_array_add(found, nd->queues[q]);
    }
    return found;
}

/* Give nc its context: its send_ready runs there from now on. */
static void net_client_set_context(NetClientState *nc, GMainContext *ctx)
{
    nc->ctx = ctx;
    nc->send_ready_bh = qemu_bh_new(ctx, net_client_send_ready, nc);
}

static NetClientState *net_client_new(const NetClientInfo *info, const char *name)
{
    NetClientState *nc = g_new0(NetClientState, 1);
    nc->info = info;
    nc->name = g_strdup(name);
    return nc;
}

void net_client_free(NetClientState *nc)
{
    if (!nc) {
        return;
    }
    if (nc->peer) {
        nc->peer->peer = NULL;
    }
    if (nic_clients) {
        g_ptr_array_remove(nic_clients, nc);
    }
    if (nc->info->cleanup) {
        nc->info->cleanup(nc);
    }
    if (nc->send_ready_bh) {        /* a netdev no NIC attached to has none */
        qemu_bh_delete(nc->send_ready_bh);
    }
    g_free(nc->info_str);
    g_free(nc->name);
    g_free(nc);
}

/* ---- the netdev registry ---- */

NetDev *netdev_find(const char *id)
{
    for (guint i = 0; netdevs && i < netdevs->len; i++) {
        NetDev *nd = g_ptr_array_index(netdevs, i);
        if (!strcmp(nd->id, id)) {
            return nd;
        }
    }
    return NULL;
}

void netdevs_detach_unused_queues(void)
{
    for (guint i = 0; netdevs && i < netdevs->len; i++) {
        NetDev *nd = g_ptr_array_index(netdevs, i);
        for (unsigned q = 0; q < nd->num_queues; q++) {
            NetClientState *queue = nd->queues[q];
            if (!queue->peer && queue->info->set_queue_enabled) {
                queue->info->set_queue_enabled(queue, false);
            }
        }
    }
}

static void *netdev_finder(const char *id)
{
    return netdev_find(id);
}

NetDev *netdev_new(const char *type, const char *id, unsigned num_queues,
                   const NetClientInfo *info, Error **errp)
{
    if (netdev_find(id)) {
        error_setg(errp, "Duplicate ID '%s' for netdev", id);
        return NULL;
    }
    if (!netdevs) {
        netdevs = g_ptr_array_new();
        device_backend_set_finder(DEVICE_PROP_NETDEV, netdev_finder);
    }
    NetDev *nd = g_new0(NetDev, 1);
    nd->id = g_strdup(id);
    nd->type = type;
    nd->num_queues = num_queues;
    nd->queues = g_new0(NetClientState *, num_queues);
    for (unsigned i = 0; i < num_queues; i++) {
        g_autofree char *name = i ? g_strdup_printf("%s.%u", id, i) : g_strdup(id);
        nd->queues[i] = net_client_new(info, name);
        nd->queues[i]->netdev = nd;
    }
    g_ptr_array_add(netdevs, nd);
    return nd;
}

void netdevs_free_all(void)
{
    for (guint i = 0; netdevs && i < netdevs->len; i++) {
        NetDev *nd = g_ptr_array_index(netdevs, i);
        for (unsigned q = 0; q < nd->num_queues; q++) {
            net_client_free(nd->queues[q]);
        }
        g_free(nd->queues);
        g_free(nd->claimed_by);
        g_free(nd->id);
        g_free(nd);
    }
    if (netdevs) {
        g_ptr_array_free(netdevs, true);
        netdevs = NULL;
        device_backend_set_finder(DEVICE_PROP_NETDEV, NULL);
    }
}

/* ---- NICs ---- */

NetClientState *net_nic_new(const NetClientInfo *info, const char *name, NetDev *netdev,
                            unsigned queue, const char *dev_id, GMainContext *ctx,
                            void *opaque, Error **errp)
{
    NetClientState *backend = NULL;
    if (netdev) {
        if (queue >= netdev->num_queues) {
            error_setg(errp, "netdev '%s' has %u queue(s), not %u", netdev->id,
                       netdev->num_queues, queue + 1);
            return NULL;
        }
        if (queue == 0 && netdev->claimed_by) {
            error_setg(errp, "Property '%s.netdev' can't take value '%s', it's in use",
                       dev_id, netdev->id);
            return NULL;
        }
        backend = netdev->queues[queue];
    }
    NetClientState *nc = net_client_new(info, name);
    nc->opaque = opaque;
    net_client_set_context(nc, ctx);
    if (!nic_clients) {
        nic_clients = g_ptr_array_new();
    }
    g_ptr_array_add(nic_clients, nc);
    if (backend) {
        if (queue == 0) {
            netdev->claimed_by = g_strdup(dev_id);
        }
        nc->peer = backend;
        backend->peer = nc;
        net_client_set_context(backend, ctx);
        if (backend->info->start) {
            backend->info->start(backend, ctx);
        }
    }
    return nc;
}

bool net_peer_has_vnet_hdr(NetClientState *nc)
{
    return nc->peer && nc->peer->info->has_vnet_hdr && nc->peer->info->has_vnet_hdr(nc->peer);
}

void net_peer_set_vnet_hdr_len(NetClientState *nc, unsigned len)
{
    if (net_peer_has_vnet_hdr(nc) && nc->peer->info->set_vnet_hdr_len) {
        nc->peer->info->set_vnet_hdr_len(nc->peer, len);
    }
}

void net_peer_set_offload(NetClientState *nc, const NetOffloads *offloads)
{
    if (net_peer_has_vnet_hdr(nc) && nc->peer->info->set_offload) {
        nc->peer->info->set_offload(nc->peer, offloads);
    }
}

void net_peer_set_queue_enabled(NetClientState *nc, bool enabled)
{
    if (nc->peer && nc->peer->info->set_queue_enabled) {
        nc->peer->info->set_queue_enabled(nc->peer, enabled);
    }
}

/* ---- MAC addresses ---- */

void net_default_mac(MACAddr *mac)
{
    /* Main thread (device realize), but cheap to make safe. */
    static atomic_uint next;
    unsigned index = atomic_fetch_add(&next, 1);
    *mac = (MACAddr){ { 0x52, 0x54, 0x00, 0x12, 0x34, (uint8_t)(0x56 + index) } };
}

void net_format_mac(const MACAddr *mac, char buf[18])
{
    snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac->a[0], mac->a[1], mac->a[2],
             mac->a[3], mac->a[4], mac->a[5]);
}
