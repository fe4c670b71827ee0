/*
 * -sandbox on: the seccomp filters (sysemu/sandbox.h, docs/sandbox.md).
 *
 * Two layers, because seccomp filters belong to threads:
 *  - the process filter (vCPU list + main-loop list + what the options
 *    allow), loaded by the main thread with SECCOMP_FILTER_FLAG_TSYNC once
 *    the machine is built: it reaches the I/O threads, the thread-pool
 *    workers and liburcu's threads that already run, and every thread
 *    created later inherits it;
 *  - the vCPU filter (vCPU list only), which each vCPU thread adds on
 *    itself before its first KVM_RUN. Stacked filters all run and the
 *    strictest answer wins, so a vCPU thread may only make the calls on
 *    both lists. It is compiled once here and loaded with the raw
 *    seccomp(2) call in each thread.
 * The order matters: TSYNC fails once some thread has a filter the
 * caller lacks, so the process filter goes first and the vCPU threads
 * start after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <glib.h>
#include "net/tap.h"
#include "sysemu/sandbox.h"
#include "sandbox-internal.h"

/* The vCPU filter as BPF, filter NULL without -sandbox on. */
static struct sock_fprog vcpu_filter;
static SandboxTestThread test_thread;

static bool allow_list(scmp_filter_ctx ctx, const SandboxSyscallList *list, Error **errp)
{
    for (size_t i = 0; i < list->count; i++) {
        int nr = seccomp_syscall_resolve_name(list->names[i]);
        if (nr == __NR_SCMP_ERROR) {
            error_setg(errp, "sandbox: libseccomp does not know the system call %s",
                       list->names[i]);
            return false;
        }
        if (nr < 0) {
            continue;   /* not a call of this architecture (e.g. readdir on x86-64) */
        }
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        if (rc < 0) {
            error_setg_errno(errp, -rc, "sandbox: allowing %s", list->names[i]);
            return false;
        }
    }
    return true;
}

/*
 * Threads may always be created (thread-pool workers start on demand, from
 * vCPU threads too), name themselves (prctl PR_SET_NAME, nothing else of
 * prctl) and take the normal scheduling policy; processes only with
 * spawn=allow. clone3 passes its flags in
 * memory a filter cannot read, so without spawn it fails with ENOSYS and
 * glibc falls back to clone, whose flags the filter checks.
 */
static bool allow_threads(scmp_filter_ctx ctx, bool spawn, Error **errp)
{
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                              SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
    if (rc == 0 && spawn) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 0);
    } else if (rc == 0) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
    }
    if (rc == 0) {
        rc = seccomp_rule_add(ctx, spawn ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(ENOSYS),
                              SCMP_SYS(clone3), 0);
    }
    if (rc == 0) {
        /* A vCPU thread taking the normal policy back under
         * io-sched-batch=on (qemu/thread-sched.h): never another one. */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sched_setscheduler), 1,
                              SCMP_A1(SCMP_CMP_EQ, SCHED_OTHER));
    }
    if (rc < 0) {
        error_setg_errno(errp, -rc, "sandbox: the thread-creation rules");
        return false;
    }
    return true;
}

/* The filter of one thread kind; NULL and *errp on failure. */
static scmp_filter_ctx filter_new(const SandboxConfig *cfg, bool whole_process, Error **errp)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
    if (!ctx) {
        error_setg(errp, "sandbox: seccomp_init failed");
        return NULL;
    }
    /* A 32-bit call (int 0x80) has other numbers: no name to report. */
    bool ok = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) == 0 &&
              seccomp_syscall_priority(ctx, SCMP_SYS(ioctl), 255) == 0;
    if (!ok) {
        error_setg(errp, "sandbox: setting up the filter failed");
    }
    ok = ok && allow_list(ctx, &sandbox_vcpu_syscalls, errp) &&
         allow_threads(ctx, cfg->spawn, errp);
    if (ok && whole_process) {
        ok = allow_list(ctx, &sandbox_loop_syscalls, errp) &&
             (!cfg->obsolete || allow_list(ctx, &sandbox_obsolete_syscalls, errp)) &&
             (cfg->privileges != SANDBOX_PRIVILEGES_ALLOW ||
              allow_list(ctx, &sandbox_privileged_syscalls, errp)) &&
             (!cfg->spawn || allow_list(ctx, &sandbox_spawn_syscalls, errp)) &&
             (!cfg->resourcecontrol || allow_list(ctx, &sandbox_resourcecontrol_syscalls, errp));
        if (ok && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) != 0) {
            error_setg(errp, "sandbox: libseccomp cannot synchronize threads");
            ok = false;
        }
    }
    if (!ok) {
        seccomp_release(ctx);
        return NULL;
    }
    return ctx;
}

