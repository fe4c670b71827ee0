/*
 * virtio-net and the monitor: the NIC_RX_FILTER_CHANGED event and
 * query-rx-filter's answer, in QEMU 7.2's shapes.
 *
 * The event tells a manager (libvirt mirrors the guest's MAC and
 * multicast settings onto macvtap) that the driver changed the filter. It
 * goes out once; later changes stay quiet until the manager has read the
 * filter with query-rx-filter, so a guest that rewrites its multicast
 * list in a loop cannot flood the monitor.
 */
#include "hw/virtio/virtio-net-internal.h"
#include "monitor/qmp.h"

static const char *virtio_net_name(VirtIONet *n)
{
    return n->vdev.qdev->id;
}

/* Called with the device lock held: the event sinks never block and take
 * no device lock (monitor/qmp.h). */
void virtio_net_rx_filter_changed(VirtIONet *n)
{
    if (n->rx_filter_event_sent) {
        return;
    }
    n->rx_filter_event_sent = true;
    QEMUDevice *dev = n->vdev.qdev;
    JsonObject *data = json_object_new();
    /* QEMU names the device by its QOM path; one without an id sits in
     * peripheral-anon (as device[N] there; we use its automatic id). */
    if (dev->id_given) {
        json_object_set_string_member(data, "name", dev->id);
    }
    g_autofree char *path = g_strdup_printf("/machine/%s/%s/virtio-backend",
                                            dev->id_given ? "peripheral" : "peripheral-anon",
                                            dev->id);
    json_object_set_string_member(data, "path", path);
    qmp_event_send("NIC_RX_FILTER_CHANGED", data);
}

/* RxFilterMode: "none" wins over "all", as the device applies them. */
static const char *rx_mode(bool none, bool all)
{
    return none ? "none" : all ? "all" : "normal";
}

/* QEMU lists its tables last entry first; so do we, to compare equal. */
static JsonArray *mac_table(const MACAddr *table, unsigned n)
{
    JsonArray *list = json_array_new();
    for (unsigned i = n; i-- > 0;) {
        char text[18];
        net_format_mac(&table[i], text);
        json_array_add_string_element(list, text);
    }
    return list;
}

static JsonArray *vlan_table(const VirtIONetFilter *f, bool all)
{
    JsonArray *list = json_array_new();
    for (unsigned vid = VIRTIO_NET_MAX_VLAN; vid-- > 0;) {
        if (all || (f->vlans[vid / 32] & (1u << (vid % 32)))) {
            json_array_add_int_element(list, vid);
        }
    }
    return list;
}

JsonObject *virtio_net_query_rx_filter(NetClientState *nc)
{
    VirtIONet *n = ((VirtIONetQueue *)nc->opaque)->n;
    device_lock(n->vdev.qdev);
    VirtIONetFilter f = n->filter;
    MACAddr mac = n->mac;
    bool vlan_filtering = virtio_has_feature(&n->vdev, VIRTIO_NET_F_CTRL_VLAN);
    n->rx_filter_event_sent = false;
    device_unlock(n->vdev.qdev);

    JsonObject *info = json_object_new();
    char text[18];
    net_format_mac(&mac, text);
    json_object_set_string_member(info, "name", virtio_net_name(n));
    json_object_set_boolean_member(info, "promiscuous", f.promisc);
    json_object_set_string_member(info, "multicast", rx_mode(f.nomulti, f.allmulti));
    json_object_set_string_member(info, "unicast", rx_mode(f.nouni, f.alluni));
    /* Without CTRL_VLAN every VLAN comes in, and QEMU lists them all. */
    json_object_set_string_member(info, "vlan", vlan_filtering ? "normal" : "all");
    /* QEMU 7.2 reports nobcast here (the inverse of its name); we report
     * whether broadcasts come in. */
    json_object_set_boolean_member(info, "broadcast-allowed", !f.nobcast);
    json_object_set_boolean_member(info, "multicast-overflow", f.multi_overflow);
    json_object_set_boolean_member(info, "unicast-overflow", f.uni_overflow);
    json_object_set_string_member(info, "main-mac", text);
    json_object_set_array_member(info, "vlan-table", vlan_table(&f, !vlan_filtering));
    json_object_set_array_member(info, "unicast-table", mac_table(f.uni, f.n_uni));
    json_object_set_array_member(info, "multicast-table", mac_table(f.multi, f.n_multi));
    return info;
}
