/*
 * Run-state requests: a shutdown request is never seen without its exit
 * status and cause, even while another thread is making it.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <glib.h>
#include "sysemu/runstate.h"

/* Enough rounds to catch a window of nanoseconds most times; ThreadSanitizer
 * makes each round some ten times slower. */
#ifdef __SANITIZE_THREAD__
#define ROUNDS 100000
#else
#define ROUNDS 1000000
#endif

static atomic_int taken;        /* the last round the main thread took */

/* Spin hot (the race lasts nanoseconds), but let the other thread run on a
 * machine with one free core. */
static void relax(unsigned *spins)
{
    if (++*spins % 1024 == 0) {
        sched_yield();
    }
}

static void *request_each_round(void *arg)
{
    (void)arg;
    unsigned spins = 0;
    for (int round = 1; round <= ROUNDS; round++) {
        while (atomic_load(&taken) != round - 1) {
            relax(&spins);      /* until the previous request was taken */
        }
        qemu_system_exit_request(round);
    }
    return NULL;
}

/* The main loop takes a request the moment it appears: its status must be
 * the one that request carried, not whatever the word held before. */
static void test_shutdown_status_arrives_with_the_request(void)
{
    pthread_t thread;
    int wrong = 0;
    unsigned spins = 0;
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));
    pthread_create(&thread, NULL, request_each_round, NULL);
    for (int round = 1; round <= ROUNDS; round++) {
        int status;
        ShutdownCause cause;
        while (!runstate_take_shutdown_request(&cause, &status)) {
            relax(&spins);
        }
        wrong += status != round || cause != SHUTDOWN_CAUSE_NONE;
        atomic_store(&taken, round);
    }
    pthread_join(thread, NULL);
    g_assert_cmpint(wrong, ==, 0);
}

static void test_first_request_decides_the_status(void)
{
    int status = -1;
    ShutdownCause cause = SHUTDOWN_CAUSE_NONE;
    qemu_system_exit_request(3);
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_HOST_QMP_QUIT);
    g_assert_true(runstate_take_shutdown_request(&cause, &status));
    g_assert_cmpint(status, ==, 3);
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_NONE);
    g_assert_false(runstate_take_shutdown_request(&cause, &status));
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_GUEST_PANIC);
    qemu_system_exit_request(9);
    g_assert_true(runstate_take_shutdown_request(&cause, &status));
    g_assert_cmpint(status, ==, 0);
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_GUEST_PANIC);
}

/* isa-debug-exit's largest status, (0xff << 1) | 1, survives the word
 * it shares with the cause. */
static void test_largest_exit_status(void)
{
    int status = -1;
    qemu_system_exit_request(511);
    g_assert_true(runstate_take_shutdown_request(NULL, &status));
    g_assert_cmpint(status, ==, 511);
}

/* QMP's names, and which causes are the guest's (the events' "guest"). */
static void test_cause_names(void)
{
    static const struct {
        ShutdownCause cause;
        const char *name;
        bool guest;
    } causes[] = {
        { SHUTDOWN_CAUSE_NONE, "none", false },
        { SHUTDOWN_CAUSE_HOST_ERROR, "host-error", false },
        { SHUTDOWN_CAUSE_HOST_QMP_QUIT, "host-qmp-quit", false },
        { SHUTDOWN_CAUSE_HOST_QMP_SYSTEM_RESET, "host-qmp-system-reset", false },
        { SHUTDOWN_CAUSE_HOST_SIGNAL, "host-signal", false },
        { SHUTDOWN_CAUSE_HOST_UI, "host-ui", false },
        { SHUTDOWN_CAUSE_GUEST_SHUTDOWN, "guest-shutdown", true },
        { SHUTDOWN_CAUSE_GUEST_RESET, "guest-reset", true },
        { SHUTDOWN_CAUSE_GUEST_PANIC, "guest-panic", true },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(causes); i++) {
        g_assert_cmpstr(shutdown_cause_name(causes[i].cause), ==, causes[i].name);
        g_assert_cmpint(shutdown_cause_is_guest(causes[i].cause), ==, causes[i].guest);
    }
}

/* -no-reboot turns a reset into a shutdown with the reset's cause. */
static void test_no_reboot_shuts_down_with_the_reset_cause(void)
{
    ShutdownCause cause = SHUTDOWN_CAUSE_NONE;
    runstate_set_no_reboot(true);
    qemu_system_reset_request(SHUTDOWN_CAUSE_HOST_QMP_SYSTEM_RESET);
    runstate_set_no_reboot(false);
    g_assert_false(runstate_take_reset_request(NULL));
    g_assert_true(runstate_take_shutdown_request(&cause, NULL));
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_HOST_QMP_SYSTEM_RESET);

    qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));
    g_assert_true(runstate_take_reset_request(&cause));
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_GUEST_RESET);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/runstate/shutdown-status-arrives-with-the-request",
                    test_shutdown_status_arrives_with_the_request);
    g_test_add_func("/runstate/first-request-decides-the-status",
                    test_first_request_decides_the_status);
    g_test_add_func("/runstate/largest-exit-status", test_largest_exit_status);
    g_test_add_func("/runstate/cause-names", test_cause_names);
    g_test_add_func("/runstate/no-reboot-shuts-down-with-the-reset-cause",
                    test_no_reboot_shuts_down_with_the_reset_cause);
    return g_test_run();
}
