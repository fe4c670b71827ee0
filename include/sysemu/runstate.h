/*
 * Run states and the requests that change them. Requests may be made from
 * any thread (a vCPU inside a device handler, a signal, the console, a
 * monitor command); the I/O thread carries them out with every vCPU paused
 * (runstate_main_loop_should_exit), sending QMP's events as QEMU 7.2 does.
 */
#ifndef SYSEMU_RUNSTATE_H
#define SYSEMU_RUNSTATE_H

#include <stdbool.h>
#include "qemu/error.h"

/* The states query-status reports, under QEMU's names (runstate_name). */
typedef enum RunState {
    RUN_STATE_PRELAUNCH,    /* built, not started yet (-S, or reset while stopped) */
    RUN_STATE_RUNNING,
    RUN_STATE_PAUSED,       /* stopped by the user (stop) */
    RUN_STATE_SHUTDOWN,     /* the guest powered off under -no-shutdown */
    RUN_STATE_SUSPENDED,    /* ACPI S3: vCPUs stopped until a wake-up event */
    RUN_STATE_IO_ERROR,     /* stopped by a drive's werror/rerror=stop (until cont) */
} RunState;

RunState runstate_get(void);
void runstate_set(RunState state);
/* "prelaunch", "running", ...: QMP's RunState names. */
const char *runstate_name(RunState state);
bool runstate_is_running(void);

/*
 * Why the machine shuts down or resets: the "reason" of QMP's SHUTDOWN and
 * RESET events (QEMU's ShutdownCause), and whether the guest asked for it
 * (their "guest" member).
 */
typedef enum ShutdownCause {
    SHUTDOWN_CAUSE_NONE,            /* an exit QEMU takes without an event */
    SHUTDOWN_CAUSE_HOST_ERROR,      /* the VMM cannot go on */
    SHUTDOWN_CAUSE_HOST_QMP_QUIT,
    SHUTDOWN_CAUSE_HOST_QMP_SYSTEM_RESET,
    SHUTDOWN_CAUSE_HOST_SIGNAL,     /* SIGINT, SIGTERM, SIGHUP */
    SHUTDOWN_CAUSE_HOST_UI,
    SHUTDOWN_CAUSE_GUEST_SHUTDOWN,  /* ACPI S5 (or S4), KVM's shutdown event */
    SHUTDOWN_CAUSE_GUEST_RESET,     /* keyboard controller, 0xcf9, triple fault */
    SHUTDOWN_CAUSE_GUEST_PANIC,
} ShutdownCause;

/* "host-qmp-quit", "guest-reset"...: as QMP spells the reason. */
const char *shutdown_cause_name(ShutdownCause cause);
bool shutdown_cause_is_guest(ShutdownCause cause);

/* Called (from the requesting thread) on every reset, shutdown or suspend
 * request, to make every vCPU stop running guest code before the I/O
 * thread acts: a guest that asked for a reset must not run on into
 * whatever it does next (Linux falls through to a triple fault). Must not
 * block. */
void runstate_set_vcpu_stopper(void (*stop)(void));

/* -no-reboot: a reset request (guest's or system_reset) shuts down with
 * the reset's cause instead. */
void runstate_set_no_reboot(bool no_reboot);

/* Reset the machine (the guest's keyboard controller, system_reset...). */
void qemu_system_reset_request(ShutdownCause cause);
/* Power off: SHUTDOWN event, exit status 0 (or a stop under
 * -no-shutdown). Of several shutdown or exit requests before the main
 * loop takes them, the first one wins. */
void qemu_system_shutdown_request(ShutdownCause cause);
/* Exit with exit_status, without a SHUTDOWN event and whatever
 * -no-shutdown says: where QEMU calls exit() (isa-debug-exit, Ctrl-a x)
 * and where the VMM cannot go on. */
void qemu_system_exit_request(int exit_status);
/* The ACPI power button (system_powerdown): a POWERDOWN event, then the
 * machine's powerdown hook. The guest decides what follows. */
