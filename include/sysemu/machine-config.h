/*
 * Everything the command line says about the machine to build, as plain
 * data. softmmu/cmdline.c fills it from argv (QEMU's syntax); the pc machine
 * and the accelerator read it. No side effects happen while parsing.
 */
#ifndef SYSEMU_MACHINE_CONFIG_H
#define SYSEMU_MACHINE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <glib.h>
#include "sysemu/sandbox.h"

/* One +feat/-feat/feat=on|off item of -cpu, in command-line order. */
typedef struct CpuFeatureSetting {
    char *name;         /* as the user spelled it, e.g. "avx2", "x2apic" */
    bool enabled;
} CpuFeatureSetting;

typedef struct CpuConfig {
    char *model;        /* "host", "max" or "qemu64" (default qemu64) */
    GArray *features;   /* of CpuFeatureSetting */
    char *vendor;       /* vendor=, 12 characters, or NULL */
} CpuConfig;

/* One -device: its type and property values (hw/qdev-registry.h). */
typedef struct DeviceConfig DeviceConfig;

/* One -fw_cfg [name=]NAME,string=STR|file=PATH: exactly one of string and
 * file is set. The file is read by the machine, not the parser. */
typedef struct FwCfgItemConfig {
    char *name;         /* shorter than 56 bytes, usually "opt/..." */
    char *string;
    char *file;
} FwCfgItemConfig;

typedef struct MachineConfig {
    /* -machine pc[,accel=kvm][,device-lock=on|off][,lock-stats=on|off][,pit=on|off]
     * [,io-sched-batch=on|off][,x-ram-thp=on|off] */
    bool device_lock;           /* per-device locking; default true */
    bool lock_stats;            /* print lock statistics at exit; default false */
    bool pit;                   /* in-kernel PIT; default true */
    bool acpi;                  /* -machine acpi=on|off; default true */
    bool io_sched_batch;        /* non-vCPU threads SCHED_BATCH; default true */
    bool ram_thp;               /* guest RAM on transparent huge pages; default true */

    uint64_t ram_size;          /* -m, bytes; default 128 MiB */

    /* -smp N[,sockets=][,cores=][,threads=][,maxcpus=]; QEMU's rules for
     * filling in omitted values; cpus <= maxcpus, product == maxcpus. */
    unsigned smp_cpus, smp_sockets, smp_cores, smp_threads, smp_maxcpus;

    CpuConfig cpu;

    char *kernel;               /* -kernel */
    char *initrd;               /* -initrd */
    char *append;               /* -append */

    /* -serial, in order; "none" entries are kept (they occupy a COM slot).
     * Default: "mon:stdio" with -nographic, else "null"... see cmdline.c. */
    GPtrArray *serials;         /* of char * */

    /* -device, in order, checked against the device registry, with the
     * -global values they did not set themselves applied. */
    GPtrArray *devices;         /* of DeviceConfig * */
    /* -global values of the board's own devices (kvm-pit, PIIX4_PM...):
     * a DeviceConfig per type named, read with board_device_options(). */
    GPtrArray *board_globals;   /* of DeviceConfig * */

    GPtrArray *fw_cfg_items;    /* of FwCfgItemConfig *, in order */

    /* -drive, -hda..-hdd, -cdrom (and a bare image argument), in order,
     * placed and named (block/drive-config.h). */
    GPtrArray *drives;          /* of DriveConfig * */

    /* -chardev, in order: backends that devices and -serial chardev:ID
     * name by id. */
    GPtrArray *chardevs;        /* of ChardevConfig * */

    /* -netdev, and the backends of -nic and of QEMU's default NIC, in
     * order: created by the machine before its devices
     * (net/netdev-create.h). */
    GPtrArray *netdevs;         /* of NetdevConfig * */
    /* The NICs of -nic and QEMU's default NIC, as -device would make them:
     * realized before the -device devices, from PCI slot 3 on. */
    GPtrArray *nics;            /* of DeviceConfig * */

    /* -qmp, -monitor, -mon, and the monitor of -serial mon:stdio and
     * -nographic, in order (monitor/monitor.h): started by the machine
     * once its chardevs exist. */
    GPtrArray *monitors;        /* of MonitorConfig * */

    /* -object iothread,id=ID: the I/O threads to start, by id. */
    GPtrArray *iothread_ids;    /* of char * */

    bool nographic, display_none, nodefaults, no_reboot;
    bool start_paused;          /* -S: vCPUs wait for cont */
    bool no_shutdown;           /* -no-shutdown: a guest power-off stops the VM */
    char *name;                 /* -name [guest=]NAME (NULL: none) */
    char *process_name;         /* -name process=PNAME (NULL: keep ours) */
    bool debug_threads;         /* -name debug-threads=on: QEMU's thread names */
    char *pidfile;              /* -pidfile (util/pidfile.c: locked) */
    bool daemonize;             /* -daemonize (sysemu/daemonize.h) */
    SandboxConfig sandbox;      /* -sandbox, installed by the machine */
} MachineConfig;

/* One -chardev: its id and the backend in -serial's spelling
 * (chardev/char.h): "null", "stdio", "mon:stdio", "file:PATH". */
typedef struct ChardevConfig {
    char *id;
    char *spec;
} ChardevConfig;

typedef enum CmdlineResult {
    CMDLINE_RUN,        /* config filled: build and run the machine */
    CMDLINE_EXIT_OK,    /* an informational option was handled (-h, -version,
                         * -device help, -machine help): exit 0 */
    CMDLINE_ERROR,      /* *errp says what is wrong: exit 1 */
} CmdlineResult;

#include "qemu/error.h"

/* Parse argv into cfg (which it initialises). Informational output goes to
 * out. */
CmdlineResult cmdline_parse(int argc, char **argv, MachineConfig *cfg, FILE *out,
                            Error **errp);
void machine_config_free(MachineConfig *cfg);

#endif
