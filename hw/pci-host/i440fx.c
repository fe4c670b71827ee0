/*
 * The pc machine's PCI host (hw/pci-host/i440fx.h): the i440FX host bridge
 * at 00:00.0 with configuration mechanism #1, and the PIIX3 PCI-to-ISA
 * bridge at 00:01.0 with its reset control register (Intel 82441FX and
 * 82371SB datasheets; PCI Local Bus Specification 3.0, 3.2.2.3.2).
 *
 * Ports 0xcf8-0xcff are one REGION_LOCK_BY_HANDLER region because 0xcf9 (PIIX3's reset
 * control, byte wide) sits inside CONFIG_ADDRESS (0xcf8, dword wide): the
 * access size decides which register a port means. Each handler takes one
 * device lock at a time: the host bridge's for the address latch, PIIX3's
 * for its register, and the target function's (inside pci_bus_config_*)
 * for a CONFIG_DATA access, after the latch lock is released.
 *
 * PIIX3's PIRQ route registers are plain storage: INTx reaches fixed GSIs
 * that the machine chooses (PCIMapIrqFn) and describes to the guest.
 */
#include <glib.h>
#include "exec/memory.h"
#include "hw/pci-host/i440fx.h"
#include "sysemu/runstate.h"

#define PCI_VENDOR_ID_INTEL         0x8086
#define I440FX_DEVICE_ID            0x1237
#define I440FX_REVISION             0x02
#define PIIX3_DEVICE_ID             0x7000
#define PCI_CLASS_BRIDGE_HOST       0x060000
#define PCI_CLASS_BRIDGE_ISA        0x060100

/*
 * PCI 3.0 (3.2.2.3.2) makes bits 30:24 reserved and bits 1:0 read-only
 * zero. QEMU's host bridges keep all 32 bits as written and OR bits 1:0
 * into the register offset, and guest programs written for QEMU rely on it
 * (a device id read as outl(0x80000002 | devfn << 8, 0xcf8); inw(0xcfc)):
 * so do we. Linux always writes bits 1:0 as zero.
 */
#define CONFIG_ADDRESS_ENABLE       0x80000000u
#define CONFIG_ADDRESS_BUS(a)       (((a) >> 16) & 0xff)
#define CONFIG_ADDRESS_DEVFN(a)     (((a) >> 8) & 0xff)
#define CONFIG_ADDRESS_REGISTER(a)  ((a) & 0xff)
#define CONFIG_PORTS_SIZE           8
#define RESET_CONTROL_PORT_OFFSET   (PIIX3_RESET_CONTROL - I440FX_CONFIG_ADDRESS)
#define CONFIG_DATA_PORT_OFFSET     (I440FX_CONFIG_DATA - I440FX_CONFIG_ADDRESS)

#define PIIX3_PIRQ_ROUTE            0x60    /* PIRQA..PIRQD, one byte each */
#define PIIX3_PIRQ_COUNT            4
#define  PIIX3_PIRQ_DISABLED            0x80
#define  PIIX3_PIRQ_WRITABLE            0x8f    /* disable bit, IRQ number */

typedef struct PIIX3State {
    PCIDevice pci;              /* first: reset gets the QEMUDevice */
    uint8_t reset_control;      /* last value written to 0xcf9 */
} PIIX3State;

typedef struct I440FXState {
    PCIDevice pci;              /* first: reset gets the QEMUDevice */
    PCIBus *bus;
    PIIX3State *piix3;
    MemoryRegion config_ports;  /* 0xcf8-0xcff, locked by its handlers */
    uint32_t config_address;    /* under pci.qdev's lock */
} I440FXState;

static uint32_t all_ones(unsigned size)
{
    return size < 4 ? (1u << (8 * size)) - 1 : UINT32_MAX;
}

/* ---- CONFIG_ADDRESS and CONFIG_DATA ---- */

static uint32_t i440fx_config_address(I440FXState *s)
{
    device_lock(&s->pci.qdev);
    uint32_t address = s->config_address;
    device_unlock(&s->pci.qdev);
    return address;
}

static void i440fx_set_config_address(I440FXState *s, uint32_t value)
{
    device_lock(&s->pci.qdev);
    s->config_address = value;
    device_unlock(&s->pci.qdev);
}

/* Which function and register a CONFIG_DATA access at port_offset (0..3)
 * reaches; false if the latch is disabled or names a bus that does not
 * exist (then it is an I/O access nothing decodes). */
static bool i440fx_config_target(I440FXState *s, uint64_t port_offset, unsigned *devfn,
                                 uint32_t *reg)
{
    uint32_t address = i440fx_config_address(s);
    if (!(address & CONFIG_ADDRESS_ENABLE) || CONFIG_ADDRESS_BUS(address) != 0) {
        return false;
    }
    *devfn = CONFIG_ADDRESS_DEVFN(address);
    *reg = CONFIG_ADDRESS_REGISTER(address) | port_offset;    /* OR, as QEMU */
    return true;
}

/* ---- PIIX3 reset control ---- */

