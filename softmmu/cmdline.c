/*
 * The qemu-system-x86_64 command line, in QEMU 7.2's documented syntax,
 * turned into a MachineConfig. Parsing has no side effects beyond writing
 * cfg and informational text to `out`; the one exception is -d, which selects
 * log categories through qemu/log.h (MachineConfig has no place for them).
 *
 * Options are handled in command-line order, as QEMU does: "-foo -help"
 * fails on -foo, "-help -foo" prints the help. Checks that relate several
 * options (-initrd needs -kernel, -smp depends on the machine version) run
 * once every option has been read.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "qemu/log.h"
#include "sysemu/machine-config.h"
#include "cmdline-keyval.h"
#include "cmdline-object.h"

#define MiB (UINT64_C(1) << 20)
#define DEFAULT_RAM_SIZE (128 * MiB)
/* Below this there is no room for the real-mode area, boot data and a kernel. */
#define MIN_RAM_SIZE (2 * MiB)
/* Guest RAM is one host mapping; keep it well inside the 47-bit user address space. */
#define MAX_RAM_SIZE (UINT64_C(1) << 46)
/* KVM memory slots are made of whole pages. */
#define RAM_GRANULE 4096
/* xAPIC ids are 8 bits wide and 0xff is the broadcast id. */
#define MAX_VCPUS 255
/* COM1..COM4 */
#define MAX_SERIAL_PORTS 4
#define DEFAULT_CPU_MODEL "qemu64"
#define CPU_VENDOR_LENGTH 12
#define PC_DESCRIPTION "Standard PC (i440FX + PIIX, 1996)"

/*
 * The pc-i440fx versions QEMU 7.2 has, newest first; "pc" is an alias of the
 * first. From 6.2 on, omitted -smp values prefer cores over sockets.
 */
static const char *const i440fx_versions[] = {
    "7.2", "7.1", "7.0", "6.2", "6.1", "6.0", "5.2", "5.1", "5.0", "4.2",
    "4.1", "4.0", "3.1", "3.0", "2.12", "2.11", "2.10", "2.9", "2.8", "2.7",
    "2.6", "2.5", "2.4", "2.3", "2.2", "2.1", "2.0", "1.7", "1.6", "1.5",
    "1.4",
};
#define I440FX_PREFIX "pc-i440fx-"
#define FIRST_CORES_PREFERRING_VERSION "6.2"

/* -smp as given (0: omitted), resolved once the machine version is known. */
typedef struct SmpRequest {
    unsigned cpus, sockets, cores, threads, maxcpus;
    const char *spelled, *arg;  /* NULL spelled: no -smp */
} SmpRequest;

typedef struct ParseState {
    MachineConfig *cfg;
    FILE *out;
    bool smp_prefer_sockets;
    SmpRequest smp;
    const char *initrd_spelled, *append_spelled;
    /* -global defaults: device type name -> DeviceConfig of its properties */
    GHashTable *device_globals;
} ParseState;

struct CmdlineOption;

/* One occurrence of an option in argv. */
typedef struct OptionUse {
    const struct CmdlineOption *option;
    const char *spelled;    /* as the user wrote it: "-m", "--m" */
    const char *arg;        /* NULL for options without an argument */
} OptionUse;

typedef struct CmdlineOption {
    const char *name;       /* without the leading dash */
    const char *arg_syntax; /* NULL: the option takes no argument */
    const char *help;       /* NULL: not listed (an alias, or a QEMU option we refuse) */
    /* Either handle takes the option, or its argument is an option string
     * (see cmdline-keyval.h) split with implied_key and given to apply_items. */
    CmdlineResult (*handle)(ParseState *ps, const OptionUse *use, Error **errp);
    CmdlineResult (*apply_items)(ParseState *ps, const OptionUse *use,
                                 GPtrArray *items, Error **errp);
    const char *implied_key;
    size_t field;           /* MachineConfig member for handle_flag/handle_string */
    bool flag_value;
} CmdlineOption;

static CmdlineResult result_of(bool ok)
{
    return ok ? CMDLINE_RUN : CMDLINE_ERROR;
}

static const KeyvalItem *item_at(GPtrArray *items, guint i)
{
    return g_ptr_array_index(items, i);
}

static void replace_string(char **field, const char *value)
{
    g_free(*field);
    *field = g_strdup(value);
}

/* ---- informational output ---- */

/* Lists cmdline_options, defined further down. */
static void print_usage(FILE *out);

static CmdlineResult handle_help(ParseState *ps, const OptionUse *use, Error **errp)
{
    print_usage(ps->out);
    return CMDLINE_EXIT_OK;
}

static CmdlineResult handle_version(ParseState *ps, const OptionUse *use, Error **errp)
{
    fprintf(ps->out, "QEMU emulator version 7.2.0 (qemu-pdl)\n"
            "Copyright (c) the qemu-pdl developers; command line after QEMU's\n");
    return CMDLINE_EXIT_OK;
}

/* ---- -accel, -machine ---- */

static bool check_accelerator(const char *name, Error **errp)
{
    if (!name || strcmp(name, "kvm") != 0) {
        error_setg(errp, "only the kvm accelerator is supported");
        return false;
    }
    return true;
}

static CmdlineResult apply_accel_items(ParseState *ps, const OptionUse *use,
                                       GPtrArray *items, Error **errp)
{
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = item_at(items, i);
        if (strcmp(item->key, "accel") != 0) {
            error_setg(errp, "property '%s' is not supported", item->key);
            return CMDLINE_ERROR;
        }
        if (keyval_is_help(item->value)) {
            fprintf(ps->out, "Accelerators supported in QEMU binary:\nkvm\n");
            return CMDLINE_EXIT_OK;
        }
        if (!check_accelerator(item->value, errp)) {
            return CMDLINE_ERROR;
        }
    }
    return CMDLINE_RUN;
}

typedef enum MachinePropertyKind {
    MACHINE_PROP_BOOL,          /* sets the MachineConfig bool at `field` */
    MACHINE_PROP_ACCEL,
    MACHINE_PROP_IGNORED_BOOL,  /* either value is true of our machine */
    MACHINE_PROP_OFF_ONLY,      /* a feature we lack: only off is truthful */
    MACHINE_PROP_OFF_OR_AUTO,   /* auto means "if the board can", ours cannot */
} MachinePropertyKind;

typedef struct MachineProperty {
    const char *name;
    MachinePropertyKind kind;
    size_t field;
    const char *values;
    const char *help;
} MachineProperty;

