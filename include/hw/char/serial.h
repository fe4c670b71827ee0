/*
 * 16550A UART on the ISA bus (the PC's COM ports).
 */
#ifndef HW_CHAR_SERIAL_H
#define HW_CHAR_SERIAL_H

#include <stdint.h>
#include "chardev/char.h"
#include "hw/qdev-registry.h"
#include "qemu/error.h"

#define ISA_SERIAL_PORTS 4      /* COM1..COM4 */

typedef struct ISASerial ISASerial;

/*
 * A UART at I/O ports iobase..iobase+7 raising GSI gsi, connected to chr
 * (NULL: output is discarded and there is no input). The device registers
 * itself ("isa-serial", ids serial0, serial1...) and lives until exit.
 */
ISASerial *isa_serial_new(uint32_t iobase, unsigned gsi, Chardev *chr, Error **errp);
/* COM port index + 1 (index < ISA_SERIAL_PORTS) at the PC's address and
 * interrupt line for it. */
ISASerial *isa_serial_new_com(unsigned index, Chardev *chr, Error **errp);

/* -device isa-serial[,index=N][,iobase=PORT][,irq=N] */
extern const DeviceTypeInfo isa_serial_type;

#endif
