/*
 * Typed device properties (hw/qdev-properties.h): parsing a user's string
 * into an options struct field, defaults, copies, and the help line.
 */
#include <inttypes.h>
#include <string.h>
#include <glib.h>
#include "hw/qdev-properties.h"
#include "qemu/keyval.h"

#define PCI_SLOT_MAX 0x1f
#define PCI_FUNCTION_MAX 7

/* What `-device TYPE,help` says about each kind, in QEMU's words. */
typedef struct PropertyKindInfo {
    const char *type_name;      /* printed as PROP=<type_name> */
    size_t size;                /* of the field */
    const char *description;    /* unless the property has its own */
    const char *backend;        /* a reference to this kind of backend */
} PropertyKindInfo;

static const PropertyKindInfo kind_info[DEVICE_PROP_KIND_COUNT] = {
    [DEVICE_PROP_BOOL] = { "bool", sizeof(bool), "on/off" },
    [DEVICE_PROP_ON_OFF_AUTO] = { "OnOffAuto", sizeof(OnOffAuto), "on/off/auto" },
    [DEVICE_PROP_UINT8] = { "uint8", sizeof(uint8_t) },
    [DEVICE_PROP_UINT16] = { "uint16", sizeof(uint16_t) },
    [DEVICE_PROP_UINT32] = { "uint32", sizeof(uint32_t) },
    [DEVICE_PROP_UINT64] = { "uint64", sizeof(uint64_t) },
    [DEVICE_PROP_INT32] = { "int32", sizeof(int32_t) },
    [DEVICE_PROP_SIZE] = { "size", sizeof(uint64_t) },
    [DEVICE_PROP_STRING] = { "str", sizeof(char *) },
    [DEVICE_PROP_MACADDR] = {
        "str", sizeof(MACAddr), "Ethernet 6-byte MAC Address, example: 52:54:00:12:34:56" },
    [DEVICE_PROP_PCI_DEVFN] = {
        "int32", sizeof(int32_t), "Slot and optional function number, example: 06.0 or 06" },
    [DEVICE_PROP_ENUM] = { NULL, sizeof(int) },     /* type name: the choices' */
    [DEVICE_PROP_IOTHREAD] = { "link<iothread>", sizeof(DeviceLink), NULL, "iothread" },
    [DEVICE_PROP_CHARDEV] = {
        "str", sizeof(DeviceLink), "ID of a chardev to use as a backend", "chardev" },
    [DEVICE_PROP_DRIVE] = {
        "str", sizeof(DeviceLink), "Node name or ID of a block device to use as a backend",
        "drive" },
    [DEVICE_PROP_NETDEV] = {
        "str", sizeof(DeviceLink), "ID of a netdev to use as a backend", "netdev" },
};

static void *field_of(const DeviceProperty *prop, void *options)
{
    return (char *)options + prop->offset;
}

bool device_property_is_link(const DeviceProperty *prop)
{
    return kind_info[prop->kind].backend != NULL;
}

const char *device_property_backend_name(DevicePropertyKind kind)
{
    return kind_info[kind].backend;
}

DeviceLink *device_property_link(const DeviceProperty *prop, void *options)
{
    g_assert(device_property_is_link(prop));
    return field_of(prop, options);
}

/* The largest value of an unsigned kind. */
static uint64_t unsigned_kind_max(DevicePropertyKind kind)
{
    switch (kind) {
    case DEVICE_PROP_UINT8:
        return UINT8_MAX;
    case DEVICE_PROP_UINT16:
        return UINT16_MAX;
    case DEVICE_PROP_UINT32:
        return UINT32_MAX;
    default:
        return UINT64_MAX;
    }
}

static void store_unsigned(DevicePropertyKind kind, void *field, uint64_t value)
{
    switch (kind) {
    case DEVICE_PROP_UINT8:
        *(uint8_t *)field = value;
        break;
    case DEVICE_PROP_UINT16:
        *(uint16_t *)field = value;
        break;
    case DEVICE_PROP_UINT32:
        *(uint32_t *)field = value;
        break;
    default:
        *(uint64_t *)field = value;
        break;
    }
}

