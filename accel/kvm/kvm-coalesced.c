/*
 * Coalesced MMIO and PIO (KVM_REGISTER_COALESCED_MMIO): a listener on
 * both address spaces registers the coalesced ranges regions declare
 * (exec/memory.h) as zones where the region is mapped, and unregisters
 * them when the section goes; the zones are registered again after a VM
 * re-creation. KVM queues writes to a zone in one VM-wide ring page, which
 * this file maps through vCPU 0's fd and hands to dispatch
 * (softmmu/memory-coalesced.c), which replays it in order.
 *
 * Without KVM_CAP_COALESCED_MMIO (or _PIO for port zones) nothing is
 * registered and the writes exit one by one as usual.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "exec/coalesced-ring.h"
#include "exec/memory.h"
#include "qemu/log.h"
#include "kvm-internal.h"

static int ring_page_offset;    /* KVM_CAP_COALESCED_MMIO: in pages, 0 if none */
static void *ring_page;
static size_t ring_page_size;

typedef struct ZoneCall {
    bool pio;
    bool add;
} ZoneCall;

static void kvm_coalesced_zone_set(uint64_t addr, uint64_t size, void *opaque)
{
    const ZoneCall *call = opaque;
    struct kvm_coalesced_mmio_zone zone = { .addr = addr, .size = (uint32_t)size, .pio = call->pio };
    unsigned long request = call->add ? KVM_REGISTER_COALESCED_MMIO
                                      : KVM_UNREGISTER_COALESCED_MMIO;
    if (size > UINT32_MAX || ioctl(kvm_state.vm_fd, request, &zone) < 0) {
        qemu_log_mask(LOG_UNIMP, "coalesced %s zone 0x%" PRIx64 "+0x%" PRIx64 ": %s: %s\n",
                      call->pio ? "PIO" : "MMIO", addr, size,
                      call->add ? "KVM_REGISTER_COALESCED_MMIO" : "KVM_UNREGISTER_COALESCED_MMIO",
                      size > UINT32_MAX ? "too large" : strerror(errno));
    }
}

static void kvm_coalesced_region_add(MemoryListener *l, AddressSpace *as,
                                     const MemoryRegionSection *s)
{
    ZoneCall call = { .pio = as == address_space_io, .add = true };
    memory_section_for_each_coalesced(s, kvm_coalesced_zone_set, &call);
}

static void kvm_coalesced_region_del(MemoryListener *l, AddressSpace *as,
                                     const MemoryRegionSection *s)
{
    ZoneCall call = { .pio = as == address_space_io, .add = false };
    memory_section_for_each_coalesced(s, kvm_coalesced_zone_set, &call);
}

static MemoryListener kvm_coalesced_listener = {
    .region_add = kvm_coalesced_region_add,
    .region_del = kvm_coalesced_region_del,
};

/* The zones died with the old VM fd. */
static bool kvm_coalesced_recreated(void *opaque, Error **errp)
{
    if (kvm_state.fast_paths & KVM_FAST_PATH_COALESCED_PIO) {
        memory_listener_replay(&kvm_coalesced_listener, address_space_io);
    }
    memory_listener_replay(&kvm_coalesced_listener, address_space_memory);
    return true;
}

void kvm_coalesced_init(void)
{
    ring_page_offset = ioctl(kvm_state.vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_MMIO);
    if (ring_page_offset <= 0) {
        ring_page_offset = 0;
        qemu_log_mask(LOG_UNIMP, "KVM lacks KVM_CAP_COALESCED_MMIO: coalesced writes exit "
                      "one by one\n");
        return;
    }
    kvm_state.fast_paths |= KVM_FAST_PATH_COALESCED_MMIO;
    if (ioctl(kvm_state.vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_PIO) > 0) {
        kvm_state.fast_paths |= KVM_FAST_PATH_COALESCED_PIO;
        memory_listener_register(&kvm_coalesced_listener, address_space_io);
    } else {
        qemu_log_mask(LOG_UNIMP, "KVM lacks KVM_CAP_COALESCED_PIO: coalesced port writes "
                      "exit one by one\n");
    }
    memory_listener_register(&kvm_coalesced_listener, address_space_memory);
    kvm_add_recreated_hook(kvm_coalesced_recreated, NULL);
}

bool kvm_coalesced_ring_map(int vcpu_fd, Error **errp)
{
    if (!ring_page_offset) {
        return true;
    }
    ring_page_size = sysconf(_SC_PAGESIZE);
    void *page = mmap(NULL, ring_page_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu_fd,
                      (off_t)ring_page_offset * ring_page_size);
    if (page == MAP_FAILED) {
        error_setg_errno(errp, errno, "mmap of KVM's coalesced MMIO ring");
        return false;
    }
    ring_page = page;
    uint32_t capacity = (ring_page_size - sizeof(struct kvm_coalesced_mmio_ring)) /
                        sizeof(struct kvm_coalesced_mmio);
    memory_coalesced_attach(ring_page, capacity);
    return true;
}

/* What the old VM still held back is dropped with it: the devices have
 * been reset since those writes were made. */
void kvm_coalesced_ring_unmap(void)
{
    if (ring_page) {
        memory_coalesced_attach(NULL, 0);
        munmap(ring_page, ring_page_size);
        ring_page = NULL;
    }
}
