/*
 * The system calls -sandbox on allows, by thread kind. How they were
 * found and how they are kept complete: docs/sandbox.md ("The lists").
 * In short: strace -f of boots with every device and backend, one file
 * per thread, the calls after the filter went in; and the tests that
 * boot everything under -sandbox on (a missing call kills the VMM with
 * its name).
 *
 * Where a call comes from is noted as [ours], [glibc] (malloc, pthreads),
 * [glib] (GMainContext, GIOChannel), [urcu], [liburing], [libaio] or
 * [slirp]. Order matters only for speed: libseccomp tests the calls in
 * its own order, and the kernel skips the filter for calls allowed
 * without argument checks (the seccomp action cache, Linux 5.11+).
 */
#include <glib.h>
#include "sandbox-internal.h"

#define LIST(array) { array, G_N_ELEMENTS(array) }

/*
 * A vCPU thread runs KVM_RUN and, on an exit, the device handler under its
 * device lock, which reaches the backends directly: block requests go
 * down from the submitting thread (io_submit, io_uring_enter, or a thread
 * pool worker the handler may start), frames go to a tap with writev,
 * ioeventfd-less notifications and bottom halves are eventfd writes.
 */
static const char *const vcpu_syscalls[] = {
    "ioctl",            /* [ours] KVM_RUN, KVM_IRQ_LINE, KVM_SIGNAL_MSI, vhost kicks */
    "futex",            /* [glibc] device locks, condition variables */
    "read", "write",    /* [ours] eventfds, the serial chardev, -d logging */
    "readv", "writev",  /* [ours] tap and socket netdevs, chardevs */
    "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
                        /* [ours] aio=threads workers, bounce-buffered I/O */
    "fsync", "fdatasync", "fallocate", "lseek",
                        /* [ours] flush, discard, write-zeroes, size probes */
    "io_submit", "io_getevents",    /* [libaio] aio=native */
    "io_uring_enter",   /* [liburing] aio=io_uring submissions */
    "sendmsg", "sendto", "recvmsg", "recvfrom",     /* [ours] socket netdev */
    "membarrier",       /* [urcu] synchronize_rcu after a memory-map change */
    "sched_yield",      /* [glibc] mutex back-off */
    "mmap", "munmap", "mprotect", "madvise", "mremap", "brk",   /* [glibc] malloc */
    /* clone, clone3 and prctl (a new worker names itself) have rules of
     * their own: sandbox.c, allow_threads. */
    "set_robust_list", "rseq",      /* [glibc] a new thread's first calls */
    "exit", "exit_group",
    "rt_sigprocmask", "rt_sigreturn", "rt_sigaction",  /* SIG_KICK, SIGSYS */
    "tgkill", "gettid", "getpid",   /* [ours] pthread_kill of SIG_KICK */
    "clock_gettime", "gettimeofday", "clock_nanosleep", "nanosleep",
    "timerfd_settime",  /* [ours] device timers armed from a handler */
    "restart_syscall",
};
const SandboxSyscallList sandbox_vcpu_syscalls = LIST(vcpu_syscalls);

/*
 * The main loop and the I/O threads poll the backends' fds and run their
 * handlers; they also open what the monitor asks for and tear the machine
 * down at exit (under the sandbox too).
 */
static const char *const loop_syscalls[] = {
    "poll", "ppoll",    /* [glib] g_main_context_iteration */
    "eventfd2",         /* [glib] GWakeup; [ours] event notifiers */
    "timerfd_create",   /* [ours] a new I/O context's timer list */
    "openat", "close", "newfstatat", "fstat", "statx", "fcntl",
                        /* [ours] CD-ROM change, the stdio chardev's reopen,
                         * the kernel reloaded at reset, OFD image locks */
    "unlink", "unlinkat",   /* [ours] the pidfile and unix sockets at exit */
    "socket", "connect", "bind", "listen", "accept", "accept4",
    "getsockname", "getpeername", "setsockopt", "getsockopt", "shutdown",
                        /* [slirp] guest connections; [ours] socket netdev, QMP */
    "io_setup", "io_destroy", "io_cancel",  /* [libaio] */
    "io_uring_setup", "io_uring_register",  /* [liburing] */
    "seccomp",          /* [ours] vCPU threads add their own filter */
    "prlimit64",        /* [glibc] */
    "chdir", "dup2", "dup3",    /* [ours] -daemonize detaches once the machine
                                 * is built: cd /, stdio onto /dev/null */
};
const SandboxSyscallList sandbox_loop_syscalls = LIST(loop_syscalls);

/* obsolete=allow adds these (QEMU's "obsolete" set): nothing here uses
 * them. */
static const char *const obsolete_syscalls[] = {
    "readdir", "_sysctl", "bdflush", "create_module", "get_kernel_syms",
    "query_module", "sgetmask", "ssetmask", "sysfs", "uselib", "ustat",
    "vm86", "vm86old",
};
const SandboxSyscallList sandbox_obsolete_syscalls = LIST(obsolete_syscalls);

/* elevateprivileges=deny|children takes these away. */
static const char *const privileged_syscalls[] = {
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
    "setfsuid", "setfsgid", "setgroups",
};
const SandboxSyscallList sandbox_privileged_syscalls = LIST(privileged_syscalls);

/* spawn=deny takes these away, and clone without CLONE_THREAD (see
 * sandbox.c): no new process, no new program. */
static const char *const spawn_syscalls[] = {
    "fork", "vfork", "execve", "execveat", "wait4", "waitid",
};
const SandboxSyscallList sandbox_spawn_syscalls = LIST(spawn_syscalls);

/* resourcecontrol=deny takes these away: CPU affinity and scheduling. */
static const char *const resourcecontrol_syscalls[] = {
    "sched_setaffinity", "sched_getaffinity", "sched_setscheduler",
    "sched_getscheduler", "sched_setparam", "sched_getparam", "sched_setattr",
    "sched_getattr", "sched_get_priority_max", "sched_get_priority_min",
    "setpriority", "getpriority",
};
const SandboxSyscallList sandbox_resourcecontrol_syscalls = LIST(resourcecontrol_syscalls);