static const MachineProperty machine_properties[] = {
    { "accel", MACHINE_PROP_ACCEL, 0, "kvm", "accelerator (only kvm)" },
    { "device-lock", MACHINE_PROP_BOOL, offsetof(MachineConfig, device_lock), "on|off",
      "one lock per device; off: one global lock (default on)" },
    { "lock-stats", MACHINE_PROP_BOOL, offsetof(MachineConfig, lock_stats), "on|off",
      "print per-device lock statistics at exit (default off)" },
    { "pit", MACHINE_PROP_BOOL, offsetof(MachineConfig, pit), "on|off",
      "in-kernel i8254 PIT (default on)" },
    { "acpi", MACHINE_PROP_BOOL, offsetof(MachineConfig, acpi), "on|off",
      "ACPI tables (default on)" },
    { "usb", MACHINE_PROP_OFF_ONLY, 0, "off", "there is no USB controller" },
    { "hpet", MACHINE_PROP_OFF_ONLY, 0, "off", "there is no HPET" },
    { "vmport", MACHINE_PROP_OFF_OR_AUTO, 0, "off|auto", "there is no VMware I/O port" },
    { "smm", MACHINE_PROP_OFF_OR_AUTO, 0, "off|auto", "there is no System Management Mode" },
    { "graphics", MACHINE_PROP_IGNORED_BOOL, 0, "on|off", "accepted; there is no graphical output" },
    { "dump-guest-core", MACHINE_PROP_IGNORED_BOOL, 0, "on|off", "accepted and ignored" },
    { "mem-merge", MACHINE_PROP_IGNORED_BOOL, 0, "on|off", "accepted and ignored" },
};

static void print_machine_types(FILE *out)
{
    fprintf(out, "Supported machines are:\n");
    fprintf(out, "%-20s %s (alias of " I440FX_PREFIX "%s)\n", "pc", PC_DESCRIPTION,
            i440fx_versions[0]);
    for (size_t i = 0; i < G_N_ELEMENTS(i440fx_versions); i++) {
        char *name = g_strconcat(I440FX_PREFIX, i440fx_versions[i], NULL);
        fprintf(out, "%-20s %s%s\n", name, PC_DESCRIPTION, i == 0 ? " (default)" : "");
        g_free(name);
    }
}

static void print_machine_properties(FILE *out)
{
    fprintf(out, "pc options:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(machine_properties); i++) {
        const MachineProperty *prop = &machine_properties[i];
        char *syntax = g_strconcat(prop->name, "=", prop->values, NULL);
        fprintf(out, "  %-24s - %s\n", syntax, prop->help);
        g_free(syntax);
    }
}

