/*
 * info qtree: the device tree as QEMU 7.2's human monitor prints it
 * (include/monitor/hmp.h). QEMU walks its buses from main-system-bus and
 * prints, for each device, its properties, then what its bus type adds (a
 * PCI function's class, address, ids and BARs), then its child buses. A
 * bus lists its devices newest first.
 *
 * We have no QOM tree: the shape is the pc machine's (main-system-bus,
 * i440FX-pcihost, pci.0; isa.0 under PIIX3; ide.0 and ide.1 under
 * piix3-ide; a virtio-bus under each virtio PCI function with the virtio
 * device on it), the PCI functions come from the PCI bus (newest first is
 * highest address first, as slots are given out in creation order) and
 * the other devices from the device registry (hw/qdev.h). A device made
 * with -device (or -nic, or a -drive's default device) shows the
 * properties it was realized with, corrected by what it chose itself
 * (DeviceTypeInfo.chosen_options); one the machine made from a -device
 * type (a -serial port) shows what it chose; the board's own devices and
 * KVM's in-kernel ones come from hmp-qtree-board.c. docs/monitor.md lists
 * what QEMU prints that we do not.
 */
#include <inttypes.h>
#include <string.h>
#include "hw/ide/ide.h"
#include "hw/pci/pci.h"
#include "hw/qdev-registry.h"
#include "hw/virtio/virtio-pci.h"
#include "monitor/hmp.h"
#include "monitor/qmp.h"
#include "net/net.h"
#include "hmp-qtree-internal.h"

/* Which properties of a device to print. */
typedef enum PropFilter {
    PROPS_ALL,
    PROPS_TRANSPORT,    /* a virtio PCI function's own */
    PROPS_VIRTIO,       /* its virtio device's (on the virtio-bus) */
} PropFilter;

static void print_bus(GString *out, int level, const char *name, const char *type)
{
    g_string_append_printf(out, "%*sbus: %s\n%*stype %s\n", INDENT(level), "", name,
                           INDENT(level + 1), "", type);
}

static void print_qdev_line(GString *out, int level, const QEMUDevice *qdev)
{
    qtree_print_dev_line(out, level, qdev->type, qdev->id_given ? qdev->id : "");
}

static QtreeBus device_bus_kind(DeviceBusKind kind)
{
    switch (kind) {
    case DEVICE_BUS_NONE:
        return QTREE_BUS_SYSTEM;
    case DEVICE_BUS_ISA:
        return QTREE_BUS_ISA;
    case DEVICE_BUS_IDE:
        return QTREE_BUS_IDE;
    case DEVICE_BUS_PCI:
        break;
    }
    return QTREE_BUS_HIDDEN;
}

/* The -device type of a device the machine made from one (a -serial
 * port's isa-serial); NULL for the board's own (PIIX4_PM, i8042), whose
 * registry entries only carry their -global values. */
static const DeviceTypeInfo *machine_made_type(const QEMUDevice *qdev)
{
    const DeviceTypeInfo *type = device_type_find(qdev->type);
    return type && type->realize ? type : NULL;
}

static QtreeBus qtree_bus_of(const QEMUDevice *qdev)
{
    const RealizedDevice *r = device_realized_find(qdev);
    const DeviceTypeInfo *type = r ? r->config->type : machine_made_type(qdev);
    if (type) {
        return device_bus_kind(type->bus);
    }
    return qtree_board_device_bus(qdev);
}

/* Properties that say where the device sits on its bus (addr=, unit=)
 * are printed by its bus, from where it really is. */
static bool is_position(const DeviceTypeInfo *type, const DeviceProperty *prop)
{
    if (prop->kind == DEVICE_PROP_PCI_DEVFN) {
        return true;
    }
    return type->bus == DEVICE_BUS_IDE && !strcmp(prop->name, "unit");
}

/* A virtio PCI function: its type has the transport's properties. */
static bool is_virtio_pci(const DeviceTypeInfo *type)
{
    for (size_t i = 0; i < type->n_props; i++) {
        if (virtio_pci_is_transport_property(type->props[i].name)) {
            return true;
        }
    }
    return false;
}

