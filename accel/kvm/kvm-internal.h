/* State shared by the files of accel/kvm; not for use outside it. */
#ifndef ACCEL_KVM_INTERNAL_H
#define ACCEL_KVM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>
#include "sysemu/kvm.h"

typedef struct KVMSlot {
    unsigned slot;
    uint64_t gpa, size;
    void *host;
} KVMSlot;

typedef struct KVMState {
    int kvm_fd;
    int vm_fd;
    int run_size;               /* of each vCPU's shared kvm_run area */
    bool pit;
    bool pit_discard_lost_ticks;
    KVMSlot slots[4];
    unsigned nslots;
} KVMState;

extern KVMState kvm_state;

/* kvm-vcpu.c: close every vCPU (threads already stopped) / create them
 * again with the configuration given to kvm_create_vcpus. */
void kvm_destroy_vcpus(void);
bool kvm_recreate_vcpus(Error **errp);

/* kvm-irqfd.c: read the irqfd capabilities and hook the re-creation. */
void kvm_irqfd_init(void);

#endif
