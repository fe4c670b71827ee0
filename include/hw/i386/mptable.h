/*
 * Intel MultiProcessor Specification 1.4 tables, so that a guest without
 * ACPI (or before it parses ACPI) finds every vCPU and the IOAPIC.
 */
#ifndef HW_I386_MPTABLE_H
#define HW_I386_MPTABLE_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/i386/boot.h"
#include "hw/pci/pci.h"

#define MPTABLE_ADDR        0x000f0000ULL   /* in the BIOS area, e820-reserved */
#define MPTABLE_MAX_SIZE    0x00010000ULL
#define IOAPIC_ADDR         0xfec00000ULL
#define LAPIC_ADDR          0xfee00000ULL

typedef struct MPTableConfig {
    unsigned ncpus;
    const uint32_t *apic_ids;   /* ncpus entries; apic_ids[0] is the BSP */
    uint32_t cpu_signature;     /* CPUID.1:EAX of the vCPUs */
    uint32_t cpu_features;      /* CPUID.1:EDX of the vCPUs */
    /* With a PCI bus: where each slot's INTA-D go (IOAPIC pin = GSI);
     * NULL for a machine without PCI. */
    PCIMapIrqFn pci_map_irq;
} MPTableConfig;

/* Write the floating pointer and the configuration table at MPTABLE_ADDR:
 * one processor entry per vCPU, an ISA bus, one IOAPIC (id above every
 * APIC id), ISA IRQs 0-15 routed to the IOAPIC pins of a PC (IRQ 0 on pin
 * 2, IRQ 2 is the cascade and absent), with a PCI bus the INTA-D of
 * slots 1-31 (level, active low), ExtINT on LINT0 and NMI on LINT1.
 * The IOAPIC id is returned through ioapic_id if it is not NULL. */
bool mptable_build(GuestMemory *mem, const MPTableConfig *cfg, uint8_t *ioapic_id,
                   Error **errp);

#endif