/* Returns the position of type in i440fx_versions, or -1 if it is none of them. */
static int i440fx_version_index(const char *type)
{
    if (strcmp(type, "pc") == 0) {
        return 0;
    }
    if (!g_str_has_prefix(type, I440FX_PREFIX)) {
        return -1;
    }
    const char *version = type + strlen(I440FX_PREFIX);
    for (size_t i = 0; i < G_N_ELEMENTS(i440fx_versions); i++) {
        if (strcmp(version, i440fx_versions[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static bool set_machine_type(ParseState *ps, const char *type, Error **errp)
{
    int index = i440fx_version_index(type);
    if (index < 0) {
        error_setg(errp, "unsupported machine type '%s' (supported: pc, also as "
                   I440FX_PREFIX "1.4 to " I440FX_PREFIX "7.2; try -machine help)", type);
        return false;
    }
    int first_cores_preferring = i440fx_version_index(I440FX_PREFIX
                                                      FIRST_CORES_PREFERRING_VERSION);
    ps->smp_prefer_sockets = index > first_cores_preferring;
    return true;
}

static const MachineProperty *find_machine_property(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(machine_properties); i++) {
        if (strcmp(machine_properties[i].name, name) == 0) {
            return &machine_properties[i];
        }
    }
    return NULL;
}

static bool require_off(const KeyvalItem *item, Error **errp)
{
    bool on;
    if (!keyval_item_bool(item, &on, errp)) {
        return false;
    }
    if (on) {
        error_setg(errp, "%s=%s is not supported (only %s=off)", item->key,
                   item->value ? item->value : "on", item->key);
        return false;
    }
    return true;
}

static bool set_machine_property(MachineConfig *cfg, const KeyvalItem *item, Error **errp)
{
    const MachineProperty *prop = find_machine_property(item->key);
    bool on;
    if (!prop) {
        error_setg(errp, "property '%s' is not supported", item->key);
        return false;
    }
    switch (prop->kind) {
    case MACHINE_PROP_ACCEL:
        return check_accelerator(item->value, errp);
    case MACHINE_PROP_BOOL:
        if (!keyval_item_bool(item, &on, errp)) {
            return false;
        }
        *(bool *)((char *)cfg + prop->field) = on;
        return true;
    case MACHINE_PROP_IGNORED_BOOL:
        return keyval_item_bool(item, &on, errp);
    case MACHINE_PROP_OFF_OR_AUTO:
        if (item->value && strcmp(item->value, "auto") == 0) {
            return true;
        }
        return require_off(item, errp);
    case MACHINE_PROP_OFF_ONLY:
        return require_off(item, errp);
    }
    g_assert_not_reached();
}

static CmdlineResult apply_machine_items(ParseState *ps, const OptionUse *use,
                                         GPtrArray *items, Error **errp)
{
    const KeyvalItem *first = item_at(items, 0);
    if (strcmp(first->key, "type") == 0 && keyval_is_help(first->value)) {
        print_machine_types(ps->out);
        return CMDLINE_EXIT_OK;
    }
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = item_at(items, i);
        bool ok;
        if (strcmp(item->key, "type") == 0) {
            ok = set_machine_type(ps, item->value ? item->value : "", errp);
        } else if (!item->value && keyval_is_help(item->key)) {
            print_machine_properties(ps->out);
            return CMDLINE_EXIT_OK;
        } else {
            ok = set_machine_property(ps->cfg, item, errp);
        }
        if (!ok) {
            return CMDLINE_ERROR;
        }
    }
    return CMDLINE_RUN;
}

/* ---- -m ---- */

static bool set_ram_size(MachineConfig *cfg, const char *text, Error **errp)
{
    uint64_t bytes;
    if (!text || !parse_size(text, MiB, &bytes)) {
        error_setg(errp, "invalid size '%s' (a number of MiB, or a number with a "
                   "k, M, G or T suffix)", text ? text : "");
        return false;
    }
    if (bytes < MIN_RAM_SIZE) {
        error_setg(errp, "RAM size must be at least %" PRIu64 " MiB", MIN_RAM_SIZE / MiB);
        return false;
    }
    if (bytes > MAX_RAM_SIZE || bytes > SIZE_MAX) {
        error_setg(errp, "RAM size does not fit in the host address space (at most %"
                   PRIu64 " GiB)", MAX_RAM_SIZE / (1024 * MiB));
        return false;
    }
    cfg->ram_size = (bytes + RAM_GRANULE - 1) / RAM_GRANULE * RAM_GRANULE;
    return true;
}

static CmdlineResult apply_memory_items(ParseState *ps, const OptionUse *use,
                                        GPtrArray *items, Error **errp)
{
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = item_at(items, i);
        if (strcmp(item->key, "slots") == 0 || strcmp(item->key, "maxmem") == 0) {
            error_setg(errp, "memory hotplug is not supported (no slots= or maxmem=)");
            return CMDLINE_ERROR;
        }
        if (strcmp(item->key, "size") != 0) {
            error_setg(errp, "property '%s' is not supported", item->key);
            return CMDLINE_ERROR;
        }
        if (!set_ram_size(ps->cfg, item->value, errp)) {
            return CMDLINE_ERROR;
        }
    }
    return CMDLINE_RUN;
}

/* ---- -smp ---- */

static bool set_smp_item(SmpRequest *req, const KeyvalItem *item, Error **errp)
{
    static const struct {
        const char *name;
        size_t offset;
    } fields[] = {
        { "cpus", offsetof(SmpRequest, cpus) },
        { "sockets", offsetof(SmpRequest, sockets) },
        { "cores", offsetof(SmpRequest, cores) },
        { "threads", offsetof(SmpRequest, threads) },
        { "maxcpus", offsetof(SmpRequest, maxcpus) },
    };
    uint64_t value;
    if (strcmp(item->key, "dies") == 0) {
        /* A pc has one die per socket; dies=1 just says so. */
        if (!keyval_item_uint(item, 1, MAX_VCPUS, &value, errp)) {
            return false;
        }
        if (value != 1) {
            error_setg(errp, "multi-die topologies are not supported (dies=1 only)");
            return false;
        }
        return true;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(fields); i++) {
        if (strcmp(item->key, fields[i].name) == 0) {
            if (!keyval_item_uint(item, 1, MAX_VCPUS, &value, errp)) {
                return false;
            }
            *(unsigned *)((char *)req + fields[i].offset) = value;
            return true;
        }
    }
    error_setg(errp, "property '%s' is not supported", item->key);
    return false;
}

static CmdlineResult apply_smp_items(ParseState *ps, const OptionUse *use,
                                     GPtrArray *items, Error **errp)
{
    /* A later -smp replaces an earlier one as a whole. */
    SmpRequest req = { .spelled = use->spelled, .arg = use->arg };
    for (guint i = 0; i < items->len; i++) {
        if (!set_smp_item(&req, item_at(items, i), errp)) {
            return CMDLINE_ERROR;
        }
    }
    ps->smp = req;
    return CMDLINE_RUN;
}

/*
 * QEMU's documented rule for omitted topology levels once maxcpus is known:
 * the preferred level (sockets before 6.2, cores since) takes what the given
 * levels leave, the other omitted levels are 1; threads take the rest only
 * when both sockets and cores were given.
 */
static void smp_fill_omitted(unsigned maxcpus, unsigned *preferred, unsigned *other,
                             unsigned *threads)
{
    if (*preferred == 0) {
        *other = *other ? *other : 1;
        *threads = *threads ? *threads : 1;
        *preferred = maxcpus / (*other * *threads);
    } else if (*other == 0) {
        *threads = *threads ? *threads : 1;
        *other = maxcpus / (*preferred * *threads);
    } else if (*threads == 0) {
        *threads = maxcpus / (*preferred * *other);
    }
}

static bool smp_check(unsigned cpus, unsigned maxcpus, unsigned sockets, unsigned cores,
                      unsigned threads, Error **errp)
{
    unsigned product = sockets * cores * threads;
    if (product != maxcpus) {
        error_setg(errp, "invalid CPU topology: sockets (%u) * cores (%u) * threads (%u) "
                   "= %u, but maxcpus is %u", sockets, cores, threads, product, maxcpus);
        return false;
    }
    if (cpus > maxcpus) {
        error_setg(errp, "invalid CPU topology: cpus (%u) exceeds maxcpus (%u)",
                   cpus, maxcpus);
        return false;
    }
    if (maxcpus > MAX_VCPUS) {
        error_setg(errp, "at most %u vCPUs are supported, not %u", MAX_VCPUS, maxcpus);
        return false;
    }
    if (cpus < maxcpus) {
        error_setg(errp, "CPU hotplug is not supported (cpus %u < maxcpus %u)",
                   cpus, maxcpus);
        return false;
    }
    return true;
}

static bool resolve_smp(const SmpRequest *req, bool prefer_sockets, MachineConfig *cfg,
                        Error **errp)
{
    unsigned sockets = req->sockets, cores = req->cores, threads = req->threads;
    unsigned maxcpus = req->maxcpus ? req->maxcpus : req->cpus;
    if (maxcpus == 0) {
        sockets = sockets ? sockets : 1;
        cores = cores ? cores : 1;
        threads = threads ? threads : 1;
        maxcpus = sockets * cores * threads;
    } else if (prefer_sockets) {
        smp_fill_omitted(maxcpus, &sockets, &cores, &threads);
    } else {
        smp_fill_omitted(maxcpus, &cores, &sockets, &threads);
    }
    unsigned cpus = req->cpus ? req->cpus : maxcpus;
    if (!smp_check(cpus, maxcpus, sockets, cores, threads, errp)) {
        error_prepend(errp, "%s %s: ", req->spelled, req->arg);
        return false;
    }
    cfg->smp_cpus = cpus;
    cfg->smp_maxcpus = maxcpus;
    cfg->smp_sockets = sockets;
    cfg->smp_cores = cores;
    cfg->smp_threads = threads;
    return true;
}

/* ---- -cpu ---- */

static void print_cpu_models(FILE *out)
{
    fprintf(out, "Available CPUs:\n"
            "x86 host      KVM processor with all supported host features\n"
            "x86 max       Enables all features supported by the accelerator\n"
            "x86 qemu64    QEMU Virtual CPU version 2.5+ (default)\n");
}

static bool is_cpu_feature_name(const char *name)
{
    if (!g_ascii_isalnum(name[0])) {
        return false;
    }
    for (const char *p = name; *p; p++) {
        if (!g_ascii_isalnum(*p) && !strchr("-_.", *p)) {
            return false;
        }
    }
    return true;
}

static bool add_cpu_feature(CpuConfig *cpu, const char *name, bool enabled, Error **errp)
{
    if (!is_cpu_feature_name(name)) {
        error_setg(errp, "invalid CPU feature '%s' (use +feature, -feature or "
                   "feature=on|off)", name);
        return false;
    }
    CpuFeatureSetting setting = { .name = g_strdup(name), .enabled = enabled };
    g_array_append_val(cpu->features, setting);
    return true;
}

static bool set_cpu_vendor(CpuConfig *cpu, const char *vendor, Error **errp)
{
    if (strlen(vendor) != CPU_VENDOR_LENGTH) {
        error_setg(errp, "vendor '%s' must be exactly %d characters long",
                   vendor, CPU_VENDOR_LENGTH);
        return false;
    }
    replace_string(&cpu->vendor, vendor);
    return true;
}

static bool apply_cpu_item(CpuConfig *cpu, const KeyvalItem *item, Error **errp)
{
    if (!item->value) {
        const char *name = item->key;
        bool enabled = name[0] != '-';
        if (name[0] == '+' || name[0] == '-') {
            name++;
        }
        return add_cpu_feature(cpu, name, enabled, errp);
    }
    if (strcmp(item->key, "vendor") == 0) {
        return set_cpu_vendor(cpu, item->value, errp);
    }
    bool enabled;
    return keyval_item_bool(item, &enabled, errp) &&
           add_cpu_feature(cpu, item->key, enabled, errp);
}

static CmdlineResult apply_cpu_items(ParseState *ps, const OptionUse *use,
                                     GPtrArray *items, Error **errp)
{
    const KeyvalItem *first = item_at(items, 0);
    CpuConfig *cpu = &ps->cfg->cpu;
    if (strcmp(first->key, "model") != 0 || first->value[0] == '\0') {
        error_setg(errp, "a CPU model must come first (try -cpu help)");
        return CMDLINE_ERROR;
    }
    if (keyval_is_help(first->value)) {
        print_cpu_models(ps->out);
        return CMDLINE_EXIT_OK;
    }
    /* A later -cpu replaces an earlier one as a whole. */
    replace_string(&cpu->model, first->value);
    g_array_set_size(cpu->features, 0);
    g_clear_pointer(&cpu->vendor, g_free);
    for (guint i = 1; i < items->len; i++) {
        if (!apply_cpu_item(cpu, item_at(items, i), errp)) {
            return CMDLINE_ERROR;
        }
    }
    return CMDLINE_RUN;
}

/* ---- -device ---- */

typedef enum DevicePropertyKind {
    DEVICE_PROP_STRING,
    DEVICE_PROP_UINT,       /* in [min, max], stored in decimal */
    DEVICE_PROP_PCI_ADDR,   /* SLOT[.FN], stored as the devfn in decimal */
} DevicePropertyKind;

typedef struct DeviceProperty {
    const char *name;
    DevicePropertyKind kind;
    uint64_t min, max;
    bool has_default;
    uint64_t default_value;
    const char *help;
} DeviceProperty;

typedef struct DeviceType {
    const char *name;
    const char *bus;        /* as -device help names it: "ISA" or "PCI" */
    const char *description;
    const DeviceProperty *props;
    size_t n_props;
} DeviceType;

#define DEVICE_ID_PROPERTY { .name = "id", .help = "name of this device" }
#define PCI_SLOT_MAX 0x1f
#define PCI_FUNCTION_MAX 7

static const DeviceProperty isa_debug_exit_properties[] = {
    DEVICE_ID_PROPERTY,
    { .name = "iobase", .kind = DEVICE_PROP_UINT, .max = 0xffff, .has_default = true,
      .default_value = 0x501, .help = "first I/O port" },
    { .name = "iosize", .kind = DEVICE_PROP_UINT, .min = 1, .max = 0xffff,
      .has_default = true, .default_value = 2, .help = "number of I/O ports" },
};

static const DeviceProperty id_only_properties[] = {
    DEVICE_ID_PROPERTY,
};

static const DeviceProperty pci_device_properties[] = {
    DEVICE_ID_PROPERTY,
    { .name = "addr", .kind = DEVICE_PROP_PCI_ADDR,
      .help = "PCI slot (hex, 0 to 1f) and optional function (0 to 7), e.g. 06.0 or 06 "
              "(default: the first free slot)" },
};

#define PROPERTIES(table) table, G_N_ELEMENTS(table)

static const DeviceType device_types[] = {
    { "isa-debug-exit", "ISA", "writing V to its port exits with status (V << 1) | 1",
      PROPERTIES(isa_debug_exit_properties) },
    { "isa-serial", "ISA", "16550A UART at the next free COM port",
      PROPERTIES(id_only_properties) },
    { "pc-testdev", "ISA", "QEMU's ISA test device (ports 0xe0-0xe7, 0x2000, MMIO 0xff000000)",
      PROPERTIES(id_only_properties) },
    { "pci-testdev", "PCI", "QEMU's PCI test device 1b36:0005",
      PROPERTIES(pci_device_properties) },
    { "pdl-testdev", "PCI", "our PCI test device 7e57:0001 (MMIO/IO BARs, INTx, MSI, MSI-X, DMA)",
      PROPERTIES(pci_device_properties) },
};

static void print_device_types(FILE *out)
{
    fprintf(out, "Devices that -device accepts:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(device_types); i++) {
        fprintf(out, "name \"%s\", bus %s, desc \"%s\"\n", device_types[i].name,
                device_types[i].bus, device_types[i].description);
    }
}

static const char *device_property_syntax(const DeviceProperty *prop)
{
    switch (prop->kind) {
    case DEVICE_PROP_STRING:
        return "=<str>";
    case DEVICE_PROP_UINT:
        return "=<uint>";
    case DEVICE_PROP_PCI_ADDR:
        return "=<slot[.fn]>";
    }
    g_assert_not_reached();
}

static void print_device_properties(FILE *out, const DeviceType *type)
{
    fprintf(out, "%s options:\n", type->name);
    for (size_t i = 0; i < type->n_props; i++) {
        const DeviceProperty *prop = &type->props[i];
        char *syntax = g_strconcat(prop->name, device_property_syntax(prop), NULL);
        fprintf(out, "  %-20s - %s", syntax, prop->help);
        if (prop->has_default) {
            fprintf(out, " (default: %" PRIu64 ")", prop->default_value);
        }
        fprintf(out, "\n");
        g_free(syntax);
    }
}

static const DeviceType *find_device_type(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(device_types); i++) {
        if (strcmp(device_types[i].name, name) == 0) {
            return &device_types[i];
        }
    }
    return NULL;
}

static const DeviceProperty *find_device_property(const DeviceType *type, const char *name)
{
    for (size_t i = 0; i < type->n_props; i++) {
        if (strcmp(type->props[i].name, name) == 0) {
            return &type->props[i];
        }
    }
    return NULL;
}

static void device_config_free(gpointer data)
{
    DeviceConfig *dev = data;
    g_free(dev->driver);
    g_hash_table_unref(dev->props);
    g_free(dev);
}

/* Integers are stored in decimal whatever base the user wrote them in. */
static void set_device_uint(DeviceConfig *dev, const char *name, uint64_t value)
{
    g_hash_table_replace(dev->props, g_strdup(name), g_strdup_printf("%" PRIu64, value));
}

/* Built-in defaults are filled in by apply_device_defaults() once every
 * -global has been seen, so that a -global can still override them. */
static DeviceConfig *device_config_new(const DeviceType *type)
{
    DeviceConfig *dev = g_new0(DeviceConfig, 1);
    dev->driver = g_strdup(type->name);
    dev->props = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return dev;
}

/* A hexadecimal number, with or without 0x, of at most max. */
static bool parse_hex_field(const char *text, unsigned max, unsigned *value)
{
    if (g_str_has_prefix(text, "0x") || g_str_has_prefix(text, "0X")) {
        text += 2;
    }
    if (!*text) {
        return false;
    }
    for (const char *p = text; *p; p++) {
        if (!g_ascii_isxdigit(*p)) {
            return false;
        }
    }
    guint64 number;
    if (!g_ascii_string_to_unsigned(text, 16, 0, max, &number, NULL)) {
        return false;
    }
    *value = number;
    return true;
}

/* QEMU's PCI address syntax: SLOT[.FUNCTION], both hexadecimal. */
static bool parse_pci_addr(const char *text, unsigned *devfn)
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

static bool set_device_pci_addr(DeviceConfig *dev, const KeyvalItem *item, Error **errp)
{
    unsigned devfn;
    if (!parse_pci_addr(item->value, &devfn)) {
        error_setg(errp, "parameter '%s' expects SLOT[.FUNCTION] with SLOT 0 to 1f "
                   "(hexadecimal) and FUNCTION 0 to 7, not '%s'", item->key, item->value);
        return false;
    }
    set_device_uint(dev, item->key, devfn);
    return true;
}

/* Check item's value for its property of type and store it, normalised. */
static bool set_device_property(DeviceConfig *dev, const DeviceType *type,
                                const KeyvalItem *item, Error **errp)
{
    const DeviceProperty *prop = find_device_property(type, item->key);
    if (!prop) {
        error_setg(errp, "device '%s' has no property '%s' (try -device %s,help)",
                   type->name, item->key, type->name);
        return false;
    }
    if (!item->value) {
        error_setg(errp, "parameter '%s' needs a value", item->key);
        return false;
    }
    uint64_t value;
    switch (prop->kind) {
    case DEVICE_PROP_UINT:
        if (!keyval_item_uint(item, prop->min, prop->max, &value, errp)) {
            return false;
        }
        set_device_uint(dev, prop->name, value);
        return true;
    case DEVICE_PROP_PCI_ADDR:
        return set_device_pci_addr(dev, item, errp);
    case DEVICE_PROP_STRING:
        g_hash_table_replace(dev->props, g_strdup(prop->name), g_strdup(item->value));
        return true;
    }
    g_assert_not_reached();
}

static const char *device_driver_name(GPtrArray *items)
{
    const char *driver = NULL;
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = item_at(items, i);
        if (strcmp(item->key, "driver") == 0) {
            driver = item->value;
        }
    }
    return driver;
}

