/*
 * -device and -global (softmmu/cmdline-internal.h), both checked against
 * the device registry (hw/qdev-registry.h): a -device becomes a
 * DeviceConfig of its type, a -global sets a property in a DeviceConfig of
 * the type's defaults that every -device of that type inherits once the
 * whole command line is read, so that explicit -device values win whatever
 * the option order.
 */
#include <string.h>
#include "hw/qdev-registry.h"
#include "cmdline-internal.h"

/* ---- -device ---- */

static const char *device_driver_name(GPtrArray *items)
{
    const char *driver = NULL;
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        if (strcmp(item->key, "driver") == 0) {
            driver = item->value;
        }
    }
    return driver;
}

static const DeviceTypeInfo *find_type(const char *name, Error **errp)
{
    const DeviceTypeInfo *type = device_type_find(name);
    if (!type) {
        error_setg(errp, "'%s' is not a valid device model name (try -device help)", name);
    }
    return type;
}

/* QEMU refuses a second device of the same id at once. */
static bool check_id_is_new(GPtrArray *devices, const DeviceConfig *dev, Error **errp)
{
    for (guint i = 0; dev->id && i < devices->len; i++) {
        const DeviceConfig *other = g_ptr_array_index(devices, i);
        if (other->id && strcmp(other->id, dev->id) == 0) {
            error_setg(errp, "Duplicate ID '%s' for device", dev->id);
            return false;
        }
    }
    return true;
}

static DeviceConfig *device_config_from_items(const DeviceTypeInfo *type, const OptionUse *use,
                                              GPtrArray *items, Error **errp)
{
    char *origin = g_strdup_printf("%s %s", use->spelled, use->arg);
    DeviceConfig *dev = device_config_new(type, origin);
    g_free(origin);
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        if (strcmp(item->key, "driver") != 0 &&
            !device_config_set(dev, item->key, item->value, errp)) {
            device_config_free(dev);
            return NULL;
        }
    }
    return dev;
}

CmdlineResult apply_device_items(ParseState *ps, const OptionUse *use, GPtrArray *items,
                                 Error **errp)
{
    const char *driver = device_driver_name(items);
    if (!driver) {
        error_setg(errp, "parameter 'driver' is missing (try -device help)");
        return CMDLINE_ERROR;
    }
    if (keyval_is_help(driver)) {
        device_types_print(ps->out);
        return CMDLINE_EXIT_OK;
    }
    const DeviceTypeInfo *type = find_type(driver, errp);
    if (!type) {
        return CMDLINE_ERROR;
    }
    if (keyval_wants_help(items)) {
        device_type_print_properties(type, ps->out);
        return CMDLINE_EXIT_OK;
    }
    if (!type->realize) {
        /* One of the board's (PIIX4_PM): QEMU's words. */
        error_setg(errp, "Parameter 'driver' expects a pluggable device type");
        return CMDLINE_ERROR;
    }
    DeviceConfig *dev = device_config_from_items(type, use, items, errp);
    if (!dev || !check_id_is_new(ps->cfg->devices, dev, errp)) {
        g_clear_pointer(&dev, device_config_free);
        return CMDLINE_ERROR;
    }
    g_ptr_array_add(ps->cfg->devices, dev);
    return CMDLINE_RUN;
}

/* ---- -global ---- */

/* The defaults that -global gives one device type, kept as a DeviceConfig
 * of their own until every -device is known. */
static DeviceConfig *device_globals_of(ParseState *ps, const DeviceTypeInfo *type)
{
    DeviceConfig *globals = g_hash_table_lookup(ps->device_globals, type->name);
    if (!globals) {
        globals = device_config_new(type, "-global");
        g_hash_table_insert(ps->device_globals, (gpointer)type->name, globals);
    }
    return globals;
}

static bool set_global(ParseState *ps, const char *driver, const char *property,
                       const char *value, Error **errp)
{
    const DeviceTypeInfo *type = find_type(driver, errp);
    if (!type) {
        return false;
    }
    if (strcmp(property, "id") == 0) {
        error_setg(errp, "property 'id' names one device and cannot be set with -global");
        return false;
    }
    if (strcmp(property, "bus") == 0) {
        /* bus= places one device; it is no property, as in QEMU. */
        error_setg(errp, "Property '%s.bus' not found", type->name);
        return false;
    }
    /* Checked now, through the same property table as -device, so that a
     * bad value is reported against this -global. */
    return device_config_set(device_globals_of(ps, type), property, value, errp);
}

/* driver=D,property=P,value=V; each once at most, all three needed. */
static bool set_global_from_items(ParseState *ps, GPtrArray *items, Error **errp)
{
    static const char *const keys[] = { "driver", "property", "value" };
    const char *values[G_N_ELEMENTS(keys)] = { NULL };
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        size_t k = 0;
        while (k < G_N_ELEMENTS(keys) && strcmp(item->key, keys[k]) != 0) {
            k++;
        }
        if (k == G_N_ELEMENTS(keys) || !item->value) {
            error_setg(errp, "expected DRIVER.PROPERTY=VALUE or "
                       "driver=DRIVER,property=PROPERTY,value=VALUE");
            return false;
        }
        values[k] = item->value;
    }
    if (!values[0] || !values[1] || !values[2]) {
        error_setg(errp, "driver, property and value are all required");
        return false;
    }
    return set_global(ps, values[0], values[1], values[2], errp);
}

/*
 * As in QEMU, DRIVER.PROPERTY=VALUE takes everything after the first '='
 * as the value, commas included; anything else is an option string.
 */
CmdlineResult handle_global(ParseState *ps, const OptionUse *use, Error **errp)
{
    const char *arg = use->arg;
    size_t driver_len = strcspn(arg, ".=");
    if (driver_len > 0 && arg[driver_len] == '.') {
        const char *property = arg + driver_len + 1;
        const char *equals = strchr(property, '=');
        if (equals && equals != property) {
            char *driver_name = g_strndup(arg, driver_len);
            char *property_name = g_strndup(property, equals - property);
            bool ok = set_global(ps, driver_name, property_name, equals + 1, errp);
            g_free(driver_name);
            g_free(property_name);
            return cmdline_result_of(ok);
        }
    }
    GPtrArray *items = keyval_parse(arg, NULL, errp);
    if (!items) {
        return CMDLINE_ERROR;
    }
    bool ok = set_global_from_items(ps, items, errp);
    g_ptr_array_unref(items);
    return cmdline_result_of(ok);
}

static void inherit_globals(ParseState *ps, GPtrArray *devices)
{
    for (guint i = 0; i < devices->len; i++) {
        DeviceConfig *dev = g_ptr_array_index(devices, i);
        DeviceConfig *globals = g_hash_table_lookup(ps->device_globals, dev->type->name);
        if (globals) {
            device_config_inherit(dev, globals);
        }
    }
}

/* The -global values of the board's own devices, for the machine to read
 * (board_device_options). */
static void keep_board_globals(ParseState *ps)
{
    GHashTableIter iter;
    gpointer config;
    g_hash_table_iter_init(&iter, ps->device_globals);
    while (g_hash_table_iter_next(&iter, NULL, &config)) {
        if (!((DeviceConfig *)config)->type->realize) {
            g_ptr_array_add(ps->cfg->board_globals, config);
            g_hash_table_iter_steal(&iter);
        }
    }
}

void cmdline_devices_finish(ParseState *ps)
{
    inherit_globals(ps, ps->cfg->devices);
    /* The NICs of -nic and the default NIC are devices too. */
    inherit_globals(ps, ps->cfg->nics);
    keep_board_globals(ps);
}