void device_property_set_default(const DeviceProperty *prop, void *options)
{
    void *field = field_of(prop, options);
    switch (prop->kind) {
    case DEVICE_PROP_BOOL:
        *(bool *)field = prop->defval.b;
        break;
    case DEVICE_PROP_ON_OFF_AUTO:
        *(OnOffAuto *)field = prop->defval.i;
        break;
    case DEVICE_PROP_UINT8:
    case DEVICE_PROP_UINT16:
    case DEVICE_PROP_UINT32:
    case DEVICE_PROP_UINT64:
    case DEVICE_PROP_SIZE:
        store_unsigned(prop->kind, field, prop->defval.u);
        break;
    case DEVICE_PROP_INT32:
    case DEVICE_PROP_PCI_DEVFN:
        *(int32_t *)field = prop->defval.i;
        break;
    case DEVICE_PROP_ENUM:
        *(int *)field = prop->defval.i;
        break;
    case DEVICE_PROP_STRING:
        *(char **)field = g_strdup(prop->defval.s);
        break;
    case DEVICE_PROP_MACADDR:
    case DEVICE_PROP_IOTHREAD:
    case DEVICE_PROP_CHARDEV:
    case DEVICE_PROP_DRIVE:
    case DEVICE_PROP_NETDEV:
    case DEVICE_PROP_KIND_COUNT:
        break;              /* none: all zero */
    }
}

/* An optional '-', then what parse_uint takes, within int32_t. */
static bool parse_int32(const char *text, int32_t *value)
{
    bool negative = text[0] == '-';
    uint64_t magnitude;
    if (!parse_uint(text + negative, negative ? (uint64_t)INT32_MAX + 1 : INT32_MAX,
                    &magnitude)) {
        return false;
    }
    *value = negative ? (int32_t)-(int64_t)magnitude : (int32_t)magnitude;
    return true;
}

/* A hexadecimal number, with or without 0x, of at most max. */
static bool parse_hex_field(const char *text, unsigned max, unsigned *value)
{
    char *prefixed = g_str_has_prefix(text, "0x") || g_str_has_prefix(text, "0X") ?
                     g_strdup(text) : g_strconcat("0x", text, NULL);
    uint64_t number;
    bool ok = parse_uint(prefixed, max, &number);
    g_free(prefixed);
    if (ok) {
        *value = number;
    }
    return ok;
}

/* QEMU's PCI address syntax: SLOT[.FUNCTION], both hexadecimal. */
static bool parse_pci_devfn(const char *text, int32_t *devfn)
{
    const char *dot = strchr(text, '.');
    unsigned slot, function = 0;
    char *slot_text = dot ? g_strndup(text, dot - text) : g_strdup(text);
    bool ok = parse_hex_field(slot_text, PCI_SLOT_MAX, &slot) &&
              (!dot || parse_hex_field(dot + 1, PCI_FUNCTION_MAX, &function));
    g_free(slot_text);
    if (ok) {
        *devfn = (slot << 3) | function;
    }
    return ok;
}

/* Six pairs of hexadecimal digits, separated by ':' (or '-', as QEMU takes). */
static bool parse_macaddr(const char *text, MACAddr *mac)
{
    MACAddr parsed;
    for (unsigned i = 0; i < G_N_ELEMENTS(parsed.a); i++) {
        const char *pair = text + 3 * i;
        char end = i + 1 < G_N_ELEMENTS(parsed.a) ? ':' : '\0';
        if (!g_ascii_isxdigit(pair[0]) || !g_ascii_isxdigit(pair[1]) ||
            (pair[2] != end && !(end == ':' && pair[2] == '-'))) {
            return false;
        }
        parsed.a[i] = g_ascii_xdigit_value(pair[0]) << 4 | g_ascii_xdigit_value(pair[1]);
    }
    *mac = parsed;
    return true;
}

static const char *const on_off_auto_names[] = {
    [ON_OFF_AUTO_AUTO] = "auto", [ON_OFF_AUTO_ON] = "on", [ON_OFF_AUTO_OFF] = "off",
};

/* "auto", or any spelling of a bool (on/off, yes/no, true/false). */
static bool parse_on_off_auto(const char *text, OnOffAuto *value)
{
    bool b;
    if (strcmp(text, on_off_auto_names[ON_OFF_AUTO_AUTO]) == 0) {
        *value = ON_OFF_AUTO_AUTO;
    } else if (parse_bool(text, &b)) {
        *value = b ? ON_OFF_AUTO_ON : ON_OFF_AUTO_OFF;
    } else {
        return false;
    }
    return true;
}

