/*
 * The monitors of the command line, as QEMU 7.2 takes them:
 *   -qmp SPEC, -qmp-pretty SPEC   a QMP server on a new chardev named
 *                                 compat_monitorN (N counts -qmp and
 *                                 -monitor together, as QEMU's does), or
 *                                 on an existing one with chardev:ID
 *   -mon chardev=ID[,mode=control|readline][,pretty=on|off]
 * Each becomes a MonitorConfig (monitor/monitor.h); the chardevs of SPECs
 * become -chardev entries, created with the others while the machine is
 * built, so a socket exists before the guest runs.
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

CmdlineResult handle_qmp(ParseState *ps, const OptionUse *use, Error **errp)
{
    return cmdline_result_of(cmdline_add_compat_monitor(ps, use->arg, MONITOR_MODE_CONTROL,
                                                        false, errp));
}

CmdlineResult handle_qmp_pretty(ParseState *ps, const OptionUse *use, Error **errp)
{
    return cmdline_result_of(cmdline_add_compat_monitor(ps, use->arg, MONITOR_MODE_CONTROL,
                                                        true, errp));
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
