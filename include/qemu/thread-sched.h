/*
 * Scheduling policies of the VMM's threads: the vCPUs first on a shared
 * host CPU (-machine io-sched-batch=on|off, ours, not QEMU's).
 *
 * With it on (the default), every thread but the vCPUs runs under
 * SCHED_BATCH: the main loop, the I/O threads, the thread pool's workers.
 * Linux's fair scheduler never lets a waking SCHED_BATCH thread preempt
 * the thread running on that CPU, so a guest's kick (an ioeventfd) that
 * wakes the main loop no longer takes the CPU from the vCPU that kicked,
 * often in the middle of a guest critical section (a queue's lock held
 * around the kick). The I/O thread runs when the vCPU blocks (HLT, a
 * guest waiting for the I/O) or its time slice ends, and serves in one
 * pass what the guest queued meanwhile. A host with an idle CPU runs the
 * woken thread there at once, as before: only a CPU the vCPUs share sees
 * a difference (docs/design.md, docs/benchmarks.md).
 */
#ifndef QEMU_THREAD_SCHED_H
#define QEMU_THREAD_SCHED_H

#include <stdbool.h>

/* On the main thread before any other thread starts (they inherit its
 * policy): SCHED_BATCH if enable and the process runs under the normal
 * policy (one started under another, e.g. with chrt, keeps it). A refusal
 * (none is expected: an unprivileged thread may choose it) is a warning. */
void thread_sched_io_batch_init(bool enable);

/* On a vCPU thread, first: back to normal scheduling (SCHED_OTHER) if the
 * main thread it inherits from was made SCHED_BATCH. */
void thread_sched_vcpu_init(void);

/* After VHOST_SET_OWNER, before the sandbox: the kernel's vhost worker
 * ("vhost-PID") does for vhost-net what the main loop does for the
 * user-space data path, woken by the same kicks; under io-sched-batch it
 * gets SCHED_BATCH too. On Linux 6.4 and later the worker is a thread of
 * this process and inherits the policy of the thread that made it; before,
 * a kernel thread of its own, which only a root VMM may change (a VMM that
 * may not leaves it as it is, silently: nothing is wrong, it is slower). */
void thread_sched_vhost_workers(void);

#endif
