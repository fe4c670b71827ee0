/*
 * What the files of the fuzz-platform harness share (README.md has the
 * input format): the input cursor, guest accesses through the dispatch
 * path, PCI configuration through the ports, guest RAM, and the devices
 * under test with the "driver" that gives each its structured operations.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "exec/memory.h"
#include "hw/pci/pci.h"
#include "hw/qdev-registry.h"

#define FUZZ_RAM_SIZE       (64ULL << 20)

/* The bytes of one input not yet consumed. */
typedef struct FuzzInput {
    const uint8_t *data;
    size_t size;
} FuzzInput;

/* The next n (at most 8) bytes as a little-endian number; zeros past the
 * end of the input. */
uint64_t input_take(FuzzInput *in, unsigned n);

/* ---- guest accesses (fuzz-guest.c), traced with FUZZ_TRACE=1 ---- */

extern bool fuzz_trace;

uint64_t guest_read(AddressSpace *as, uint64_t addr, unsigned size);
void guest_write(AddressSpace *as, uint64_t addr, uint64_t value, unsigned size);
/* A block of guest memory, as a guest's CPU would store it. */
void guest_write_block(uint64_t addr, const void *buf, size_t len);

/* Configuration mechanism #1 on bus 0, as a guest's driver uses it. */
uint32_t pci_config_read_port(unsigned devfn, unsigned offset, unsigned size);
void pci_config_write_port(unsigned devfn, unsigned offset, uint32_t value, unsigned size);
/* Set bits in the COMMAND register (decoding, bus mastering). */
void pci_enable(unsigned devfn, uint16_t command_bits);

/* Where BAR nr of devfn is now (as the guest programmed it), and whether
 * it is I/O space. A 64-bit BAR includes its upper half. */
typedef struct FuzzBar {
    AddressSpace *as;
    uint64_t addr;
} FuzzBar;
FuzzBar pci_bar(unsigned devfn, unsigned nr);

/* ---- the devices under test (fuzz-devices.c) ---- */

typedef struct FuzzDevice FuzzDevice;

/*
 * A guest driver's structured operations on one kind of device: what
 * random port and memory accesses would seldom reach (a virtqueue with a
 * chain on it, an ATA command with its PRD table). Each reads its
 * operands from the input.
 */
typedef struct FuzzDriver {
    const char *name;
    /* After the machine is built: find what the driver needs (capabilities). */
    void (*probe)(FuzzDevice *dev);
    /* At the start of every input: forget what the last one set up. */
    void (*reset)(FuzzDevice *dev);
    void (*op)(FuzzDevice *dev, FuzzInput *in);
} FuzzDriver;

/* A device as the harness knows it once created (see fuzz-devices.c). */
struct FuzzDevice {
    const char *option;             /* as -device would take it */
    const FuzzDriver *driver;       /* NULL: accesses and config only */
    QEMUDevice *qdev;
    int devfn;                      /* -1: not a PCI function */
    int ide_bus, ide_unit;          /* an IDE drive: where it sits */
    void *state;                    /* the driver's */
};

extern const FuzzDriver fuzz_virtio_driver;    /* fuzz-virtio.c */
extern const FuzzDriver fuzz_ide_driver;       /* fuzz-ide.c */
extern const FuzzDriver fuzz_e1000_driver;     /* fuzz-wire.c: frames from the wire */
/* fuzz-wire.c: the virtio driver's operations, and frames from the wire */
extern const FuzzDriver fuzz_virtio_net_driver;

/* The netdevs the NICs are attached to (fuzz-wire.c): they drop what the
 * NIC sends, and the NIC drivers' operations send frames through them;
 * the vnet ones with virtio-net headers, as a tap with offloads. */
#define FUZZ_E1000_WIRE_ID          "fuzz-wire"
#define FUZZ_E1000_VNET_WIRE_ID     "fuzz-vnet-wire"
#define FUZZ_VIRTIO_NET_WIRE_ID     "fuzz-virtio-net-wire"
bool fuzz_wires_create(Error **errp);

/* Open the drives on temporary images and create the devices. */
bool fuzz_devices_create(const DeviceBuses *buses, Error **errp);
/* Once the BARs are assigned: each driver finds what it needs. */
void fuzz_devices_probe(void);
unsigned fuzz_device_count(void);
FuzzDevice *fuzz_device(unsigned index);
/* Before an input: images back to their first contents (the devices are
 * drained), drivers forget their state. */
void fuzz_devices_reset(void);

/* Complete everything the devices have started: kicks served, host I/O
 * finished and its completions run, the interrupts they scheduled sent. */
void fuzz_settle(void);

#endif