/* bootindex, which QEMU's qtree does not list (it is no static property
 * there), and the PCI properties QEMU lists among its PCIDevice's after
 * addr= with some this VMM does not have (rombar, romsize): not shown. */
static bool is_hidden(const DeviceProperty *prop)
{
    return !strcmp(prop->name, "bootindex") || !strcmp(prop->name, "romfile") ||
           !strcmp(prop->name, "multifunction");
}

static bool prop_selected(const DeviceTypeInfo *type, const DeviceProperty *prop,
                          PropFilter filter)
{
    if (is_position(type, prop) || is_hidden(prop)) {
        return false;
    }
    switch (filter) {
    case PROPS_TRANSPORT:
        return virtio_pci_is_transport_property(prop->name);
    case PROPS_VIRTIO:
        return !virtio_pci_is_transport_property(prop->name);
    case PROPS_ALL:
        break;
    }
    return true;
}

/* options (the device's or its type's defaults) with what qdev chose at
 * realize written over them; a shallow copy, freed with g_free. */
static void *chosen_options(const DeviceTypeInfo *type, const void *options, QEMUDevice *qdev)
{
    void *copy = g_memdup2(options, type->options_size);
    if (type->chosen_options) {
        type->chosen_options(qdev, copy);
    }
    return copy;
}

/* The value text of prop; a NIC shows the MAC it was given when mac= was
 * not (QEMU prints that). */
static char *prop_text(const DeviceProperty *prop, const void *options, bool given,
                       const QEMUDevice *qdev)
{
    MACAddr mac;
    if (prop->kind == DEVICE_PROP_MACADDR && !given && net_nic_mac(qdev, &mac)) {
        char buf[18];
        net_format_mac(&mac, buf);
        return g_strdup_printf("\"%s\"", buf);
    }
    return device_property_value_text(prop, options);
}

/* A device made from a config: its properties, in its table's order. */
static void print_realized_props(GString *out, int level, const RealizedDevice *r,
                                 PropFilter filter)
{
    const DeviceTypeInfo *type = r->config->type;
    g_autofree void *options = chosen_options(type, r->config->options, r->qdev);
    for (size_t i = 0; i < type->n_props; i++) {
        const DeviceProperty *prop = &type->props[i];
        if (prop_selected(type, prop, filter)) {
            g_autofree char *value = prop_text(prop, options,
                                               r->config->given & (UINT64_C(1) << i), r->qdev);
            g_string_append_printf(out, "%*s%s = %s\n", INDENT(level), "", prop->name, value);
        }
    }
}

/* A device the machine made from a -device type (a -serial port): the
 * values it chose, where they differ from the type's defaults. */
static void print_machine_made_props(GString *out, int level, const DeviceTypeInfo *type,
                                     QEMUDevice *qdev)
{
    DeviceConfig *defaults = device_config_new(type, type->name);
    g_autofree void *options = chosen_options(type, defaults->options, qdev);
    for (size_t i = 0; i < type->n_props; i++) {
        const DeviceProperty *prop = &type->props[i];
        g_autofree char *dflt = device_property_value_text(prop, defaults->options);
        g_autofree char *value = device_property_value_text(prop, options);
        if (strcmp(dflt, value) != 0) {
            g_string_append_printf(out, "%*s%s = %s\n", INDENT(level), "", prop->name, value);
        }
    }
    device_config_free(defaults);
}

static void print_props(GString *out, int level, QEMUDevice *qdev, PropFilter filter)
{
    const RealizedDevice *r = device_realized_find(qdev);
    const DeviceTypeInfo *type;
    if (r) {
        print_realized_props(out, level, r, filter);
    } else if ((type = machine_made_type(qdev))) {
        print_machine_made_props(out, level, type, qdev);
    } else {
        qtree_print_board_device_props(out, level, qdev);
    }
}

