/*
 * info qtree: the device tree as QEMU 7.2's human monitor prints it
 * (include/monitor/hmp.h). QEMU walks its buses from main-system-bus and
 * prints, for each device, its properties, then what its bus type adds (a
 * PCI function's class, address, ids and BARs), then its child buses. A
 * bus lists its devices newest first.
 *
 * We have no QOM tree: the shape is the pc machine's (main-system-bus,
 * i440FX-pcihost, pci.0; isa.0 under PIIX3; ide.0 and ide.1 under
 * piix3-ide), the PCI functions come from the PCI bus (newest first is
 * highest address first, as slots are given out in creation order), and
 * the properties are those a device was realized with (hw/qdev-registry.h),
 * so the machine's own devices show none. docs/monitor.md lists what
 * QEMU prints that we do not.
 */
#include <inttypes.h>
#include <string.h>
#include "hw/ide/ide.h"
#include "hw/pci/pci.h"
#include "hw/qdev-registry.h"
#include "monitor/hmp.h"
#include "monitor/qmp.h"
#include "net/net.h"

#define INDENT(n) ((n) * 2)

static void print_bus(GString *out, int level, const char *name, const char *type)
{
    g_string_append_printf(out, "%*sbus: %s\n%*stype %s\n", INDENT(level), "", name,
                           INDENT(level + 1), "", type);
}

static void print_dev_line(GString *out, int level, const QEMUDevice *qdev)
{
    g_string_append_printf(out, "%*sdev: %s, id \"%s\"\n", INDENT(level), "", qdev->type,
                           qdev->id_given ? qdev->id : "");
}

/* Properties that say where the device sits on its bus (addr=, bus=,
 * unit=) are printed by its bus, from where it really is. */
static bool is_position(const RealizedDevice *r, const DeviceProperty *prop)
{
    if (prop->kind == DEVICE_PROP_PCI_DEVFN) {
        return true;
    }
    return r->config->type->bus == DEVICE_BUS_IDE &&
           (!strcmp(prop->name, "bus") || !strcmp(prop->name, "unit"));
}

/* The realized device's properties, in its table's order. */
static void print_props(GString *out, int level, const QEMUDevice *qdev)
{
    const RealizedDevice *r = device_realized_find(qdev);
    const DeviceTypeInfo *type = r ? r->config->type : NULL;
    for (size_t i = 0; type && i < type->n_props; i++) {
        const DeviceProperty *prop = &type->props[i];
        if (is_position(r, prop)) {
            continue;
        }
        g_autofree char *value = device_property_value_text(prop, r->config->options);
        MACAddr mac;
        /* No mac= given: the one the NIC was given (QEMU prints that). */
        if (prop->kind == DEVICE_PROP_MACADDR && !(r->config->given & (UINT64_C(1) << i)) &&
            net_nic_mac(qdev, &mac)) {
            char buf[18];
            net_format_mac(&mac, buf);
            g_free(value);
            value = g_strdup_printf("\"%s\"", buf);
        }
        g_string_append_printf(out, "%*s%s = %s\n", INDENT(level), "", prop->name, value);
    }
}

/* The realized devices on bus kind (for IDE: on channel ide_bus), newest
 * first. */
static void print_realized_on(GString *out, int level, DeviceBusKind kind, int ide_bus)
{
    const GPtrArray *list = device_realized_list();
    for (guint i = list->len; i-- > 0;) {
        const RealizedDevice *r = g_ptr_array_index(list, i);
        if (r->config->type->bus != kind) {
            continue;
        }
        unsigned bus = 0, unit = 0;
        if (kind == DEVICE_BUS_IDE) {
            ide_drive_position(r->qdev, &bus, &unit);
            if ((int)bus != ide_bus) {
                continue;
            }
        }
        print_dev_line(out, level, r->qdev);
        print_props(out, level + 1, r->qdev);
        if (kind == DEVICE_BUS_IDE) {
            g_string_append_printf(out, "%*sunit = %u (0x%x)\n", INDENT(level + 1), "", unit,
                                   unit);
        }
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

static void print_pci_function(GString *out, int level, PCIDevice *dev, JsonObject *info)
{
    print_dev_line(out, level, &dev->qdev);
    print_props(out, level + 1, &dev->qdev);
    g_string_append_printf(out, "%*saddr = %02x.%x\n", INDENT(level + 1), "",
                           PCI_SLOT(dev->devfn), PCI_FUNC(dev->devfn));
    if (info) {
        print_pci_header(out, level + 1, info);
    }
    if (!strcmp(dev->qdev.type, "piix3-ide")) {
        for (int bus = IDE_CHANNELS - 1; bus >= 0; bus--) {
            g_autofree char *name = g_strdup_printf("ide.%d", bus);
            print_bus(out, level + 1, name, "IDE");
            print_realized_on(out, level + 2, DEVICE_BUS_IDE, bus);
        }
    } else if (!strcmp(dev->qdev.type, "PIIX3")) {
        print_bus(out, level + 1, "isa.0", "ISA");
        print_realized_on(out, level + 2, DEVICE_BUS_ISA, 0);
    }
}

void hmp_info_qtree(GString *out)
{
    print_bus(out, 0, "main-system-bus", "System");
    print_realized_on(out, 1, DEVICE_BUS_NONE, 0);
    PCIBus *bus = pci_root_bus_next(NULL);
    if (!bus) {
        return;
    }
    Error *err = NULL;
    g_autoptr(JsonNode) pci = qmp_dispatch("query-pci", NULL, &err);
    error_free(err);            /* without query-pci: no class and BAR lines */
    g_string_append_printf(out, "%*sdev: i440FX-pcihost, id \"\"\n", INDENT(1), "");
    print_bus(out, 2, "pci.0", "PCI");
    for (unsigned devfn = PCI_SLOT_MAX * PCI_FUNC_MAX; devfn-- > 0;) {
        PCIDevice *dev = pci_bus_device(bus, devfn);
        if (dev) {
            print_pci_function(out, 3, dev, pci_function_info(pci, devfn));
        }
    }
}
