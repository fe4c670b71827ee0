/*
 * What the virtio PCI transport's two register interfaces share
 * (hw/virtio/virtio-pci.c, the modern one and the function; and
 * hw/virtio/virtio-pci-legacy.c, the legacy I/O BAR). All of it runs with
 * the function's device lock held.
 */
#ifndef HW_VIRTIO_VIRTIO_PCI_INTERNAL_H
#define HW_VIRTIO_VIRTIO_PCI_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/virtio/virtio-pci.h"

/*
 * A write through iface that makes the driver use it (anything but a
 * reset): true if the driver uses iface since the last reset, or used
 * none so far (it does now); false, logged, if it uses the other one.
 */
bool virtio_pci_driver_uses(VirtIOPCIProxy *p, VirtIOPCIDriverInterface iface,
                            const char *what);
/* The driver wrote the device status through iface: 0 resets whatever
 * interface the driver used; anything else is a use of iface. */
void virtio_pci_write_status(VirtIOPCIProxy *p, VirtIOPCIDriverInterface iface,
                             uint8_t status);
/* The driver kicked queue: served now on this thread. */
void virtio_pci_queue_kicked(VirtIOPCIProxy *p, unsigned queue);
/* A doorbell write seen by a register handler (device lock held): takes
 * the queue's lock as well (virtio_queue_lock_nested), then kicks. */
void virtio_pci_register_kick(VirtIOPCIProxy *p, unsigned queue);
/* queue was enabled through iface: its doorbell there becomes an
 * ioeventfd (unless ioeventfd=off). */
void virtio_pci_declare_doorbell(VirtIOPCIProxy *p, unsigned queue,
                                 VirtIOPCIDriverInterface iface);
/* value as an MSI-X vector of the function, or NO_VECTOR (logged). */
uint16_t virtio_pci_checked_vector(VirtIOPCIProxy *p, uint64_t value);
/* A read of the ISR: the bits, cleared, and INTx dropped. */
uint8_t virtio_pci_isr_acknowledge(VirtIOPCIProxy *p);

/* Give the function its legacy register block as I/O BAR 0. */
void virtio_pci_legacy_init(VirtIOPCIProxy *p);

#endif
