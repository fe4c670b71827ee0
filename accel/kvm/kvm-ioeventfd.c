/*
 * ioeventfds in the kernel (KVM_IOEVENTFD): a listener on both address
 * spaces assigns every ioeventfd a region declares (exec/memory.h) where
 * the region is mapped, and deassigns it when that section goes (a BAR
 * moved, unmapped or disabled). A guest write that matches then signals
 * the eventfd inside KVM and the vCPU re-enters the guest at once.
 *
 * What KVM refuses (a PIO doorbell of 8 bytes, one of any width without
 * KVM_CAP_IOEVENTFD_ANY_LENGTH, a second ioeventfd on the same address and
 * length) stays with dispatch, which signals the same
 * notifier from user space: slower, same behaviour. Without
 * KVM_CAP_IOEVENTFD the listener is not registered at all.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/ioctl.h>
#include "exec/memory.h"
#include "qemu/log.h"
#include "kvm-internal.h"

typedef struct IoeventfdCall {
    bool pio;
    bool assign;
} IoeventfdCall;

static void kvm_ioeventfd_set(const SectionEventfd *e, void *opaque)
{
    const IoeventfdCall *call = opaque;
    if ((call->pio && e->size == 8) ||
        (e->size == 0 && !(kvm_state.fast_paths & KVM_FAST_PATH_IOEVENTFD_ANY_LENGTH))) {
        return;                 /* KVM cannot take it: dispatch keeps it */
    }
    struct kvm_ioeventfd req = {
        .datamatch = e->data,
        .addr = e->addr,
        .len = e->size,
        .fd = e->notifier->fd,
        .flags = (e->match_data ? KVM_IOEVENTFD_FLAG_DATAMATCH : 0) |
                 (call->pio ? KVM_IOEVENTFD_FLAG_PIO : 0) |
                 (call->assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN),
    };
    /* A deassign that finds nothing is one whose assign was refused. */
    if (ioctl(kvm_state.vm_fd, KVM_IOEVENTFD, &req) < 0 && call->assign) {
        qemu_log_mask(LOG_UNIMP, "ioeventfd at %s 0x%" PRIx64 " (%u bytes) stays in user "
                      "space: KVM_IOEVENTFD: %s\n", call->pio ? "port" : "address", e->addr,
                      e->size, strerror(errno));
    }
}

static void kvm_ioeventfd_region_add(MemoryListener *l, AddressSpace *as,
                                     const MemoryRegionSection *s)
{
    IoeventfdCall call = { .pio = as == address_space_io, .assign = true };
    memory_section_for_each_eventfd(s, kvm_ioeventfd_set, &call);
}

static void kvm_ioeventfd_region_del(MemoryListener *l, AddressSpace *as,
                                     const MemoryRegionSection *s)
{
    IoeventfdCall call = { .pio = as == address_space_io, .assign = false };
    memory_section_for_each_eventfd(s, kvm_ioeventfd_set, &call);
}

static MemoryListener kvm_ioeventfd_listener = {
    .region_add = kvm_ioeventfd_region_add,
    .region_del = kvm_ioeventfd_region_del,
};

/* The ioeventfds died with the old VM fd. */
static bool kvm_ioeventfd_recreated(void *opaque, Error **errp)
{
    memory_listener_replay(&kvm_ioeventfd_listener, address_space_io);
    memory_listener_replay(&kvm_ioeventfd_listener, address_space_memory);
    return true;
}

void kvm_ioeventfd_init(void)
{
    if (ioctl(kvm_state.vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IOEVENTFD) <= 0) {
        qemu_log_mask(LOG_UNIMP, "KVM lacks KVM_CAP_IOEVENTFD: doorbells exit to user "
                      "space\n");
        return;
    }
    kvm_state.fast_paths |= KVM_FAST_PATH_IOEVENTFD;
    if (ioctl(kvm_state.vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IOEVENTFD_ANY_LENGTH) > 0) {
        kvm_state.fast_paths |= KVM_FAST_PATH_IOEVENTFD_ANY_LENGTH;
    }
    memory_listener_register(&kvm_ioeventfd_listener, address_space_io);
    memory_listener_register(&kvm_ioeventfd_listener, address_space_memory);
    kvm_add_recreated_hook(kvm_ioeventfd_recreated, NULL);
}
