/*
 * -netdev, -nic and -net (softmmu/cmdline-internal.h), and QEMU's default
 * NIC. Nothing is opened here: a -netdev becomes a NetdevConfig that the
 * machine creates before its devices (net/netdev-create.h); -nic is a
 * netdev plus a NIC device made as -device would make it, through the
 * device registry, so a NIC model exists once its type is registered.
 *
 *   -netdev TYPE,id=ID[,...]                       TYPE: -netdev help
 *   -nic TYPE[,id=ID][,model=M][,mac=MAC][,...]    M: -nic model=help
 *   -nic none, -net none                           no default NIC
 *
 * As on QEMU's pc machine, a command line without -nic, -netdev, -net and
 * -nodefaults gets "-nic user,model=e1000"; the NICs of -nic (that one
 * included) come before every -device, from PCI slot 3 on (QEMU's VGA
 * card has slot 2).
 */
#include <string.h>
#include "hw/qdev-registry.h"
#include "net/netdev-create.h"
#include "cmdline-internal.h"

#define NIC_FIRST_SLOT 3
#define DEFAULT_NIC_BACKEND "user"
#define DEFAULT_NIC_MODEL "e1000"

/* -nic's model= spellings and the device types they make. */
static const struct {
    const char *model, *type;
} nic_models[] = {
    { "e1000", "e1000" },
    { "virtio-net-pci", "virtio-net-pci" },
    { "virtio-net", "virtio-net-pci" },
    { "virtio", "virtio-net-pci" },
};

/* The device type of model, if this build has it. */
static const DeviceTypeInfo *nic_model_type(const char *model)
{
    for (size_t i = 0; i < G_N_ELEMENTS(nic_models); i++) {
        if (strcmp(nic_models[i].model, model) == 0) {
            return device_type_find(nic_models[i].type);
        }
    }
    return NULL;
}

static void nic_models_print(FILE *out)
{
    fprintf(out, "Available NIC models:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(nic_models); i++) {
        if (device_type_find(nic_models[i].type)) {
            fprintf(out, "%s\n", nic_models[i].model);
        }
    }
}

static bool netdev_id_is_new(const MachineConfig *cfg, const char *id, Error **errp)
{
    for (guint i = 0; i < cfg->netdevs->len; i++) {
        const NetdevConfig *other = g_ptr_array_index(cfg->netdevs, i);
        if (strcmp(other->id, id) == 0) {
            error_setg(errp, "Duplicate ID '%s' for netdev", id);
            return false;
        }
    }
    return true;
}

/* The backend type as the first item gave it; "help" is the caller's. */
static bool check_netdev_type(const char *type, Error **errp)
{
    if (!type || !netdev_type_is_known(type)) {
        error_setg(errp, "Parameter 'type' expects a netdev backend type (try -netdev help)");
        return false;
    }
    return true;
}

static bool check_netdev_id(const MachineConfig *cfg, const char *id, Error **errp)
{
    if (!id) {
        error_setg(errp, "Parameter 'id' is missing");
        return false;
    }
    return keyval_check_id(id, errp) && netdev_id_is_new(cfg, id, errp);
}

static void netdev_config_add_item(NetdevConfig *nd, const KeyvalItem *item)
{
    KeyvalItem *copy = g_new(KeyvalItem, 1);
    copy->key = g_strdup(item->key);
    copy->value = g_strdup(item->value);
    g_ptr_array_add(nd->items, copy);
}

static const char *item_value(GPtrArray *items, const char *key)
{
    const char *value = NULL;
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        if (strcmp(item->key, key) == 0) {
            value = item->value ? item->value : "";
        }
    }
    return value;
}

/* ---- -netdev ---- */

CmdlineResult apply_netdev_items(ParseState *ps, const OptionUse *use, GPtrArray *items,
                                 Error **errp)
{
    const char *type = item_value(items, "type");
    if (type && keyval_is_help(type)) {
        netdev_types_print(ps->out);
        return CMDLINE_EXIT_OK;
    }
    const char *id = item_value(items, "id");
    if (!check_netdev_type(type, errp) || !check_netdev_id(ps->cfg, id, errp)) {
        return CMDLINE_ERROR;
    }
    g_autofree char *origin = g_strdup_printf("%s %s", use->spelled, use->arg);
    NetdevConfig *nd = netdev_config_new(type, id, origin);
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        if (strcmp(item->key, "type") != 0 && strcmp(item->key, "id") != 0) {
            netdev_config_add_item(nd, item);
        }
    }
    g_ptr_array_add(ps->cfg->netdevs, nd);
    ps->network_given = true;
    return CMDLINE_RUN;
}

/* ---- -nic ---- */