void qemu_system_powerdown_request(void);

/* The guest entered ACPI S3 (suspend to RAM); it must not run on. */
void qemu_system_suspend_request(void);
/* A wake-up event (the RTC alarm) happened; it resumes a suspended
 * machine whose guest enabled that event, and means nothing otherwise. */
void qemu_system_wakeup_request(void);

/* Stop the machine in state (QEMU's qemu_system_vm_stop): the I/O thread
 * does vm_stop(state) when it takes the request. Any thread, never waits:
 * a drive's completion asks for RUN_STATE_IO_ERROR this way. */
void qemu_system_vm_stop_request(RunState state);

/* Take (and clear) pending requests; false if none. cause and
 * exit_status may be NULL. */
bool runstate_take_reset_request(ShutdownCause *cause);
bool runstate_take_shutdown_request(ShutdownCause *cause, int *exit_status);
bool runstate_take_powerdown_request(void);
bool runstate_take_suspend_request(void);
bool runstate_take_wakeup_request(void);
bool runstate_take_vm_stop_request(RunState *state);

/* ---- the I/O thread's side (softmmu/runstate-actions.c) ---- */

/* What the run-state machine asks of the machine, on the I/O thread. */
typedef struct MachineRunOps {
    /* Stop the world: returns once no vCPU runs guest code or is inside a
     * device handler. */
    void (*pause_vcpus)(void);
    /* Let the vCPUs run again (also those that stopped running the guest
     * until a reset). */
    void (*resume_vcpus)(void);
    /* With every vCPU paused: devices and vCPUs to power-on state, kernel
     * reloaded. False if that failed (reported, exit requested). */
    bool (*reset)(void);
    /* With every vCPU paused and the machine suspended: resume from S3 if
     * the guest enabled the wake-up event that happened; false if it did
     * not (the machine stays suspended) or it failed (exit requested). */
    bool (*wakeup)(void);
    /* Press the ACPI power button. */
    void (*powerdown)(void);
} MachineRunOps;

/* Install the machine's hooks (NULL members: nothing to do). */
void runstate_set_machine_ops(const MachineRunOps *ops);

/* -no-shutdown: a shutdown stops the machine in RUN_STATE_SHUTDOWN
 * instead of exiting, except for quit and a signal (as QEMU). */
void runstate_set_no_shutdown(bool no_shutdown);

/* QEMU's vm_stop(): if running, pause every vCPU, enter state and send
 * STOP; otherwise nothing changes. */
void vm_stop(RunState state);
/* QEMU's vm_start(): if not running, RESUME, RUNNING, the start hooks,
 * vCPUs resumed. If running with a stop request not yet taken (an I/O
 * error's), the request is dropped with a STOP and a RESUME event and the
 * start hooks run, as QEMU does: a cont never loses to a pending stop. */
void vm_start(void);
/* Run fn(opaque) on the I/O thread each time vm_start starts the machine,
 * before the vCPUs run: the block layer re-submits the requests it kept
 * for werror/rerror=stop there. Main thread; hooks are never removed. */
void vm_add_start_hook(void (*fn)(void *opaque), void *opaque);
/* What the cont command may do: refused after a shutdown until a reset,
 * nothing while suspended (a wake-up event resumes), else vm_start. */
bool vm_cont(Error **errp);

/* The main loop's question between iterations: act on every pending
 * request, then run the calls runstate_call_after_requests() queued
 * before; true, with the VMM's exit status, when it must exit. */
bool runstate_main_loop_should_exit(int *exit_status);

/* Call fn(opaque) on the I/O thread right after the main loop has next
 * acted on the run-state requests (at the end of its current iteration,
 * also when the VMM then exits). The QMP server sends each answer so, as
 * QEMU 7.2 does: a command's events (RESET, SHUTDOWN, POWERDOWN) come
 * before its answer. I/O thread only. */
void runstate_call_after_requests(void (*fn)(void *opaque), void *opaque);

#endif
