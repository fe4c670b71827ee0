/*
 * The PCI device model every PCI function reuses: 256 bytes of type-0
 * configuration space with per-byte writable and write-1-to-clear masks,
 * BARs that follow what the guest programs, a capability list, INTx with
 * the PCI 2.3 interrupt-disable/interrupt-status bits, and (hw/pci/msi.h)
 * MSI and MSI-X.
 *
 * Locking: a PCIDevice's state (config space, BARs, MSI state) belongs to
 * its QEMUDevice and is touched with device_lock(&pci->qdev) held. The host
 * bridge (hw/pci-host) takes that lock around pci_config_read/write; device
 * callbacks are called with it held. BAR moves publish a new flat view
 * (exec/memory.h), so a vCPU never sees a half-moved BAR, even when it is
 * the vCPU that is reprogramming the BAR.
 *
 * Guest input is hostile: accesses past the end of config space, unaligned
 * or crossing a dword, reads 0xff.. and writes are dropped (and logged with
 * -d guest_errors); a BAR programmed over RAM stays hidden behind the RAM.
 */
#ifndef HW_PCI_PCI_H
#define HW_PCI_PCI_H

#include <stdbool.h>
#include <stdint.h>
#include "exec/memory.h"
#include "hw/irq.h"
#include "hw/qdev.h"
#include "qemu/error.h"

#define PCI_CONFIG_SPACE_SIZE   256
#define PCI_NUM_BARS            6
#define PCI_SLOT_MAX            32
#define PCI_FUNC_MAX            8
#define PCI_DEVFN(slot, fn)     ((((slot) & 0x1f) << 3) | ((fn) & 0x07))
#define PCI_SLOT(devfn)         (((devfn) >> 3) & 0x1f)
#define PCI_FUNC(devfn)         ((devfn) & 0x07)

/* Config space offsets (PCI Local Bus Specification 3.0, type 0 header). */
#define PCI_VENDOR_ID           0x00
#define PCI_DEVICE_ID           0x02
#define PCI_COMMAND             0x04
#define  PCI_COMMAND_IO             0x0001
#define  PCI_COMMAND_MEMORY         0x0002
#define  PCI_COMMAND_MASTER         0x0004
#define  PCI_COMMAND_SERR           0x0100
#define  PCI_COMMAND_INTX_DISABLE   0x0400
#define PCI_STATUS              0x06
#define  PCI_STATUS_INTERRUPT       0x0008
#define  PCI_STATUS_CAP_LIST        0x0010
#define PCI_REVISION_ID         0x08
#define PCI_CLASS_PROG          0x09
#define PCI_CLASS_DEVICE        0x0a    /* class << 8 | subclass */
#define PCI_HEADER_TYPE         0x0e
#define  PCI_HEADER_TYPE_MULTI_FUNCTION 0x80
#define PCI_BASE_ADDRESS_0      0x10
#define  PCI_BASE_ADDRESS_SPACE_IO      0x01
#define  PCI_BASE_ADDRESS_MEM_TYPE_64   0x04
#define  PCI_BASE_ADDRESS_MEM_PREFETCH  0x08
#define PCI_SUBSYSTEM_VENDOR_ID 0x2c
#define PCI_SUBSYSTEM_ID        0x2e
#define PCI_CAPABILITY_LIST     0x34
#define PCI_INTERRUPT_LINE      0x3c
#define PCI_INTERRUPT_PIN       0x3d
#define PCI_CAP_ID_MSI          0x05
#define PCI_CAP_ID_VNDR         0x09
#define PCI_CAP_ID_MSIX         0x11

/* Nothing is mapped at this BAR address. */
#define PCI_BAR_UNMAPPED        UINT64_MAX
/* What a function decodes (BARs, and fixed ranges such as the PIIX4 PM
 * I/O that PMBA places) is mapped below RAM and the ISA devices (priority
 * 0): a guest that moves it over them gets theirs there. */
#define PCI_DECODE_PRIORITY     (-1)

typedef struct PCIBus PCIBus;
typedef struct PCIDevice PCIDevice;

typedef struct PCIBar {
    MemoryRegion *region;       /* NULL: BAR not implemented (reads 0) */
    uint64_t size;              /* power of two, == region->size */
    uint8_t type;               /* low bits of the BAR: IO, or MEM flags */
    uint64_t addr;              /* where it is mapped, or PCI_BAR_UNMAPPED */
} PCIBar;

