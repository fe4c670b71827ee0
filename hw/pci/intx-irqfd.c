/* INTx through a resampling irqfd (hw/pci/intx-irqfd.h). */
#include <glib.h>
#include "hw/pci/intx-irqfd.h"
#include "qemu/event-notifier.h"
#include "qemu/fd-watch.h"
#include "sysemu/kvm-irqfd.h"

struct PCIIntxIrqfd {
    PCIDevice *dev;
    EventNotifier trigger;      /* we signal: KVM asserts the GSI */
    EventNotifier resample;     /* KVM signals: the guest EOI'd, line deasserted */
    FdWatch *resample_watch;
    bool level;                 /* the function's effective level; device lock */
};

void pci_intx_irqfd_set_level(PCIIntxIrqfd *irqfd, bool level)
{
    /* A fall needs nothing: KVM deasserts at the guest's EOI. */
    if (level && !irqfd->level) {
        event_notifier_set(&irqfd->trigger);
    }
    irqfd->level = level;
}

static void pci_intx_irqfd_resampled(void *opaque, GIOCondition revents)
{
    PCIIntxIrqfd *irqfd = opaque;
    event_notifier_test_and_clear(&irqfd->resample);
    device_lock(&irqfd->dev->qdev);
    if (irqfd->level) {
        event_notifier_set(&irqfd->trigger);
    }
    device_unlock(&irqfd->dev->qdev);
}

bool pci_intx_irqfd_enable(PCIDevice *dev, GMainContext *ctx, Error **errp)
{
    if (!kvm_irqfd_resample_supported() || !dev->intx_routed) {
        return true;
    }
    PCIIntxIrqfd *irqfd = g_new0(PCIIntxIrqfd, 1);
    irqfd->dev = dev;
    if (!event_notifier_init(&irqfd->trigger, errp)) {
        g_free(irqfd);
        return false;
    }
    if (!event_notifier_init(&irqfd->resample, errp) ||
        !kvm_irqfd_add(irqfd->trigger.fd, dev->intx.gsi, irqfd->resample.fd, errp)) {
        event_notifier_cleanup(&irqfd->resample);
        event_notifier_cleanup(&irqfd->trigger);
        g_free(irqfd);
        return false;
    }
    irqfd->resample_watch = fd_watch_new(ctx, irqfd->resample.fd, G_IO_IN, NULL,
                                         pci_intx_irqfd_resampled, irqfd);
    dev->intx_irqfd = irqfd;
    return true;
}