static CmdlineResult apply_device_items(ParseState *ps, const OptionUse *use,
                                        GPtrArray *items, Error **errp)
{
    const char *driver = device_driver_name(items);
    if (!driver) {
        error_setg(errp, "parameter 'driver' is missing (try -device help)");
        return CMDLINE_ERROR;
    }
    if (keyval_is_help(driver)) {
        print_device_types(ps->out);
        return CMDLINE_EXIT_OK;
    }
    const DeviceType *type = find_device_type(driver);
    if (!type) {
        error_setg(errp, "unknown device type (try -device help)");
        return CMDLINE_ERROR;
    }
    if (keyval_wants_help(items)) {
        print_device_properties(ps->out, type);
        return CMDLINE_EXIT_OK;
    }
    DeviceConfig *dev = device_config_new(type);
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = item_at(items, i);
        if (strcmp(item->key, "driver") != 0 && !set_device_property(dev, type, item, errp)) {
            device_config_free(dev);
            return CMDLINE_ERROR;
        }
    }
    g_ptr_array_add(ps->cfg->devices, dev);
    return CMDLINE_RUN;
}

/* ---- -global ---- */

/* QEMU's in-kernel PIT is not a -device, but its one property is commonly
 * set: "delay" has KVM reinject missed ticks (the default), "discard" not. */
