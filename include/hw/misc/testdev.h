/*
 * Test devices for guest-side test suites.
 *
 * QEMU's own (same ports and register layout as QEMU 7.2, so suites
 * written for QEMU, such as kvm-unit-tests, run unchanged):
 *  - pc-testdev: ISA ports and an MMIO window (see hw/misc/pc-testdev.c);
 *  - pci-testdev: PCI 1b36:0005 with a memory and an I/O BAR whose test
 *    entries count hits (see hw/misc/pci-testdev.c).
 *
 * Ours, pdl-testdev (include/hw/misc/pdl-testdev-regs.h has its layout):
 * a PCI function with an MMIO BAR, an I/O BAR with the same registers, an
 * MSI-X BAR, INTx, MSI and a DMA doorbell, to test the PCI core before real
 * devices exist and to load a device in the lock benchmarks.
 */
#ifndef HW_MISC_TESTDEV_H
#define HW_MISC_TESTDEV_H

#include <stdbool.h>
#include "hw/pci/pci.h"
#include "hw/qdev-registry.h"
#include "qemu/error.h"

QEMUDevice *pc_testdev_new(Error **errp);
/* devfn < 0: first free slot, as -device without addr=. */
QEMUDevice *pci_testdev_new(PCIBus *bus, int devfn, Error **errp);
QEMUDevice *pdl_testdev_new(PCIBus *bus, int devfn, Error **errp);

/* -device pc-testdev, pci-testdev, pdl-testdev */
extern const DeviceTypeInfo pc_testdev_type;
extern const DeviceTypeInfo pci_testdev_type;
extern const DeviceTypeInfo pdl_testdev_type;

#endif