/* One of the choices' names, exactly (QEMU's enums ignore no case). */
static bool parse_enum(const DevicePropertyChoices *choices, const char *text, int *value)
{
    for (int v = 0; v < choices->count; v++) {
        if (strcmp(text, choices->name(v)) == 0) {
            *value = v;
            return true;
        }
    }
    return false;
}

static bool parse_link(const char *text, DeviceLink *link)
{
    if (!*text) {
        return false;
    }
    g_free(link->id);
    link->id = g_strdup(text);
    link->backend = NULL;
    return true;
}

/* Parse text into field; false if it is no value of prop's kind. */
static bool parse_value(const DeviceProperty *prop, const char *text, void *field)
{
    uint64_t number;
    switch (prop->kind) {
    case DEVICE_PROP_BOOL:
        return parse_bool(text, field);
    case DEVICE_PROP_ON_OFF_AUTO:
        return parse_on_off_auto(text, field);
    case DEVICE_PROP_UINT8:
    case DEVICE_PROP_UINT16:
    case DEVICE_PROP_UINT32:
    case DEVICE_PROP_UINT64:
        if (!parse_uint(text, unsigned_kind_max(prop->kind), &number)) {
            return false;
        }
        store_unsigned(prop->kind, field, number);
        return true;
    case DEVICE_PROP_SIZE:
        return parse_size(text, 1, field);
    case DEVICE_PROP_INT32:
        return parse_int32(text, field);
    case DEVICE_PROP_PCI_DEVFN:
        return parse_pci_devfn(text, field);
    case DEVICE_PROP_STRING:
        g_free(*(char **)field);
        *(char **)field = g_strdup(text);
        return true;
    case DEVICE_PROP_MACADDR:
        return parse_macaddr(text, field);
    case DEVICE_PROP_ENUM:
        return parse_enum(prop->choices, text, field);
    case DEVICE_PROP_IOTHREAD:
    case DEVICE_PROP_CHARDEV:
    case DEVICE_PROP_DRIVE:
    case DEVICE_PROP_NETDEV:
        return parse_link(text, field);
    case DEVICE_PROP_KIND_COUNT:
        break;
    }
    g_assert_not_reached();
}

/* What a value of prop's kind looks like, for the error message. */
static char *expected_syntax(const DeviceProperty *prop)
{
    switch (prop->kind) {
    case DEVICE_PROP_BOOL:
        return g_strdup("on or off");
    case DEVICE_PROP_ON_OFF_AUTO:
        return g_strdup("on, off or auto");
    case DEVICE_PROP_UINT8:
    case DEVICE_PROP_UINT16:
    case DEVICE_PROP_UINT32:
    case DEVICE_PROP_UINT64:
        return g_strdup_printf("an integer from 0 to %" PRIu64,
                               unsigned_kind_max(prop->kind));
    case DEVICE_PROP_INT32:
        return g_strdup_printf("an integer from %d to %d", INT32_MIN, INT32_MAX);
    case DEVICE_PROP_SIZE:
        return g_strdup("a size (bytes, or a number with a k, M, G or T suffix)");
    case DEVICE_PROP_PCI_DEVFN:
        return g_strdup("SLOT[.FUNCTION] with SLOT 0 to 1f (hexadecimal) and FUNCTION 0 to 7");
    case DEVICE_PROP_MACADDR:
        return g_strdup("a MAC address such as 52:54:00:12:34:56");
    case DEVICE_PROP_IOTHREAD:
    case DEVICE_PROP_CHARDEV:
    case DEVICE_PROP_DRIVE:
    case DEVICE_PROP_NETDEV:
        return g_strdup_printf("the id of a %s", kind_info[prop->kind].backend);
    case DEVICE_PROP_STRING:
    case DEVICE_PROP_ENUM:      /* has QEMU's own message */
    case DEVICE_PROP_KIND_COUNT:
        break;
    }
    g_assert_not_reached();
}

static char *default_text(const DeviceProperty *prop);

