/*
 * A PCI function's MSI or MSI-X vector raised through an EventNotifier:
 * the glue between an MsiIrqfd (hw/pci/msi-irqfd.h) and the capability
 * that owns the vector (hw/pci/msi.c, hw/pci/msix.c).
 *
 * Signals that reached user space go where the capability's notify
 * function sends any raise of the vector: out, into the pending bits while
 * masked, nowhere while the capability is off. The capability calls
 * pci_vector_irqfd_update after every change of the vector (its message,
 * its mask, the capability's enable, a reset) under the function's device
 * lock; `signalled` callbacks take that lock themselves.
 */
#ifndef HW_PCI_PCI_VECTOR_IRQFD_H
#define HW_PCI_PCI_VECTOR_IRQFD_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "hw/pci/pci.h"
#include "qemu/event-notifier.h"

typedef void PCIVectorNotifyFn(PCIDevice *dev, unsigned vector);
typedef struct PCIVectorIrqfd PCIVectorIrqfd;

/* kind names the capability in messages ("MSI", "MSI-X"). Starts not
 * deliverable: the caller updates it at once. */
PCIVectorIrqfd *pci_vector_irqfd_new(PCIDevice *dev, const char *kind, unsigned vector,
                                     PCIVectorNotifyFn *notify, EventNotifier *notifier,
                                     GMainContext *ctx);
/* Pass the signals waiting in user space to notify (a pending-bits read
 * must show them). */
void pci_vector_irqfd_take_signals(PCIVectorIrqfd *v);
/* The signals that waited first, then the kernel delivers for as long as
 * the vector is deliverable, with this message. */
void pci_vector_irqfd_update(PCIVectorIrqfd *v, bool deliverable, uint64_t address,
                             uint32_t data);
bool pci_vector_irqfd_in_kernel(const PCIVectorIrqfd *v);

#endif