static uint8_t piix3_reset_control(PIIX3State *p)
{
    device_lock(&p->pci.qdev);
    uint8_t value = p->reset_control;
    device_unlock(&p->pci.qdev);
    return value;
}

static void piix3_set_reset_control(PIIX3State *p, uint8_t value)
{
    device_lock(&p->pci.qdev);
    p->reset_control = value;
    device_unlock(&p->pci.qdev);
    if (value & PIIX3_RCR_RESET_CPU) {
        qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
    }
}

/* ---- the ports ---- */

static uint64_t i440fx_ports_read(void *opaque, uint64_t offset, unsigned size)
{
    I440FXState *s = opaque;
    unsigned devfn;
    uint32_t reg;
    if (offset >= CONFIG_DATA_PORT_OFFSET) {
        if (!i440fx_config_target(s, offset - CONFIG_DATA_PORT_OFFSET, &devfn, &reg)) {
            return all_ones(size);
        }
        return pci_bus_config_read(s->bus, devfn, reg, size);
    }
    if (offset == 0 && size == 4) {
        return i440fx_config_address(s);
    }
    if (offset == RESET_CONTROL_PORT_OFFSET && size == 1) {
        return piix3_reset_control(s->piix3);
    }
    /* Other accesses to 0xcf8-0xcfb are plain I/O that nothing decodes. */
    return all_ones(size);
}

static void i440fx_ports_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    I440FXState *s = opaque;
    unsigned devfn;
    uint32_t reg;
    if (offset >= CONFIG_DATA_PORT_OFFSET) {
        if (i440fx_config_target(s, offset - CONFIG_DATA_PORT_OFFSET, &devfn, &reg)) {
            pci_bus_config_write(s->bus, devfn, reg, value, size);
        }
    } else if (offset == 0 && size == 4) {
        i440fx_set_config_address(s, value);
    } else if (offset == RESET_CONTROL_PORT_OFFSET && size == 1) {
        piix3_set_reset_control(s->piix3, value);
    }
    /* Anything else is ignored: Linux probes mechanism #1 with a byte
     * write to 0xcfb that must change nothing. */
}

static const MemoryRegionOps i440fx_ports_ops = {
    .read = i440fx_ports_read,
    .write = i440fx_ports_write,
    .max_access_size = 4,
    .locking = REGION_LOCK_BY_HANDLER,
};

/* ---- reset and creation ---- */

static void i440fx_reset(QEMUDevice *dev)
{
    I440FXState *s = (I440FXState *)dev;
    pci_device_reset(&s->pci);
    s->config_address = 0;
}

static void piix3_reset(QEMUDevice *dev)
{
    PIIX3State *p = (PIIX3State *)dev;
    pci_device_reset(&p->pci);
    p->reset_control = 0;
}

static PIIX3State *piix3_new(PCIBus *bus, Error **errp)
{
    PIIX3State *p = g_new0(PIIX3State, 1);
    if (!pci_device_init(&p->pci, bus, PIIX3_DEVFN, "PIIX3", "piix3", PCI_VENDOR_ID_INTEL,
                         PIIX3_DEVICE_ID, 0, PCI_CLASS_BRIDGE_ISA, 0, errp)) {
        g_free(p);
        return NULL;
    }
    p->pci.qdev.reset = piix3_reset;
    /* Multifunction like the real chip, whose IDE, USB and power
     * management are functions 1-3 of the same slot. */
    pci_set_byte(&p->pci, PCI_HEADER_TYPE, PCI_HEADER_TYPE_MULTI_FUNCTION);
    for (unsigned i = 0; i < PIIX3_PIRQ_COUNT; i++) {
        pci_set_byte(&p->pci, PIIX3_PIRQ_ROUTE + i, PIIX3_PIRQ_DISABLED);
        pci_set_wmask(&p->pci, PIIX3_PIRQ_ROUTE + i, PIIX3_PIRQ_WRITABLE, 1);
    }
    return p;
}

PCIBus *i440fx_init(PCIMapIrqFn map_irq, Error **errp)
{
    I440FXState *s = g_new0(I440FXState, 1);
    s->bus = pci_bus_new(map_irq);
    if (!pci_device_init(&s->pci, s->bus, I440FX_DEVFN, "i440FX", "i440fx",
                         PCI_VENDOR_ID_INTEL, I440FX_DEVICE_ID, I440FX_REVISION,
                         PCI_CLASS_BRIDGE_HOST, 0, errp)) {
        g_free(s->bus);
        g_free(s);
        return NULL;
    }
    s->pci.qdev.reset = i440fx_reset;
    s->piix3 = piix3_new(s->bus, errp);
    if (!s->piix3) {
        return NULL;
    }
    memory_region_init_io(&s->config_ports, &s->pci.qdev, &i440fx_ports_ops, s,
                          "pci-conf", CONFIG_PORTS_SIZE);
    address_space_map(address_space_io, &s->config_ports, I440FX_CONFIG_ADDRESS, 0);
    return s->bus;
}
