/* State shared by the files of accel/kvm; not for use outside it. */
#ifndef ACCEL_KVM_INTERNAL_H
#define ACCEL_KVM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>
#include "sysemu/kvm.h"

#define KVM_MAX_RAM_SLOTS 32

/* A memory slot: one RAM section of address_space_memory (kvm-ram.c). */
typedef struct KVMSlot {
    bool used;
    uint64_t gpa, size;
    void *host;
} KVMSlot;

typedef struct KVMState {
    int kvm_fd;
    int vm_fd;
    int run_size;               /* of each vCPU's shared kvm_run area */
    bool pit;
    bool pit_discard_lost_ticks;
    KVMSlot slots[KVM_MAX_RAM_SLOTS];   /* indexed by KVM slot number */
    unsigned max_slots;                 /* usable here: KVM_CAP_NR_MEMSLOTS */
    unsigned fast_paths;                /* KVM_FAST_PATH_*, set at kvm_init */
} KVMState;

extern KVMState kvm_state;

/* kvm-all.c: register slot number `index` (size 0 deletes it). */
bool kvm_set_slot(unsigned index, const KVMSlot *slot, Error **errp);

/* kvm-ram.c: RAM mapped in address_space_memory becomes memory slots. */
void kvm_ram_listener_init(void);

/* kvm-ioeventfd.c and kvm-coalesced.c: with the capability, listeners
 * put regions' ioeventfds and coalesced ranges into the kernel, and again
 * after each VM re-creation; without it, dispatch handles them. */
void kvm_ioeventfd_init(void);
void kvm_coalesced_init(void);
/* Map the coalesced ring through a vCPU's fd and hand it to dispatch /
 * take it back (while no vCPU runs). */
bool kvm_coalesced_ring_map(int vcpu_fd, Error **errp);
void kvm_coalesced_ring_unmap(void);

/* kvm-vcpu.c: close every vCPU (threads already stopped) / create them
 * again with the configuration given to kvm_create_vcpus. */
void kvm_destroy_vcpus(void);
bool kvm_recreate_vcpus(Error **errp);

/* kvm-irqfd.c: read the irqfd capabilities and hook the re-creation. */
void kvm_irqfd_init(void);

#endif
