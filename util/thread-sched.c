/* Scheduling policies of the VMM's threads (qemu/thread-sched.h). */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include "qemu/error.h"
#include "qemu/thread-sched.h"

/* Set once, before threads start: the main thread is SCHED_BATCH. */
static bool io_batch_active;

void thread_sched_io_batch_init(bool enable)
{
    struct sched_param param = { .sched_priority = 0 };
    /* A process started under another policy (chrt) keeps the user's. */
    if (!enable || sched_getscheduler(0) != SCHED_OTHER) {
        return;
    }
    if (sched_setscheduler(0, SCHED_BATCH, &param) < 0) {
        error_report("warning: io-sched-batch: SCHED_BATCH refused (%s); normal "
                     "scheduling", strerror(errno));
        return;
    }
    io_batch_active = true;
}

void thread_sched_vcpu_init(void)
{
    struct sched_param param = { .sched_priority = 0 };
    if (io_batch_active && sched_setscheduler(0, SCHED_OTHER, &param) < 0) {
        error_report("warning: io-sched-batch: a vCPU thread cannot leave SCHED_BATCH "
                     "(%s)", strerror(errno));
    }
}
