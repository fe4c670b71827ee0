/*
 * The pieces of -sandbox (sysemu/sandbox.h), private to softmmu/: the
 * system call lists and the SIGSYS reporter.
 */
#ifndef SOFTMMU_SANDBOX_INTERNAL_H
#define SOFTMMU_SANDBOX_INTERNAL_H

#include <stddef.h>
#include <stdbool.h>
#include "qemu/error.h"

/* System calls by name, as libseccomp spells them; names the running
 * architecture lacks are skipped. */
typedef struct SandboxSyscallList {
    const char *const *names;
    size_t count;
} SandboxSyscallList;

/* What a vCPU thread needs: KVM_RUN and the device handlers it runs. */
extern const SandboxSyscallList sandbox_vcpu_syscalls;
/* What the main loop, the I/O threads and the workers need beyond that. */
extern const SandboxSyscallList sandbox_loop_syscalls;
/* The groups -sandbox's options take away (or, obsolete, add). */
extern const SandboxSyscallList sandbox_obsolete_syscalls;
extern const SandboxSyscallList sandbox_privileged_syscalls;
extern const SandboxSyscallList sandbox_spawn_syscalls;
extern const SandboxSyscallList sandbox_resourcecontrol_syscalls;

/*
 * Catch SIGSYS, the signal of SECCOMP_RET_TRAP, in every thread: write
 * "qemu-system-x86_64: sandbox: forbidden system call NAME (NR)" and die
 * of SIGSYS. Names are looked up now: the handler only reads a table.
 */
bool sandbox_trap_init(Error **errp);

#endif
