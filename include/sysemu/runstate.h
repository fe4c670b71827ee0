/*
 * Run states and the requests that change them. Requests may be made from
 * any thread (a vCPU inside a device handler, a signal, the console); the
 * I/O thread carries them out with every vCPU paused.
 */
#ifndef SYSEMU_RUNSTATE_H
#define SYSEMU_RUNSTATE_H

#include <stdbool.h>

typedef enum RunState {
    RUN_STATE_PRELAUNCH,
    RUN_STATE_RUNNING,
    RUN_STATE_PAUSED,
    RUN_STATE_RESET,
    RUN_STATE_SHUTDOWN,
    RUN_STATE_SUSPENDED,    /* ACPI S3: vCPUs stopped until a wake-up event */
} RunState;

RunState runstate_get(void);
void runstate_set(RunState state);

/* Called (from the requesting thread) on every reset, shutdown or suspend
 * request, to make every vCPU stop running guest code before the I/O
 * thread acts: a guest that asked for a reset must not run on into
 * whatever it does next (Linux falls through to a triple fault). Must not
 * block. */
void runstate_set_vcpu_stopper(void (*stop)(void));

/* -no-reboot: a guest reset request shuts down with status 0 instead. */
void runstate_set_no_reboot(bool no_reboot);

/* The guest asked for a reset (keyboard controller, triple fault...). */
void qemu_system_reset_request(void);
/* Power off, or an exit with a given status (isa-debug-exit, Ctrl-a x,
 * SIGTERM...). Of several requests before the main loop takes them, the
 * first one's status wins. */
void qemu_system_shutdown_request(int exit_status);

/* The guest entered ACPI S3 (suspend to RAM); it must not run on. */
void qemu_system_suspend_request(void);
/* A wake-up event (the RTC alarm) happened; it resumes a suspended
 * machine whose guest enabled that event, and means nothing otherwise. */
void qemu_system_wakeup_request(void);

/* For the main loop: take (and clear) pending requests; false if none. */
bool runstate_take_reset_request(void);
bool runstate_take_shutdown_request(int *exit_status);
bool runstate_take_suspend_request(void);
bool runstate_take_wakeup_request(void);

#endif
