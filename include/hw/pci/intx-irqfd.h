/*
 * A PCI function's INTx through a resampling irqfd (sysemu/kvm-irqfd.h):
 * KVM asserts the GSI when the trigger notifier is signalled, deasserts it
 * when the guest EOIs, and signals the resample notifier; the handler then
 * re-checks the function's level and signals again while it is still
 * asserted. Raising INTx becomes an eventfd write, with no ioctl and no
 * per-line mutex, and the kernel ORs this source with the KVM_IRQ_LINE
 * levels of the other devices on the GSI (hw/irq.h).
 *
 * A level the function drops before the guest's EOI stays asserted until
 * that EOI: the guest may see one interrupt its handler finds no cause
 * for, as with any shared level-triggered line.
 *
 * Threads: the PCI core calls pci_intx_irqfd_set_level under the
 * function's device lock; the resample handler takes that lock on ctx's
 * thread.
 */
#ifndef HW_PCI_INTX_IRQFD_H
#define HW_PCI_INTX_IRQFD_H

#include <stdbool.h>
#include <glib.h>
#include "hw/pci/pci.h"
#include "qemu/error.h"

/* Move dev's INTx to a resampling irqfd on its GSI, if KVM offers
 * KVM_CAP_IRQFD_RESAMPLE; otherwise INTx stays on KVM_IRQ_LINE and this
 * returns true all the same (as for a function whose INTx reaches no GSI:
 * no pin, or an unrouted one). Before the vCPUs run, on ctx's thread. */
bool pci_intx_irqfd_enable(PCIDevice *dev, GMainContext *ctx, Error **errp);
/* The function's effective INTx level (pci.c, device lock held). */
void pci_intx_irqfd_set_level(PCIIntxIrqfd *irqfd, bool level);

#endif
