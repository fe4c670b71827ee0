/*
 * 16550A UART on the ISA bus (the PC's COM ports).
 */
#ifndef HW_CHAR_SERIAL_H
#define HW_CHAR_SERIAL_H

#include <stdint.h>
#include "chardev/char.h"
#include "qemu/error.h"

typedef struct ISASerial ISASerial;

/*
 * A UART at I/O ports iobase..iobase+7 raising GSI gsi, connected to chr
 * (NULL: output is discarded and there is no input). The device registers
 * itself ("isa-serial", ids serial0, serial1...) and lives until exit.
 */
ISASerial *isa_serial_new(uint16_t iobase, unsigned gsi, Chardev *chr, Error **errp);

#endif
