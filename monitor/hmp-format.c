/*
 * QMP answers as QEMU 7.2's human monitor prints them
 * (monitor/hmp-format.h). The layouts were taken from Debian's QEMU 7.2
 * side by side (tests/unit/test-hmp.c holds the lines it printed).
 */
#include <inttypes.h>
#include <string.h>
#include "monitor/hmp-format.h"

/* ---- reading members that may be absent ---- */

static JsonObject *node_object(JsonNode *node)
{
    return node && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

static JsonArray *node_array(JsonNode *node)
{
    return node && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
}

static JsonNode *member(JsonObject *o, const char *name)
{
    return o ? json_object_get_member(o, name) : NULL;
}

static bool has_value(JsonObject *o, const char *name)
{
    JsonNode *n = member(o, name);
    return n && JSON_NODE_HOLDS_VALUE(n);
}

static int64_t get_int(JsonObject *o, const char *name)
{
    return has_value(o, name) ? json_node_get_int(member(o, name)) : 0;
}

static bool get_bool(JsonObject *o, const char *name)
{
    return has_value(o, name) && json_node_get_boolean(member(o, name));
}

static const char *get_str(JsonObject *o, const char *name, const char *dflt)
{
    JsonNode *n = member(o, name);
    return n && json_node_get_value_type(n) == G_TYPE_STRING ? json_node_get_string(n) : dflt;
}

static JsonObject *get_object(JsonObject *o, const char *name)
{
    return node_object(member(o, name));
}

static JsonArray *get_array(JsonObject *o, const char *name)
{
    return node_array(member(o, name));
}

/* Each object element of a JSON array (others are skipped). */
#define FOR_EACH_OBJECT(arr, i, obj) \
    for (guint i = 0; (arr) && i < json_array_get_length(arr); i++) \
        for (JsonObject *obj = node_object(json_array_get_element(arr, i)); obj; obj = NULL)

/* ---- the info commands ---- */

void hmp_format_status(JsonNode *ret, GString *out)
{
    JsonObject *o = node_object(ret);
    bool running = get_bool(o, "running");
    const char *status = get_str(o, "status", "paused");
    g_string_append_printf(out, "VM status: %s%s", running ? "running" : "paused",
                           get_bool(o, "singlestep") ? " (single step mode)" : "");
    /* A stop for a reason other than "stop" says which. */
    if (!running && strcmp(status, "paused") != 0) {
        g_string_append_printf(out, " (%s)", status);
    }
    g_string_append_c(out, '\n');
}

void hmp_format_version(JsonNode *ret, GString *out)
{
    JsonObject *o = node_object(ret);
    JsonObject *qemu = get_object(o, "qemu");
    g_string_append_printf(out, "%" PRId64 ".%" PRId64 ".%" PRId64 "%s\n",
                           get_int(qemu, "major"), get_int(qemu, "minor"),
                           get_int(qemu, "micro"), get_str(o, "package", ""));
}

void hmp_format_kvm(JsonNode *ret, GString *out)
{
    JsonObject *o = node_object(ret);
    const char *state = !get_bool(o, "present") ? "not compiled"
                        : get_bool(o, "enabled") ? "enabled" : "disabled";
    g_string_append_printf(out, "kvm support: %s\n", state);
}

void hmp_format_name(JsonNode *ret, GString *out)
{
    const char *name = get_str(node_object(ret), "name", NULL);
    if (name) {
        g_string_append_printf(out, "%s\n", name);
    }
}

void hmp_format_cpus(JsonNode *ret, int64_t current_cpu, GString *out)
{
    JsonArray *cpus = node_array(ret);
    FOR_EACH_OBJECT(cpus, i, cpu) {
        int64_t index = get_int(cpu, "cpu-index");
        g_string_append_printf(out, "%c CPU #%" PRId64 ": thread_id=%" PRId64 "\n",
                               index == current_cpu ? '*' : ' ', index,
                               get_int(cpu, "thread-id"));
    }
}

void hmp_format_iothreads(JsonNode *ret, GString *out)
{
    static const char *const numbers[] = {
        "poll-max-ns", "poll-grow", "poll-shrink", "aio-max-batch",
    };
    JsonArray *threads = node_array(ret);
    FOR_EACH_OBJECT(threads, i, t) {
        g_string_append_printf(out, "%s:\n  thread_id=%" PRId64 "\n", get_str(t, "id", ""),
                               get_int(t, "thread-id"));
        for (size_t k = 0; k < G_N_ELEMENTS(numbers); k++) {
            g_string_append_printf(out, "  %s=%" PRId64 "\n", numbers[k],
                                   get_int(t, numbers[k]));
        }
    }
}

void hmp_format_chardev(JsonNode *ret, GString *out)
{
    JsonArray *chardevs = node_array(ret);
    FOR_EACH_OBJECT(chardevs, i, c) {
        g_string_append_printf(out, "%s: filename=%s\n", get_str(c, "label", ""),
                               get_str(c, "filename", ""));
    }
}

static void format_pci_region(JsonObject *r, GString *out)
{
    /* Unmapped BARs have address -1: QEMU prints it unsigned, and the end
     * wraps around to size - 2. */
    uint64_t addr = get_int(r, "address");
    uint64_t end = addr + get_int(r, "size") - 1;
    g_string_append_printf(out, "      BAR%" PRId64 ": ", get_int(r, "bar"));
    if (strcmp(get_str(r, "type", ""), "io") == 0) {
        g_string_append_printf(out, "I/O at 0x%04" PRIx64 " [0x%04" PRIx64 "].\n", addr, end);
    } else {
        g_string_append_printf(out, "%d bit%s memory at 0x%08" PRIx64 " [0x%08" PRIx64 "].\n",
                               get_bool(r, "mem_type_64") ? 64 : 32,
                               get_bool(r, "prefetch") ? " prefetchable" : "", addr, end);
    }
}

static void format_pci_device(JsonObject *d, GString *out)
{
    JsonObject *class_info = get_object(d, "class_info");
    JsonObject *id = get_object(d, "id");
    g_string_append_printf(out, "  Bus %2" PRId64 ", device %3" PRId64 ", function %" PRId64
                           ":\n    ", get_int(d, "bus"), get_int(d, "slot"),
                           get_int(d, "function"));
    const char *desc = get_str(class_info, "desc", NULL);
    if (desc) {
        g_string_append_printf(out, "%s: ", desc);
    } else {
        g_string_append_printf(out, "Class %04" PRIx64 ": ", get_int(class_info, "class"));
    }
    g_string_append_printf(out, "PCI device %04" PRIx64 ":%04" PRIx64 "\n",
                           get_int(id, "vendor"), get_int(id, "device"));
    if (has_value(id, "subsystem-vendor")) {
        g_string_append_printf(out, "      PCI subsystem %04" PRIx64 ":%04" PRIx64 "\n",
                               get_int(id, "subsystem-vendor"), get_int(id, "subsystem"));
    }
    if (has_value(d, "irq")) {
        int64_t pin = get_int(d, "irq_pin");
        g_string_append_printf(out, "      IRQ %" PRId64 ", pin %c\n", get_int(d, "irq"),
                               pin >= 1 && pin <= 4 ? (char)('A' + pin - 1) : '?');
    }
    JsonArray *regions = get_array(d, "regions");
    FOR_EACH_OBJECT(regions, i, r) {
        format_pci_region(r, out);
    }
    g_string_append_printf(out, "      id \"%s\"\n", get_str(d, "qdev_id", ""));
}

void hmp_format_pci(JsonNode *ret, GString *out)
{
    JsonArray *buses = node_array(ret);
    FOR_EACH_OBJECT(buses, i, bus) {
        JsonArray *devices = get_array(bus, "devices");
        FOR_EACH_OBJECT(devices, k, d) {
            format_pci_device(d, out);
        }
    }
}

/* Where the drive is, the same with or without a medium. */
static void format_block_attachment(JsonObject *b, GString *out)
{
    if (has_value(b, "qdev")) {
        g_string_append_printf(out, "    Attached to:      %s\n", get_str(b, "qdev", ""));
    }
    const char *io_status = get_str(b, "io-status", "ok");
    if (strcmp(io_status, "ok") != 0) {
        g_string_append_printf(out, "    I/O status:       %s\n", io_status);
    }
    if (get_bool(b, "removable")) {
        g_string_append_printf(out, "    Removable device: %slocked, tray %s\n",
                               get_bool(b, "locked") ? "" : "not ",
                               get_bool(b, "tray_open") ? "open" : "closed");
    }
}

static void format_block_inserted(JsonObject *b, JsonObject *ins, GString *out)
{
    JsonObject *cache = get_object(ins, "cache");
    g_string_append_printf(out, "%s (%s): %s (%s%s)\n", get_str(b, "device", ""),
                           get_str(ins, "node-name", ""), get_str(ins, "file", ""),
                           get_str(ins, "drv", ""), get_bool(ins, "ro") ? ", read-only" : "");
    format_block_attachment(b, out);
    g_string_append_printf(out, "    Cache mode:       %s%s%s\n",
                           get_bool(cache, "writeback") ? "writeback" : "writethrough",
                           get_bool(cache, "direct") ? ", direct" : "",
                           get_bool(cache, "no-flush") ? ", ignore flushes" : "");
}

static void format_block_empty(JsonObject *b, GString *out)
{
    g_string_append_printf(out, "%s: [not inserted]\n", get_str(b, "device", ""));
    format_block_attachment(b, out);
}

void hmp_format_block(JsonNode *ret, GString *out)
{
    JsonArray *blocks = node_array(ret);
    FOR_EACH_OBJECT(blocks, i, b) {
        if (i > 0) {
            g_string_append_c(out, '\n');   /* a blank line between devices */
        }
        JsonObject *ins = get_object(b, "inserted");
        if (ins) {
            format_block_inserted(b, ins, out);
        } else {
            format_block_empty(b, out);
        }
    }
}

/* Ours: the table -machine lock-stats=on prints at exit, live. */
void hmp_format_locks(JsonNode *ret, GString *out)
{
    JsonArray *locks = node_array(ret);
    g_string_append_printf(out, "  %-16s %-16s %12s %12s %14s\n", "lock", "type", "acquired",
                           "contended", "wait-ms");
    FOR_EACH_OBJECT(locks, i, l) {
        g_string_append_printf(out, "  %-16s %-16s %12" PRId64 " %12" PRId64 " %14.3f\n",
                               get_str(l, "name", ""), get_str(l, "type", ""),
                               get_int(l, "acquisitions"), get_int(l, "contended"),
                               get_int(l, "wait-ns") / 1e6);
    }
}

void hmp_format_error(const Error *err, GString *out)
{
    g_string_append_printf(out, "Error: %s\n", err->msg);
}