#define KVM_PIT_DRIVER "kvm-pit"
#define KVM_PIT_LOST_TICK_POLICY "lost_tick_policy"

static bool set_kvm_pit_global(MachineConfig *cfg, const char *property, const char *value,
                               Error **errp)
{
    if (strcmp(property, KVM_PIT_LOST_TICK_POLICY) != 0) {
        error_setg(errp, "device '" KVM_PIT_DRIVER "' has no property '%s' (only "
                   KVM_PIT_LOST_TICK_POLICY ")", property);
        return false;
    }
    if (strcmp(value, "discard") != 0 && strcmp(value, "delay") != 0) {
        error_setg(errp, KVM_PIT_LOST_TICK_POLICY " must be discard or delay, not '%s'",
                   value);
        return false;
    }
    cfg->pit_discard_lost_ticks = strcmp(value, "discard") == 0;
    return true;
}

/* The defaults that -global gives one device type, kept as a DeviceConfig
 * of their own until every -device is known. */
static DeviceConfig *device_globals_of(ParseState *ps, const DeviceType *type)
{
    DeviceConfig *globals = g_hash_table_lookup(ps->device_globals, type->name);
    if (!globals) {
        globals = device_config_new(type);
        g_hash_table_insert(ps->device_globals, (gpointer)type->name, globals);
    }
    return globals;
}

static bool set_global(ParseState *ps, const char *driver, const char *property,
                       const char *value, Error **errp)
{
    if (strcmp(driver, KVM_PIT_DRIVER) == 0) {
        return set_kvm_pit_global(ps->cfg, property, value, errp);
    }
    const DeviceType *type = find_device_type(driver);
    if (!type) {
        error_setg(errp, "unknown device type '%s' (try -device help)", driver);
        return false;
    }
    if (strcmp(property, "id") == 0) {
        error_setg(errp, "property 'id' names one device and cannot be set with -global");
        return false;
    }
    /* Checked and normalised now, as if given to -device, so that a bad
     * value is reported against this -global. */
    KeyvalItem item = { .key = (char *)property, .value = (char *)value };
    return set_device_property(device_globals_of(ps, type), type, &item, errp);
}

/* driver=D,property=P,value=V; each once at most, all three needed. */
static bool set_global_from_items(ParseState *ps, GPtrArray *items, Error **errp)
{
    static const char *const keys[] = { "driver", "property", "value" };
    const char *values[G_N_ELEMENTS(keys)] = { NULL };
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = item_at(items, i);
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
static CmdlineResult handle_global(ParseState *ps, const OptionUse *use, Error **errp)
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
            return result_of(ok);
        }
    }
    GPtrArray *items = keyval_parse(arg, NULL, errp);
    if (!items) {
        return CMDLINE_ERROR;
    }
    bool ok = set_global_from_items(ps, items, errp);
    g_ptr_array_unref(items);
    return result_of(ok);
}

/* Fill what a -device left unset: first from -global, then built-in
 * defaults. Explicit -device properties win whatever the option order. */
