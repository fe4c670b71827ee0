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

/* One monitor on its chardev, which it claims as QEMU does (a chardev
 * serves one frontend). */
static bool monitor_create(const MonitorConfig *mc, Error **errp)
{
    Chardev *chr = chardev_find(mc->chardev_id);
    if (!chr) {
        error_setg(errp, "-mon: chardev \"%s\" not found", mc->chardev_id);
        return false;
    }
    if (!chardev_claim(mc->chardev_id, errp)) {
        return false;
    }
    return mc->mode == MONITOR_MODE_READLINE ? hmp_monitor_new(chr, errp)
                                             : qmp_monitor_new(chr, mc->pretty, errp);
}

bool monitors_create(const GPtrArray *configs, Error **errp)
{
    for (guint i = 0; i < configs->len; i++) {
        if (!monitor_create(g_ptr_array_index(configs, i), errp)) {
            return false;
        }
    }
    return true;
}

void monitors_free_all(void)
{
    hmp_monitors_free();
    qmp_monitors_free_all();
}
