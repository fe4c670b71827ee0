/*
 * Small ISA devices of the PC that have no state worth a header of their
 * own: QEMU's isa-debug-exit and the port 0x80 POST/delay port.
 */
#ifndef HW_MISC_ISA_MISC_H
#define HW_MISC_ISA_MISC_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/qdev-registry.h"
#include "qemu/error.h"

#define ISA_DEBUG_EXIT_DEFAULT_IOBASE   0x501
#define ISA_DEBUG_EXIT_DEFAULT_IOSIZE   2
#define PORT80_IOBASE                   0x80

/*
 * -device isa-debug-exit,iobase=,iosize=: a guest write of value V to any
 * of its iosize ports ends the VMM with exit status (V << 1) | 1. iosize
 * must be 1, 2 or 4 and the range must lie within the 64 KiB port space.
 */
QEMUDevice *isa_debug_exit_new(uint32_t iobase, uint32_t iosize, Error **errp);
extern const DeviceTypeInfo isa_debug_exit_type;

/* The POST code / I/O delay port at 0x80: latches the last byte written. */
void port80_new(void);

#endif