static void apply_device_defaults(ParseState *ps, DeviceConfig *dev)
{
    DeviceConfig *globals = g_hash_table_lookup(ps->device_globals, dev->driver);
    if (globals) {
        GHashTableIter iter;
        gpointer name, value;
        g_hash_table_iter_init(&iter, globals->props);
        while (g_hash_table_iter_next(&iter, &name, &value)) {
            if (!g_hash_table_contains(dev->props, name)) {
                g_hash_table_insert(dev->props, g_strdup(name), g_strdup(value));
            }
        }
    }
    const DeviceType *type = find_device_type(dev->driver);
    for (size_t i = 0; i < type->n_props; i++) {
        const DeviceProperty *prop = &type->props[i];
        if (prop->has_default && !g_hash_table_contains(dev->props, prop->name)) {
            set_device_uint(dev, prop->name, prop->default_value);
        }
    }
}

/* ---- -object (cmdline-object.c) ---- */

static CmdlineResult apply_object_items(ParseState *ps, const OptionUse *use,
                                        GPtrArray *items, Error **errp)
{
    switch (object_config_parse(ps->cfg, items, ps->out, errp)) {
    case OBJECT_PARSE_ADDED:
        return CMDLINE_RUN;
    case OBJECT_PARSE_HELP:
        return CMDLINE_EXIT_OK;
    case OBJECT_PARSE_ERROR:
        break;
    }
    return CMDLINE_ERROR;
}

/* ---- -fw_cfg ---- */

#define FW_CFG_MAX_NAME_LENGTH 55   /* the guest's directory holds 56 bytes with the NUL */
#define FW_CFG_USER_PREFIX "opt/"

static void fw_cfg_item_config_free(gpointer data)
{
    FwCfgItemConfig *item = data;
    g_free(item->name);
    g_free(item->string);
    g_free(item->file);
    g_free(item);
}

static bool fw_cfg_name_is_taken(GPtrArray *fw_cfg_items, const char *name)
{
    for (guint i = 0; i < fw_cfg_items->len; i++) {
        const FwCfgItemConfig *item = g_ptr_array_index(fw_cfg_items, i);
        if (strcmp(item->name, name) == 0) {
            return true;
        }
    }
    return false;
}

static bool check_fw_cfg_item(GPtrArray *fw_cfg_items, const FwCfgItemConfig *item,
                              Error **errp)
{
    if (!item->name || !*item->name) {
        error_setg(errp, "a non-empty name= is required");
        return false;
    }
    if (strlen(item->name) > FW_CFG_MAX_NAME_LENGTH) {
        error_setg(errp, "name '%s' is too long (at most %d characters)", item->name,
                   FW_CFG_MAX_NAME_LENGTH);
        return false;
    }
    if (!item->string == !item->file) {
        error_setg(errp, "exactly one of string= and file= is required");
        return false;
    }
    if ((item->string && !*item->string) || (item->file && !*item->file)) {
        error_setg(errp, "%s= must not be empty", item->string ? "string" : "file");
        return false;
    }
    if (fw_cfg_name_is_taken(fw_cfg_items, item->name)) {
        error_setg(errp, "fw_cfg item '%s' is given twice", item->name);
        return false;
    }
    return true;
}

static bool set_fw_cfg_field(FwCfgItemConfig *item, const KeyvalItem *kv, Error **errp)
{
    char **field;
    if (strcmp(kv->key, "name") == 0) {
        field = &item->name;
    } else if (strcmp(kv->key, "string") == 0) {
        field = &item->string;
    } else if (strcmp(kv->key, "file") == 0) {
        field = &item->file;
    } else {
        error_setg(errp, "property '%s' is not supported", kv->key);
        return false;
    }
    if (!kv->value) {
        error_setg(errp, "parameter '%s' needs a value", kv->key);
        return false;
    }
    replace_string(field, kv->value);
    return true;
}

static CmdlineResult apply_fw_cfg_items(ParseState *ps, const OptionUse *use,
                                        GPtrArray *items, Error **errp)
{
    FwCfgItemConfig *item = g_new0(FwCfgItemConfig, 1);
    bool ok = true;
    for (guint i = 0; ok && i < items->len; i++) {
        ok = set_fw_cfg_field(item, item_at(items, i), errp);
    }
    if (!ok || !check_fw_cfg_item(ps->cfg->fw_cfg_items, item, errp)) {
        fw_cfg_item_config_free(item);
        return CMDLINE_ERROR;
    }
    /* QEMU accepts other names too, with this warning. */
    if (!g_str_has_prefix(item->name, FW_CFG_USER_PREFIX)) {
        fprintf(stderr, "qemu-system-x86_64: warning: externally provided fw_cfg item "
                "names should be prefixed with \"" FW_CFG_USER_PREFIX "\"\n");
    }
    g_ptr_array_add(ps->cfg->fw_cfg_items, item);
    return CMDLINE_RUN;
}

/* ---- -serial and the display ---- */

static bool serial_uses_stdio(const char *spec)
{
    return strcmp(spec, "stdio") == 0 || strcmp(spec, "mon:stdio") == 0;
}

static bool serial_backend_is_supported(const char *spec)
{
    static const char *const plain_backends[] = { "stdio", "mon:stdio", "null", "none", NULL };
    return g_strv_contains(plain_backends, spec) ||
           (g_str_has_prefix(spec, "file:") && spec[strlen("file:")] != '\0');
}

static bool stdio_is_taken(GPtrArray *serials)
{
    for (guint i = 0; i < serials->len; i++) {
        if (serial_uses_stdio(g_ptr_array_index(serials, i))) {
            return true;
        }
    }
    return false;
}

static CmdlineResult handle_serial(ParseState *ps, const OptionUse *use, Error **errp)
{
    GPtrArray *serials = ps->cfg->serials;
    if (!serial_backend_is_supported(use->arg)) {
        error_setg(errp, "unsupported serial backend (use stdio, mon:stdio, file:PATH, "
                   "null or none)");
        return CMDLINE_ERROR;
    }
    if (serials->len == MAX_SERIAL_PORTS) {
        error_setg(errp, "too many serial ports (at most %d)", MAX_SERIAL_PORTS);
        return CMDLINE_ERROR;
    }
    if (serial_uses_stdio(use->arg) && stdio_is_taken(serials)) {
        error_setg(errp, "stdio is already used by another serial port");
        return CMDLINE_ERROR;
    }
    g_ptr_array_add(serials, g_strdup(use->arg));
    return CMDLINE_RUN;
}

/* For QEMU options whose only value we can honour is "none". */
static bool require_none(const OptionUse *use, Error **errp)
{
    if (strcmp(use->arg, "none") != 0) {
        error_setg(errp, "only -%s none is supported", use->option->name);
        return false;
    }
    return true;
}

static CmdlineResult handle_none_only(ParseState *ps, const OptionUse *use, Error **errp)
{
    return result_of(require_none(use, errp));
}

static CmdlineResult handle_display(ParseState *ps, const OptionUse *use, Error **errp)
{
    if (!require_none(use, errp)) {
        return CMDLINE_ERROR;
    }
    ps->cfg->display_none = true;
    return CMDLINE_RUN;
}

/* ---- the simple ones ---- */

static CmdlineResult handle_flag(ParseState *ps, const OptionUse *use, Error **errp)
{
    *(bool *)((char *)ps->cfg + use->option->field) = use->option->flag_value;
    return CMDLINE_RUN;
}