static bool has_default_value(const DeviceProperty *prop, const void *options)
{
    size_t size = kind_info[prop->kind].size;
    g_autofree char *scratch = g_malloc0(prop->offset + size);
    g_assert(prop->kind != DEVICE_PROP_STRING && !device_property_is_link(prop));
    device_property_set_default(prop, scratch);
    return memcmp(scratch + prop->offset, (const char *)options + prop->offset, size) == 0;
}

/* A value of QEMU's that this VMM does not implement is refused, naming
 * it, rather than accepted and ignored; the field is left at its default. */
static bool check_implemented(const DeviceProperty *prop, const char *type_name,
                              const char *text, void *options, Error **errp)
{
    if (prop->only_default && !has_default_value(prop, options)) {
        g_autofree char *defval = default_text(prop);
        error_setg(errp, "Property '%s.%s' cannot be '%s': this VMM implements only its "
                   "default (%s)", type_name, prop->name, text, defval);
    } else if (prop->kind == DEVICE_PROP_ENUM &&
               (prop->choices->unsupported & (1u << *(int *)field_of(prop, options)))) {
        error_setg(errp, "Property '%s.%s' cannot be '%s': this VMM does not implement it",
                   type_name, prop->name, text);
    } else {
        return true;
    }
    device_property_set_default(prop, options);
    return false;
}

bool device_property_parse(const DeviceProperty *prop, const char *type_name,
                           const char *text, void *options, Error **errp)
{
    if (!text) {
        if (prop->kind != DEVICE_PROP_BOOL && prop->kind != DEVICE_PROP_ON_OFF_AUTO) {
            error_setg(errp, "Property '%s.%s' needs a value", type_name, prop->name);
            return false;
        }
        text = "on";
    }
    if (parse_value(prop, text, field_of(prop, options))) {
        return check_implemented(prop, type_name, text, options, errp);
    }
    if (prop->kind == DEVICE_PROP_ENUM) {
        /* QEMU's words for an enum, which -device TYPE,help lists. */
        error_setg(errp, "Parameter '%s' does not accept value '%s'", prop->name, text);
    } else {
        g_autofree char *expected = expected_syntax(prop);
        error_setg(errp, "Property '%s.%s' expects %s, not '%s'", type_name, prop->name,
                   expected, text);
    }
    return false;
}

void device_property_copy(const DeviceProperty *prop, void *dst, const void *src)
{
    void *to = field_of(prop, dst);
    device_property_clear(prop, dst);
    memcpy(to, (const char *)src + prop->offset, kind_info[prop->kind].size);
    /* The copy owns its strings. */
    if (prop->kind == DEVICE_PROP_STRING) {
        *(char **)to = g_strdup(*(char **)to);
    } else if (device_property_is_link(prop)) {
        DeviceLink *link = to;
        link->id = g_strdup(link->id);
        link->backend = NULL;
    }
}

void device_property_clear(const DeviceProperty *prop, void *options)
{
    if (prop->kind == DEVICE_PROP_STRING) {
        g_clear_pointer((char **)field_of(prop, options), g_free);
    } else if (device_property_is_link(prop)) {
        g_clear_pointer(&device_property_link(prop, options)->id, g_free);
    }
}

/* The default as QEMU prints it, or NULL when it prints none. */
static char *default_text(const DeviceProperty *prop)
{
    if (prop->hide_default) {
        return NULL;
    }
    switch (prop->kind) {
    case DEVICE_PROP_BOOL:
        return g_strdup(prop->defval.b ? "true" : "false");
    case DEVICE_PROP_ON_OFF_AUTO:
        return g_strdup_printf("\"%s\"", on_off_auto_names[prop->defval.i]);
    case DEVICE_PROP_UINT8:
    case DEVICE_PROP_UINT16:
    case DEVICE_PROP_UINT32:
    case DEVICE_PROP_UINT64:
    case DEVICE_PROP_SIZE:
        return g_strdup_printf("%" PRIu64, prop->defval.u);
    case DEVICE_PROP_INT32:
    case DEVICE_PROP_PCI_DEVFN:
        return g_strdup_printf("%" PRId64, prop->defval.i);
    case DEVICE_PROP_STRING:
        return prop->defval.s ? g_strdup_printf("\"%s\"", prop->defval.s) : NULL;
    case DEVICE_PROP_ENUM:
        return g_strdup_printf("\"%s\"", prop->choices->name(prop->defval.i));
    default:
        return NULL;
    }
}