/* The NIC half of a -nic: as -device TYPE,netdev=ID[,mac=MAC],addr=SLOT. */
static DeviceConfig *nic_device_config(ParseState *ps, const DeviceTypeInfo *type,
                                       const char *netdev_id, const char *mac,
                                       const char *origin, Error **errp)
{
    DeviceConfig *dev = device_config_new(type, origin);
    g_autofree char *slot = g_strdup_printf("%x", NIC_FIRST_SLOT + ps->cfg->nics->len);
    /* A model without QEMU's addr= property takes the first free slot. */
    bool has_addr = device_type_find_property(type, "addr") != NULL;
    if (!device_config_set(dev, "netdev", netdev_id, errp) ||
        (mac && !device_config_set(dev, "mac", mac, errp)) ||
        (has_addr && !device_config_set(dev, "addr", slot, errp))) {
        device_config_free(dev);
        return NULL;
    }
    return dev;
}

/* A MAC address checked now, whether or not the model exists in this
 * build, with the property parser every NIC's mac= uses. */
static bool check_nic_mac(const char *model, const char *mac, Error **errp)
{
    static const DeviceProperty mac_property = { .name = "mac", .kind = DEVICE_PROP_MACADDR };
    MACAddr parsed;
    return !mac || device_property_parse(&mac_property, model, mac, &parsed, errp);
}

/* -nic TYPE,...: items are the backend's options (id, model, mac taken out). */
static bool add_nic(ParseState *ps, const char *type, GPtrArray *items, const char *origin,
                    Error **errp)
{
    const char *id = item_value(items, "id");
    const char *model = item_value(items, "model");
    const char *mac = item_value(items, "mac");
    if (!model) {
        model = DEFAULT_NIC_MODEL;
    }
    if (!check_netdev_type(type, errp) || (id && !check_netdev_id(ps->cfg, id, errp)) ||
        !check_nic_mac(model, mac, errp)) {
        return false;
    }
    const DeviceTypeInfo *nic_type = nic_model_type(model);
    if (!nic_type) {
        error_setg(errp, "Unsupported NIC model: %s (try -nic model=help)", model);
        return false;
    }
    /* A generated id no user id can take: user ids start with a letter. */
    g_autofree char *netdev_id = id ? g_strdup(id)
                                    : g_strdup_printf("__nic%u", ps->cfg->nics->len);
    DeviceConfig *dev = nic_device_config(ps, nic_type, netdev_id, mac, origin, errp);
    if (!dev) {
        return false;
    }
    NetdevConfig *nd = netdev_config_new(type, netdev_id, origin);
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        if (!g_strv_contains((const char *const[]){ "type", "id", "model", "mac", NULL },
                             item->key)) {
            netdev_config_add_item(nd, item);
        }
    }
    g_ptr_array_add(ps->cfg->netdevs, nd);
    g_ptr_array_add(ps->cfg->nics, dev);
    return true;
}

CmdlineResult apply_nic_items(ParseState *ps, const OptionUse *use, GPtrArray *items,
                              Error **errp)
{
    const char *type = item_value(items, "type");
    const char *model = item_value(items, "model");
    ps->network_given = true;
    if (model && keyval_is_help(model)) {
        nic_models_print(ps->out);
        return CMDLINE_EXIT_OK;
    }
    if (type && keyval_is_help(type)) {
        netdev_types_print(ps->out);
        return CMDLINE_EXIT_OK;
    }
    if (type && strcmp(type, "none") == 0) {
        return CMDLINE_RUN;
    }
    g_autofree char *origin = g_strdup_printf("%s %s", use->spelled, use->arg);
    return cmdline_result_of(add_nic(ps, type, items, origin, errp));
}

/* ---- -net ---- */

CmdlineResult handle_net(ParseState *ps, const OptionUse *use, Error **errp)
{
    ps->network_given = true;
    if (strcmp(use->arg, "none") == 0) {
        return CMDLINE_RUN;
    }
    error_setg(errp, "the legacy -net hub is not supported: use -nic TYPE[,model=M] or "
               "-netdev TYPE,id=ID with -device MODEL,netdev=ID");
    return CMDLINE_ERROR;
}

/* ---- QEMU's default NIC ---- */

/*
 * Without any network option or -nodefaults, the pc machine gets
 * -nic user,model=e1000. A build without the user backend or the e1000
 * model cannot make it, and makes none.
 */
bool cmdline_netdevs_finish(ParseState *ps, Error **errp)
{
    if (ps->network_given || ps->cfg->nodefaults ||
        !netdev_type_is_known(DEFAULT_NIC_BACKEND) || !nic_model_type(DEFAULT_NIC_MODEL)) {
        return true;
    }
    g_autoptr(GPtrArray) no_items = g_ptr_array_new();
    return add_nic(ps, DEFAULT_NIC_BACKEND, no_items,
                   "-nic " DEFAULT_NIC_BACKEND ",model=" DEFAULT_NIC_MODEL " (the default NIC)",
                   errp);
}
