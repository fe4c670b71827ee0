/*
 * The monitors of the command line, as QEMU 7.2 takes them, each a
 * MonitorConfig (monitor/monitor.h) in cfg->monitors:
 *   -qmp SPEC, -qmp-pretty SPEC   a QMP server on a new chardev named
 *                                 compat_monitorN (N counts -qmp and
 *                                 -monitor together, as QEMU's does), or
 *                                 on an existing one with chardev:ID
 *   -monitor SPEC|none            a human monitor the same way (SPEC as
 *                                 -serial spells it: stdio,
 *                                 unix:PATH,server=on,wait=off, ...)
 *   -mon chardev=ID[,mode=control|readline][,pretty=on|off]
 * A "mon:" serial backend carries a human monitor itself, and -nographic's
 * defaults follow from what was given (cmdline_add_default_console). The
 * chardevs of SPECs become -chardev entries, created with the others while
 * the machine is built, so a socket exists before the guest runs.
 */
#include <string.h>
#include "monitor/monitor.h"
#include "cmdline-internal.h"

static void add_monitor(MachineConfig *cfg, const char *chardev_id, MonitorMode mode,
                        bool pretty)
{
    MonitorConfig *mc = g_new0(MonitorConfig, 1);
    mc->chardev_id = g_strdup(chardev_id);
    mc->mode = mode;
    mc->pretty = pretty;
    g_ptr_array_add(cfg->monitors, mc);
}

bool cmdline_add_compat_monitor(ParseState *ps, const char *spec, MonitorMode mode,
                                bool pretty, Error **errp)
{
    const char *id;
    g_autofree char *label = NULL;
    if (g_str_has_prefix(spec, "chardev:")) {
        id = spec + strlen("chardev:");
    } else {
        label = g_strdup_printf("compat_monitor%u", ps->monitor_index);
        ChardevConfig *c = g_new0(ChardevConfig, 1);
        c->id = g_strdup(label);
        c->spec = g_strdup(spec);
        g_ptr_array_add(ps->cfg->chardevs, c);
        id = label;
    }
    if (!*id) {
        error_setg(errp, "chardev: needs an id (chardev:ID)");
        return false;
    }
    ps->monitor_index++;
    add_monitor(ps->cfg, id, mode, pretty);
    return true;
}

/* A monitor on stdio, which -daemonize refuses naming the option. */
static void note_stdio_monitor(ParseState *ps, const OptionUse *use)
{
    if (backend_uses_stdio(use->arg)) {
        cmdline_note_stdio_backend(ps, use);
    }
}

CmdlineResult handle_qmp(ParseState *ps, const OptionUse *use, Error **errp)
{
    note_stdio_monitor(ps, use);
    return cmdline_result_of(cmdline_add_compat_monitor(ps, use->arg, MONITOR_MODE_CONTROL,
                                                        false, errp));
}

CmdlineResult handle_qmp_pretty(ParseState *ps, const OptionUse *use, Error **errp)
{
    note_stdio_monitor(ps, use);
    return cmdline_result_of(cmdline_add_compat_monitor(ps, use->arg, MONITOR_MODE_CONTROL,
                                                        true, errp));
}

CmdlineResult handle_monitor(ParseState *ps, const OptionUse *use, Error **errp)
{
    if (strcmp(use->arg, "none") == 0) {
        ps->monitor_none = true;
    } else if (use->arg[0] == '\0') {
        error_setg(errp, "a backend is needed (stdio, unix:PATH,server=on,"
                   "wait=off or none)");
        return CMDLINE_ERROR;
    } else {
        note_stdio_monitor(ps, use);
        return cmdline_result_of(cmdline_add_compat_monitor(ps, use->arg, MONITOR_MODE_READLINE,
                                                            false, errp));
    }
    return CMDLINE_RUN;
}

void cmdline_serial_monitor(MachineConfig *cfg, unsigned index, const char *spec)
{
    if (g_str_has_prefix(spec, "mon:")) {
        g_autofree char *id = g_strdup_printf("serial%u", index);
        add_monitor(cfg, id, MONITOR_MODE_READLINE, false);
    }
}

