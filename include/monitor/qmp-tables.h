/*
 * The QMP command tables of the files that own commands, for
 * monitor/qmp-commands.c's list. One line per table, declared here rather
 * than in each owner's public header: nothing else should call a handler
 * except through qmp_dispatch().
 */
#ifndef MONITOR_QMP_TABLES_H
#define MONITOR_QMP_TABLES_H

#include "monitor/qmp.h"

extern const QmpCommandInfo device_lock_qmp_commands[];   /* softmmu/device-lock-query.c */
extern const QmpCommandInfo pci_qmp_commands[];           /* hw/pci/pci-query.c */
extern const QmpCommandInfo chardev_qmp_commands[];       /* chardev/char-by-id.c */
extern const QmpCommandInfo iothread_qmp_commands[];      /* util/iothread.c */
extern const QmpCommandInfo net_qmp_commands[];           /* net/net-query.c */
extern const QmpCommandInfo hmp_qmp_commands[];         /* monitor/hmp-commands.c */
extern const QmpCommandInfo vm_name_qmp_commands[];     /* softmmu/vm-name.c */
/* monitor/qmp.c: qmp_capabilities, query-version */
extern const QmpCommandInfo qmp_server_qmp_commands[];
extern const QmpCommandInfo runstate_qmp_commands[];    /* softmmu/runstate-qmp.c */
extern const QmpCommandInfo kvm_qmp_commands[];         /* accel/kvm/kvm-qmp.c */
extern const QmpCommandInfo block_qmp_commands[];

#endif
