/*
 * `info network`, as QEMU 7.2's human monitor prints it (include/net/net.h):
 *
 *   t1: index=0,type=tap,ifname=tap1,script=no,downscript=no
 *   e1000.0: index=0,type=nic,model=e1000,macaddr=52:54:00:12:34:56
 *    \ n0: index=0,type=user,net=10.0.2.0,restrict=off
 *
 * QEMU walks one list of clients in creation order and prints each that has
 * no peer, and each NIC followed by its peer. Every -netdev is created
 * before any NIC (on both VMMs), so that order is: the netdev queues no NIC
 * took, then the NICs. The link state is not shown (QEMU does not show it).
 */
#include <string.h>
#include "net/net.h"

static void print_client(GString *out, const char *prefix, const char *name, unsigned index,
                         NetClientState *nc)
{
    g_autofree char *info = net_client_info(nc);
    g_string_append_printf(out, "%s%s: index=%u,type=%s,%s\n", prefix, name, index,
                           nc->netdev ? nc->netdev->type : nc->info->type, info);
}

static unsigned netdev_queue_index(NetClientState *nc)
{
    unsigned q = 0;
    while (nc->netdev->queues[q] != nc) {
        q++;
    }
    return q;
}

static void print_backend(GString *out, const char *prefix, NetClientState *nc)
{
    print_client(out, prefix, nc->netdev->id, netdev_queue_index(nc), nc);
}

static const char *nic_model(NetClientState *nc)
{
    return nc->owner ? nc->owner->type : nc->name;
}

void net_info_print(GString *out)
{
    g_autoptr(GPtrArray) netdevs = net_netdevs();
    for (guint i = 0; i < netdevs->len; i++) {
        NetDev *nd = g_ptr_array_index(netdevs, i);
        for (unsigned q = 0; q < nd->num_queues; q++) {
            if (!nd->queues[q]->peer) {
                print_backend(out, "", nd->queues[q]);
            }
        }
    }
    g_autoptr(GPtrArray) nics = net_nic_clients();
    for (guint i = 0; i < nics->len; i++) {
        NetClientState *nc = g_ptr_array_index(nics, i);
        /* QEMU's names: the device's id, else MODEL.N, N counting the
         * earlier NIC queues of that model; a NIC's queues are consecutive. */
        unsigned same_model = 0, queue = 0;
        for (guint j = 0; j < i; j++) {
            NetClientState *other = g_ptr_array_index(nics, j);
            same_model += !strcmp(nic_model(other), nic_model(nc));
            queue = nc->owner && other->owner == nc->owner ? queue + 1 : 0;
        }
        g_autofree char *name = nc->owner && nc->owner->id_given
                                ? g_strdup(nc->owner->id)
                                : g_strdup_printf("%s.%u", nic_model(nc), same_model);
        print_client(out, "", name, queue, nc);
        if (nc->peer) {
            print_backend(out, " \\ ", nc->peer);
        }
    }
}
