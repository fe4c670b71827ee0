/*
 * -sandbox on[,obsolete=allow|deny][,elevateprivileges=allow|deny|children]
 *            [,spawn=allow|deny][,resourcecontrol=allow|deny]
 *
 * A seccomp allow list, installed once the machine is built and before any
 * vCPU runs guest code (docs/sandbox.md): one filter for the whole process
 * (SECCOMP_FILTER_FLAG_TSYNC reaches the threads that already exist), and a
 * narrower one each vCPU thread adds on itself before its first KVM_RUN.
 * A system call outside the lists ends the process with the line
 *   qemu-system-x86_64: sandbox: forbidden system call NAME (NR)
 * on stderr, killed by SIGSYS.
 */
#ifndef SYSEMU_SANDBOX_H
#define SYSEMU_SANDBOX_H

#include <stdbool.h>
#include "qemu/error.h"

typedef enum SandboxPrivileges {
    SANDBOX_PRIVILEGES_ALLOW,
    SANDBOX_PRIVILEGES_DENY,
    /* deny, and no_new_privs: what the VMM runs cannot gain privileges
     * either (through setuid binaries) */
    SANDBOX_PRIVILEGES_CHILDREN,
} SandboxPrivileges;

/* Which thread makes the forbidden call of x-test-forbidden= (tests). */
typedef enum SandboxTestThread {
    SANDBOX_TEST_NONE,
    SANDBOX_TEST_MAIN,      /* the main loop, right after the install */
    SANDBOX_TEST_VCPU,      /* vCPU 0, before its first KVM_RUN */
} SandboxTestThread;

typedef struct SandboxConfig {
    bool enabled;                   /* on|off, default off */
    bool obsolete;                  /* obsolete=allow; default deny */
    SandboxPrivileges privileges;   /* elevateprivileges=; default allow */
    bool spawn;                     /* spawn=allow (default) */
    bool resourcecontrol;           /* resourcecontrol=allow (default) */
    SandboxTestThread test;         /* x-test-forbidden=main|vcpu (hidden) */
} SandboxConfig;

/* QEMU's -sandbox syntax into *cfg; errors as QEMU words them ("invalid
 * argument for spawn"), the caller prefixes the option. */
bool sandbox_parse(const char *arg, SandboxConfig *cfg, Error **errp);

/*
 * Install the process-wide filter (a no-op when cfg is off) and prepare
 * the vCPUs' own. Call it once the machine is built and every backend is
 * open, before the vCPU threads start: threads created afterwards inherit
 * the filter. Fails (nothing installed) on what cannot work confined,
 * such as a tap downscript that would run at exit.
 */
bool sandbox_install(const SandboxConfig *cfg, Error **errp);

/*
 * A vCPU thread, before its first KVM_RUN: add the vCPU filter on top of
 * the process-wide one (a no-op without -sandbox on). vcpu_index picks the
 * thread of x-test-forbidden=vcpu.
 */
bool sandbox_enter_vcpu_thread(unsigned vcpu_index, Error **errp);

#endif
