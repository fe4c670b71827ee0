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
 *
 * This file has the option table and the driver, and the options small
 * enough to need no file of their own; cmdline-machine.c has the machine's
 * shape (-machine, -m, -smp, -cpu), cmdline-device.c -device and -global,
 * cmdline-object.c -object, cmdline-netdev.c -netdev, -nic and -net.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "block/drive-config.h"
#include "hw/qdev-registry.h"
#include "monitor/monitor.h"
#include "net/netdev-create.h"
#include "qemu/log.h"
#include "cmdline-internal.h"
#include "cmdline-object.h"

#define DEFAULT_RAM_SIZE (128 * MiB)
/* COM1..COM4 */
#define MAX_SERIAL_PORTS 4
#define DEFAULT_CPU_MODEL "qemu64"

struct CmdlineOption {
    const char *name;       /* without the leading dash */
    const char *arg_syntax; /* NULL: the option takes no argument */
    const char *help;       /* NULL: not listed (an alias, or a QEMU option we refuse) */
    /* Either handle takes the option, or its argument is an option string
     * (see qemu/keyval.h) split with implied_key and given to apply_items. */
    CmdlineHandler *handle;
    CmdlineItemsHandler *apply_items;
    const char *implied_key;
    size_t field;           /* MachineConfig member for handle_flag/handle_string */
    bool flag_value;
};
typedef struct CmdlineOption CmdlineOption;

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