static CmdlineResult handle_string(ParseState *ps, const OptionUse *use, Error **errp)
{
    replace_string((char **)((char *)ps->cfg + use->option->field), use->arg);
    return CMDLINE_RUN;
}

static CmdlineResult handle_initrd(ParseState *ps, const OptionUse *use, Error **errp)
{
    ps->initrd_spelled = use->spelled;
    return handle_string(ps, use, errp);
}

static CmdlineResult handle_append(ParseState *ps, const OptionUse *use, Error **errp)
{
    ps->append_spelled = use->spelled;
    return handle_string(ps, use, errp);
}

/* Options that change nothing for us, like -enable-kvm: KVM is all we do. */
static CmdlineResult handle_accepted(ParseState *ps, const OptionUse *use, Error **errp)
{
    return CMDLINE_RUN;
}

static CmdlineResult handle_unsupported(ParseState *ps, const OptionUse *use, Error **errp)
{
    error_setg(errp, "not supported yet");
    return CMDLINE_ERROR;
}

static bool apply_name_item(MachineConfig *cfg, const KeyvalItem *item, Error **errp)
{
    bool on;
    if (strcmp(item->key, "debug-threads") == 0) {
        return keyval_item_bool(item, &on, errp);
    }
    if (strcmp(item->key, "guest") != 0 && strcmp(item->key, "process") != 0) {
        error_setg(errp, "property '%s' is not supported", item->key);
        return false;
    }
    if (!item->value) {
        error_setg(errp, "parameter '%s' needs a value", item->key);
        return false;
    }
    /* process= names the host process, which is cosmetic: keep ours. */
    if (strcmp(item->key, "guest") == 0) {
        replace_string(&cfg->name, item->value);
    }
    return true;
}

static CmdlineResult apply_name_items(ParseState *ps, const OptionUse *use,
                                      GPtrArray *items, Error **errp)
{
    for (guint i = 0; i < items->len; i++) {
        if (!apply_name_item(ps->cfg, item_at(items, i), errp)) {
            return CMDLINE_ERROR;
        }
    }
    return CMDLINE_RUN;
}

static CmdlineResult handle_log(ParseState *ps, const OptionUse *use, Error **errp)
{
    if (keyval_is_help(use->arg)) {
        qemu_log_print_help();
        return CMDLINE_EXIT_OK;
    }
    Error *log_err = NULL;
    if (!qemu_log_parse(use->arg, &log_err)) {
        /* util/log.c names -d itself; the caller prefixes "-d ARG: " already. */
        const char *msg = log_err->msg;
        if (g_str_has_prefix(msg, "-d: ")) {
            msg += strlen("-d: ");
        }
        error_setg(errp, "%s", msg);
        error_free(log_err);
        return CMDLINE_ERROR;
    }
    return CMDLINE_RUN;
}

#define FLAG(member, value) .handle = handle_flag, \
    .field = offsetof(MachineConfig, member), .flag_value = (value)
#define STRING(member) .field = offsetof(MachineConfig, member)
#define ITEMS(apply, implied) .apply_items = (apply), .implied_key = (implied)
#define UNSUPPORTED(option) { option, "...", NULL, .handle = handle_unsupported }

static const CmdlineOption cmdline_options[] = {
    { "h", NULL, NULL, .handle = handle_help },
    { "help", NULL, "print this help and exit (also -h)", .handle = handle_help },
    { "version", NULL, "print the version and exit", .handle = handle_version },
    { "machine", "[type=]pc[,prop=value[,...]]",
      "the machine: pc (-machine help); properties: -machine pc,help",
      ITEMS(apply_machine_items, "type") },
    { "M", "[type=]pc[,prop=value[,...]]", "same as -machine",
      ITEMS(apply_machine_items, "type") },
    { "accel", "kvm", "the accelerator: only kvm", ITEMS(apply_accel_items, "accel") },
    { "enable-kvm", NULL, "same as -accel kvm", .handle = handle_accepted },
    { "m", "[size=]SIZE", "RAM size: MiB, or with a k, M, G or T suffix (default 128M)",
      ITEMS(apply_memory_items, "size") },
    { "smp", "[cpus=]N[,sockets=S][,cores=C][,threads=T][,maxcpus=M]",
      "vCPUs and their topology (at most 255)", ITEMS(apply_smp_items, "cpus") },
    { "cpu", "MODEL[,+feature|-feature|feature=on|off][,vendor=STR]",
      "CPU model and features (-cpu help)", ITEMS(apply_cpu_items, "model") },
    { "kernel", "FILE", "Linux bzImage or multiboot kernel to boot",
      .handle = handle_string, STRING(kernel) },
    { "initrd", "FILE", "initial ram disk (needs -kernel)",
      .handle = handle_initrd, STRING(initrd) },
    { "append", "CMDLINE", "kernel command line (needs -kernel)",
      .handle = handle_append, STRING(append) },
    { "serial", "stdio|mon:stdio|file:PATH|null|none",
      "next serial port's backend (up to 4)", .handle = handle_serial },
    { "device", "DRIVER[,prop=value[,...]]",
      "add a device (-device help, -device DRIVER,help)", ITEMS(apply_device_items, "driver") },
    { "global", "DRIVER.PROP=VALUE|driver=DRIVER,property=PROP,value=VALUE",
      "default of PROP for every -device DRIVER (also kvm-pit.lost_tick_policy=discard|delay)",
      .handle = handle_global },
    { "object", "iothread,id=ID", "an I/O thread that devices may name with iothread=ID",
      ITEMS(apply_object_items, "qom-type") },
    { "fw_cfg", "[name=]NAME,string=STR|file=PATH",
      "add a named fw_cfg item for the guest (NAME should start with opt/)",
      ITEMS(apply_fw_cfg_items, "name") },
    { "display", "none", "no display", .handle = handle_display },
    { "nographic", NULL, "no display; serial port and monitor on stdio",
      FLAG(nographic, true) },
    { "nodefaults", NULL, "no default serial port", FLAG(nodefaults, true) },
    { "no-reboot", NULL, "exit instead of rebooting", FLAG(no_reboot, true) },
    { "no-acpi", NULL, "same as -machine acpi=off", FLAG(acpi, false) },
    { "name", "[guest=]NAME[,debug-threads=on|off]", "name of the guest",
      ITEMS(apply_name_items, "guest") },
    { "pidfile", "FILE", "write the process id to FILE",
      .handle = handle_string, STRING(pidfile) },
    { "d", "ITEM[,...]", "log the given items (-d help)", .handle = handle_log },
    { "vga", "none", "no VGA card (the only choice)", .handle = handle_none_only },
    { "net", "none", "no network card (the only choice)", .handle = handle_none_only },
    { "monitor", "none", "no separate monitor (the only choice)", .handle = handle_none_only },
    UNSUPPORTED("qmp"),
    UNSUPPORTED("drive"),
    UNSUPPORTED("hda"),
    UNSUPPORTED("cdrom"),
    UNSUPPORTED("netdev"),
    UNSUPPORTED("chardev"),
    UNSUPPORTED("object"),
};

