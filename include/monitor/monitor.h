/*
 * Monitors: QMP (mode=control) and the human monitor (mode=readline), each
 * on a character backend. The command line collects MonitorConfigs
 * (-qmp, -monitor, -mon, -serial mon:stdio, -nographic's default); the
 * machine starts them once its chardevs exist.
 */
#ifndef MONITOR_MONITOR_H
#define MONITOR_MONITOR_H

#include <stdbool.h>
#include <glib.h>
#include "chardev/char.h"
#include "qemu/error.h"

typedef enum MonitorMode {
    MONITOR_MODE_CONTROL,   /* QMP */
    MONITOR_MODE_READLINE,  /* the human monitor */
} MonitorMode;

/* One monitor of the command line, on the chardev named chardev_id. */
typedef struct MonitorConfig {
    char *chardev_id;
    MonitorMode mode;
    bool pretty;            /* QMP only: indented JSON */
} MonitorConfig;

void monitor_config_free(MonitorConfig *mc);

/* Start every configured monitor (claiming its chardev). Main loop. */
bool monitors_create(const GPtrArray *configs, Error **errp);
/* At exit, after the last event was queued. */
void monitors_free_all(void);

/* A QMP server on chr (monitor/qmp.c). */
bool qmp_monitor_new(Chardev *chr, bool pretty, Error **errp);
/* Every QMP server, at exit (monitors_free_all), after the main loop's
 * last turn (which sent the answers it held). */
void qmp_monitors_free_all(void);
/* A human monitor on chr (monitor/hmp.c). */
bool hmp_monitor_new(Chardev *chr, Error **errp);

#endif
