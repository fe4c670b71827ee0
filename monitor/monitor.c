/* Monitors of the command line (monitor/monitor.h). */
#include "monitor/monitor.h"

void monitor_config_free(MonitorConfig *mc)
{
    if (mc) {
        g_free(mc->chardev_id);
        g_free(mc);
    }
}
