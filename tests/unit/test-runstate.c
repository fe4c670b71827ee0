/*
 * Run-state requests: a shutdown request is never seen without its exit
 * status, even while another thread is making it.
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
        qemu_system_shutdown_request(round);
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
    g_assert_false(runstate_take_shutdown_request(NULL));
    pthread_create(&thread, NULL, request_each_round, NULL);
    for (int round = 1; round <= ROUNDS; round++) {
        int status;
        while (!runstate_take_shutdown_request(&status)) {
            relax(&spins);
        }
        wrong += status != round;
        atomic_store(&taken, round);
    }
    pthread_join(thread, NULL);
    g_assert_cmpint(wrong, ==, 0);
}

static void test_first_request_decides_the_status(void)
{
    int status = -1;
    qemu_system_shutdown_request(3);
    qemu_system_shutdown_request(7);
    g_assert_true(runstate_take_shutdown_request(&status));
    g_assert_cmpint(status, ==, 3);
    g_assert_false(runstate_take_shutdown_request(&status));
    qemu_system_shutdown_request(0);
    g_assert_true(runstate_take_shutdown_request(&status));
    g_assert_cmpint(status, ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/runstate/shutdown-status-arrives-with-the-request",
                    test_shutdown_status_arrives_with_the_request);
    g_test_add_func("/runstate/first-request-decides-the-status",
                    test_first_request_decides_the_status);
    return g_test_run();
}