typedef struct MSIState MSIState;
typedef struct MSIXState MSIXState;
typedef struct PCIIntxIrqfd PCIIntxIrqfd;

struct PCIDevice {
    QEMUDevice qdev;            /* first: a PCIDevice is a QEMUDevice */
    PCIBus *bus;
    uint8_t devfn;
    uint8_t config[PCI_CONFIG_SPACE_SIZE];
    uint8_t wmask[PCI_CONFIG_SPACE_SIZE];   /* bits the guest may write */
    uint8_t w1cmask[PCI_CONFIG_SPACE_SIZE]; /* bits a written 1 clears */
    uint8_t cap_next_free;      /* where the next capability goes */
    PCIBar bars[PCI_NUM_BARS];
    IrqSource intx;             /* the GSI that INTx of this slot/pin reaches */
    bool intx_routed;           /* intx is claimed: the pin is driven through it */
    bool intx_asserted;         /* the device's wish, before INTX_DISABLE */
    PCIIntxIrqfd *intx_irqfd;   /* NULL: INTx by KVM_IRQ_LINE (hw/pci/intx-irqfd.h) */
    MSIState *msi;              /* NULL without an MSI capability */
    MSIXState *msix;            /* NULL without an MSI-X capability */

    /* Optional; called after the generic config write handling (masks,
     * BARs, command, MSI), with the device lock held. */
    void (*config_written)(PCIDevice *dev, uint32_t offset, uint32_t value, unsigned len);
};

/* ---- the bus (one, bus 0) ---- */

/* Which GSI the given INTx pin (1 = INTA .. 4 = INTD) of a slot reaches;
 * set by the machine, which also describes it to the guest (ACPI _PRT,
 * MP table). */
typedef unsigned (*PCIMapIrqFn)(unsigned slot, unsigned pin);

PCIBus *pci_bus_new(PCIMapIrqFn map_irq);
/* The function at devfn, or NULL. */
PCIDevice *pci_bus_device(PCIBus *bus, unsigned devfn);
/* The buses pci_bus_new made, in creation order (query-pci lists them):
 * the first with prev NULL, then the one after prev; NULL at the end. */
PCIBus *pci_root_bus_next(PCIBus *prev);

/* Serialised config-space access to the function at devfn (takes its
 * device lock; the caller holds no device lock). A missing function reads
 * all ones and ignores writes. offset + len must lie in 0..255 and len be
 * 1, 2 or 4; anything else reads all ones / is dropped. */
uint32_t pci_bus_config_read(PCIBus *bus, unsigned devfn, uint32_t offset, unsigned len);
void pci_bus_config_write(PCIBus *bus, unsigned devfn, uint32_t offset, uint32_t value,
                          unsigned len);

/*
 * Firmware's job, done by the VMM since there is none: give every
 * implemented BAR an address (IO from io_base up, memory from mem_base up,
 * each naturally aligned), and write INTERRUPT_LINE with the GSI of the
 * device's pin. Memory and I/O decoding stay off until the guest's driver
 * enables them, as after a BIOS that does not enable them itself.
 * The limits are inclusive (last usable address), as in hw/acpi/acpi.h.
 * Returns false if the windows are too small.
 */
bool pci_bus_assign_resources(PCIBus *bus, uint64_t io_base, uint64_t io_limit,
                              uint64_t mem_base, uint64_t mem_limit, Error **errp);

/* Reset every function: config space to its power-on values (the
 * registers' reset values, BARs unmapped), INTx deasserted, MSI/MSI-X
 * disabled. Called from each device's reset. The power-on values are the
 * config space as it stood at the function's first guest config write (or
 * first reset): as built, plus pci_bus_assign_resources()'s BAR addresses
 * and interrupt line, as a BIOS would program them again after a reset. */
void pci_device_reset(PCIDevice *dev);

/* ---- building a function (before the vCPUs run) ---- */

