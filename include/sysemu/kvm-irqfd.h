/*
 * irqfds (KVM_IRQFD): an eventfd that, once assigned to a GSI, makes the
 * kernel inject that GSI's interrupt whenever any thread (or the kernel
 * itself, vhost later) signals it: no VMM lock, no ioctl, no vCPU.
 *
 * - On an MSI route (sysemu/kvm-msi-route.h) a signal sends the route's
 *   message.
 * - On an irqchip GSI with a resample fd (level-triggered INTx) a signal
 *   asserts the line; when the guest EOIs it, the kernel deasserts the line
 *   and signals the resample fd, and the owner re-checks its level and
 *   signals again if it is still asserted. The kernel ORs this source with
 *   the level user space sets with KVM_IRQ_LINE (hw/irq.h), so devices
 *   sharing the GSI are unaffected.
 *
 * Every assignment is recorded: kvm_reset_vm (reset, S3 wake-up) assigns
 * them all again to the new VM, and then signals every resample fd, since
 * the level the kernel held died with the old VM.
 *
 * Threads: any thread, device lock held or not. The record has its own
 * mutex, taken under device locks and never around anything else.
 */
#ifndef SYSEMU_KVM_IRQFD_H
#define SYSEMU_KVM_IRQFD_H

#include <stdbool.h>
#include "qemu/error.h"

/* KVM_CAP_IRQFD / KVM_CAP_IRQFD_RESAMPLE of the running KVM; false before
 * kvm_init and without KVM (unit tests): callers deliver from user space
 * instead. */
bool kvm_irqfd_supported(void);
bool kvm_irqfd_resample_supported(void);

/* Assign fd to gsi; resample_fd is -1, or the resample fd of a
 * level-triggered irqchip GSI. */
bool kvm_irqfd_add(int fd, unsigned gsi, int resample_fd, Error **errp);
/* Deassign fd. When this returns the kernel no longer consumes its
 * signals: they stay in the eventfd. */
void kvm_irqfd_remove(int fd);
/* Deassign every irqfd (at exit, once the vCPUs are stopped). */
void kvm_irqfd_remove_all(void);

#endif