static bool parse_mon_mode(const char *value, MonitorMode *mode, Error **errp)
{
    if (value && !strcmp(value, "control")) {
        *mode = MONITOR_MODE_CONTROL;
    } else if (value && !strcmp(value, "readline")) {
        *mode = MONITOR_MODE_READLINE;
    } else {
        error_setg(errp, "unknown monitor mode \"%s\" (control or readline)",
                   value ? value : "");
        return false;
    }
    return true;
}

CmdlineResult apply_mon_items(ParseState *ps, const OptionUse *use, GPtrArray *items,
                              Error **errp)
{
    const char *chardev = NULL;
    MonitorMode mode = MONITOR_MODE_READLINE;   /* QEMU's default for -mon */
    bool pretty = false;
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        bool ok = true;
        if (!strcmp(item->key, "chardev")) {
            chardev = item->value;
        } else if (!strcmp(item->key, "mode")) {
            ok = parse_mon_mode(item->value, &mode, errp);
        } else if (!strcmp(item->key, "pretty")) {
            ok = keyval_item_bool(item, &pretty, errp);
        } else if (strcmp(item->key, "id") != 0) {
            error_setg(errp, "Invalid parameter '%s'", item->key);
            ok = false;
        }
        if (!ok) {
            return CMDLINE_ERROR;
        }
    }
    if (!chardev || !*chardev) {
        error_setg(errp, "Parameter 'chardev' is missing");
        return CMDLINE_ERROR;
    }
    add_monitor(ps->cfg, chardev, mode, pretty);
    return CMDLINE_RUN;
}

static bool chardev_is_configured(const MachineConfig *cfg, const char *id)
{
    /* -serial's backends are serial0.. (a "mon:" one carries a monitor). */
    for (guint i = 0; i < cfg->serials->len; i++) {
        g_autofree char *serial_id = g_strdup_printf("serial%u", i);
        if (!strcmp(serial_id, id)) {
            return true;
        }
    }
    for (guint i = 0; i < cfg->chardevs->len; i++) {
        if (!strcmp(((ChardevConfig *)g_ptr_array_index(cfg->chardevs, i))->id, id)) {
            return true;
        }
    }
    return false;
}

bool cmdline_monitors_finish(ParseState *ps, Error **errp)
{
    /* -chardev may come after the -mon that names it, so only now. */
    for (guint i = 0; i < ps->cfg->monitors->len; i++) {
        const MonitorConfig *mc = g_ptr_array_index(ps->cfg->monitors, i);
        if (!chardev_is_configured(ps->cfg, mc->chardev_id)) {
            error_setg(errp, "-mon: chardev \"%s\" not found", mc->chardev_id);
            return false;
        }
    }
    return true;
}

/*
 * QEMU's default serial port is "vc" (a graphical console) and its default
 * monitor is on one too; we have no graphical console, so without
 * -nographic the port exists but goes nowhere and there is no monitor.
 * With -nographic both go to stdio: multiplexed (mon:stdio) when both are
 * defaults, else each default alone on stdio. -nodefaults drops both; any
 * -serial drops the default port, any monitor (-monitor, -serial mon:...,
 * -qmp) or -monitor none drops the default monitor.
 */
void cmdline_add_default_console(ParseState *ps)
{
    MachineConfig *cfg = ps->cfg;
    bool default_serial = cfg->serials->len == 0 && !cfg->nodefaults;
    bool default_monitor = cfg->monitors->len == 0 && !ps->monitor_none && !cfg->nodefaults;
    if (!cfg->nographic) {
        if (default_serial) {
            g_ptr_array_add(cfg->serials, g_strdup("null"));
        }
        return;
    }
    if (default_serial && default_monitor) {
        g_ptr_array_add(cfg->serials, g_strdup("mon:stdio"));
        cmdline_serial_monitor(cfg, 0, "mon:stdio");
        return;
    }
    if (default_serial) {
        g_ptr_array_add(cfg->serials, g_strdup("stdio"));
    }
    if (default_monitor) {
        cmdline_add_compat_monitor(ps, "stdio", MONITOR_MODE_READLINE, false, NULL);
    }
}