/* libseccomp 2.5 exports BPF to an fd only: through a memfd to memory. */
static bool export_bpf(scmp_filter_ctx ctx, struct sock_fprog *prog, Error **errp)
{
    int fd = memfd_create("sandbox-vcpu", MFD_CLOEXEC);
    if (fd < 0) {
        error_setg_errno(errp, errno, "sandbox: memfd_create");
        return false;
    }
    int rc = seccomp_export_bpf(ctx, fd);
    off_t size = rc == 0 ? lseek(fd, 0, SEEK_END) : -1;
    bool ok = size > 0 && size % sizeof(struct sock_filter) == 0;
    struct sock_filter *insns = ok ? g_malloc(size) : NULL;
    ok = ok && pread(fd, insns, size, 0) == size;
    close(fd);
    if (!ok) {
        g_free(insns);
        error_setg(errp, "sandbox: exporting the vCPU filter failed");
        return false;
    }
    *prog = (struct sock_fprog) { .len = size / sizeof(struct sock_filter), .filter = insns };
    return true;
}

/*
 * x-test-forbidden=: the main thread calls personality, on no list; vCPU
 * 0 calls openat, allowed to the process but not to vCPUs, which proves
 * the second layer. Both are harmless should they ever be allowed.
 */
static void make_test_call(SandboxTestThread thread)
{
    if (thread == SANDBOX_TEST_MAIN) {
        syscall(SYS_personality, 0xffffffffUL);   /* a query: changes nothing */
    } else {
        long fd = syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            close(fd);
        }
    }
}

bool sandbox_install(const SandboxConfig *cfg, Error **errp)
{
    if (!cfg->enabled) {
        return true;
    }
    const char *downscript = net_tap_pending_downscript();
    if (downscript) {
        /* What the VMM spawns inherits the allow list and would die. */
        error_setg(errp, "-sandbox on: a tap netdev's downscript (%s) cannot run under "
                   "the sandbox at exit; use downscript=no", downscript);
        return false;
    }
    scmp_filter_ctx vcpu = filter_new(cfg, false, errp);
    if (!vcpu) {
        return false;
    }
    bool ok = export_bpf(vcpu, &vcpu_filter, errp);
    seccomp_release(vcpu);
    scmp_filter_ctx process = ok ? filter_new(cfg, true, errp) : NULL;
    if (!process || !sandbox_trap_init(errp)) {
        if (process) {
            seccomp_release(process);
        }
        g_clear_pointer(&vcpu_filter.filter, g_free);
        return false;
    }
    /* Loading sets no_new_privs (as unprivileged users need), and TSYNC
     * gives it to every thread: elevateprivileges=children in effect. */
    int rc = seccomp_load(process);
    seccomp_release(process);
    if (rc < 0) {
        g_clear_pointer(&vcpu_filter.filter, g_free);
        error_setg_errno(errp, -rc, "sandbox: loading the filter");
        return false;
    }
    test_thread = cfg->test;
    if (test_thread == SANDBOX_TEST_MAIN) {
        make_test_call(SANDBOX_TEST_MAIN);
    }
    return true;
}

bool sandbox_enter_vcpu_thread(unsigned vcpu_index, Error **errp)
{
    if (!vcpu_filter.filter) {
        return true;
    }
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &vcpu_filter) < 0) {
        error_setg_errno(errp, errno, "sandbox: loading the filter of vCPU %u", vcpu_index);
        return false;
    }
    if (test_thread == SANDBOX_TEST_VCPU && vcpu_index == 0) {
        make_test_call(SANDBOX_TEST_VCPU);
    }
    return true;
}
