/*
 * irqfds (sysemu/kvm-irqfd.h): KVM_IRQFD assignments, recorded so that a
 * re-created VM gets them all again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <glib.h>
#include "kvm-internal.h"
#include "sysemu/kvm-irqfd.h"

typedef struct IrqfdRecord {
    int fd;
    unsigned gsi;
    int resample_fd;            /* -1: edge (MSI) */
} IrqfdRecord;

static atomic_bool irqfd_cap, resample_cap;
/* The record, and the kernel's assignments, change under irqfds_lock. */
static pthread_mutex_t irqfds_lock = PTHREAD_MUTEX_INITIALIZER;
static GArray *irqfds;

bool kvm_irqfd_supported(void)
{
    return atomic_load_explicit(&irqfd_cap, memory_order_relaxed);
}

bool kvm_irqfd_resample_supported(void)
{
    return atomic_load_explicit(&resample_cap, memory_order_relaxed);
}

static bool irqfd_assign(const IrqfdRecord *r, Error **errp)
{
    struct kvm_irqfd irqfd = { .fd = r->fd, .gsi = r->gsi };
    if (r->resample_fd >= 0) {
        irqfd.flags = KVM_IRQFD_FLAG_RESAMPLE;
        irqfd.resamplefd = r->resample_fd;
    }
    if (ioctl(kvm_state.vm_fd, KVM_IRQFD, &irqfd) < 0) {
        error_setg_errno(errp, errno, "KVM_IRQFD (fd %d to GSI %u)", r->fd, r->gsi);
        return false;
    }
    return true;
}

static void irqfd_deassign(const IrqfdRecord *r)
{
    struct kvm_irqfd irqfd = { .fd = r->fd, .gsi = r->gsi, .flags = KVM_IRQFD_FLAG_DEASSIGN };
    if (ioctl(kvm_state.vm_fd, KVM_IRQFD, &irqfd) < 0) {
        error_report("KVM_IRQFD deassign (fd %d from GSI %u): %s", r->fd, r->gsi,
                     strerror(errno));
    }
}

static GArray *irqfds_record(void)
{
    if (!irqfds) {
        irqfds = g_array_new(FALSE, FALSE, sizeof(IrqfdRecord));
    }
    return irqfds;
}

bool kvm_irqfd_add(int fd, unsigned gsi, int resample_fd, Error **errp)
{
    IrqfdRecord record = { .fd = fd, .gsi = gsi, .resample_fd = resample_fd };
    pthread_mutex_lock(&irqfds_lock);
    bool ok = irqfd_assign(&record, errp);
    if (ok) {
        g_array_append_val(irqfds_record(), record);
    }
    pthread_mutex_unlock(&irqfds_lock);
    return ok;
}

void kvm_irqfd_remove(int fd)
{
    pthread_mutex_lock(&irqfds_lock);
    GArray *record = irqfds_record();
    for (guint i = 0; i < record->len; i++) {
        if (g_array_index(record, IrqfdRecord, i).fd == fd) {
            irqfd_deassign(&g_array_index(record, IrqfdRecord, i));
            g_array_remove_index_fast(record, i);
            break;
        }
    }
    pthread_mutex_unlock(&irqfds_lock);
}

void kvm_irqfd_remove_all(void)
{
    pthread_mutex_lock(&irqfds_lock);
    GArray *record = irqfds_record();
    for (guint i = 0; i < record->len; i++) {
        irqfd_deassign(&g_array_index(record, IrqfdRecord, i));
    }
    g_array_set_size(record, 0);
    pthread_mutex_unlock(&irqfds_lock);
}

/* The level a resampling irqfd held died with the old VM: its owner
 * re-checks, as after an EOI, and signals again if still asserted. */
static void irqfd_ask_resample(int resample_fd)
{
    uint64_t one = 1;
    while (write(resample_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
}

static bool irqfds_recreated(void *opaque, Error **errp)
{
    pthread_mutex_lock(&irqfds_lock);
    GArray *record = irqfds_record();
    bool ok = true;
    for (guint i = 0; ok && i < record->len; i++) {
        const IrqfdRecord *r = &g_array_index(record, IrqfdRecord, i);
        ok = irqfd_assign(r, errp);
        if (ok && r->resample_fd >= 0) {
            irqfd_ask_resample(r->resample_fd);
        }
    }
    pthread_mutex_unlock(&irqfds_lock);
    return ok;
}

void kvm_irqfd_init(void)
{
    static bool hooked;
    atomic_store(&irqfd_cap, ioctl(kvm_state.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IRQFD) > 0);
    atomic_store(&resample_cap,
                 ioctl(kvm_state.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IRQFD_RESAMPLE) > 0);
    if (!hooked) {
        kvm_add_recreated_hook(irqfds_recreated, NULL);
        hooked = true;
    }
}
