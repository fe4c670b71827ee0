/*
 * Run state and requests (sysemu/runstate.h). Requests are flags set with
 * atomics from any thread; the I/O thread takes them and acts.
 */
#include <stdatomic.h>
#include <glib.h>
#include "qemu/main-loop.h"
#include "sysemu/runstate.h"

static _Atomic RunState current_state = RUN_STATE_PRELAUNCH;
static atomic_bool no_reboot;
static atomic_bool reset_requested;
static atomic_bool suspend_requested;
static atomic_bool wakeup_requested;
/*
 * A shutdown request and its exit status in one word, so that no reader can
 * see the request without its status: 0 is "none", else (status << 1) | 1.
 */
static atomic_uint shutdown_request;
static void (*vcpu_stopper)(void);

RunState runstate_get(void)
{
    return atomic_load(&current_state);
}

void runstate_set(RunState state)
{
    atomic_store(&current_state, state);
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

void qemu_system_reset_request(void)
{
    if (atomic_load(&no_reboot)) {
        qemu_system_shutdown_request(0);
        return;
    }
    atomic_store(&reset_requested, true);
    stop_vcpus_and_wake_main_loop();
}

void qemu_system_shutdown_request(int exit_status)
{
    /* The first request decides the exit status. */
    unsigned none = 0;
    atomic_compare_exchange_strong(&shutdown_request, &none,
                                   ((unsigned)exit_status << 1) | 1);
    stop_vcpus_and_wake_main_loop();
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

bool runstate_take_reset_request(void)
{
    return atomic_exchange(&reset_requested, false);
}

bool runstate_take_shutdown_request(int *exit_status)
{
    unsigned request = atomic_exchange(&shutdown_request, 0);
    if (!request) {
        return false;
    }
    if (exit_status) {
        *exit_status = (int)(request >> 1);
    }
    return true;
}

bool runstate_take_suspend_request(void)
{
    return atomic_exchange(&suspend_requested, false);
}

bool runstate_take_wakeup_request(void)
{
    return atomic_exchange(&wakeup_requested, false);
}
