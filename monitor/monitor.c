/* Monitors of the command line (monitor/monitor.h). */
#include "monitor/hmp.h"
#include "monitor/monitor.h"

void monitor_config_free(MonitorConfig *mc)
{
    if (mc) {
        g_free(mc->chardev_id);
        g_free(mc);
    }
}

/*
 * The hmp branch's minimal version: human monitors only. The qmp-server
 * branch has the full one (QMP monitors too); on merging, its
 * MONITOR_MODE_READLINE case calls hmp_monitor_new() as this one does.
 */
bool monitors_create(const GPtrArray *configs, Error **errp)
{
    for (guint i = 0; i < configs->len; i++) {
        const MonitorConfig *mc = g_ptr_array_index(configs, i);
        Chardev *chr = chardev_find(mc->chardev_id);
        if (!chr) {
            error_setg(errp, "chardev \"%s\" not found", mc->chardev_id);
            return false;
        }
        if (mc->mode != MONITOR_MODE_READLINE) {
            error_setg(errp, "QMP monitors are not in this build");
            return false;
        }
        if (!chardev_claim(mc->chardev_id, errp) || !hmp_monitor_new(chr, errp)) {
            return false;
        }
    }
    return true;
}

void monitors_free_all(void)
{
    hmp_monitors_free();
}