static CmdlineResult apply_chardev_items(ParseState *ps, const OptionUse *use,
                                         GPtrArray *items, Error **errp)
{
    CmdlineResult result = chardev_config_parse(ps->cfg, items, ps->out, errp);
    if (result == CMDLINE_RUN) {
        GPtrArray *chardevs = ps->cfg->chardevs;
        const ChardevConfig *added = g_ptr_array_index(chardevs, chardevs->len - 1);
        if (backend_uses_stdio(added->spec)) {
            cmdline_note_stdio_backend(ps, use);
        }
    }
    return result;
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
        ok = set_fw_cfg_field(item, keyval_item_at(items, i), errp);
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

static bool serial_backend_is_supported(const char *spec)
{
    static const char *const plain_backends[] = { "stdio", "mon:stdio", "null", "none", NULL };
    return g_strv_contains(plain_backends, spec) ||
           (g_str_has_prefix(spec, "file:") && spec[strlen("file:")] != '\0') ||
           g_str_has_prefix(spec, "unix:") || g_str_has_prefix(spec, "tcp:") ||
           (g_str_has_prefix(spec, "chardev:") && spec[strlen("chardev:")] != '\0');
}

static bool stdio_is_taken(GPtrArray *serials)
{
    for (guint i = 0; i < serials->len; i++) {
        if (backend_uses_stdio(g_ptr_array_index(serials, i))) {
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
                   "unix:PATH,server=on,wait=off, tcp:HOST:PORT,server=on,wait=off, "
                   "chardev:ID, null or none)");
        return CMDLINE_ERROR;
    }
    if (serials->len == MAX_SERIAL_PORTS) {
        error_setg(errp, "too many serial ports (at most %d)", MAX_SERIAL_PORTS);
        return CMDLINE_ERROR;
    }
    if (backend_uses_stdio(use->arg) && stdio_is_taken(serials)) {
        error_setg(errp, "stdio is already used by another serial port");
        return CMDLINE_ERROR;
    }
    cmdline_serial_monitor(ps->cfg, serials->len, use->arg);
    if (backend_uses_stdio(use->arg) && !ps->stdio_serial.spelled) {
        ps->stdio_serial = *use;
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
    return cmdline_result_of(require_none(use, errp));
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

/*
 * -name [guest=]NAME[,debug-threads=on|off][,process=PNAME], with QEMU's
 * messages. As QemuOpts does, a bare guest or process key means "on", and
 * an empty argument gives no name at all (while guest= gives the name "").
 */
static bool apply_name_item(MachineConfig *cfg, const KeyvalItem *item, Error **errp)
{
    if (strcmp(item->key, "debug-threads") == 0) {
        if (!item->value) {
            cfg->debug_threads = true;
        } else if (!parse_bool(item->value, &cfg->debug_threads)) {
            error_setg(errp, "Parameter 'debug-threads' expects 'on' or 'off'");
            return false;
        }
        return true;
    }
    const char *value = item->value ? item->value : "on";
    if (strcmp(item->key, "guest") == 0) {
        replace_string(&cfg->name, value);
    } else if (strcmp(item->key, "process") == 0) {
        replace_string(&cfg->process_name, value);
    } else {
        error_setg(errp, "Invalid parameter '%s'", item->key);
        return false;
    }
    return true;
}

static CmdlineResult apply_name_items(ParseState *ps, const OptionUse *use,
                                      GPtrArray *items, Error **errp)
{
    if (use->arg[0] == '\0') {
        return CMDLINE_RUN;
    }
    for (guint i = 0; i < items->len; i++) {
        if (!apply_name_item(ps->cfg, keyval_item_at(items, i), errp)) {
            return CMDLINE_ERROR;
        }
    }
    return CMDLINE_RUN;
}

static CmdlineResult handle_sandbox(ParseState *ps, const OptionUse *use, Error **errp)
{
    return sandbox_parse(use->arg, &ps->cfg->sandbox, errp) ? CMDLINE_RUN : CMDLINE_ERROR;
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
    { "serial", "stdio|mon:stdio|file:PATH|unix:PATH,server=on,wait=off|\n"
      "                tcp:HOST:PORT,server=on,wait=off|chardev:ID|null|none",
      "next serial port's backend (up to 4)", .handle = handle_serial },
    { "device", "DRIVER[,prop=value[,...]]",
      "add a device (-device help, -device DRIVER,help)", ITEMS(apply_device_items, "driver") },
    { "global", "DRIVER.PROP=VALUE|driver=DRIVER,property=PROP,value=VALUE",
      "default of PROP for every -device DRIVER, and of the board's devices (PIIX4_PM, kvm-pit, mc146818rtc, i8042)",
      .handle = handle_global },
    { "chardev", "null|stdio|file|socket,id=ID[,path=PATH][,mux=on|off]\n"
      "                [,host=HOST,port=PORT][,server=on,wait=off]",
      "a character backend for chardev=ID or -serial chardev:ID (-chardev help)",
      ITEMS(apply_chardev_items, "backend") },
    { "object", "iothread,id=ID", "an I/O thread that devices may name with iothread=ID",
      ITEMS(apply_object_items, "qom-type") },
    { "fw_cfg", "[name=]NAME,string=STR|file=PATH",
      "add a named fw_cfg item for the guest (NAME should start with opt/)",
      ITEMS(apply_fw_cfg_items, "name") },
    { "display", "none", "no display", .handle = handle_display },
    { "nographic", NULL, "no display; serial port and monitor on stdio",
      FLAG(nographic, true) },
    { "nodefaults", NULL, "no default serial port and no default NIC",
      FLAG(nodefaults, true) },
    { "no-reboot", NULL, "exit instead of rebooting", FLAG(no_reboot, true) },
    { "no-shutdown", NULL, "stop the VM instead of exiting when the guest powers off",
      FLAG(no_shutdown, true) },
    { "S", NULL, "do not start the CPUs until the monitor says cont", FLAG(start_paused, true) },
    { "no-acpi", NULL, "same as -machine acpi=off", FLAG(acpi, false) },
    { "name", "[guest=]NAME[,debug-threads=on|off][,process=PNAME]",
      "name of the guest (query-name); debug-threads=on names the threads as QEMU\n"
      "                does (\"CPU 0/KVM\", \"IO ID\"); process= names the main thread",
      ITEMS(apply_name_items, "guest") },
    { "pidfile", "FILE", "write the process id to FILE, locked against a second VMM",
      .handle = handle_string, STRING(pidfile) },
    { "daemonize", NULL, "detach from the terminal once the machine is built",
      FLAG(daemonize, true) },
    { "sandbox", "on|off[,obsolete=allow|deny][,elevateprivileges=allow|deny|children]\n"
      "                [,spawn=allow|deny][,resourcecontrol=allow|deny]",
      "confine the VMM with a seccomp allow list once the machine is built",
      .handle = handle_sandbox },
    { "d", "ITEM[,...]", "log the given items (-d help)", .handle = handle_log },
    { "vga", "none", "no VGA card (the only choice)", .handle = handle_none_only },
    { "netdev", "tap|socket|user,id=ID[,...]",
      "a network backend for -device MODEL,netdev=ID (-netdev help):\n"
      "                tap[,ifname=NAME][,script=FILE|no][,downscript=FILE|no][,vnet_hdr=on|off]\n"
      "                   [,queues=N][,fd=FD|fds=FD:...][,vhost=on|off][,vhostforce=on]\n"
      "                   [,vhostfd=FD|vhostfds=FD:...]\n"
      "                socket,listen=[HOST]:PORT|connect=HOST:PORT|fd=FD",
      ITEMS(apply_netdev_items, "type") },
    { "nic", "none|TYPE[,id=ID][,model=e1000|virtio-net-pci][,mac=MAC][,...]",
      "a NIC on a new backend of TYPE (-nic model=help); none: no default NIC",
      ITEMS(apply_nic_items, "type") },
    { "net", "none", "no default NIC (the legacy -net hub is refused)", .handle = handle_net },
    { "monitor", "stdio|unix:PATH,server=on,wait=off|none",
      "the human monitor on this backend (none: no monitor)", .handle = handle_monitor },
    { "qmp", "unix:PATH,server=on,wait=off|tcp:HOST:PORT,server=on,wait=off|chardev:ID",
      "a QMP server (several allowed; docs/monitor.md)", .handle = handle_qmp },
    { "qmp-pretty", "SPEC", "as -qmp, answers indented", .handle = handle_qmp_pretty },
    { "mon", "chardev=ID[,mode=control|readline][,pretty=on|off]",
      "a monitor on -chardev ID (mode=control: QMP)", ITEMS(apply_mon_items, "chardev") },
    { "drive", "[file=FILE][,if=ide|virtio|none][,format=raw][,index=N][,bus=B][,unit=U]\n"
      "                [,media=disk|cdrom][,cache=writeback|none|writethrough|directsync|unsafe]\n"
      "                [,aio=threads|native|io_uring][,readonly=on][,discard=ignore|unmap][,id=ID]",
      "a disk or CD-ROM drive (raw images and host block devices)", .handle = handle_drive },
    { "hda", "FILE", "the IDE disk at index 0 (-hdb, -hdc, -hdd: 1, 2, 3)",
      .handle = handle_drive_shorthand },
    { "hdb", "FILE", NULL, .handle = handle_drive_shorthand },
    { "hdc", "FILE", NULL, .handle = handle_drive_shorthand },
    { "hdd", "FILE", NULL, .handle = handle_drive_shorthand },
    { "cdrom", "FILE", "the IDE CD-ROM at index 2", .handle = handle_drive_shorthand },
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
        /* As QEMU: a bare word is the disk image of -hda. */
        return cmdline_result_of(cmdline_add_disk_image(ps, word, errp));
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
 * A daemon's stdio is /dev/null: QEMU refuses -daemonize with a backend on
 * stdio, and with -nographic unless every default port it would put on
 * stdio (serial, monitor, and the parallel port we do not have, so only
 * -nodefaults) has been replaced.
 */
static bool check_daemonize(const ParseState *ps, Error **errp)
{
    if (!ps->cfg->daemonize) {
        return true;
    }
    if (ps->cfg->nographic && !ps->cfg->nodefaults) {
        error_setg(errp, "-nographic cannot be used with -daemonize");
        return false;
    }
    const OptionUse *stdio = ps->stdio_backend.spelled ? &ps->stdio_backend
                                                        : &ps->stdio_serial;
    if (stdio->spelled) {
        error_setg(errp, "%s %s: cannot use stdio with -daemonize", stdio->spelled, stdio->arg);
        return false;
    }
    return true;
}

static bool finish_config(ParseState *ps, Error **errp)
{
    if (!check_kernel_options(ps, errp) || !check_daemonize(ps, errp)) {
        return false;
    }
    if (!cmdline_machine_finish(ps, errp)) {
        return false;
    }
    if (!cmdline_netdevs_finish(ps, errp)) {
        return false;
    }
    if (!cmdline_monitors_finish(ps, errp)) {
        return false;
    }
    cmdline_devices_finish(ps);
    cmdline_add_default_console(ps);
    return true;
}

static void device_config_destroy(gpointer dev)
{
    device_config_free(dev);
}

static void netdev_config_destroy(gpointer cfg)
{
    netdev_config_free(cfg);
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
        .io_sched_batch = true,
        .ram_thp = true,
        .pit = true,
        .acpi = true,
        .ram_size = DEFAULT_RAM_SIZE,
        .smp_cpus = 1, .smp_sockets = 1, .smp_cores = 1, .smp_threads = 1,
        .smp_maxcpus = 1,
        .cpu.model = g_strdup(DEFAULT_CPU_MODEL),
        .cpu.features = g_array_new(FALSE, TRUE, sizeof(CpuFeatureSetting)),
        .serials = g_ptr_array_new_with_free_func(g_free),
        .devices = g_ptr_array_new_with_free_func(device_config_destroy),
        .fw_cfg_items = g_ptr_array_new_with_free_func(fw_cfg_item_config_free),
        .iothread_ids = g_ptr_array_new_with_free_func(g_free),
        .monitors = g_ptr_array_new_with_free_func((GDestroyNotify)monitor_config_free),
        .chardevs = g_ptr_array_new_with_free_func(chardev_config_free),
        .drives = drive_config_list_new(),
        .netdevs = g_ptr_array_new_with_free_func(netdev_config_destroy),
        .nics = g_ptr_array_new_with_free_func(device_config_destroy),
        .board_globals = g_ptr_array_new_with_free_func(device_config_destroy),
    };
    g_array_set_clear_func(cfg->cpu.features, cpu_feature_setting_clear);
}

CmdlineResult cmdline_parse(int argc, char **argv, MachineConfig *cfg, FILE *out,
                            Error **errp)
{
    ParseState ps = {
        .cfg = cfg, .out = out,
        .device_globals = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                                device_config_destroy),
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
    g_clear_pointer(&cfg->monitors, g_ptr_array_unref);
    g_clear_pointer(&cfg->chardevs, g_ptr_array_unref);
    g_clear_pointer(&cfg->drives, g_ptr_array_unref);
    g_clear_pointer(&cfg->netdevs, g_ptr_array_unref);
    g_clear_pointer(&cfg->nics, g_ptr_array_unref);
    g_clear_pointer(&cfg->board_globals, g_ptr_array_unref);
    g_free(cfg->name);
    g_free(cfg->process_name);
    g_free(cfg->pidfile);
    memset(cfg, 0, sizeof(*cfg));
}
