/*
 * One message-signalled vector raised through an EventNotifier: with
 * KVM's irqfd the kernel injects the message when the notifier is
 * signalled (no VMM lock, no ioctl); otherwise, and while the vector may
 * not be delivered (masked, MSI-X off), user space reads the notifier.
 *
 * The owner (hw/pci/pci-vector-irqfd.c, for msi.c and msix.c) tells it
 * after every change of the vector whether the vector is deliverable and
 * with which message:
 *  - deliverable: the notifier is assigned as an irqfd to an MSI route
 *    (allocated on first use, pointed at each new message);
 *  - not deliverable: the irqfd is deassigned, so signals stay in the
 *    notifier. The owner's `signalled` callback runs on the context's
 *    thread when one arrives, and the owner polls the notifier itself
 *    where the guest must see the signal at once (a PBA read, an unmask).
 * Without KVM_CAP_IRQFD, or when the MSI routes run out (reported once),
 * every signal goes through `signalled`, which sends the message with
 * KVM_SIGNAL_MSI: the same behaviour, slower.
 *
 * A binding lasts as long as its device (there is no unplug yet); its
 * irqfd is deassigned at exit with all others (kvm_irqfd_remove_all).
 *
 * Threads: msi_irqfd_update and msi_irqfd_poll run under the owner's
 * device lock; msi_irqfd_new on the context's thread (or before it runs).
 */
#ifndef HW_PCI_MSI_IRQFD_H
#define HW_PCI_MSI_IRQFD_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/event-notifier.h"

typedef struct MsiIrqfd MsiIrqfd;
/* The notifier was signalled while user space delivers: on the context's
 * thread, no lock held. */
typedef void MsiIrqfdSignalledFn(void *opaque);

/* name is for messages (e.g. "pdltest0 MSI-X vector 1"); copied. Starts
 * not deliverable. */
MsiIrqfd *msi_irqfd_new(const char *name, EventNotifier *notifier, GMainContext *ctx,
                        MsiIrqfdSignalledFn *signalled, void *opaque);
void msi_irqfd_update(MsiIrqfd *irqfd, bool deliverable, uint64_t address, uint32_t data);
/* Consume the signals that reached user space; true if there were any. */
bool msi_irqfd_poll(MsiIrqfd *irqfd);
/* Is the kernel delivering it now? (tests, statistics) */
bool msi_irqfd_in_kernel(const MsiIrqfd *irqfd);

#endif
