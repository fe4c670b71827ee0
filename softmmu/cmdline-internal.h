/*
 * What the files of the command-line parser share (softmmu/cmdline*.c):
 * the parse state, one option's occurrence, and the handlers each file
 * provides for the option table in cmdline.c. Private to softmmu/.
 */
#ifndef SOFTMMU_CMDLINE_INTERNAL_H
#define SOFTMMU_CMDLINE_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>
#include "qemu/error.h"
#include "sysemu/machine-config.h"
#include "qemu/keyval.h"
#include "monitor/monitor.h"

#define MiB (UINT64_C(1) << 20)

/* -smp as given (0: omitted), resolved once the machine version is known. */
typedef struct SmpRequest {
    unsigned cpus, sockets, cores, threads, maxcpus;
    const char *spelled, *arg;  /* NULL spelled: no -smp */
} SmpRequest;

struct CmdlineOption;

/* One occurrence of an option in argv. */
typedef struct OptionUse {
    const struct CmdlineOption *option;
    const char *spelled;    /* as the user wrote it: "-m", "--m" */
    const char *arg;        /* NULL for options without an argument */
} OptionUse;

typedef struct ParseState {
    MachineConfig *cfg;
    FILE *out;
    bool smp_prefer_sockets;
    SmpRequest smp;
    const char *initrd_spelled, *append_spelled;
    /* -global defaults: device type name -> DeviceConfig of their values */
    GHashTable *device_globals;
    /* Some -nic, -netdev or -net was given: no default NIC. */
    bool network_given;
    /* -monitor none was given: no default monitor. */
    bool monitor_none;
    /* The first option that put a backend on stdio, which -daemonize
     * refuses, naming it: backends (-chardev, a monitor's) are created
     * before -serial's, so QEMU names the first of those if any. The
     * strings are argv's. */
    OptionUse stdio_backend, stdio_serial;
    /* The N of the next compat_monitorN (-qmp and -monitor share it). */
    unsigned monitor_index;
} ParseState;

/* A backend spelled as -serial spells them ("stdio", "file:PATH") is on
 * the terminal. */
static inline bool backend_uses_stdio(const char *spec)
{
    return strcmp(spec, "stdio") == 0 || strcmp(spec, "mon:stdio") == 0;
}

/* use made a chardev or monitor backend on stdio (for -daemonize). */
static inline void cmdline_note_stdio_backend(ParseState *ps, const OptionUse *use)
{
    if (!ps->stdio_backend.spelled) {
        ps->stdio_backend = *use;
    }
}

/* Takes an option whose argument is not split into items. */
typedef CmdlineResult CmdlineHandler(ParseState *ps, const OptionUse *use, Error **errp);
/* Takes an option string (qemu/keyval.h), split into KeyvalItems. */
typedef CmdlineResult CmdlineItemsHandler(ParseState *ps, const OptionUse *use,
                                          GPtrArray *items, Error **errp);

static inline CmdlineResult cmdline_result_of(bool ok)
{
    return ok ? CMDLINE_RUN : CMDLINE_ERROR;
}

static inline const KeyvalItem *keyval_item_at(GPtrArray *items, guint i)
{
    return g_ptr_array_index(items, i);
}

static inline void replace_string(char **field, const char *value)
{
    g_free(*field);
    *field = g_strdup(value);
}

/* cmdline-machine.c: the machine's shape */
CmdlineItemsHandler apply_accel_items, apply_machine_items, apply_memory_items,
                    apply_smp_items, apply_cpu_items;
/* Resolve -smp (if given) now that the machine version is known. */
bool cmdline_machine_finish(ParseState *ps, Error **errp);

/* cmdline-device.c: -device and -global, checked against the device registry */
CmdlineItemsHandler apply_device_items;
CmdlineHandler handle_global;
/* Give each -device (and each NIC of -nic) what -global set and it did
 * not. After cmdline_netdevs_finish, which may add the default NIC. */
void cmdline_devices_finish(ParseState *ps);

/* cmdline-chardev.c: -chardev's KeyvalItems (the backend under "backend")
 * into cfg->chardevs. */
CmdlineResult chardev_config_parse(MachineConfig *cfg, GPtrArray *items, FILE *out,
                                   Error **errp);
void chardev_config_free(gpointer data);

/* cmdline-monitor.c: -qmp, -qmp-pretty, -monitor, -mon into cfg->monitors;
 * the monitor of a "mon:" serial backend (the index-th -serial);
 * -nographic's default serial port and monitor, once every option is
 * read. */
CmdlineHandler handle_qmp, handle_qmp_pretty, handle_monitor;
void cmdline_serial_monitor(MachineConfig *cfg, unsigned index, const char *spec);
void cmdline_add_default_console(ParseState *ps);
CmdlineItemsHandler apply_mon_items;
/* A monitor on SPEC as -qmp and -monitor take it: "chardev:ID", or a
 * backend that becomes chardev compat_monitorN. */
bool cmdline_add_compat_monitor(ParseState *ps, const char *spec, MonitorMode mode,
                                bool pretty, Error **errp);
/* Every monitor names a chardev of the command line. */
bool cmdline_monitors_finish(ParseState *ps, Error **errp);

/* cmdline-netdev.c: -netdev and -nic into cfg->netdevs and cfg->nics, -net
 * none; the default NIC once every option is read. */
CmdlineItemsHandler apply_netdev_items, apply_nic_items;
CmdlineHandler handle_net;
bool cmdline_netdevs_finish(ParseState *ps, Error **errp);

/* cmdline-drive.c: -drive, -hda..-hdd, -cdrom, and a bare disk image argument */
CmdlineHandler handle_drive, handle_drive_shorthand;
bool cmdline_add_disk_image(ParseState *ps, const char *file, Error **errp);

#endif