static void print_usage(FILE *out)
{
    fprintf(out, "usage: qemu-system-x86_64 [options]\n"
            "A QEMU-compatible KVM PC; every option may also be written with two dashes.\n\n");
    for (size_t i = 0; i < G_N_ELEMENTS(cmdline_options); i++) {
        const CmdlineOption *option = &cmdline_options[i];
        if (option->help) {
            fprintf(out, "-%s%s%s\n                %s\n", option->name,
                    option->arg_syntax ? " " : "",
                    option->arg_syntax ? option->arg_syntax : "", option->help);
        }
    }
}


/* ---- the driver ---- */

static const CmdlineOption *find_option(const char *word)
{
    /* QEMU takes every option with one or two dashes. */
    const char *name = word + (word[1] == '-' ? 2 : 1);
    for (size_t i = 0; i < G_N_ELEMENTS(cmdline_options); i++) {
        if (strcmp(cmdline_options[i].name, name) == 0) {
            return &cmdline_options[i];
        }
    }
    return NULL;
}

static CmdlineResult run_option(ParseState *ps, const OptionUse *use, Error **errp)
{
    const CmdlineOption *option = use->option;
    if (option->handle) {
        return option->handle(ps, use, errp);
    }
    GPtrArray *items = keyval_parse(use->arg, option->implied_key, errp);
    if (!items) {
        return CMDLINE_ERROR;
    }
    CmdlineResult result = option->apply_items(ps, use, items, errp);
    g_ptr_array_unref(items);
    return result;
}

/* Handle argv[*index] and its argument, if it takes one (then *index moves on). */
static CmdlineResult parse_argument(ParseState *ps, int argc, char **argv, int *index,
                                    Error **errp)
{
    const char *word = argv[*index];
    if (word[0] != '-') {
        error_setg(errp, "%s: disk image arguments are not supported "
                   "(and neither is -drive yet)", word);
        return CMDLINE_ERROR;
    }
    OptionUse use = { .option = find_option(word), .spelled = word };
    if (!use.option) {
        error_setg(errp, "%s: unknown option (try -help)", word);
        return CMDLINE_ERROR;
    }
    if (use.option->arg_syntax) {
        if (*index + 1 >= argc) {
            error_setg(errp, "%s: requires an argument", word);
            return CMDLINE_ERROR;
        }
        use.arg = argv[++*index];
    }
    CmdlineResult result = run_option(ps, &use, errp);
    if (result == CMDLINE_ERROR) {
        if (use.arg) {
            error_prepend(errp, "%s %s: ", word, use.arg);
        } else {
            error_prepend(errp, "%s: ", word);
        }
    }
    return result;
}

static bool check_kernel_options(const ParseState *ps, Error **errp)
{
    if (ps->cfg->kernel) {
        return true;
    }
    if (ps->cfg->initrd) {
        error_setg(errp, "%s only allowed with -kernel option", ps->initrd_spelled);
        return false;
    }
    if (ps->cfg->append) {
        error_setg(errp, "%s only allowed with -kernel option", ps->append_spelled);
        return false;
    }
    return true;
}

/*
 * QEMU's default serial port is "vc" (a graphical console), or the monitor
 * multiplexed with stdio under -nographic. We have no graphical console, so
 * without -nographic the port exists but goes nowhere.
 */
static void add_default_serial(MachineConfig *cfg)
{
    if (cfg->serials->len == 0 && !cfg->nodefaults) {
        g_ptr_array_add(cfg->serials, g_strdup(cfg->nographic ? "mon:stdio" : "null"));
    }
}

static bool finish_config(ParseState *ps, Error **errp)
{
    if (!check_kernel_options(ps, errp)) {
        return false;
    }
    if (ps->smp.spelled && !resolve_smp(&ps->smp, ps->smp_prefer_sockets, ps->cfg, errp)) {
        return false;
    }
    for (guint i = 0; i < ps->cfg->devices->len; i++) {
        apply_device_defaults(ps, g_ptr_array_index(ps->cfg->devices, i));
    }
    add_default_serial(ps->cfg);
    return true;
}

static void cpu_feature_setting_clear(gpointer data)
{
    CpuFeatureSetting *setting = data;
    g_free(setting->name);
}

static void machine_config_init(MachineConfig *cfg)
{
    *cfg = (MachineConfig) {
        .device_lock = true,
        .pit = true,
        .acpi = true,
        .ram_size = DEFAULT_RAM_SIZE,
        .smp_cpus = 1, .smp_sockets = 1, .smp_cores = 1, .smp_threads = 1,
        .smp_maxcpus = 1,
        .cpu.model = g_strdup(DEFAULT_CPU_MODEL),
        .cpu.features = g_array_new(FALSE, TRUE, sizeof(CpuFeatureSetting)),
        .serials = g_ptr_array_new_with_free_func(g_free),
        .devices = g_ptr_array_new_with_free_func(device_config_free),
        .fw_cfg_items = g_ptr_array_new_with_free_func(fw_cfg_item_config_free),
        .iothread_ids = g_ptr_array_new_with_free_func(g_free),
    };
    g_array_set_clear_func(cfg->cpu.features, cpu_feature_setting_clear);
}

CmdlineResult cmdline_parse(int argc, char **argv, MachineConfig *cfg, FILE *out,
                            Error **errp)
{
    ParseState ps = {
        .cfg = cfg, .out = out,
        .device_globals = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                                device_config_free),
    };
    CmdlineResult result = CMDLINE_RUN;

    machine_config_init(cfg);
    for (int i = 1; i < argc && result == CMDLINE_RUN; i++) {
        result = parse_argument(&ps, argc, argv, &i, errp);
    }
    if (result == CMDLINE_RUN && !finish_config(&ps, errp)) {
        result = CMDLINE_ERROR;
    }
    g_hash_table_unref(ps.device_globals);
    if (result != CMDLINE_RUN) {
        machine_config_free(cfg);
    }
    return result;
}

/* Leaves cfg zeroed, so freeing it twice is harmless. */
void machine_config_free(MachineConfig *cfg)
{
    g_free(cfg->cpu.model);
    g_clear_pointer(&cfg->cpu.features, g_array_unref);
    g_free(cfg->cpu.vendor);
    g_free(cfg->kernel);
    g_free(cfg->initrd);
    g_free(cfg->append);
    g_clear_pointer(&cfg->serials, g_ptr_array_unref);
    g_clear_pointer(&cfg->devices, g_ptr_array_unref);
    g_clear_pointer(&cfg->fw_cfg_items, g_ptr_array_unref);
    g_clear_pointer(&cfg->iothread_ids, g_ptr_array_unref);
    g_free(cfg->name);
    g_free(cfg->pidfile);
    memset(cfg, 0, sizeof(*cfg));
}