static void print_device(GString *out, int level, QEMUDevice *qdev)
{
    print_qdev_line(out, level, qdev);
    print_props(out, level + 1, qdev, PROPS_ALL);
    if (qtree_bus_of(qdev) == QTREE_BUS_IDE) {
        unsigned bus, unit;
        ide_drive_position(qdev, &bus, &unit);
        g_string_append_printf(out, "%*sunit = %u (0x%x)\n", INDENT(level + 1), "", unit, unit);
    }
}

static void add_device(QEMUDevice *dev, void *list)
{
    g_ptr_array_add(list, dev);
}

/* Every device in creation order (the registry's), for the buses to pick
 * theirs from, newest first. */
static GPtrArray *all_devices(void)
{
    GPtrArray *list = g_ptr_array_new();
    device_foreach(add_device, list);
    return list;
}

/* The devices (in creation order) on bus (for IDE: on channel ide_bus),
 * newest first. */
static void print_devices_on(GString *out, int level, GPtrArray *devices, QtreeBus bus,
                             int ide_bus)
{
    for (guint i = devices->len; i-- > 0;) {
        QEMUDevice *qdev = g_ptr_array_index(devices, i);
        if (qtree_bus_of(qdev) != bus) {
            continue;
        }
        if (bus == QTREE_BUS_IDE) {
            unsigned channel, unit;
            ide_drive_position(qdev, &channel, &unit);
            if ((int)channel != ide_bus) {
                continue;
            }
        }
        print_device(out, level, qdev);
    }
}

/* query-pci's entry for the function at devfn on bus 0, or NULL. */
static JsonObject *pci_function_info(JsonNode *pci, unsigned devfn)
{
    JsonArray *buses = pci && JSON_NODE_HOLDS_ARRAY(pci) ? json_node_get_array(pci) : NULL;
    JsonObject *bus0 = buses && json_array_get_length(buses)
                       ? json_array_get_object_element(buses, 0) : NULL;
    JsonArray *devices = bus0 ? json_object_get_array_member(bus0, "devices") : NULL;
    for (guint i = 0; devices && i < json_array_get_length(devices); i++) {
        JsonObject *d = json_array_get_object_element(devices, i);
        if (json_object_get_int_member(d, "slot") == PCI_SLOT(devfn) &&
            json_object_get_int_member(d, "function") == PCI_FUNC(devfn)) {
            return d;
        }
    }
    return NULL;
}

/* What QEMU's PCI bus adds: the class line and one line per BAR. */
static void print_pci_header(GString *out, int level, JsonObject *info)
{
    JsonObject *class_info = json_object_get_object_member(info, "class_info");
    JsonObject *id = json_object_get_object_member(info, "id");
    g_autofree char *class_name = json_object_has_member(class_info, "desc")
        ? g_strdup(json_object_get_string_member(class_info, "desc"))
        : g_strdup_printf("Class %04" PRIx64, json_object_get_int_member(class_info, "class"));
    g_string_append_printf(out, "%*sclass %s, addr %02" PRIx64 ":%02" PRIx64 ".%" PRIx64
                           ", pci id %04" PRIx64 ":%04" PRIx64 " (sub %04" PRIx64 ":%04"
                           PRIx64 ")\n", INDENT(level), "", class_name,
                           json_object_get_int_member(info, "bus"),
                           json_object_get_int_member(info, "slot"),
                           json_object_get_int_member(info, "function"),
                           json_object_get_int_member(id, "vendor"),
                           json_object_get_int_member(id, "device"),
                           json_object_get_int_member(id, "subsystem-vendor"),
                           json_object_get_int_member(id, "subsystem"));
    JsonArray *regions = json_object_get_array_member(info, "regions");
    for (guint i = 0; regions && i < json_array_get_length(regions); i++) {
        JsonObject *r = json_array_get_object_element(regions, i);
        /* QEMU prints the last byte as address + size - 1, also for a BAR
         * that does not decode (address -1): hence [size - 2] there. */
        uint64_t addr = json_object_get_int_member(r, "address");
        uint64_t size = json_object_get_int_member(r, "size");
        g_string_append_printf(out, "%*sbar %" PRId64 ": %s at 0x%" PRIx64 " [0x%" PRIx64 "]\n",
                               INDENT(level), "", json_object_get_int_member(r, "bar"),
                               strcmp(json_object_get_string_member(r, "type"), "io") ? "mem"
                                                                                      : "i/o",
                               addr, addr + size - 1);
    }
}

