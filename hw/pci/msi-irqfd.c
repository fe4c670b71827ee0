/*
 * A message-signalled vector raised through an EventNotifier
 * (hw/pci/msi-irqfd.h): irqfd on an MSI route while deliverable, user
 * space otherwise.
 */
#include <stdatomic.h>
#include <glib.h>
#include "hw/pci/msi-irqfd.h"
#include "qemu/fd-watch.h"
#include "sysemu/kvm-irqfd.h"
#include "sysemu/kvm-msi-route.h"

struct MsiIrqfd {
    char *name;
    EventNotifier *notifier;
    GMainContext *ctx;
    FdWatch *watch;             /* polls the notifier while !in_kernel */
    MsiIrqfdSignalledFn *signalled;
    void *opaque;
    /* Read without the owner's lock by the watch's prepare. */
    atomic_bool in_kernel;
    int gsi;                    /* MSI route, -1 before first use */
    bool user_space_only;       /* no route could be had: reported once */
};

static GIOCondition msi_irqfd_watch_prepare(void *opaque)
{
    MsiIrqfd *irqfd = opaque;
    return atomic_load(&irqfd->in_kernel) ? 0 : G_IO_IN;
}

static void msi_irqfd_watch_ready(void *opaque, GIOCondition revents)
{
    MsiIrqfd *irqfd = opaque;
    irqfd->signalled(irqfd->opaque);
}

MsiIrqfd *msi_irqfd_new(const char *name, EventNotifier *notifier, GMainContext *ctx,
                        MsiIrqfdSignalledFn *signalled, void *opaque)
{
    MsiIrqfd *irqfd = g_new0(MsiIrqfd, 1);
    irqfd->name = g_strdup(name);
    irqfd->notifier = notifier;
    irqfd->ctx = ctx;
    irqfd->signalled = signalled;
    irqfd->opaque = opaque;
    irqfd->gsi = -1;
    irqfd->watch = fd_watch_new(ctx, notifier->fd, G_IO_IN, msi_irqfd_watch_prepare,
                                msi_irqfd_watch_ready, irqfd);
    return irqfd;
}

/* Who delivers changed: the context's poll must ask prepare again. */
static void msi_irqfd_set_in_kernel(MsiIrqfd *irqfd, bool in_kernel)
{
    atomic_store(&irqfd->in_kernel, in_kernel);
    g_main_context_wakeup(irqfd->ctx);
}

static void msi_irqfd_fall_back(MsiIrqfd *irqfd, Error *err)
{
    error_report("%s: %s; its interrupts are sent from user space (KVM_SIGNAL_MSI)",
                 irqfd->name, err->msg);
    error_free(err);
    irqfd->user_space_only = true;
}

/* Point the vector's route at the message; false: user space delivers. */
static bool msi_irqfd_route(MsiIrqfd *irqfd, uint64_t address, uint32_t data)
{
    Error *err = NULL;
    if (irqfd->user_space_only) {
        return false;
    }
    if (irqfd->gsi < 0) {
        irqfd->gsi = kvm_msi_route_add(address, data, &err);
    } else if (!kvm_msi_route_update(irqfd->gsi, address, data, &err)) {
        /* The kernel's table still holds the old message. */
        error_report("%s: %s", irqfd->name, err->msg);
        error_free(err);
        return false;
    }
    if (irqfd->gsi < 0) {
        msi_irqfd_fall_back(irqfd, err);
        return false;
    }
    return true;
}

void msi_irqfd_update(MsiIrqfd *irqfd, bool deliverable, uint64_t address, uint32_t data)
{
    bool in_kernel = atomic_load(&irqfd->in_kernel);
    bool want_kernel = deliverable && kvm_irqfd_supported() &&
                       msi_irqfd_route(irqfd, address, data);
    if (want_kernel && !in_kernel) {
        Error *err = NULL;
        if (kvm_irqfd_add(irqfd->notifier->fd, irqfd->gsi, -1, &err)) {
            msi_irqfd_set_in_kernel(irqfd, true);
        } else {
            msi_irqfd_fall_back(irqfd, err);
        }
    } else if (!want_kernel && in_kernel) {
        kvm_irqfd_remove(irqfd->notifier->fd);
        msi_irqfd_set_in_kernel(irqfd, false);
    }
}

bool msi_irqfd_poll(MsiIrqfd *irqfd)
{
    return event_notifier_test_and_clear(irqfd->notifier);
}

bool msi_irqfd_in_kernel(const MsiIrqfd *irqfd)
{
    return atomic_load(&irqfd->in_kernel);
}
