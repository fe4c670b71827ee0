/*
 * KVM VM lifecycle: /dev/kvm, the VM with its in-kernel irqchip and PIT,
 * RAM slots, interrupt delivery (sysemu/kvm.h). The vCPUs are in
 * kvm-vcpu.c, the GSI routing table in kvm-msi-route.c, irqfds in
 * kvm-irqfd.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/irq.h"
#include "kvm-internal.h"
#include "sysemu/kvm-msi-route.h"

/* Where KVM may put the real-mode TSS and identity map it needs on Intel
 * hosts without unrestricted guest: just below the BIOS, e820-reserved. */
#define KVM_IDENTITY_MAP_ADDR 0xfeffc000ULL
#define KVM_TSS_ADDR          0xfeffd000ULL

KVMState kvm_state = { .kvm_fd = -1, .vm_fd = -1 };

static void kvm_irq_set_level(void *opaque, unsigned gsi, bool level)
{
    struct kvm_irq_level irq = { .irq = gsi, .level = level };
    if (ioctl(kvm_state.vm_fd, KVM_IRQ_LINE, &irq) < 0) {
        error_report("KVM_IRQ_LINE %u: %s", gsi, strerror(errno));
    }
}

static void kvm_send_msi(void *opaque, uint64_t address, uint32_t data)
{
    struct kvm_msi msi = {
        .address_lo = (uint32_t)address, .address_hi = (uint32_t)(address >> 32), .data = data,
    };
    /* 0 means the guest's LAPICs blocked it (e.g. no destination): as on
     * real hardware, the message is lost. */
    if (ioctl(kvm_state.vm_fd, KVM_SIGNAL_MSI, &msi) < 0) {
        error_report("KVM_SIGNAL_MSI 0x%" PRIx64 "/0x%x: %s", address, data, strerror(errno));
    }
}

/* The routing table (kvm-msi-route.c) goes to the current VM. */
static bool kvm_commit_gsi_routing(void *opaque, const struct kvm_irq_routing *table,
                                   Error **errp)
{
    if (ioctl(kvm_state.vm_fd, KVM_SET_GSI_ROUTING, table) < 0) {
        error_setg_errno(errp, errno, "KVM_SET_GSI_ROUTING (%u routes)", table->nr);
        return false;
    }
    return true;
}

