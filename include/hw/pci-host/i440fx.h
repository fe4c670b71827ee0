/*
 * The pc machine's PCI host: an i440FX host bridge at 00:00.0 (8086:1237)
 * with configuration mechanism #1 (CONFIG_ADDRESS at 0xcf8, dword only;
 * CONFIG_DATA at 0xcfc-0xcff, byte/word/dword), and a PIIX3 PCI-to-ISA
 * bridge at 00:01.0 (8086:7000) whose reset control register answers byte
 * accesses at 0xcf9.
 *
 * Locking: CONFIG_ADDRESS is per-VM state under the host bridge's device
 * lock. A CONFIG_DATA access reads the latch under that lock, drops it, and
 * then accesses the target function under the target's lock
 * (pci_bus_config_*), so a thread never holds two device locks.
 */
#ifndef HW_PCI_HOST_I440FX_H
#define HW_PCI_HOST_I440FX_H

#include "hw/pci/pci.h"
#include "qemu/error.h"

#define I440FX_CONFIG_ADDRESS   0xcf8
#define I440FX_CONFIG_DATA      0xcfc
#define PIIX3_RESET_CONTROL     0xcf9
/* Reset control register bits: a write with RCR_RESET_CPU set resets the
 * machine (the ACPI reset register of our FADT writes 0x06 here). */
#define PIIX3_RCR_SYSTEM_RESET  0x02
#define PIIX3_RCR_RESET_CPU     0x04

#define I440FX_DEVFN            PCI_DEVFN(0, 0)
#define PIIX3_DEVFN             PCI_DEVFN(1, 0)

/* Create bus 0 with both bridges and map the config ports. */
PCIBus *i440fx_init(PCIMapIrqFn map_irq, Error **errp);

#endif
