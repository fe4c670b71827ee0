/*
 * The VM's GSI routing table, kept in user space.
 *
 * KVM_SET_GSI_ROUTING replaces the whole table, so every change commits the
 * PC's irqchip routes (GSIs 0-23: PIC and IOAPIC, fixed) together with the
 * MSI routes: one message (address, data) per GSI from
 * KVM_MSI_ROUTE_FIRST_GSI up. An MSI route is what an irqfd for a message-
 * signalled vector points at (sysemu/kvm-irqfd.h).
 *
 * Threads: any thread, with or without a device lock held (MSI-X table
 * writes change routes on vCPU threads under the function's lock). The
 * table has its own mutex, held from a change until its commit returns, so
 * commits reach the kernel in the order of the changes; nothing else is
 * taken under it. The table outlives the VM fd: kvm_reset_vm commits it
 * again into the new VM.
 */
#ifndef SYSEMU_KVM_MSI_ROUTE_H
#define SYSEMU_KVM_MSI_ROUTE_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>
#include "hw/irq.h"
#include "qemu/error.h"

/* MSI routes start above the IOAPIC's pins. */
#define KVM_MSI_ROUTE_FIRST_GSI IRQ_MAX_GSI

/* Hands a complete table to the kernel (KVM_SET_GSI_ROUTING), or to a
 * test's fake. */
typedef bool KVMRoutingCommitFn(void *opaque, const struct kvm_irq_routing *table,
                                Error **errp);

/* Where tables go, and how many MSI routes they may hold (what the kernel
 * allows minus the irqchip GSIs). Set once, before any route exists. */
void kvm_routing_set_backend(KVMRoutingCommitFn *commit, void *opaque, unsigned max_msi_routes);
/* Commit the current table (the VM was just created). */
bool kvm_routing_commit(Error **errp);

/* A route for (address, data): returns its GSI, or -1 with errp set when
 * every MSI route is taken or the kernel refused the table. */
int kvm_msi_route_add(uint64_t address, uint32_t data, Error **errp);
/* Point an existing route at a new message; commits only on a change. */
bool kvm_msi_route_update(unsigned gsi, uint64_t address, uint32_t data, Error **errp);
/* Free the route (its GSI may be handed out again). */
void kvm_msi_route_remove(unsigned gsi);
/* MSI routes in use, for tests and statistics. */
unsigned kvm_msi_routes_used(void);

#endif