bool kvm_set_slot(unsigned index, const KVMSlot *slot, Error **errp)
{
    struct kvm_userspace_memory_region region = {
        .slot = index,
        .guest_phys_addr = slot->gpa,
        .memory_size = slot->size,
        .userspace_addr = (uintptr_t)slot->host,
    };
    if (ioctl(kvm_state.vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
        error_setg_errno(errp, errno, "KVM_SET_USER_MEMORY_REGION (%" G_GUINT64_FORMAT
                         " MiB at 0x%" G_GINT64_MODIFIER "x)", slot->size >> 20, slot->gpa);
        return false;
    }
    return true;
}

/* Create the VM and its in-kernel devices; memory slots recorded so far
 * are registered again (for kvm_reset_vm). */
static bool kvm_create_vm(Error **errp)
{
    kvm_state.vm_fd = ioctl(kvm_state.kvm_fd, KVM_CREATE_VM, 0);
    if (kvm_state.vm_fd < 0) {
        error_setg_errno(errp, errno, "KVM_CREATE_VM");
        return false;
    }
    if (ioctl(kvm_state.vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &(uint64_t){ KVM_IDENTITY_MAP_ADDR }) < 0 ||
        ioctl(kvm_state.vm_fd, KVM_SET_TSS_ADDR, (unsigned long)KVM_TSS_ADDR) < 0) {
        error_setg_errno(errp, errno, "setting KVM's TSS and identity map addresses");
        return false;
    }
    if (ioctl(kvm_state.vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
        error_setg_errno(errp, errno, "KVM_CREATE_IRQCHIP (the in-kernel PIC/IOAPIC/LAPIC)");
        return false;
    }
    if (!kvm_routing_commit(errp)) {
        return false;
    }
    if (kvm_state.pit) {
        struct kvm_pit_config pit = { .flags = 0 };
        if (ioctl(kvm_state.vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
            error_setg_errno(errp, errno, "KVM_CREATE_PIT2 (use -machine pit=off?)");
            return false;
        }
        /* lost_tick_policy=discard: ticks the guest missed are dropped
         * instead of delivered late in a burst. */
        struct kvm_reinject_control reinject = { .pit_reinject = !kvm_state.pit_discard_lost_ticks };
        if (ioctl(kvm_state.vm_fd, KVM_REINJECT_CONTROL, &reinject) < 0) {
            error_setg_errno(errp, errno, "KVM_REINJECT_CONTROL (kvm-pit.lost_tick_policy)");
            return false;
        }
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(kvm_state.slots); i++) {
        if (kvm_state.slots[i].used && !kvm_set_slot(i, &kvm_state.slots[i], errp)) {
            return false;
        }
    }
    return true;
}

bool kvm_in_kernel_devices(bool *pit, bool *pit_discards_lost_ticks)
{
    *pit = kvm_state.pit;
    *pit_discards_lost_ticks = kvm_state.pit_discard_lost_ticks;
    return kvm_state.vm_fd >= 0;
}

bool kvm_init(bool pit, bool pit_discard_lost_ticks, Error **errp)
{
    kvm_state.kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (kvm_state.kvm_fd < 0) {
        error_setg_errno(errp, errno, "-accel kvm: cannot open /dev/kvm");
        return false;
    }
    int version = ioctl(kvm_state.kvm_fd, KVM_GET_API_VERSION, 0);
    if (version != KVM_API_VERSION) {
        error_setg(errp, "-accel kvm: KVM API version %d, expected %d", version, KVM_API_VERSION);
        return false;
    }
    static const struct { long cap; const char *name; } required[] = {
        { KVM_CAP_IRQCHIP, "in-kernel irqchip" },
        { KVM_CAP_USER_MEMORY, "user memory slots" },
        { KVM_CAP_SET_TSS_ADDR, "TSS address" },
        { KVM_CAP_EXT_CPUID, "CPUID2" },
        { KVM_CAP_IRQ_ROUTING, "GSI routing" },
        { KVM_CAP_SIGNAL_MSI, "MSI injection" },
        { KVM_CAP_IMMEDIATE_EXIT, "immediate exit" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(required); i++) {
        if (ioctl(kvm_state.kvm_fd, KVM_CHECK_EXTENSION, required[i].cap) <= 0) {
            error_setg(errp, "-accel kvm: this KVM lacks %s", required[i].name);
            return false;
        }
    }
    kvm_state.run_size = ioctl(kvm_state.kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (kvm_state.run_size <= 0) {
        error_setg_errno(errp, errno, "KVM_GET_VCPU_MMAP_SIZE");
        return false;
    }
    int nr_slots = ioctl(kvm_state.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_NR_MEMSLOTS);
    kvm_state.max_slots = MIN(nr_slots > 0 ? (unsigned)nr_slots : 32, KVM_MAX_RAM_SLOTS);
    kvm_state.pit = pit;
    kvm_state.pit_discard_lost_ticks = pit_discard_lost_ticks;
    /* The capability's value is the number of GSIs the table may hold. */
    int max_gsis = ioctl(kvm_state.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IRQ_ROUTING);
    kvm_routing_set_backend(kvm_commit_gsi_routing, NULL,
                            MAX(max_gsis - KVM_MSI_ROUTE_FIRST_GSI, 0));
    kvm_irqfd_init();
    if (!kvm_create_vm(errp)) {
        return false;
    }
    irq_set_backend(&(IrqBackend) { .set_level = kvm_irq_set_level, .send_msi = kvm_send_msi });
    memory_init();
    kvm_ram_listener_init();
    kvm_ioeventfd_init();
    kvm_coalesced_init();
    return true;
}

unsigned kvm_fast_paths(void)
{
    return kvm_state.fast_paths;
}

typedef struct RecreatedHook {
    KVMRecreatedHook *fn;
    void *opaque;
} RecreatedHook;

/* Added while the machine is built, read on resets (one thread at a time). */
static GArray *recreated_hooks;

void kvm_add_recreated_hook(KVMRecreatedHook *fn, void *opaque)
{
    if (!recreated_hooks) {
        recreated_hooks = g_array_new(FALSE, FALSE, sizeof(RecreatedHook));
    }
    g_array_append_val(recreated_hooks, ((RecreatedHook) { fn, opaque }));
}

bool kvm_reset_vm(Error **errp)
{
    kvm_destroy_vcpus();
    close(kvm_state.vm_fd);
    if (!kvm_create_vm(errp) || !kvm_recreate_vcpus(errp)) {
        return false;
    }
    for (guint i = 0; recreated_hooks && i < recreated_hooks->len; i++) {
        RecreatedHook *hook = &g_array_index(recreated_hooks, RecreatedHook, i);
        if (!hook->fn(hook->opaque, errp)) {
            return false;
        }
    }
    return true;
}