void device_property_print_help(const DeviceProperty *prop, FILE *out)
{
    const PropertyKindInfo *info = &kind_info[prop->kind];
    const char *description = prop->description ? prop->description : info->description;
    const char *type_name = prop->kind == DEVICE_PROP_ENUM ? prop->choices->type_name
                                                           : info->type_name;
    char *syntax = g_strdup_printf("%s=<%s>", prop->name, type_name);
    char *defval = default_text(prop);
    if (!description && !defval) {
        fprintf(out, "  %s\n", syntax);
    } else {
        fprintf(out, "  %-22s - %s", syntax, description ? description : "");
        if (defval) {
            fprintf(out, " (default: %s)", defval);
        }
        fprintf(out, "\n");
    }
    g_free(defval);
    g_free(syntax);
}

/* A size as QEMU's size_to_str writes it: three significant digits in the
 * largest binary unit that keeps the number under 1000 ("2 GiB", "512 B"). */
static char *size_text(uint64_t bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double value = bytes;
    size_t unit = 0;
    while (value >= 1000 && unit + 1 < G_N_ELEMENTS(units)) {
        value /= 1024;
        unit++;
    }
    return g_strdup_printf("%0.3g %s", value, units[unit]);
}

static uint64_t load_unsigned(DevicePropertyKind kind, const void *field)
{
    switch (kind) {
    case DEVICE_PROP_UINT8:
        return *(const uint8_t *)field;
    case DEVICE_PROP_UINT16:
        return *(const uint16_t *)field;
    case DEVICE_PROP_UINT32:
        return *(const uint32_t *)field;
    default:
        return *(const uint64_t *)field;
    }
}

char *device_property_value_text(const DeviceProperty *prop, const void *options)
{
    const void *field = (const char *)options + prop->offset;
    switch (prop->kind) {
    case DEVICE_PROP_BOOL:
        return g_strdup(*(const bool *)field ? "true" : "false");
    case DEVICE_PROP_ON_OFF_AUTO:
        return g_strdup_printf("\"%s\"", on_off_auto_names[*(const OnOffAuto *)field]);
    case DEVICE_PROP_UINT8:
    case DEVICE_PROP_UINT16:
    case DEVICE_PROP_UINT32:
    case DEVICE_PROP_UINT64: {
        uint64_t v = load_unsigned(prop->kind, field);
        return g_strdup_printf("%" PRIu64 " (0x%" PRIx64 ")", v, v);
    }
    case DEVICE_PROP_INT32: {
        int64_t v = *(const int32_t *)field;
        return g_strdup_printf("%" PRId64 " (0x%" PRIx64 ")", v, (uint64_t)v);
    }
    case DEVICE_PROP_SIZE: {
        uint64_t v = *(const uint64_t *)field;
        g_autofree char *human = size_text(v);
        return g_strdup_printf("%" PRIu64 " (%s)", v, human);
    }
    case DEVICE_PROP_STRING: {
        const char *s = *(char *const *)field;
        return g_strdup_printf("\"%s\"", s ? s : "");
    }
    case DEVICE_PROP_MACADDR: {
        const uint8_t *a = ((const MACAddr *)field)->a;
        return g_strdup_printf("\"%02x:%02x:%02x:%02x:%02x:%02x\"", a[0], a[1], a[2], a[3],
                               a[4], a[5]);
    }
    case DEVICE_PROP_ENUM:
        return g_strdup_printf("\"%s\"", prop->choices->name(*(const int *)field));
    case DEVICE_PROP_PCI_DEVFN: {
        int32_t devfn = *(const int32_t *)field;
        return devfn < 0 ? g_strdup("<unset>")
                         : g_strdup_printf("%02x.%x", (unsigned)devfn >> 3, (unsigned)devfn & 7);
    }
    case DEVICE_PROP_IOTHREAD:
    case DEVICE_PROP_CHARDEV:
    case DEVICE_PROP_DRIVE:
    case DEVICE_PROP_NETDEV: {
        const char *id = ((const DeviceLink *)field)->id;
        return g_strdup_printf("\"%s\"", id ? id : "");
    }
    case DEVICE_PROP_KIND_COUNT:
        break;
    }
    g_assert_not_reached();
}
