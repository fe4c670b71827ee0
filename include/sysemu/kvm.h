/*
 * The KVM accelerator: one VM with the in-kernel irqchip (PIC, IOAPIC,
 * LAPICs) and PIT, RAM in memory slots, one thread per vCPU.
 *
 * Threads: kvm_* setup functions run on the main thread before the vCPUs
 * start. Each vCPU thread loops on KVM_RUN and dispatches I/O and MMIO exits
 * through the address spaces (exec/memory.h), which take the target device's
 * lock. kvm_pause_all() is the stop-the-world mechanism: it returns once
 * every vCPU is outside KVM_RUN and outside any device handler.
 */
#ifndef SYSEMU_KVM_H
#define SYSEMU_KVM_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/i386/boot.h"
#include "qemu/error.h"
#include "sysemu/cpuid.h"

/* Open /dev/kvm and create the VM (irqchip, GSI routing of a PC, PIT if
 * pit is true; with pit_discard_lost_ticks its missed ticks are dropped,
 * kvm-pit.lost_tick_policy=discard). Installs the irq backend (hw/irq.h). */
bool kvm_init(bool pit, bool pit_discard_lost_ticks, Error **errp);
/* Whether the VM exists with its in-kernel irqchip (false before
 * kvm_init), and whether it has a PIT and drops its missed ticks: what
 * info qtree lists as QEMU's kvm-ioapic, kvm-i8259 and kvm-pit. */
bool kvm_in_kernel_devices(bool *pit, bool *pit_discards_lost_ticks);

/*
 * Guest RAM reaches KVM through the address space: every RAM section of
 * address_space_memory becomes a memory slot (a listener, accel/kvm/
 * kvm-ram.c), so mapping RAM there is all a machine does. True if every
 * section so far has its slot; else false with the first failure. A
 * failure once the machine runs ends the VMM with status 1.
 */
bool kvm_ram_registered(Error **errp);

/* The fast paths this KVM provides (KVM_CHECK_EXTENSION, at kvm_init);
 * 0 without KVM. A region declares them all the same (exec/memory.h):
 * dispatch does the work of a missing one, more slowly. */
enum {
    KVM_FAST_PATH_IOEVENTFD      = 1 << 0,  /* KVM_CAP_IOEVENTFD */
    KVM_FAST_PATH_COALESCED_MMIO = 1 << 1,  /* KVM_CAP_COALESCED_MMIO */
    KVM_FAST_PATH_COALESCED_PIO  = 1 << 2,  /* KVM_CAP_COALESCED_PIO */
    KVM_FAST_PATH_IOEVENTFD_ANY_LENGTH = 1 << 3,    /* KVM_CAP_IOEVENTFD_ANY_LENGTH */
};
unsigned kvm_fast_paths(void);

/* Exits to user space of the calling vCPU thread, by kind, since it was
 * created; false (and zeros) on any other thread. Counted by the vCPU
 * itself, in memory no other vCPU writes. -d exits prints every vCPU's at
 * exit. */
typedef struct KVMExitCounts {
    uint64_t io, mmio, other;
} KVMExitCounts;
bool kvm_vcpu_exit_counts(KVMExitCounts *counts);

/* Create the vCPUs. Their CPUID follows cpu and topo; vCPU i gets the APIC
 * id cpuid_apic_id(topo, i); vCPU 0 is the boot processor. */
bool kvm_create_vcpus(unsigned ncpus, const CpuConfig *cpu, const CpuTopology *topo,
                      Error **errp);
unsigned kvm_vcpu_count(void);
uint32_t kvm_vcpu_apic_id(unsigned index);
/* CPUID.1 EAX/EDX as vCPU 0 sees them (for the MP table). */
void kvm_cpu_signature(uint32_t *eax, uint32_t *edx);

/* What query-cpus-fast shows of a vCPU: the id of its thread (waits for
 * a thread just started to record it; 0 before kvm_start_vcpus) and its
 * place in the -smp topology. */
typedef struct KVMVcpuInfo {
    int thread_id;
    unsigned socket, core, thread;
} KVMVcpuInfo;
void kvm_vcpu_info(unsigned index, KVMVcpuInfo *info);

/* Set the boot processor's registers; the others wait for INIT/SIPI. */
bool kvm_set_boot_state(const BootCpuState *state, Error **errp);

/* Start a thread per vCPU, each paused before its first instruction until
 * kvm_resume_all (vm_start: at once, or at cont after -S). */
bool kvm_start_vcpus(Error **errp);
void kvm_pause_all(void);
/* Ask every vCPU to pause and kick it, without waiting: callable from any
 * thread, a vCPU inside a device handler included. */
void kvm_request_pause_all(void);
/* Let paused vCPUs run again; also releases vCPUs that stopped running
 * the guest (shutdown, triple fault) until a reset. */
void kvm_resume_all(void);
/* Stop and join every vCPU thread (at exit). */
void kvm_stop_vcpus(void);

/* Put the VM back to power-on state while every vCPU is paused
 * (kvm_pause_all): the VM, its irqchip, PIT and vCPUs are created anew with
 * the same configuration and RAM (whose contents are kept); the vCPU
 * threads stay and pick up the new vCPUs when resumed. kvm_set_boot_state
 * and kvm_resume_all follow. Recreating is simpler and more certain than
 * resetting every piece of in-kernel state one by one, and a reset is
 * rare. */
bool kvm_reset_vm(Error **errp);

/*
 * Everything registered with the kernel (irqfds, ioeventfds, MSI routes,
 * coalesced zones, vhost bindings) dies with the VM fd. Whoever registers
 * such a thing also adds a hook that registers it again: kvm_reset_vm runs
 * the hooks, in the order they were added, once the new VM and its vCPUs
 * exist and before any vCPU runs, on the resetting thread with every vCPU
 * paused and no device lock held. A hook that fails fails the reset.
 */
typedef bool KVMRecreatedHook(void *opaque, Error **errp);
void kvm_add_recreated_hook(KVMRecreatedHook *fn, void *opaque);

#endif
