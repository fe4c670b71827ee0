/*
 * The device registry (hw/qdev-registry.h): finding types, the -device
 * help texts, DeviceConfig values, and realizing a config on the
 * machine's buses with its backend references resolved.
 */
#include <string.h>
#include <glib.h>
#include "hw/qdev-registry.h"
#include "sysemu/iothread.h"
#include "qemu/keyval.h"

static const char *const category_headings[DEVICE_CATEGORY_COUNT] = {
    [DEVICE_CATEGORY_STORAGE] = "Storage devices",
    [DEVICE_CATEGORY_NETWORK] = "Network devices",
    [DEVICE_CATEGORY_INPUT] = "Input devices",
    [DEVICE_CATEGORY_MISC] = "Misc devices",
};

static const char *const bus_names[] = {
    [DEVICE_BUS_NONE] = NULL,
    [DEVICE_BUS_ISA] = "ISA",
    [DEVICE_BUS_PCI] = "PCI",
    [DEVICE_BUS_IDE] = "IDE",
};

static void *find_iothread(const char *id)
{
    return iothread_find(id);
}

static DeviceBackendFinder *backend_finders[DEVICE_PROP_KIND_COUNT] = {
    [DEVICE_PROP_IOTHREAD] = find_iothread,
};

/* The options of a device that has only the PCI ones: its struct starts
 * with them, so realize functions read it as a PCIDeviceOptions. */
typedef struct PCIOnlyOptions {
    PCIDeviceOptions pci;
} PCIOnlyOptions;

const DeviceProperty pci_device_properties[3] = {
    DEFINE_PCI_DEVICE_PROPERTIES(PCIOnlyOptions, pci),
};

const DeviceTypeInfo *device_type_find(const char *name)
{
    for (size_t i = 0; i < device_types_count; i++) {
        const DeviceTypeInfo *type = device_types[i];
        if (strcmp(type->name, name) == 0 || (type->alias && strcmp(type->alias, name) == 0)) {
            return type;
        }
    }
    return NULL;
}

const DeviceProperty *device_type_find_property(const DeviceTypeInfo *type, const char *name)
{
    for (size_t i = 0; i < type->n_props; i++) {
        if (strcmp(type->props[i].name, name) == 0) {
            return &type->props[i];
        }
    }
    return NULL;
}

/* ---- help ---- */

static gint compare_type_names(gconstpointer a, gconstpointer b)
{
    const DeviceTypeInfo *ta = *(const DeviceTypeInfo *const *)a;
    const DeviceTypeInfo *tb = *(const DeviceTypeInfo *const *)b;
    return g_ascii_strcasecmp(ta->name, tb->name);
}

static void print_type_line(const DeviceTypeInfo *type, FILE *out)
{
    fprintf(out, "name \"%s\"", type->name);
    if (bus_names[type->bus]) {
        fprintf(out, ", bus %s", bus_names[type->bus]);
    }
    if (type->alias) {
        fprintf(out, ", alias \"%s\"", type->alias);
    }
    if (type->description) {
        fprintf(out, ", desc \"%s\"", type->description);
    }
    fprintf(out, "\n");
}

void device_types_print(FILE *out)
{
    bool first_group = true;
    for (int category = 0; category < DEVICE_CATEGORY_COUNT; category++) {
        GPtrArray *types = g_ptr_array_new();
        for (size_t i = 0; i < device_types_count; i++) {
            /* The board's devices are not the user's to create. */
            if (device_types[i]->category == (DeviceCategory)category &&
                device_types[i]->realize) {
                g_ptr_array_add(types, (gpointer)device_types[i]);
            }
        }
        if (types->len) {
            g_ptr_array_sort(types, compare_type_names);
            fprintf(out, "%s%s:\n", first_group ? "" : "\n", category_headings[category]);
            for (guint i = 0; i < types->len; i++) {
                print_type_line(g_ptr_array_index(types, i), out);
            }
            first_group = false;
        }
        g_ptr_array_unref(types);
    }
}

static gint compare_property_names(gconstpointer a, gconstpointer b)
{
    const DeviceProperty *pa = *(const DeviceProperty *const *)a;
    const DeviceProperty *pb = *(const DeviceProperty *const *)b;
    return strcmp(pa->name, pb->name);
}

void device_type_print_properties(const DeviceTypeInfo *type, FILE *out)
{
    if (type->n_props == 0) {
        fprintf(out, "There are no options for %s.\n", type->name);
        return;
    }
    GPtrArray *props = g_ptr_array_new();
    for (size_t i = 0; i < type->n_props; i++) {
        g_ptr_array_add(props, (gpointer)&type->props[i]);
    }
    g_ptr_array_sort(props, compare_property_names);
    fprintf(out, "%s options:\n", type->name);
    for (guint i = 0; i < props->len; i++) {
        device_property_print_help(g_ptr_array_index(props, i), out);
    }
    g_ptr_array_unref(props);
}

