/*
 * What the I/O thread does with run-state requests (sysemu/runstate.h),
 * and the STOP/RESUME transitions of the stop and cont commands, with the
 * QMP events QEMU 7.2 sends for each, in its order:
 *   shutdown   SHUTDOWN {guest, reason}, then exit; under -no-shutdown a
 *              STOP and RUN_STATE_SHUTDOWN instead (not for quit or a
 *              signal, which always exit)
 *   reset      vCPUs paused, machine reset, RESET {guest, reason}; running
 *              again only if it was running, else PRELAUNCH (so a reset
 *              while stopped, suspended or shut down waits for cont)
 *   powerdown  POWERDOWN, then the ACPI power button
 *   suspend    vCPUs paused, SUSPENDED, SUSPEND
 *   wakeup     if suspended and the machine wakes: RUNNING, vCPUs resumed,
 *              WAKEUP
 *   vm stop    (a drive's werror/rerror=stop) vm_stop in the state asked
 *              for: STOP, after the BLOCK_IO_ERROR the drive sent
 * An exit request (isa-debug-exit, Ctrl-a x, a fatal error) ends the VMM
 * with its status and no event, as QEMU's exit() does.
 *
 * Everything here runs on the I/O thread; only the requests come from
 * other threads.
 *
 * After acting on the requests the main loop runs the calls queued with
 * runstate_call_after_requests(): the QMP server's answers, which QEMU
 * sends after its main loop's turn, so that the events a command's
 * requests cause (RESET, SHUTDOWN, POWERDOWN) reach the client before the
 * command's answer.
 */
#include <stdbool.h>
#include <glib.h>
#include "monitor/qmp.h"
#include "qemu/main-loop.h"
#include "sysemu/runstate.h"

typedef struct AfterRequestsCall {
    void (*fn)(void *opaque);
    void *opaque;
} AfterRequestsCall;

static MachineRunOps machine;
static bool no_shutdown;
static GQueue after_requests = G_QUEUE_INIT;  /* of AfterRequestsCall * */

typedef struct StartHook {
    void (*fn)(void *opaque);
    void *opaque;
} StartHook;
static GArray *start_hooks;     /* of StartHook */

void runstate_set_machine_ops(const MachineRunOps *ops)
{
    machine = *ops;
}

void runstate_set_no_shutdown(bool value)
{
    no_shutdown = value;
}

static void pause_vcpus(void)
{
    if (machine.pause_vcpus) {
        machine.pause_vcpus();
    }
}

static void resume_vcpus(void)
{
    if (machine.resume_vcpus) {
        machine.resume_vcpus();
    }
}

/* SHUTDOWN and RESET say who asked and why. */
static void send_cause_event(const char *name, ShutdownCause cause)
{
    JsonObject *data = json_object_new();
    json_object_set_boolean_member(data, "guest", shutdown_cause_is_guest(cause));
    json_object_set_string_member(data, "reason", shutdown_cause_name(cause));
    qmp_event_send(name, data);
}

void vm_stop(RunState state)
{
    if (!runstate_is_running()) {
        return;
    }
    runstate_set(state);
    pause_vcpus();
    qmp_event_send("STOP", NULL);
}

void vm_add_start_hook(void (*fn)(void *opaque), void *opaque)
{
    if (!start_hooks) {
        start_hooks = g_array_new(FALSE, FALSE, sizeof(StartHook));
    }
    StartHook hook = { fn, opaque };
    g_array_append_val(start_hooks, hook);
}

static void run_start_hooks(void)
{
    for (guint i = 0; start_hooks && i < start_hooks->len; i++) {
        StartHook *hook = &g_array_index(start_hooks, StartHook, i);
        hook->fn(hook->opaque);
    }
}

void vm_start(void)
{
    if (runstate_is_running()) {
        if (runstate_take_vm_stop_request(NULL)) {
            qmp_event_send("STOP", NULL);
            qmp_event_send("RESUME", NULL);
            run_start_hooks();
        }
        return;
    }
    qmp_event_send("RESUME", NULL);
    runstate_set(RUN_STATE_RUNNING);
    run_start_hooks();
    resume_vcpus();
}

