/*
 * The QMP command tables of the files that own commands, for
 * monitor/qmp-commands.c's list. One line per table, declared here rather
 * than in each owner's public header: nothing else should call a handler
 * except through qmp_dispatch().
 */
#ifndef MONITOR_QMP_TABLES_H
#define MONITOR_QMP_TABLES_H

#include "monitor/qmp.h"

extern const QmpCommandInfo block_qmp_commands[];

#endif