/* ---- configs ---- */

DeviceConfig *device_config_new(const DeviceTypeInfo *type, const char *origin)
{
    /* DeviceConfig.given has one bit per property. */
    g_assert(type->n_props <= 64);
    DeviceConfig *dev = g_new0(DeviceConfig, 1);
    dev->type = type;
    dev->origin = g_strdup(origin);
    dev->options = g_malloc0(type->options_size);
    for (size_t i = 0; i < type->n_props; i++) {
        device_property_set_default(&type->props[i], dev->options);
    }
    return dev;
}

void device_config_free(DeviceConfig *dev)
{
    for (size_t i = 0; i < dev->type->n_props; i++) {
        device_property_clear(&dev->type->props[i], dev->options);
    }
    g_free(dev->options);
    g_free(dev->origin);
    g_free(dev->id);
    g_free(dev->bus);
    g_free(dev);
}

static bool set_id(DeviceConfig *dev, const char *text, Error **errp)
{
    if (!text || !keyval_id_is_valid(text)) {
        error_setg(errp, "Parameter 'id' expects an identifier: letters, digits, '-', '.' "
                   "and '_', starting with a letter");
        return false;
    }
    g_free(dev->id);
    dev->id = g_strdup(text);
    return true;
}

bool device_config_set(DeviceConfig *dev, const char *name, const char *text, Error **errp)
{
    const DeviceTypeInfo *type = dev->type;
    if (strcmp(name, "id") == 0) {
        return set_id(dev, text, errp);
    }
    if (strcmp(name, "bus") == 0) {
        if (!text) {
            error_setg(errp, "Parameter 'bus' needs a value such as pci.0");
            return false;
        }
        /* Checked at realize, against the machine's buses. */
        g_free(dev->bus);
        dev->bus = g_strdup(text);
        return true;
    }
    const DeviceProperty *prop = device_type_find_property(type, name);
    if (!prop) {
        error_setg(errp, "Property '%s.%s' not found (try -device %s,help)", type->name, name,
                   type->name);
        return false;
    }
    if (!device_property_parse(prop, type->name, text, dev->options, errp)) {
        return false;
    }
    dev->given |= UINT64_C(1) << (prop - type->props);
    return true;
}

void device_config_inherit(DeviceConfig *dev, const DeviceConfig *globals)
{
    g_assert(dev->type == globals->type);
    for (size_t i = 0; i < dev->type->n_props; i++) {
        uint64_t bit = UINT64_C(1) << i;
        if ((globals->given & bit) && !(dev->given & bit)) {
            device_property_copy(&dev->type->props[i], dev->options, globals->options);
            dev->given |= bit;
        }
    }
}

/* ---- realize ---- */

void device_backend_set_finder(DevicePropertyKind kind, DeviceBackendFinder *find)
{
    g_assert(device_property_backend_name(kind));
    backend_finders[kind] = find;
}

static bool resolve_links(DeviceConfig *dev, Error **errp)
{
    const DeviceTypeInfo *type = dev->type;
    for (size_t i = 0; i < type->n_props; i++) {
        const DeviceProperty *prop = &type->props[i];
        if (!device_property_is_link(prop)) {
            continue;
        }
        DeviceLink *link = device_property_link(prop, dev->options);
        DeviceBackendFinder *find = backend_finders[prop->kind];
        if (!link->id) {
            continue;
        }
        link->backend = find ? find(link->id) : NULL;
        if (!link->backend) {
            error_setg(errp, "Property '%s.%s' can't find value '%s' (no %s has that id)",
                       type->name, prop->name, link->id,
                       device_property_backend_name(prop->kind));
            return false;
        }
    }
    return true;
}

/* The buses a pc machine has, as QEMU names them: "pci.0", "isa.0",
 * "ide.0" and "ide.1". */
static const struct {
    const char *prefix;
    DeviceBusKind kind;
    int count;
} bus_families[] = {
    { "pci.", DEVICE_BUS_PCI, 1 },
    { "isa.", DEVICE_BUS_ISA, 1 },
    { "ide.", DEVICE_BUS_IDE, 2 },
};

/* bus= (QEMU's generic -device option): which bus, and is it the device's
 * kind? QEMU's words for both errors. */
static bool find_bus(const DeviceConfig *dev, int *index, Error **errp)
{
    *index = -1;
    if (!dev->bus) {
        return true;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(bus_families); i++) {
        const char *number = dev->bus + strlen(bus_families[i].prefix);
        uint64_t n;
        if (g_str_has_prefix(dev->bus, bus_families[i].prefix) && *number &&
            number[strspn(number, "0123456789")] == '\0' &&
            parse_uint(number, INT32_MAX, &n) && n < (uint64_t)bus_families[i].count) {
            if (bus_families[i].kind != dev->type->bus) {
                error_setg(errp, "Device '%s' can't go on %s bus", dev->type->name,
                           bus_names[bus_families[i].kind]);
                return false;
            }
            *index = n;
            return true;
        }
    }
    error_setg(errp, "Bus '%s' not found", dev->bus);
    return false;
}

