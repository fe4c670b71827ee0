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

/* Build the machine, with its vCPUs paused until vm_start, and install
 * its run-state hooks (reset, S3 wake-up, power button: MachineRunOps). */
bool pc_machine_start(const MachineConfig *cfg, Error **errp);
/* Stop the vCPUs and flush the serial backends (at exit). */
void pc_machine_stop(void);

#endif
