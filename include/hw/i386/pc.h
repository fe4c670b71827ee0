/*
 * The pc machine: i440FX/PIIX-like PC built from a MachineConfig, with its
 * RAM, ISA devices, MP table and directly booted kernel.
 */
#ifndef HW_I386_PC_H
#define HW_I386_PC_H

#include <stdbool.h>
#include "qemu/error.h"
#include "sysemu/machine-config.h"

/* Above this much RAM, the part from 3 GiB up moves above 4 GiB so that the
 * PCI hole fits below 4 GiB. */
#define PC_LOWMEM_MAX       0xe0000000ULL
#define PC_LOWMEM_SPLIT     0xc0000000ULL
#define PC_HIGHMEM_START    0x100000000ULL

/* Build the machine and start its vCPUs. */
bool pc_machine_start(const MachineConfig *cfg, Error **errp);
/* Reset: every vCPU and device back to power-on state, kernel reloaded.
 * Runs on the I/O thread. */
void pc_machine_reset(void);
/* ACPI S3: stop every vCPU and keep all state. Runs on the I/O thread. */
void pc_machine_suspend(void);
/* A wake-up event: if suspended and the guest enabled RTC wake-up, reset
 * the devices and vCPUs as the power cycle would, and start the boot CPU
 * at the FACS waking vector in real mode, where firmware would jump. */
void pc_machine_wakeup(void);
/* Stop the vCPUs and flush the serial backends (at exit). */
void pc_machine_stop(void);

#endif
