/*
 * qemu-system-x86_64: parse the command line, build the pc machine, run the
 * I/O thread until shutdown. The only place that exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <glib.h>
#include "chardev/char.h"
#include "exec/memory.h"
#include "hw/i386/pc.h"
#include "hw/qdev.h"
#include "net/net.h"
#include "qemu/error.h"
#include "qemu/main-loop.h"
#include "sysemu/machine-config.h"
#include "sysemu/iothread.h"
#include "sysemu/runstate.h"

static bool write_pidfile(const char *path, Error **errp)
{
    g_autofree char *pid = g_strdup_printf("%d\n", getpid());
    GError *gerr = NULL;
    if (!g_file_set_contents(path, pid, -1, &gerr)) {
        error_setg(errp, "-pidfile %s: %s", path, gerr->message);
        g_error_free(gerr);
        return false;
    }
    return true;
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

    device_lock_set_per_device(cfg.device_lock);
    runstate_set_no_reboot(cfg.no_reboot);
    runstate_set_no_shutdown(cfg.no_shutdown);
    memory_init();
    main_loop_init();

    if ((cfg.pidfile && !write_pidfile(cfg.pidfile, &err)) ||
        !iothreads_create(cfg.iothread_ids, &err) ||
        !pc_machine_start(&cfg, &err)) {
        error_report_err(err);
        /* A tap's downscript runs as it would at exit. */
        iothreads_free_all();
        netdevs_free_all();
        chardev_restore_terminals();
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
    iothreads_free_all();
    /* After the threads that poll the backends' fds; taps run their
     * downscripts. */
    netdevs_free_all();
    if (cfg.lock_stats) {
        device_lock_stats_print(stderr);
    }
    chardev_restore_terminals();
    if (cfg.pidfile) {
        unlink(cfg.pidfile);
    }
    machine_config_free(&cfg);
    return status;
}