/* QEMU's virtio-X-pci carries a virtio-X-device on its virtio-bus. */
static void print_virtio_bus(GString *out, int level, const RealizedDevice *r)
{
    const char *name = r->config->type->name;
    size_t stem = g_str_has_suffix(name, "-pci") ? strlen(name) - strlen("-pci") : strlen(name);
    g_autofree char *child = g_strdup_printf("%.*s-device", (int)stem, name);
    print_bus(out, level, "virtio-bus", "virtio-pci-bus");
    qtree_print_dev_line(out, level + 1, child, "");
    print_realized_props(out, level + 2, r, PROPS_VIRTIO);
}

static void print_pci_function(GString *out, int level, PCIDevice *dev, JsonObject *info,
                               GPtrArray *devices)
{
    const RealizedDevice *r = device_realized_find(&dev->qdev);
    bool virtio = r && is_virtio_pci(r->config->type);
    print_qdev_line(out, level, &dev->qdev);
    print_props(out, level + 1, &dev->qdev, virtio ? PROPS_TRANSPORT : PROPS_ALL);
    g_string_append_printf(out, "%*saddr = %02x.%x\n", INDENT(level + 1), "",
                           PCI_SLOT(dev->devfn), PCI_FUNC(dev->devfn));
    if (info) {
        print_pci_header(out, level + 1, info);
    }
    if (virtio) {
        print_virtio_bus(out, level + 1, r);
    } else if (!strcmp(dev->qdev.type, "piix3-ide")) {
        for (int bus = IDE_CHANNELS - 1; bus >= 0; bus--) {
            g_autofree char *name = g_strdup_printf("ide.%d", bus);
            print_bus(out, level + 1, name, "IDE");
            print_devices_on(out, level + 2, devices, QTREE_BUS_IDE, bus);
        }
    } else if (!strcmp(dev->qdev.type, "PIIX3")) {
        print_bus(out, level + 1, "isa.0", "ISA");
        print_devices_on(out, level + 2, devices, QTREE_BUS_ISA, 0);
        qtree_print_in_kernel_isa_devices(out, level + 2);
    }
}

static void print_pci_host(GString *out, int level, PCIBus *bus, GPtrArray *devices)
{
    Error *err = NULL;
    g_autoptr(JsonNode) pci = qmp_dispatch("query-pci", NULL, &err);
    error_free(err);            /* without query-pci: no class and BAR lines */
    qtree_print_dev_line(out, level, "i440FX-pcihost", "");
    print_bus(out, level + 1, "pci.0", "PCI");
    for (unsigned devfn = PCI_SLOT_MAX * PCI_FUNC_MAX; devfn-- > 0;) {
        PCIDevice *dev = pci_bus_device(bus, devfn);
        if (dev) {
            print_pci_function(out, level + 2, dev, pci_function_info(pci, devfn), devices);
        }
    }
}

void hmp_info_qtree(GString *out)
{
    g_autoptr(GPtrArray) devices = all_devices();
    g_autoptr(GPtrArray) added = g_ptr_array_new();
    g_autoptr(GPtrArray) machine = g_ptr_array_new();
    for (guint i = 0; i < devices->len; i++) {
        QEMUDevice *qdev = g_ptr_array_index(devices, i);
        g_ptr_array_add(device_realized_find(qdev) ? added : machine, qdev);
    }
    /* As on QEMU's: what the user added, the IOAPIC, the PCI host, then
     * the board's own devices (QEMU makes those before its PCI host). */
    print_bus(out, 0, "main-system-bus", "System");
    print_devices_on(out, 1, added, QTREE_BUS_SYSTEM, 0);
    qtree_print_in_kernel_system_devices(out, 1);
    PCIBus *bus = pci_root_bus_next(NULL);
    if (bus) {
        print_pci_host(out, 1, bus, devices);
    }
    print_devices_on(out, 1, machine, QTREE_BUS_SYSTEM, 0);
}
