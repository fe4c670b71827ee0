/*
 * The network's QMP commands, as QEMU 7.2 answers them:
 *
 * set_link { "name": NIC or netdev id, "up": bool } pulls or plugs the
 *   cable: every queue of the NIC (or of the netdev, which its NIC sees
 *   as its own link going down) changes, and the NIC tells the guest
 *   (e1000: STATUS.LU and an LSC interrupt; virtio-net: LINK_UP in the
 *   config status and a config interrupt). DeviceNotFound otherwise.
 * query-rx-filter { "name"?: NIC id } returns the receive filters of the
 *   NICs that have one (virtio-net) and re-arms their
 *   NIC_RX_FILTER_CHANGED event, which a NIC sends once after each query.
 */
#include <string.h>
#include "monitor/qmp-tables.h"
#include "net/net.h"

static JsonNode *qmp_set_link(JsonObject *args, Error **errp)
{
    const char *name = qmp_arg_str(args, "name");
    bool up = qmp_arg_bool(args, "up", true);
    g_autoptr(GPtrArray) clients = net_clients_find(name);
    if (!clients->len) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "Device '%s' not found", name);
        return NULL;
    }
    for (guint i = 0; i < clients->len; i++) {
        net_client_set_link(g_ptr_array_index(clients, i), up);
    }
    return NULL;
}

/* The NIC's filter (its first queue's: the queues share one). */
static JsonObject *nic_rx_filter(NetClientState *nc, Error **errp)
{
    if (!nc->info->query_rx_filter) {
        error_setg(errp, "net client(%s) doesn't support rx-filter querying", nc->owner ?
                   nc->owner->id : nc->name);
        return NULL;
    }
    return nc->info->query_rx_filter(nc);
}

static JsonNode *qmp_query_rx_filter(JsonObject *args, Error **errp)
{
    const char *name = qmp_arg_str(args, "name");
    g_autoptr(JsonArray) list = json_array_new();
    if (name) {
        g_autoptr(GPtrArray) clients = net_clients_find(name);
        if (!clients->len) {
            error_setg(errp, "invalid net client name: %s", name);
            return NULL;
        }
        NetClientState *nc = g_ptr_array_index(clients, 0);
        if (nc->netdev) {
            error_setg(errp, "net client(%s) isn't a NIC", name);
            return NULL;
        }
        JsonObject *filter = nic_rx_filter(nc, errp);
        if (!filter) {
            return NULL;
        }
        json_array_add_object_element(list, filter);
    } else {
        g_autoptr(GPtrArray) nics = net_nic_clients();
        QEMUDevice *listed = NULL;
        for (guint i = 0; i < nics->len; i++) {
            NetClientState *nc = g_ptr_array_index(nics, i);
            /* Without a name, the NICs that cannot say are left out; a
             * multiqueue NIC (its queues are consecutive) is listed once. */
            if (nc->info->query_rx_filter && (!nc->owner || nc->owner != listed)) {
                json_array_add_object_element(list, nc->info->query_rx_filter(nc));
                listed = nc->owner;
            }
        }
    }
    return qmp_node_array(json_array_ref(list));
}

const QmpCommandInfo net_qmp_commands[] = {
    { "set_link", qmp_set_link, "name:s,up:b" },
    { "query-rx-filter", qmp_query_rx_filter, "name:s?" },
    { NULL },
};