/* QEMU's PCI device properties this VMM checks or applies itself. */
static const DeviceProperty *pci_property(const DeviceTypeInfo *type, const char *name,
                                          DevicePropertyKind kind)
{
    const DeviceProperty *prop = device_type_find_property(type, name);
    g_assert(prop && prop->kind == kind);
    return prop;
}

static bool check_romfile(const DeviceConfig *dev, Error **errp)
{
    const DeviceProperty *prop = pci_property(dev->type, "romfile", DEVICE_PROP_STRING);
    const char *romfile = *(char **)((char *)dev->options + prop->offset);
    if (romfile && *romfile) {
        error_setg(errp, "romfile=%s: option ROMs are not supported (there is no firmware "
                   "to run one); leave romfile= empty", romfile);
        return false;
    }
    return true;
}

static void apply_multifunction(const DeviceConfig *dev, QEMUDevice *qdev)
{
    const DeviceProperty *prop = pci_property(dev->type, "multifunction", DEVICE_PROP_BOOL);
    if (*(bool *)((char *)dev->options + prop->offset)) {
        /* The qdev of every PCI device is its PCIDevice's first member. */
        pci_device_set_multifunction((PCIDevice *)qdev);
    }
}

static bool check_placement(const DeviceConfig *dev, const DeviceBuses *buses, Error **errp)
{
    if (dev->type->bus == DEVICE_BUS_PCI && !buses->pci) {
        error_setg(errp, "No 'PCI' bus found for device '%s'", dev->type->name);
        return false;
    }
    if (dev->type->bus == DEVICE_BUS_IDE && !buses->ide) {
        error_setg(errp, "No 'IDE' bus found for device '%s'", dev->type->name);
        return false;
    }
    if (dev->id && device_find(dev->id)) {
        error_setg(errp, "Duplicate ID '%s' for device", dev->id);
        return false;
    }
    return true;
}

/* Devices and the copies of their configs, in creation order: kept for
 * the life of the process, as the devices are. */
static GPtrArray *realized;

static void remember_realized(QEMUDevice *qdev, const DeviceConfig *dev)
{
    RealizedDevice *r = g_new(RealizedDevice, 1);
    r->qdev = qdev;
    r->config = device_config_new(dev->type, dev->origin);
    for (size_t i = 0; i < dev->type->n_props; i++) {
        device_property_copy(&dev->type->props[i], r->config->options, dev->options);
    }
    r->config->given = dev->given;
    r->config->id = g_strdup(dev->id);
    r->config->bus = g_strdup(dev->bus);
    if (!realized) {
        realized = g_ptr_array_new();
    }
    g_ptr_array_add(realized, r);
}

QEMUDevice *device_config_realize(DeviceConfig *dev, const DeviceBuses *buses, Error **errp)
{
    QEMUDevice *qdev = NULL;
    DeviceBuses placed = *buses;
    bool pci = dev->type->bus == DEVICE_BUS_PCI;
    g_assert(dev->type->realize);
    if (find_bus(dev, &placed.bus_index, errp) && check_placement(dev, buses, errp) &&
        (!pci || check_romfile(dev, errp)) && resolve_links(dev, errp)) {
        qdev = dev->type->realize(dev->options, &placed, errp);
    }
    if (!qdev) {
        error_prepend(errp, "%s: ", dev->origin);
        return NULL;
    }
    if (pci) {
        apply_multifunction(dev, qdev);
    }
    if (dev->id) {
        device_set_id(qdev, dev->id);
    }
    remember_realized(qdev, dev);
    return qdev;
}

const GPtrArray *device_realized_list(void)
{
    static const GPtrArray none;
    return realized ? realized : &none;
}

const RealizedDevice *device_realized_find(const QEMUDevice *qdev)
{
    for (guint i = 0; realized && i < realized->len; i++) {
        const RealizedDevice *r = g_ptr_array_index(realized, i);
        if (r->qdev == qdev) {
            return r;
        }
    }
    return NULL;
}

const void *board_device_options(const GPtrArray *globals, const DeviceTypeInfo *type)
{
    g_assert(!type->realize);
    for (guint i = 0; globals && i < globals->len; i++) {
        const DeviceConfig *config = g_ptr_array_index(globals, i);
        if (config->type == type) {
            return config->options;
        }
    }
    /* Kept, as the configs in globals are, for the life of the process. */
    static GHashTable *defaults;
    if (!defaults) {
        defaults = g_hash_table_new(NULL, NULL);
    }
    DeviceConfig *config = g_hash_table_lookup(defaults, type);
    if (!config) {
        config = device_config_new(type, type->name);
        g_hash_table_insert(defaults, (gpointer)type, config);
    }
    return config->options;
}
