/*
 * MSI and MSI-X for PCI functions (PCI Local Bus Specification 3.0, 6.8).
 *
 * Messages are delivered with msi_send_message() (hw/irq.h), which needs no
 * lock. All functions here are called with the function's device lock held.
 */
#ifndef HW_PCI_MSI_H
#define HW_PCI_MSI_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "hw/pci/pci.h"
#include "qemu/event-notifier.h"

/* ---- MSI: a capability in config space ---- */

/* Add an MSI capability with nr_vectors (1, 2, 4, 8, 16 or 32) vectors,
 * 64-bit addresses and per-vector masking. Returns the capability offset. */
uint8_t msi_init(PCIDevice *dev, unsigned nr_vectors);
bool msi_enabled(const PCIDevice *dev);
/* Send vector (< the number the guest enabled); a masked vector is left
 * pending and sent when the guest unmasks it. Vectors out of range are
 * dropped and logged. */
void msi_notify(PCIDevice *dev, unsigned vector);

/* ---- MSI-X: a capability plus the table and PBA in a memory BAR ---- */

#define MSIX_TABLE_ENTRY_SIZE   16
#define MSIX_MAX_VECTORS        2048

/* Add an MSI-X capability with nr_vectors (1..2048) and register BAR
 * bar_nr (32-bit memory, owned by dev) holding the table at offset 0 and
 * the PBA at the first 4 KiB boundary after it. Every vector starts
 * masked. Returns the capability offset. */
uint8_t msix_init(PCIDevice *dev, unsigned nr_vectors, unsigned bar_nr);
/* The same in BAR bar_nr, a memory BAR that dev registered with a
 * container (memory_region_init_container) and shares with its other
 * registers, as virtio-pci does: the table at table_offset and the PBA at
 * pba_offset, both 8-byte aligned, inside the BAR and apart. Where the
 * BAR's other subregions overlap them, the priorities of
 * memory_region_add_subregion decide (MSI-X's are 0). */
uint8_t msix_init_in_bar(PCIDevice *dev, unsigned nr_vectors, unsigned bar_nr,
                         uint32_t table_offset, uint32_t pba_offset);
bool msix_enabled(const PCIDevice *dev);
bool msix_vector_masked(const PCIDevice *dev, unsigned vector);
/* Send vector; a masked vector (or a masked function) sets its PBA bit and
 * is sent when unmasked. Vectors out of range are dropped and logged. */
void msix_notify(PCIDevice *dev, unsigned vector);

/*
 * Raise vector through notifier instead of msix_notify (hw/pci/msi-irqfd.h):
 * any thread, no lock, event_notifier_set(notifier). While the vector is
 * enabled and unmasked, KVM injects it (irqfd); while it is masked, a
 * signal sets its PBA bit (seen by the next PBA read at the latest) and is
 * sent on unmask; with MSI-X off it is dropped. Without irqfd, user space
 * reads the notifier on ctx's thread and sends the message. msix_notify
 * stays usable for the vector. Call on ctx's thread, with the device lock
 * held or before the vCPUs run. The binding lasts as long as the device.
 */
void msix_vector_use_notifier(PCIDevice *dev, unsigned vector, EventNotifier *notifier,
                              GMainContext *ctx);
/* Does the kernel deliver the vector's signals now (irqfd assigned)? */
bool msix_vector_in_kernel(const PCIDevice *dev, unsigned vector);

/* As msix_vector_use_notifier, for an MSI vector: the kernel delivers it
 * while MSI is on, the vector enabled (MME) and not masked; masked, a
 * signal sets its pending bit (seen by the next read of the pending bits
 * at the latest). */
void msi_vector_use_notifier(PCIDevice *dev, unsigned vector, EventNotifier *notifier,
                             GMainContext *ctx);
bool msi_vector_in_kernel(const PCIDevice *dev, unsigned vector);

/* Called by the PCI core (config reads and writes, reset); not for device
 * models. */
void msi_config_read(PCIDevice *dev, uint32_t offset, unsigned len);
void msi_config_written(PCIDevice *dev, uint32_t offset, unsigned len);
void msix_config_written(PCIDevice *dev, uint32_t offset, unsigned len);
void msi_reset(PCIDevice *dev);
void msix_reset(PCIDevice *dev);

#endif
