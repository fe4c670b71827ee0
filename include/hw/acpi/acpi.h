/*
 * ACPI for the pc machine: the tables (generated at start from the
 * machine's configuration) and the power-management device they describe.
 *
 * Fixed hardware, at QEMU's PIIX4 addresses: PM1a event block at
 * ACPI_PM_BASE (PM1_STS, PM1_EN), PM1a control block at +4 (PM1_CNT), the
 * 24-bit PM timer at +8; SCI on ISA IRQ 9 (level, active high); no SMI
 * command port, so the machine is always in ACPI mode (SCI_EN reads 1).
 * The reset register is PIIX3's reset control register (0xcf9, value 6).
 * Sleep types (DSDT \_S3, \_S4, \_S5): see ACPI_SLP_TYP_*.
 */
#ifndef HW_ACPI_ACPI_H
#define HW_ACPI_ACPI_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/i386/boot.h"
#include "hw/pci/pci.h"
#include "qemu/error.h"

#define ACPI_PM_BASE            0x600
#define ACPI_PM1_EVT_LEN        4
#define ACPI_PM1_CNT_OFFSET     4       /* from ACPI_PM_BASE */
#define ACPI_PM_TMR_OFFSET      8
#define ACPI_PM1_CNT_LEN        2
#define ACPI_PM_TMR_LEN         4
#define ACPI_PM_TIMER_HZ        3579545
#define ACPI_SCI_IRQ            9

/* PM1_CNT.SLP_TYP values of the DSDT's sleep packages (as QEMU's PIIX4). */
#define ACPI_SLP_TYP_S5         0
#define ACPI_SLP_TYP_S3         1
#define ACPI_SLP_TYP_S4         2

/* Where the tables go: the RSDP where a BIOS would put it (Linux searches
 * 0xe0000-0xfffff), the rest right after it. The pc machine e820-reserves
 * this area. */
#define ACPI_TABLES_ADDR        0x000e0000ULL
#define ACPI_TABLES_MAX_SIZE    0x00010000ULL

typedef struct AcpiTablesConfig {
    unsigned ncpus;
    const uint32_t *apic_ids;   /* ncpus entries */
    uint8_t ioapic_id;
    /* The PCI host bridge's windows, for its _CRS. */
    uint16_t pci_io_base, pci_io_limit;         /* inclusive */
    uint32_t pci_mem_base, pci_mem_limit;       /* inclusive */
    /* INTx routing for the _PRT: the GSI of (slot, pin 1..4). */
    PCIMapIrqFn pci_map_irq;
    bool fw_cfg;                /* describe fw_cfg (QEMU0002) at 0x510 */
    /* Leave the \_S3 / \_S4 sleep-state package out (PIIX4_PM's
     * disable_s3/disable_s4). */
    bool disable_s3, disable_s4;
} AcpiTablesConfig;

/* Write RSDP, XSDT, RSDT, FADT, FACS, MADT and DSDT into guest RAM at
 * ACPI_TABLES_ADDR; every table checksummed. *rsdp_addr and *facs_addr
 * say where two of them landed. */
bool acpi_build_tables(GuestMemory *mem, const AcpiTablesConfig *cfg, uint64_t *rsdp_addr,
                       uint64_t *facs_addr, Error **errp);

/* ---- the PM device (hw/acpi/pm.c) ---- */

/* The PIIX4 power-management function, as on QEMU's pc. */
#define PIIX4_PM_DEVFN          PCI_DEVFN(1, 3)

typedef struct AcpiPMState AcpiPMState;

/*
 * The PCI function 00:01.3 (8086:7113) on bus, its configuration space as
 * SeaBIOS leaves it on QEMU, the PM registers decoding at ACPI_PM_BASE
 * until the guest moves them (PMBA, PMREGMISC).
 * What the guest asked for by writing PM1_CNT with SLP_EN: S5 and S4 end
 * the VMM (status 0), S3 suspends (runstate.h qemu_system_suspend_request).
 * The PM timer needs no lock (REGION_LOCK_FREE: none with device-lock=on):
 * it is a function of the host's monotonic clock, so it cannot tear.
 */
AcpiPMState *acpi_pm_new(PCIBus *bus, Error **errp);
/* Once every device of the machine exists: the DEVRESC bits that QEMU
 * sets for the COM ports it finds (before the first reset, so that a
 * reset keeps them). */
void acpi_pm_machine_done(AcpiPMState *pm);
/* Resume from S3: set PM1_STS.WAK_STS, and RTC_STS when woken by the RTC
 * alarm, as the guest's wake-up code expects to find them. */
void acpi_pm_set_woken(AcpiPMState *pm, bool by_rtc);
/* Press the power button (system_powerdown): if the guest enabled
 * PWRBTN_EN, PM1_STS.PWRBTN_STS and an SCI; else nothing, as QEMU. */
void acpi_pm_power_button(AcpiPMState *pm);
/* Whether the guest enabled the RTC alarm as a wake event (PM1_EN.RTC_EN). */
bool acpi_pm_rtc_wake_enabled(AcpiPMState *pm);
/* The timer's 24-bit value now (for tests and the benchmark). */
uint32_t acpi_pm_timer_now(void);

#endif
