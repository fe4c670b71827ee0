/*
 * Run state and requests (sysemu/runstate.h). Requests are flags set with
 * atomics from any thread; the I/O thread takes them and acts
 * (softmmu/runstate-actions.c).
 */
#include <stdatomic.h>
#include <glib.h>
#include "qemu/main-loop.h"
#include "sysemu/runstate.h"

static _Atomic RunState current_state = RUN_STATE_PRELAUNCH;
static atomic_bool no_reboot;
static atomic_bool powerdown_requested;
static atomic_bool suspend_requested;
static atomic_bool wakeup_requested;
/* A vm stop request: the RunState plus one, 0 for none. */
static atomic_int vm_stop_request;
/*
 * A request and what comes with it in one word, so that no reader can see
 * the request without its cause and status: 0 is "none", else
 * (status << REQUEST_STATUS_SHIFT) | (cause << 1) | 1.
 */
#define REQUEST_CAUSE_MASK      0xfu
#define REQUEST_STATUS_SHIFT    5
static atomic_uint reset_request;
static atomic_uint shutdown_request;
static void (*vcpu_stopper)(void);

static const char *const runstate_names[] = {
    [RUN_STATE_PRELAUNCH] = "prelaunch",
    [RUN_STATE_RUNNING] = "running",
    [RUN_STATE_PAUSED] = "paused",
    [RUN_STATE_SHUTDOWN] = "shutdown",
    [RUN_STATE_SUSPENDED] = "suspended",
    [RUN_STATE_IO_ERROR] = "io-error",
};

static const char *const shutdown_cause_names[] = {
    [SHUTDOWN_CAUSE_NONE] = "none",
    [SHUTDOWN_CAUSE_HOST_ERROR] = "host-error",
    [SHUTDOWN_CAUSE_HOST_QMP_QUIT] = "host-qmp-quit",
    [SHUTDOWN_CAUSE_HOST_QMP_SYSTEM_RESET] = "host-qmp-system-reset",
    [SHUTDOWN_CAUSE_HOST_SIGNAL] = "host-signal",
    [SHUTDOWN_CAUSE_HOST_UI] = "host-ui",
    [SHUTDOWN_CAUSE_GUEST_SHUTDOWN] = "guest-shutdown",
    [SHUTDOWN_CAUSE_GUEST_RESET] = "guest-reset",
    [SHUTDOWN_CAUSE_GUEST_PANIC] = "guest-panic",
};
_Static_assert(G_N_ELEMENTS(shutdown_cause_names) <= REQUEST_CAUSE_MASK + 1,
               "a cause fits its field of the request word");

RunState runstate_get(void)
{
    return atomic_load(&current_state);
}

void runstate_set(RunState state)
{
    atomic_store(&current_state, state);
}

const char *runstate_name(RunState state)
{
    return runstate_names[state];
}

bool runstate_is_running(void)
{
    return runstate_get() == RUN_STATE_RUNNING;
}

const char *shutdown_cause_name(ShutdownCause cause)
{
    return shutdown_cause_names[cause];
}

bool shutdown_cause_is_guest(ShutdownCause cause)
{
    return cause >= SHUTDOWN_CAUSE_GUEST_SHUTDOWN;
}

void runstate_set_vcpu_stopper(void (*stop)(void))
{
    vcpu_stopper = stop;
}

static void stop_vcpus_and_wake_main_loop(void)
{
    if (vcpu_stopper) {
        vcpu_stopper();
    }
    main_loop_wakeup();
}

void runstate_set_no_reboot(bool value)
{
    atomic_store(&no_reboot, value);
}

static unsigned request_word(ShutdownCause cause, int exit_status)
{
    return ((unsigned)exit_status << REQUEST_STATUS_SHIFT) | ((unsigned)cause << 1) | 1;
}

static bool take_request_word(atomic_uint *word, ShutdownCause *cause, int *exit_status)
{
    unsigned request = atomic_exchange(word, 0);
    if (!request) {
        return false;
    }
    if (cause) {
        *cause = (request >> 1) & REQUEST_CAUSE_MASK;
    }
    if (exit_status) {
        *exit_status = (int)(request >> REQUEST_STATUS_SHIFT);
    }
    return true;
}

/* The first shutdown or exit request decides how the VMM ends. */
static void post_shutdown_request(ShutdownCause cause, int exit_status)
{
    unsigned none = 0;
    atomic_compare_exchange_strong(&shutdown_request, &none, request_word(cause, exit_status));
    stop_vcpus_and_wake_main_loop();
}

void qemu_system_reset_request(ShutdownCause cause)
{
    if (atomic_load(&no_reboot)) {
        qemu_system_shutdown_request(cause);
        return;
    }
    atomic_store(&reset_request, request_word(cause, 0));
    stop_vcpus_and_wake_main_loop();
}

void qemu_system_shutdown_request(ShutdownCause cause)
{
    post_shutdown_request(cause, 0);
}

void qemu_system_exit_request(int exit_status)
{
    post_shutdown_request(SHUTDOWN_CAUSE_NONE, exit_status);
}

void qemu_system_powerdown_request(void)
{
    atomic_store(&powerdown_requested, true);
    main_loop_wakeup();
}

void qemu_system_suspend_request(void)
{
    atomic_store(&suspend_requested, true);
    stop_vcpus_and_wake_main_loop();
}

void qemu_system_wakeup_request(void)
{
    atomic_store(&wakeup_requested, true);
    main_loop_wakeup();
}

void qemu_system_vm_stop_request(RunState state)
{
    atomic_store(&vm_stop_request, (int)state + 1);
    main_loop_wakeup();
}

bool runstate_take_reset_request(ShutdownCause *cause)
{
    return take_request_word(&reset_request, cause, NULL);
}

bool runstate_take_shutdown_request(ShutdownCause *cause, int *exit_status)
{
    return take_request_word(&shutdown_request, cause, exit_status);
}

bool runstate_take_powerdown_request(void)
{
    return atomic_exchange(&powerdown_requested, false);
}

bool runstate_take_suspend_request(void)
{
    return atomic_exchange(&suspend_requested, false);
}

bool runstate_take_wakeup_request(void)
{
    return atomic_exchange(&wakeup_requested, false);
}

bool runstate_take_vm_stop_request(RunState *state)
{
    int request = atomic_exchange(&vm_stop_request, 0);
    if (request && state) {
        *state = (RunState)(request - 1);
    }
    return request != 0;
}
