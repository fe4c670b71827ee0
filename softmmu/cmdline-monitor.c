/*
 * -monitor, and the human monitors that -serial mon:stdio and -nographic
 * bring, as MonitorConfigs (monitor/monitor.h) in cfg->monitors.
 *
 * As in QEMU: -monitor SPEC makes a backend named compat_monitorN from a
 * -serial-style SPEC (stdio, unix:PATH,server=on,wait=off, ...) and a human
 * monitor on it; -monitor none asks for none. A "mon:" serial backend
 * carries a monitor itself. -nographic's defaults follow from what was
 * given (see cmdline_add_default_console).
 */
#include <string.h>
#include "cmdline-internal.h"
#include "monitor/monitor.h"

static void add_monitor(MachineConfig *cfg, const char *chardev_id, MonitorMode mode)
{
    MonitorConfig *mc = g_new0(MonitorConfig, 1);
    mc->chardev_id = g_strdup(chardev_id);
    mc->mode = mode;
    g_ptr_array_add(cfg->monitors, mc);
}

/* A human monitor on a backend of its own, named as QEMU names it. */
static void add_compat_monitor(ParseState *ps, const char *spec)
{
    ChardevConfig *c = g_new0(ChardevConfig, 1);
    c->id = g_strdup_printf("compat_monitor%u", ps->compat_monitors++);
    c->spec = g_strdup(spec);
    g_ptr_array_add(ps->cfg->chardevs, c);
    add_monitor(ps->cfg, c->id, MONITOR_MODE_READLINE);
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
        if (backend_uses_stdio(use->arg)) {
            cmdline_note_stdio_backend(ps, use);
        }
        add_compat_monitor(ps, use->arg);
    }
    return CMDLINE_RUN;
}

void cmdline_serial_monitor(MachineConfig *cfg, unsigned index, const char *spec)
{
    if (g_str_has_prefix(spec, "mon:")) {
        g_autofree char *id = g_strdup_printf("serial%u", index);
        add_monitor(cfg, id, MONITOR_MODE_READLINE);
    }
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
        add_compat_monitor(ps, "stdio");
    }
}