bool vm_cont(Error **errp)
{
    switch (runstate_get()) {
    case RUN_STATE_SHUTDOWN:
        error_setg(errp, "Resetting the Virtual Machine is required");
        return false;
    case RUN_STATE_SUSPENDED:
        return true;
    default:
        vm_start();
        return true;
    }
}

/* True if the shutdown ends the VMM; under -no-shutdown a guest's (or the
 * UI's) shutdown stops the machine instead. */
static bool shutdown_ends_vmm(ShutdownCause cause)
{
    if (cause == SHUTDOWN_CAUSE_NONE) {
        return true;
    }
    send_cause_event("SHUTDOWN", cause);
    if (no_shutdown && cause != SHUTDOWN_CAUSE_HOST_QMP_QUIT &&
        cause != SHUTDOWN_CAUSE_HOST_SIGNAL) {
        vm_stop(RUN_STATE_SHUTDOWN);
        return false;
    }
    return true;
}

static void system_reset(ShutdownCause cause)
{
    pause_vcpus();
    if (machine.reset && !machine.reset()) {
        return;     /* the exit it asked for comes next */
    }
    send_cause_event("RESET", cause);
    if (runstate_is_running()) {
        resume_vcpus();
    } else {
        runstate_set(RUN_STATE_PRELAUNCH);
    }
}

static void system_suspend(void)
{
    pause_vcpus();
    runstate_set(RUN_STATE_SUSPENDED);
    qmp_event_send("SUSPEND", NULL);
}

static void system_wakeup(void)
{
    if (runstate_get() != RUN_STATE_SUSPENDED || !machine.wakeup || !machine.wakeup()) {
        return;
    }
    runstate_set(RUN_STATE_RUNNING);
    resume_vcpus();
    qmp_event_send("WAKEUP", NULL);
}

static void system_powerdown(void)
{
    qmp_event_send("POWERDOWN", NULL);
    if (machine.powerdown) {
        machine.powerdown();
    }
}

/* Act on one pending request other than a shutdown; false if none. */
static bool handle_one_request(void)
{
    ShutdownCause cause;
    RunState stop_state;
    if (runstate_take_reset_request(&cause)) {
        system_reset(cause);
    } else if (runstate_take_vm_stop_request(&stop_state)) {
        vm_stop(stop_state);
    } else if (runstate_take_suspend_request()) {
        system_suspend();
    } else if (runstate_take_wakeup_request()) {
        system_wakeup();
    } else if (runstate_take_powerdown_request()) {
        system_powerdown();
    } else {
        return false;
    }
    return true;
}

void runstate_call_after_requests(void (*fn)(void *opaque), void *opaque)
{
    AfterRequestsCall *call = g_new(AfterRequestsCall, 1);
    *call = (AfterRequestsCall) { fn, opaque };
    g_queue_push_tail(&after_requests, call);
    /* The iteration under way (or the next one) must not block: the call
     * is due at the next check. */
    main_loop_wakeup();
}

/* The calls queued so far; those they queue wait for the next check. */
static void run_after_requests_calls(void)
{
    GQueue due = after_requests;
    g_queue_init(&after_requests);
    AfterRequestsCall *call;
    while ((call = g_queue_pop_head(&due))) {
        call->fn(call->opaque);
        g_free(call);
    }
}

/* Act on every pending request; true when the VMM must exit. */
static bool act_on_requests(int *exit_status)
{
    for (;;) {
        ShutdownCause cause;
        int status;
        /* A shutdown first, and again after each request: one may have
         * followed (a failed reset asks for an exit). */
        if (runstate_take_shutdown_request(&cause, &status)) {
            if (shutdown_ends_vmm(cause)) {
                *exit_status = status;
                return true;
            }
        } else if (!handle_one_request()) {
            return false;
        }
    }
}

bool runstate_main_loop_should_exit(int *exit_status)
{
    bool exit_now = act_on_requests(exit_status);
    run_after_requests_calls();
    return exit_now;
}
