/*
 * query-pci, as QEMU 7.2 answers it: one entry per bus with its functions
 *
 *   { "bus": 0, "devices": [ { "bus": 0, "slot": 2, "function": 0,
 *       "class_info": { "class": 512, "desc": "Ethernet controller" },
 *       "id": { "vendor": 32902, "device": 4110, "subsystem-vendor": 6900,
 *               "subsystem": 4352 },
 *       "irq": 11, "irq_pin": 1, "qdev_id": "nic0",
 *       "regions": [ { "bar": 0, "type": "memory", "address": 4261412864,
 *                      "size": 131072, "prefetch": false, "mem_type_64": false },
 *                    { "bar": 1, "type": "io", "address": 49152, "size": 64 } ] } ] }
 *
 * "address" is where the BAR decodes now, -1 while it does not (decoding
 * off, or never programmed); "irq" (the interrupt line register) only for
 * a function with an interrupt pin; "qdev_id" is "" for a device the user
 * gave no id; "desc" only for the classes that have a name. We have no
 * PCI-to-PCI bridges and no option ROMs, so no "pci_bridge" member and no
 * BAR 6 region (QEMU lists its NICs' ROMs there).
 *
 * Each function's state is copied under its own device lock, one at a
 * time, and the JSON built from the copy with no lock held.
 */
#include <string.h>
#include "hw/pci/pci.h"
#include "monitor/qmp-tables.h"

/* The names of the PCI Code and ID Assignment Specification's classes
 * (base class << 8 | subclass), worded as QEMU words them. */
static const struct {
    uint16_t class;
    const char *desc;
} pci_class_names[] = {
    { 0x0100, "SCSI controller" },
    { 0x0101, "IDE controller" },
    { 0x0106, "SATA controller" },
    { 0x0108, "NVMe controller" },
    { 0x0180, "Storage controller" },
    { 0x0200, "Ethernet controller" },
    { 0x0280, "Network controller" },
    { 0x0300, "VGA controller" },
    { 0x0380, "Display controller" },
    { 0x0401, "Audio controller" },
    { 0x0403, "Audio controller" },
    { 0x0500, "RAM controller" },
    { 0x0600, "Host bridge" },
    { 0x0601, "ISA bridge" },
    { 0x0604, "PCI bridge" },
    { 0x0680, "Bridge" },
    { 0x0700, "Serial port" },
    { 0x0780, "Communication controller" },
    { 0x0880, "System peripheral" },
    { 0x0c03, "USB controller" },
    { 0x0c05, "SMBus" },
};

static const char *pci_class_desc(uint16_t class)
{
    for (size_t i = 0; i < G_N_ELEMENTS(pci_class_names); i++) {
        if (pci_class_names[i].class == class) {
            return pci_class_names[i].desc;
        }
    }
    return NULL;
}

/* What query-pci reports of one function, copied under its lock. */
typedef struct PCIFunctionSnapshot {
    uint8_t devfn;
    uint8_t config[PCI_CONFIG_SPACE_SIZE];
    PCIBar bars[PCI_NUM_BARS];
    const char *qdev_id;        /* lives as long as the device (never freed) */
} PCIFunctionSnapshot;

static void pci_function_snapshot(PCIDevice *dev, PCIFunctionSnapshot *snap)
{
    device_lock(&dev->qdev);
    snap->devfn = dev->devfn;
    memcpy(snap->config, dev->config, sizeof(snap->config));
    memcpy(snap->bars, dev->bars, sizeof(snap->bars));
    snap->qdev_id = dev->qdev.id_given ? dev->qdev.id : "";
    device_unlock(&dev->qdev);
}

static uint16_t snap_word(const PCIFunctionSnapshot *snap, unsigned offset)
{
    return snap->config[offset] | snap->config[offset + 1] << 8;
}

static JsonObject *pci_region_info(unsigned nr, const PCIBar *bar)
{
    JsonObject *r = json_object_new();
    bool io = bar->type & PCI_BASE_ADDRESS_SPACE_IO;
    json_object_set_int_member(r, "bar", nr);
    json_object_set_string_member(r, "type", io ? "io" : "memory");
    json_object_set_int_member(r, "address",
                               bar->addr == PCI_BAR_UNMAPPED ? -1 : (int64_t)bar->addr);
    json_object_set_int_member(r, "size", (int64_t)bar->size);
    if (!io) {
        json_object_set_boolean_member(r, "prefetch", bar->type & PCI_BASE_ADDRESS_MEM_PREFETCH);
        json_object_set_boolean_member(r, "mem_type_64", bar->type & PCI_BASE_ADDRESS_MEM_TYPE_64);
    }
    return r;
}

static JsonObject *pci_function_info(const PCIFunctionSnapshot *snap)
{
    JsonObject *info = json_object_new();
    json_object_set_int_member(info, "bus", 0);
    json_object_set_int_member(info, "slot", PCI_SLOT(snap->devfn));
    json_object_set_int_member(info, "function", PCI_FUNC(snap->devfn));

    JsonObject *class_info = json_object_new();
    uint16_t class = snap_word(snap, PCI_CLASS_DEVICE);
    const char *desc = pci_class_desc(class);
    if (desc) {
        json_object_set_string_member(class_info, "desc", desc);
    }
    json_object_set_int_member(class_info, "class", class);
    json_object_set_object_member(info, "class_info", class_info);

    JsonObject *id = json_object_new();
    json_object_set_int_member(id, "device", snap_word(snap, PCI_DEVICE_ID));
    json_object_set_int_member(id, "vendor", snap_word(snap, PCI_VENDOR_ID));
    json_object_set_int_member(id, "subsystem", snap_word(snap, PCI_SUBSYSTEM_ID));
    json_object_set_int_member(id, "subsystem-vendor", snap_word(snap, PCI_SUBSYSTEM_VENDOR_ID));
    json_object_set_object_member(info, "id", id);

    uint8_t pin = snap->config[PCI_INTERRUPT_PIN];
    if (pin) {
        json_object_set_int_member(info, "irq", snap->config[PCI_INTERRUPT_LINE]);
    }
    json_object_set_int_member(info, "irq_pin", pin);
    json_object_set_string_member(info, "qdev_id", snap->qdev_id);

    JsonArray *regions = json_array_new();
    for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
        if (snap->bars[nr].region) {
            json_array_add_object_element(regions, pci_region_info(nr, &snap->bars[nr]));
        }
    }
    json_object_set_array_member(info, "regions", regions);
    return info;
}

static JsonObject *pci_bus_info(PCIBus *bus)
{
    JsonArray *devices = json_array_new();
    for (unsigned devfn = 0; devfn < PCI_SLOT_MAX * PCI_FUNC_MAX; devfn++) {
        PCIDevice *dev = pci_bus_device(bus, devfn);
        if (dev) {
            PCIFunctionSnapshot snap;
            pci_function_snapshot(dev, &snap);
            json_array_add_object_element(devices, pci_function_info(&snap));
        }
    }
    JsonObject *info = json_object_new();
    json_object_set_int_member(info, "bus", 0);
    json_object_set_array_member(info, "devices", devices);
    return info;
}

static JsonNode *qmp_query_pci(JsonObject *args, Error **errp)
{
    JsonArray *buses = json_array_new();
    for (PCIBus *bus = pci_root_bus_next(NULL); bus; bus = pci_root_bus_next(bus)) {
        json_array_add_object_element(buses, pci_bus_info(bus));
    }
    return qmp_node_array(buses);
}

const QmpCommandInfo pci_qmp_commands[] = {
    { "query-pci", qmp_query_pci },
    { NULL },
};
