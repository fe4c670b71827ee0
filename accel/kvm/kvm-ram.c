/*
 * Guest RAM as KVM memory slots: a listener on address_space_memory turns
 * every RAM section into a slot and deletes the slot when the section goes
 * (sysemu/kvm.h, kvm_ram_registered). Sections are told deletions first,
 * so a slot that a change replaces is gone before its successor, which may
 * overlap it, is added. kvm_create_vm registers the recorded slots again
 * on a VM re-creation.
 */
#include <inttypes.h>
#include <pthread.h>
#include <glib.h>
#include "exec/memory.h"
#include "qemu/error.h"
#include "sysemu/runstate.h"
#include "kvm-internal.h"

/* The first failure, kept for kvm_ram_registered. */
static Error *ram_error;
static pthread_mutex_t ram_error_lock = PTHREAD_MUTEX_INITIALIZER;

static void kvm_ram_failed(Error *err)
{
    if (runstate_get() != RUN_STATE_PRELAUNCH) {
        /* The guest would find RAM missing: stop rather than run on. */
        error_report("guest RAM: %s", err->msg);
        qemu_system_exit_request(1);
    }
    pthread_mutex_lock(&ram_error_lock);
    if (!ram_error) {
        ram_error = err;
    } else {
        error_free(err);
    }
    pthread_mutex_unlock(&ram_error_lock);
}

static void kvm_ram_region_add(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    if (!s->mr->ram) {
        return;
    }
    KVMSlot slot = { .used = true, .gpa = s->base, .size = s->size, .host = s->mr->ram + s->offset };
    for (unsigned i = 0; i < kvm_state.max_slots; i++) {
        if (!kvm_state.slots[i].used) {
            Error *err = NULL;
            if (kvm_set_slot(i, &slot, &err)) {
                kvm_state.slots[i] = slot;
            } else {
                kvm_ram_failed(err);
            }
            return;
        }
    }
    Error *err = NULL;
    error_setg(&err, "RAM at 0x%" PRIx64 ": all %u KVM memory slots are taken", s->base,
               kvm_state.max_slots);
    kvm_ram_failed(err);
}

static void kvm_ram_region_del(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    for (unsigned i = 0; s->mr->ram && i < kvm_state.max_slots; i++) {
        KVMSlot *slot = &kvm_state.slots[i];
        if (slot->used && slot->gpa == s->base && slot->size == s->size) {
            Error *err = NULL;
            if (!kvm_set_slot(i, &(KVMSlot) { .gpa = s->base }, &err)) {
                kvm_ram_failed(err);
            }
            slot->used = false;
            return;
        }
    }
}

static MemoryListener kvm_ram_listener = {
    .region_add = kvm_ram_region_add,
    .region_del = kvm_ram_region_del,
};

void kvm_ram_listener_init(void)
{
    memory_listener_register(&kvm_ram_listener, address_space_memory);
}

bool kvm_ram_registered(Error **errp)
{
    pthread_mutex_lock(&ram_error_lock);
    Error *err = ram_error;
    ram_error = NULL;
    pthread_mutex_unlock(&ram_error_lock);
    error_propagate(errp, err);
    return !err;
}