/*
 * Initialise dev's config space with the ids and class, make the standard
 * writable bits writable (command, status w1c, cache line, latency,
 * interrupt line, BARs as registered), register it as a QEMUDevice (type,
 * id_prefix as for device_init) and plug it into bus at devfn, or at the
 * first free slot's function 0 if devfn < 0 (as QEMU's -device without
 * addr=). Fails if devfn is taken or invalid, or the bus is full.
 * interrupt_pin: 0 for none, 1..4 for INTA..INTD. class_code: 24 bits,
 * class << 16 | subclass << 8 | programming interface.
 */
bool pci_device_init(PCIDevice *dev, PCIBus *bus, int devfn, const char *type,
                     const char *id_prefix, uint16_t vendor_id, uint16_t device_id,
                     uint8_t revision, uint32_t class_code, uint8_t interrupt_pin,
                     Error **errp);

/* multifunction=on, as QEMU's: set bit 7 of this function's header type,
 * which tells a guest scanning function 0 to look at the slot's others.
 * (Function 0 of a slot with several functions gets it anyway: see
 * pci_device_init.) Before the guest runs. */
void pci_device_set_multifunction(PCIDevice *dev);

/* Declare BAR nr, backed by region mr (whose owner must be &dev->qdev and
 * whose size must be a power of two, at least 4 for IO, 16 for memory).
 * type: PCI_BASE_ADDRESS_SPACE_IO, or 0 / PCI_BASE_ADDRESS_MEM_TYPE_64 /
 * PCI_BASE_ADDRESS_MEM_PREFETCH for memory. A 64-bit BAR uses nr and nr+1. */
void pci_register_bar(PCIDevice *dev, unsigned nr, uint8_t type, MemoryRegion *mr);

/* A function whose pin register names an INTx pin it never drives, its
 * interrupt reaching a fixed line of its own instead: the PIIX4 PM's SCI
 * on ISA IRQ 9, which firmware writes into INTERRUPT_LINE. Instead of an
 * interrupt_pin for pci_device_init; pci_bus_assign_resources leaves the
 * line alone and pci_set_irq changes only STATUS.INTERRUPT. */
void pci_set_unrouted_interrupt_pin(PCIDevice *dev, uint8_t pin, uint8_t line);

/* Append a capability of the given id and length (bytes, including the
 * id/next header) to the capability list; returns its offset. The body is
 * zero and read-only until the caller sets wmask bits. */
uint8_t pci_add_capability(PCIDevice *dev, uint8_t cap_id, uint8_t len);

/* Little-endian accessors of config space (no masks, no side effects). */
uint8_t pci_get_byte(const PCIDevice *dev, uint32_t offset);
uint16_t pci_get_word(const PCIDevice *dev, uint32_t offset);
uint32_t pci_get_long(const PCIDevice *dev, uint32_t offset);
void pci_set_byte(PCIDevice *dev, uint32_t offset, uint8_t value);
void pci_set_word(PCIDevice *dev, uint32_t offset, uint16_t value);
void pci_set_long(PCIDevice *dev, uint32_t offset, uint32_t value);
/* Make the bits of mask (len 1, 2 or 4 bytes at offset, little-endian)
 * guest-writable, and the others read-only. */
void pci_set_wmask(PCIDevice *dev, uint32_t offset, uint32_t mask, unsigned len);

/* ---- at run time, device lock held ---- */

/* The generic config access (masks, BAR sizing and moves, command
 * register, MSI/MSI-X control), as pci_bus_config_* call it. */
uint32_t pci_config_read(PCIDevice *dev, uint32_t offset, unsigned len);
void pci_config_write(PCIDevice *dev, uint32_t offset, uint32_t value, unsigned len);

/* Assert or deassert the device's INTx pin. The line follows unless the
 * command register's INTX_DISABLE is set; STATUS.INTERRUPT always shows
 * the device's wish (PCI 2.3, which uio_pci_generic relies on). */
void pci_set_irq(PCIDevice *dev, bool level);

/* Tell whoever debugs (-d guest_errors) when mr, which the guest had the
 * function decode at addr in as (what: "BAR 2", "PM I/O"), is hidden there
 * by another mapping. */
void pci_log_if_hidden(const PCIDevice *dev, AddressSpace *as, MemoryRegion *mr,
                       uint64_t addr, const char *what);

/* May the device master the bus (COMMAND.MASTER)? DMA must check it. */
bool pci_bus_master_enabled(const PCIDevice *dev);

#endif
