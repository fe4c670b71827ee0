/*
 * qemu-system-x86_64: parse the command line, build the pc machine, run the
 * I/O thread until shutdown. The only place that exits.
 *
 * The order is QEMU's: -daemonize forks right after parsing (before any
 * thread exists), the daemon takes the pid file, builds the machine with the
 * caller's terminal still its stderr, and detaches only once it is built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <glib.h>
#include "chardev/char.h"
#include "exec/memory.h"
#include "hw/i386/pc.h"
#include "hw/qdev.h"
#include "monitor/monitor.h"
#include "net/net.h"
#include "qemu/error.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/pidfile.h"
#include "qemu/thread-naming.h"
#include "qemu/thread-sched.h"
#include "sysemu/daemonize.h"
#include "sysemu/machine-config.h"
#include "sysemu/iothread.h"
#include "sysemu/runstate.h"
#include "sysemu/vm-name.h"

static bool create_pidfile(const char *path, Error **errp)
{
    if (!pidfile_create(path, errp)) {
        error_prepend(errp, "cannot create PID file: ");
        return false;
    }
    return true;
}

/* Build the machine (and, with -daemonize, detach once it is built). */
static bool machine_build(MachineConfig *cfg, Error **errp)
{
    return (!cfg->pidfile || create_pidfile(cfg->pidfile, errp)) &&
           iothreads_create(cfg->iothread_ids, errp) &&
           pc_machine_start(cfg, errp) &&
           monitors_create(cfg->monitors, errp) &&
           /* -d output goes to stderr: a daemon keeps it, as QEMU does. */
           (!cfg->daemonize || daemonize_finish(qemu_loglevel != 0, errp));
}

int main(int argc, char **argv)
{
    MachineConfig cfg;
    Error *err = NULL;
    switch (cmdline_parse(argc, argv, &cfg, stdout, &err)) {
    case CMDLINE_EXIT_OK:
        machine_config_free(&cfg);
        return 0;
    case CMDLINE_ERROR:
        error_report_err(err);
        machine_config_free(&cfg);
        return 1;
    case CMDLINE_RUN:
        break;
    }

    if (cfg.daemonize) {
        DaemonizeResult role = daemonize_start(&err);
        if (role != DAEMONIZE_IN_DAEMON) {
            /* The caller's process: the daemon has spoken (or died). */
            if (err) {
                error_report_err(err);
            }
            machine_config_free(&cfg);
            return role == DAEMONIZE_CALLER_DONE ? 0 : 1;
        }
    }
    /* Before any thread starts: they inherit the main thread's name. */
    if (cfg.process_name) {
        process_set_name(cfg.process_name);
    }
    thread_naming_enable(cfg.debug_threads);
    thread_sched_io_batch_init(cfg.io_sched_batch);
    vm_name_set(cfg.name);
    device_lock_set_per_device(cfg.device_lock);
    runstate_set_no_reboot(cfg.no_reboot);
    runstate_set_no_shutdown(cfg.no_shutdown);
    memory_init();
    main_loop_init();

    if (!machine_build(&cfg, &err)) {
        error_report_err(err);
        monitors_free_all();
        /* A tap's downscript runs as it would at exit. */
        iothreads_free_all();
        netdevs_free_all();
        chardev_restore_terminals();
        chardev_free_all();
        pidfile_remove();
        machine_config_free(&cfg);
        return 1;
    }
    /* -S: built, vCPUs paused in PRELAUNCH until cont. */
    if (!cfg.start_paused) {
        vm_start();
    }
    int status = main_loop_run();
    runstate_set(RUN_STATE_SHUTDOWN);
    pc_machine_stop();
    monitors_free_all();
    iothreads_free_all();
    /* After the threads that poll the backends' fds; taps run their
     * downscripts. */
    netdevs_free_all();
    if (cfg.lock_stats) {
        device_lock_stats_print(stderr);
    }
    chardev_restore_terminals();
    /* Unix sockets are removed with their backends. */
    chardev_free_all();
    pidfile_remove();
    vm_name_set(NULL);
    machine_config_free(&cfg);
    return status;
}
