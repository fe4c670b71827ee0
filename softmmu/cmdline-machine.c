/*
 * The machine's shape on the command line: -accel, -machine, -m, -smp and
 * -cpu (softmmu/cmdline-internal.h).
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include "cmdline-internal.h"

/* Below this there is no room for the real-mode area, boot data and a kernel. */
#define MIN_RAM_SIZE (2 * MiB)
/* Guest RAM is one host mapping; keep it well inside the 47-bit user address space. */
#define MAX_RAM_SIZE (UINT64_C(1) << 46)
/* KVM memory slots are made of whole pages. */
#define RAM_GRANULE 4096
/* xAPIC ids are 8 bits wide and 0xff is the broadcast id. */
#define MAX_VCPUS 255
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

/* ---- -accel, -machine ---- */

static bool check_accelerator(const char *name, Error **errp)
{
    if (!name || strcmp(name, "kvm") != 0) {
        error_setg(errp, "only the kvm accelerator is supported");
        return false;
    }
    return true;
}

CmdlineResult apply_accel_items(ParseState *ps, const OptionUse *use,
                                       GPtrArray *items, Error **errp)
{
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
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
    { "io-sched-batch", MACHINE_PROP_BOOL, offsetof(MachineConfig, io_sched_batch), "on|off",
      "threads other than vCPUs never preempt a running vCPU (SCHED_BATCH; default on)" },
    { "x-ram-thp", MACHINE_PROP_BOOL, offsetof(MachineConfig, ram_thp), "on|off",
      "guest RAM on transparent huge pages; off forbids them (ours; default on)" },
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

CmdlineResult apply_machine_items(ParseState *ps, const OptionUse *use,
                                         GPtrArray *items, Error **errp)
{
    const KeyvalItem *first = keyval_item_at(items, 0);
    if (strcmp(first->key, "type") == 0 && keyval_is_help(first->value)) {
        print_machine_types(ps->out);
        return CMDLINE_EXIT_OK;
    }
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
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

CmdlineResult apply_memory_items(ParseState *ps, const OptionUse *use,
                                        GPtrArray *items, Error **errp)
{
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
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

CmdlineResult apply_smp_items(ParseState *ps, const OptionUse *use,
                                     GPtrArray *items, Error **errp)
{
    /* A later -smp replaces an earlier one as a whole. */
    SmpRequest req = { .spelled = use->spelled, .arg = use->arg };
    for (guint i = 0; i < items->len; i++) {
        if (!set_smp_item(&req, keyval_item_at(items, i), errp)) {
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

CmdlineResult apply_cpu_items(ParseState *ps, const OptionUse *use,
                                     GPtrArray *items, Error **errp)
{
    const KeyvalItem *first = keyval_item_at(items, 0);
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
        if (!apply_cpu_item(cpu, keyval_item_at(items, i), errp)) {
            return CMDLINE_ERROR;
        }
    }
    return CMDLINE_RUN;
}

bool cmdline_machine_finish(ParseState *ps, Error **errp)
{
    return !ps->smp.spelled || resolve_smp(&ps->smp, ps->smp_prefer_sockets, ps->cfg, errp);
}
