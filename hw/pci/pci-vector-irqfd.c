/*
 * A PCI function's MSI or MSI-X vector raised through an EventNotifier
 * (hw/pci/pci-vector-irqfd.h).
 */
#include <glib.h>
#include "hw/pci/msi-irqfd.h"
#include "hw/pci/pci-vector-irqfd.h"

struct PCIVectorIrqfd {
    PCIDevice *dev;
    unsigned vector;
    PCIVectorNotifyFn *notify;
    MsiIrqfd *irqfd;
};

void pci_vector_irqfd_take_signals(PCIVectorIrqfd *v)
{
    if (msi_irqfd_poll(v->irqfd)) {
        v->notify(v->dev, v->vector);
    }
}

static void pci_vector_irqfd_signalled(void *opaque)
{
    PCIVectorIrqfd *v = opaque;
    device_lock(&v->dev->qdev);
    pci_vector_irqfd_take_signals(v);
    device_unlock(&v->dev->qdev);
}

PCIVectorIrqfd *pci_vector_irqfd_new(PCIDevice *dev, const char *kind, unsigned vector,
                                     PCIVectorNotifyFn *notify, EventNotifier *notifier,
                                     GMainContext *ctx)
{
    PCIVectorIrqfd *v = g_new0(PCIVectorIrqfd, 1);
    g_autofree char *name = g_strdup_printf("%s %s vector %u", dev->qdev.id, kind, vector);
    v->dev = dev;
    v->vector = vector;
    v->notify = notify;
    v->irqfd = msi_irqfd_new(name, notifier, ctx, pci_vector_irqfd_signalled, v);
    return v;
}

void pci_vector_irqfd_update(PCIVectorIrqfd *v, bool deliverable, uint64_t address,
                             uint32_t data)
{
    pci_vector_irqfd_take_signals(v);
    msi_irqfd_update(v->irqfd, deliverable, address, data);
}

bool pci_vector_irqfd_in_kernel(const PCIVectorIrqfd *v)
{
    return msi_irqfd_in_kernel(v->irqfd);
}
