/* Scheduling policies of the VMM's threads (qemu/thread-sched.h). */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

/* Whether /proc/PID/comm is name. */
static bool comm_is(long pid, const char *name)
{
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        return false;       /* gone meanwhile */
    }
    bool read = fgets(comm, sizeof(comm), f) != NULL;
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    return read && strcmp(comm, name) == 0;
}

void thread_sched_vhost_workers(void)
{
    struct sched_param param = { .sched_priority = 0 };
    char name[32];
    if (!io_batch_active) {
        return;
    }
    /* Kernel threads are processes of their own: one entry each in /proc.
     * Every vhost device of ours has a worker of that name. */
    snprintf(name, sizeof(name), "vhost-%d", (int)getpid());
    DIR *proc = opendir("/proc");
    if (!proc) {
        return;
    }
    for (struct dirent *e; (e = readdir(proc)) != NULL;) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || !comm_is(pid, name) ||
            sched_getscheduler((pid_t)pid) != SCHED_OTHER) {
            continue;
        }
        /* Refused unless root: the worker then stays as it is. */
        (void)sched_setscheduler((pid_t)pid, SCHED_BATCH, &param);
    }
    closedir(proc);
}
