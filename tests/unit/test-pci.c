/*
 * The PCI core, MSI/MSI-X and the i440FX/PIIX3 host, driven through the
 * bus's config accessors and the address spaces' dispatch path, with a
 * recording interrupt backend instead of KVM.
 */
#include <stdatomic.h>
#include <string.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/irq.h"
#include "hw/pci-host/i440fx.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "pio.h"
#include "qemu/log.h"
#include "sysemu/runstate.h"

#define TEST_VENDOR_ID      0x1234
#define TEST_DEVICE_ID      0x5678
#define TEST_REVISION       3
#define TEST_CLASS          0xff0001u
#define TEST_IO_SIZE        0x20
#define TEST_MMIO_SIZE      0x1000
#define TEST_MMIO64_SIZE    0x4000
#define TEST_IO_BAR         0
#define TEST_MMIO_BAR       1
#define TEST_MMIO64_BAR     2       /* and 3 */
#define TEST_FREE_BAR       4
#define TEST_GSI_BASE       16
#define MSI_WINDOW          0xfee00000u

/* MSI / MSI-X register offsets, as the PCI specification lays them out. */
#define MSI_CONTROL         2
#define MSI_ADDRESS_LO      4
#define MSI_ADDRESS_HI      8
#define MSI_DATA            12
#define MSI_MASK            16
#define MSI_PENDING         20
#define MSIX_CONTROL        2
#define  MSIX_ENABLE            0x8000
#define  MSIX_FUNCTION_MASK     0x4000
#define MSIX_TABLE          4
#define MSIX_PBA            8

/* ---- a recording interrupt backend ---- */

static struct {
    unsigned level_changes[IRQ_MAX_GSI];
    bool level[IRQ_MAX_GSI];
    unsigned msis;
    uint64_t msi_address;
    uint32_t msi_data;
} rec;

static void rec_set_level(void *opaque, unsigned gsi, bool level)
{
    rec.level[gsi] = level;
    rec.level_changes[gsi]++;
}

static void rec_send_msi(void *opaque, uint64_t address, uint32_t data)
{
    rec.msis++;
    rec.msi_address = address;
    rec.msi_data = data;
}

/* Four slots share each GSI, as the PC's PIRQ links do. */
static unsigned test_map_irq(unsigned slot, unsigned pin)
{
    return TEST_GSI_BASE + (slot + pin - 1) % 4;
}

/* ---- a dummy PCI function with an I/O, a memory and a 64-bit BAR ---- */

typedef struct TestFn {
    PCIDevice pci;
    MemoryRegion io, mmio, mmio64;
    uint64_t last_write;
    PCIBus *bus;
} TestFn;

static uint64_t testfn_read(void *opaque, uint64_t offset, unsigned size)
{
    return 0xab000000 | offset;
}

/* A write to the memory BAR at offset 0x10 moves that BAR to the written
 * address: a vCPU that reprograms the BAR from inside its own handler. */
static void testfn_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    TestFn *t = opaque;
    t->last_write = value;
    if (offset == 0x10 && size == 4) {
        pci_config_write(&t->pci, PCI_BASE_ADDRESS_0 + 4 * TEST_MMIO_BAR, value, 4);
    }
}

static const MemoryRegionOps testfn_ops = {
    .read = testfn_read,
    .write = testfn_write,
    .max_access_size = 4,
};

static TestFn *testfn_new(PCIBus *bus, int devfn, uint8_t pin)
{
    TestFn *t = g_new0(TestFn, 1);
    Error *err = NULL;
    g_assert_true(pci_device_init(&t->pci, bus, devfn, "test-fn", "test-fn", TEST_VENDOR_ID,
                                  TEST_DEVICE_ID, TEST_REVISION, TEST_CLASS, pin, &err));
    g_assert_null(err);
    t->bus = bus;
    memory_region_init_io(&t->io, &t->pci.qdev, &testfn_ops, t, "test-io", TEST_IO_SIZE);
    memory_region_init_io(&t->mmio, &t->pci.qdev, &testfn_ops, t, "test-mmio", TEST_MMIO_SIZE);
    memory_region_init_io(&t->mmio64, &t->pci.qdev, &testfn_ops, t, "test-mmio64",
                          TEST_MMIO64_SIZE);
    pci_register_bar(&t->pci, TEST_IO_BAR, PCI_BASE_ADDRESS_SPACE_IO, &t->io);
    pci_register_bar(&t->pci, TEST_MMIO_BAR, 0, &t->mmio);
    pci_register_bar(&t->pci, TEST_MMIO64_BAR,
                     PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH, &t->mmio64);
    return t;
}

static uint32_t cfg_read(TestFn *t, uint32_t offset, unsigned len)
{
    return pci_bus_config_read(t->bus, t->pci.devfn, offset, len);
}

static void cfg_write(TestFn *t, uint32_t offset, uint32_t value, unsigned len)
{
    pci_bus_config_write(t->bus, t->pci.devfn, offset, value, len);
}

static uint32_t bar_offset(unsigned nr)
{
    return PCI_BASE_ADDRESS_0 + 4 * nr;
}

static MemoryRegion *mem_at(uint64_t addr)
{
    return address_space_lookup(address_space_memory, addr, NULL);
}

static MemoryRegion *io_at(uint64_t port)
{
    return address_space_lookup(address_space_io, port, NULL);
}

static PCIBus *new_bus(void)
{
    return pci_bus_new(test_map_irq);
}

/* ---- config space ---- */

static void test_config_masks(void)
{
    TestFn *t = testfn_new(new_bus(), -1, 1);

    g_assert_cmphex(cfg_read(t, PCI_VENDOR_ID, 4), ==, TEST_DEVICE_ID << 16 | TEST_VENDOR_ID);
    cfg_write(t, PCI_VENDOR_ID, 0, 4);
    g_assert_cmphex(cfg_read(t, PCI_VENDOR_ID, 4), ==, TEST_DEVICE_ID << 16 | TEST_VENDOR_ID);
    g_assert_cmphex(cfg_read(t, PCI_REVISION_ID, 4), ==, TEST_CLASS << 8 | TEST_REVISION);
    cfg_write(t, PCI_REVISION_ID, 0, 4);
    g_assert_cmphex(cfg_read(t, PCI_REVISION_ID, 4), ==, TEST_CLASS << 8 | TEST_REVISION);
    g_assert_cmphex(cfg_read(t, PCI_INTERRUPT_PIN, 1), ==, 1);

    /* Only IO, MEM, MASTER, SERR and INTX_DISABLE are writable (as on QEMU). */
    cfg_write(t, PCI_COMMAND, 0xffff, 2);
    g_assert_cmphex(cfg_read(t, PCI_COMMAND, 2), ==, PCI_COMMAND_IO | PCI_COMMAND_MEMORY |
                    PCI_COMMAND_MASTER | PCI_COMMAND_SERR | PCI_COMMAND_INTX_DISABLE);
    g_assert_true(pci_bus_master_enabled(&t->pci));
    cfg_write(t, PCI_COMMAND, 0, 2);
    g_assert_false(pci_bus_master_enabled(&t->pci));

    /* Status error bits clear when written with 1, and only those. */
    device_lock(&t->pci.qdev);
    pci_set_word(&t->pci, PCI_STATUS, 0x2100);     /* master abort, parity */
    device_unlock(&t->pci.qdev);
    cfg_write(t, PCI_STATUS, 0x0100 | PCI_STATUS_CAP_LIST | PCI_STATUS_INTERRUPT, 2);
    g_assert_cmphex(cfg_read(t, PCI_STATUS, 2), ==, 0x2000);
    cfg_write(t, PCI_STATUS, 0, 2);
    g_assert_cmphex(cfg_read(t, PCI_STATUS, 2), ==, 0x2000);
    cfg_write(t, PCI_COMMAND, 0x2000 << 16, 4);     /* dword write reaching status */
    g_assert_cmphex(cfg_read(t, PCI_STATUS, 2), ==, 0);

    cfg_write(t, PCI_INTERRUPT_LINE, 0x0b, 1);
    g_assert_cmphex(cfg_read(t, PCI_INTERRUPT_LINE, 2), ==, 0x010b);
    g_assert_cmphex(cfg_read(t, PCI_SUBSYSTEM_VENDOR_ID, 2), ==, 0x1af4);
}

static void test_config_bad_access(void)
{
    PCIBus *bus = new_bus();
    TestFn *t = testfn_new(bus, PCI_DEVFN(4, 0), 1);
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MASTER, 2);

    g_assert_cmphex(cfg_read(t, 0xfe, 4), ==, 0xffffffff);     /* past the end */
    g_assert_cmphex(cfg_read(t, 0xff, 2), ==, 0xffff);
    g_assert_cmphex(cfg_read(t, 0x100, 1), ==, 0xff);
    g_assert_cmphex(cfg_read(t, UINT32_MAX, 4), ==, 0xffffffff);
    g_assert_cmphex(cfg_read(t, PCI_VENDOR_ID + 1, 2), ==, 0xffff);    /* misaligned */
    g_assert_cmphex(cfg_read(t, PCI_VENDOR_ID + 2, 4), ==, 0xffffffff); /* crosses a dword */
    g_assert_cmphex(cfg_read(t, PCI_VENDOR_ID, 3), ==, 0xffffff);
    g_assert_cmphex(cfg_read(t, PCI_VENDOR_ID, 8), ==, 0xffffffff);

    cfg_write(t, PCI_COMMAND - 1, 0xffffffff, 2);
    cfg_write(t, PCI_COMMAND + 1, 0xffffffff, 4);
    cfg_write(t, PCI_COMMAND, 0xffffffff, 3);
    cfg_write(t, 0xfd, 0xffffffff, 4);
    g_assert_cmphex(cfg_read(t, PCI_COMMAND, 2), ==, PCI_COMMAND_MASTER);

    /* Nothing at the address: all ones, writes vanish. */
    g_assert_cmphex(pci_bus_config_read(bus, PCI_DEVFN(5, 0), 0, 4), ==, 0xffffffff);
    g_assert_cmphex(pci_bus_config_read(bus, 300, 0, 2), ==, 0xffff);
    pci_bus_config_write(bus, PCI_DEVFN(5, 0), PCI_COMMAND, 7, 2);
    pci_bus_config_write(bus, 300, PCI_COMMAND, 7, 2);
    g_assert_null(pci_bus_device(bus, 300));
}

/* ---- BARs ---- */

static void test_bar_sizing(void)
{
    TestFn *t = testfn_new(new_bus(), -1, 0);

    g_assert_cmphex(cfg_read(t, bar_offset(TEST_IO_BAR), 4), ==, PCI_BASE_ADDRESS_SPACE_IO);
    g_assert_cmphex(cfg_read(t, bar_offset(TEST_MMIO64_BAR), 4), ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH);

    for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
        cfg_write(t, bar_offset(nr), 0xffffffff, 4);
    }
    g_assert_cmphex(cfg_read(t, bar_offset(TEST_IO_BAR), 4), ==,
                    ~(uint32_t)(TEST_IO_SIZE - 1) | PCI_BASE_ADDRESS_SPACE_IO);
    g_assert_cmphex(cfg_read(t, bar_offset(TEST_MMIO_BAR), 4), ==,
                    ~(uint32_t)(TEST_MMIO_SIZE - 1));
    g_assert_cmphex(cfg_read(t, bar_offset(TEST_MMIO64_BAR), 4), ==,
                    ~(uint32_t)(TEST_MMIO64_SIZE - 1) | PCI_BASE_ADDRESS_MEM_TYPE_64 |
                    PCI_BASE_ADDRESS_MEM_PREFETCH);
    g_assert_cmphex(cfg_read(t, bar_offset(TEST_MMIO64_BAR + 1), 4), ==, 0xffffffff);
    g_assert_cmphex(cfg_read(t, bar_offset(TEST_FREE_BAR), 4), ==, 0);
    g_assert_cmphex(cfg_read(t, bar_offset(5), 4), ==, 0);

    /* Sizing with decoding on must not map the BARs at the sizing pattern. */
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_IO | PCI_COMMAND_MEMORY, 2);
    for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
        g_assert_cmphex(t->pci.bars[nr].addr, ==, PCI_BAR_UNMAPPED);
    }
    cfg_write(t, PCI_COMMAND, 0, 2);
}

static void test_bar_mapping(void)
{
    TestFn *t = testfn_new(new_bus(), -1, 0);
    uint64_t offset = 0;

    cfg_write(t, bar_offset(TEST_MMIO_BAR), 0xe0000000, 4);
    cfg_write(t, bar_offset(TEST_IO_BAR), 0xc000, 4);
    g_assert_null(mem_at(0xe0000000));
    g_assert_null(io_at(0xc000));

    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
    g_assert_true(mem_at(0xe0000010) == &t->mmio);
    g_assert_true(address_space_lookup(address_space_memory, 0xe0000ffc, &offset) == &t->mmio);
    g_assert_cmphex(offset, ==, 0xffc);
    g_assert_null(mem_at(0xe0001000));
    g_assert_null(io_at(0xc000));
    uint32_t value = 0;
    g_assert_cmpint(address_space_read(address_space_memory, 0xe0000024, &value, 4), ==,
                    MEMTX_OK);
    g_assert_cmphex(value, ==, 0xab000024);

    /* Relocation: gone from the old place, present at the new one. */
    cfg_write(t, bar_offset(TEST_MMIO_BAR), 0xe0100000, 4);
    g_assert_null(mem_at(0xe0000000));
    g_assert_true(mem_at(0xe0100000) == &t->mmio);
    g_assert_cmphex(t->pci.bars[TEST_MMIO_BAR].addr, ==, 0xe0100000);

    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_IO, 2);
    g_assert_true(io_at(0xc01f) == &t->io);
    g_assert_null(io_at(0xc020));
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_IO, 2);
    g_assert_null(mem_at(0xe0100000));
    g_assert_true(io_at(0xc000) == &t->io);

    /* An I/O BAR past 0xffff and a BAR at 0 decode nothing. */
    cfg_write(t, bar_offset(TEST_IO_BAR), 0x10000, 4);
    g_assert_null(io_at(0xc000));
    g_assert_null(io_at(0));
    g_assert_cmphex(t->pci.bars[TEST_IO_BAR].addr, ==, PCI_BAR_UNMAPPED);
    cfg_write(t, bar_offset(TEST_IO_BAR), 0xfff0, 4);     /* aligns down to 0xffe0 */
    g_assert_cmphex(cfg_read(t, bar_offset(TEST_IO_BAR), 4), ==, 0xffe1);
    g_assert_true(io_at(0xffff) == &t->io);
    cfg_write(t, PCI_COMMAND, 0, 2);
    g_assert_null(io_at(0xffff));

    /* The 64-bit BAR spans two registers. */
    cfg_write(t, bar_offset(TEST_MMIO64_BAR), 0x40000000, 4);
    cfg_write(t, bar_offset(TEST_MMIO64_BAR + 1), 0x1, 4);
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
    g_assert_true(mem_at(0x140000000) == &t->mmio64);
    g_assert_null(mem_at(0x40000000));
    cfg_write(t, bar_offset(TEST_MMIO64_BAR + 1), 0x2, 4);
    g_assert_null(mem_at(0x140000000));
    g_assert_true(mem_at(0x240003fff) == &t->mmio64);

    /* The device's own handler moves its BAR back to 0xe0000000. */
    value = 0xe0200000;
    g_assert_cmpint(address_space_write(address_space_memory, 0xe0100010, &value, 4), ==,
                    MEMTX_OK);
    g_assert_cmphex(t->last_write, ==, 0xe0200000);
    g_assert_null(mem_at(0xe0100000));
    g_assert_true(mem_at(0xe0200000) == &t->mmio);
    cfg_write(t, PCI_COMMAND, 0, 2);
    g_assert_null(mem_at(0xe0200000));
    g_assert_null(mem_at(0x240000000));
}

#define MOVER_ROUNDS    2000
#define MOVER_ADDR_A    0xe8000000u
#define MOVER_ADDR_B    0xe8100000u

typedef struct BarMover {
    TestFn *t;
    atomic_bool done;
} BarMover;

static gpointer bar_mover_thread(gpointer opaque)
{
    BarMover *m = opaque;
    for (unsigned i = 0; i < MOVER_ROUNDS; i++) {
        cfg_write(m->t, bar_offset(TEST_MMIO_BAR), i % 2 ? MOVER_ADDR_A : MOVER_ADDR_B, 4);
    }
    atomic_store(&m->done, true);
    return NULL;
}

/* A vCPU reading while another moves the BAR sees the device or nothing,
 * never a torn map. */
static void test_bar_move_under_readers(void)
{
    BarMover m = { .t = testfn_new(new_bus(), -1, 0) };
    cfg_write(m.t, bar_offset(TEST_MMIO_BAR), MOVER_ADDR_A, 4);
    cfg_write(m.t, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
    GThread *mover = g_thread_new("bar-mover", bar_mover_thread, &m);
    while (!atomic_load(&m.done)) {
        for (uint64_t addr = MOVER_ADDR_A; addr <= MOVER_ADDR_B; addr += 0x100000) {
            uint32_t value = 0;
            address_space_read(address_space_memory, addr + 4, &value, 4);
            g_assert_true(value == 0xab000004 || value == 0xffffffff);
        }
    }
    g_thread_join(mover);
    g_assert_true(mem_at(MOVER_ADDR_A) == &m.t->mmio);
    g_assert_null(mem_at(MOVER_ADDR_B));
    cfg_write(m.t, PCI_COMMAND, 0, 2);
}

static void test_bar_over_ram(void)
{
    /* Static: once unmapped, only an old flat view that RCU frees later
     * still points at the region. */
    static uint8_t ram_bytes[0x6000];
    static MemoryRegion ram_region;
    MemoryRegion *ram = &ram_region;
    memory_region_init_ram(ram, "test-ram", 0x6000, ram_bytes);
    address_space_map(address_space_memory, ram, 0x80000000, 0);
    TestFn *t = testfn_new(new_bus(), -1, 0);

    cfg_write(t, bar_offset(TEST_MMIO_BAR), 0x80001000, 4);
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
    g_assert_true(mem_at(0x80001000) == ram);
    ram_bytes[0x1004] = 0x5a;
    uint8_t byte = 0;
    address_space_read(address_space_memory, 0x80001004, &byte, 1);
    g_assert_cmphex(byte, ==, 0x5a);

    /* Half over RAM: the RAM half stays RAM. */
    cfg_write(t, bar_offset(TEST_MMIO64_BAR), 0x80004000, 4);
    g_assert_true(mem_at(0x80005fff) == ram);
    g_assert_true(mem_at(0x80006000) == &t->mmio64);

    cfg_write(t, bar_offset(TEST_MMIO_BAR), 0x90000000, 4);
    g_assert_true(mem_at(0x80001000) == ram);
    g_assert_true(mem_at(0x90000000) == &t->mmio);
    cfg_write(t, PCI_COMMAND, 0, 2);
    address_space_unmap(address_space_memory, ram);
}

/* ---- INTx ---- */

static void set_irq(TestFn *t, bool level)
{
    device_lock(&t->pci.qdev);
    pci_set_irq(&t->pci, level);
    device_unlock(&t->pci.qdev);
}

static void test_intx_sharing(void)
{
    PCIBus *bus = new_bus();
    TestFn *a = testfn_new(bus, PCI_DEVFN(3, 0), 1);
    TestFn *b = testfn_new(bus, PCI_DEVFN(7, 0), 1);
    unsigned gsi = test_map_irq(3, 1);
    g_assert_cmpuint(gsi, ==, test_map_irq(7, 1));
    g_assert_cmpuint(a->pci.intx.gsi, ==, gsi);
    g_assert_cmpuint(b->pci.intx.gsi, ==, gsi);
    unsigned changes = rec.level_changes[gsi];

    set_irq(a, true);
    g_assert_true(irq_line_level(gsi));
    set_irq(b, true);
    set_irq(a, false);
    g_assert_true(irq_line_level(gsi));
    g_assert_true(rec.level[gsi]);
    set_irq(b, false);
    g_assert_false(irq_line_level(gsi));
    g_assert_false(rec.level[gsi]);
    g_assert_cmpuint(rec.level_changes[gsi], ==, changes + 2);
}

static void test_intx_disable(void)
{
    TestFn *t = testfn_new(new_bus(), PCI_DEVFN(2, 0), 2);
    unsigned gsi = test_map_irq(2, 2);

    set_irq(t, true);
    g_assert_true(irq_line_level(gsi));
    g_assert_cmphex(cfg_read(t, PCI_STATUS, 2) & PCI_STATUS_INTERRUPT, !=, 0);

    cfg_write(t, PCI_COMMAND, PCI_COMMAND_INTX_DISABLE, 2);
    g_assert_false(irq_line_level(gsi));
    g_assert_cmphex(cfg_read(t, PCI_STATUS, 2) & PCI_STATUS_INTERRUPT, !=, 0);

    cfg_write(t, PCI_COMMAND, 0, 2);
    g_assert_true(irq_line_level(gsi));
    set_irq(t, false);
    g_assert_false(irq_line_level(gsi));
    g_assert_cmphex(cfg_read(t, PCI_STATUS, 2) & PCI_STATUS_INTERRUPT, ==, 0);

    /* Raised while disabled: the line follows once enabled again. */
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_INTX_DISABLE, 2);
    set_irq(t, true);
    g_assert_false(irq_line_level(gsi));
    cfg_write(t, PCI_COMMAND, 0, 2);
    g_assert_true(irq_line_level(gsi));
    set_irq(t, false);
}

/* A pin that names INTA but is never driven (the PIIX4 PM's, whose SCI
 * is IRQ 9): firmware's line stays, and asserting reaches no GSI. */
static void test_intx_unrouted_pin(void)
{
    PCIBus *bus = new_bus();
    TestFn *t = testfn_new(bus, PCI_DEVFN(1, 3), 0);
    device_lock(&t->pci.qdev);
    pci_set_unrouted_interrupt_pin(&t->pci, 1, 9);
    device_unlock(&t->pci.qdev);
    Error *err = NULL;
    g_assert_true(pci_bus_assign_resources(bus, 0xc000, 0xffff, 0xe0000000, 0xfebfffff, &err));
    g_assert_cmphex(cfg_read(t, PCI_INTERRUPT_LINE, 2), ==, 0x0109);
    unsigned changes[IRQ_MAX_GSI];
    memcpy(changes, rec.level_changes, sizeof(changes));
    set_irq(t, true);
    g_assert_cmphex(cfg_read(t, PCI_STATUS, 2) & PCI_STATUS_INTERRUPT, !=, 0);
    g_assert_cmpmem(changes, sizeof(changes), rec.level_changes, sizeof(changes));
    set_irq(t, false);
}

/* ---- MSI ---- */

static void msi_notify_locked(TestFn *t, unsigned vector)
{
    device_lock(&t->pci.qdev);
    msi_notify(&t->pci, vector);
    device_unlock(&t->pci.qdev);
}

static void test_msi(void)
{
    TestFn *t = testfn_new(new_bus(), -1, 1);
    device_lock(&t->pci.qdev);
    uint8_t cap = msi_init(&t->pci, 4);
    device_unlock(&t->pci.qdev);

    g_assert_cmphex(cfg_read(t, PCI_STATUS, 2) & PCI_STATUS_CAP_LIST, !=, 0);
    g_assert_cmphex(cfg_read(t, PCI_CAPABILITY_LIST, 1), ==, cap);
    g_assert_cmphex(cfg_read(t, cap, 2), ==, PCI_CAP_ID_MSI);        /* last in the list */
    /* 4 vectors offered, 64-bit, per-vector masking. */
    g_assert_cmphex(cfg_read(t, cap + MSI_CONTROL, 2), ==, 0x0184);

    cfg_write(t, cap + MSI_ADDRESS_LO, MSI_WINDOW | 0x3, 4);
    g_assert_cmphex(cfg_read(t, cap + MSI_ADDRESS_LO, 4), ==, MSI_WINDOW);
    cfg_write(t, cap + MSI_DATA, 0x40, 2);

    unsigned sent = rec.msis;
    msi_notify_locked(t, 0);
    g_assert_cmpuint(rec.msis, ==, sent);       /* MSI still disabled */

    cfg_write(t, cap + MSI_CONTROL, 0x0021, 2); /* enable, 4 vectors */
    g_assert_true(msi_enabled(&t->pci));
    msi_notify_locked(t, 2);
    g_assert_cmpuint(rec.msis, ==, sent + 1);
    g_assert_cmphex(rec.msi_address, ==, MSI_WINDOW);
    g_assert_cmphex(rec.msi_data, ==, 0x42);
    msi_notify_locked(t, 4);                    /* out of range */
    g_assert_cmpuint(rec.msis, ==, sent + 1);

    /* Masked: pending, then sent on unmask. */
    cfg_write(t, cap + MSI_MASK, 0xff, 4);
    g_assert_cmphex(cfg_read(t, cap + MSI_MASK, 4), ==, 0xf);
    msi_notify_locked(t, 1);
    g_assert_cmpuint(rec.msis, ==, sent + 1);
    g_assert_cmphex(cfg_read(t, cap + MSI_PENDING, 4), ==, 0x2);
    cfg_write(t, cap + MSI_PENDING, 0, 4);      /* read-only */
    g_assert_cmphex(cfg_read(t, cap + MSI_PENDING, 4), ==, 0x2);
    cfg_write(t, cap + MSI_MASK, 0xd, 4);       /* unmask 1 */
    g_assert_cmpuint(rec.msis, ==, sent + 2);
    g_assert_cmphex(rec.msi_data, ==, 0x41);
    g_assert_cmphex(cfg_read(t, cap + MSI_PENDING, 4), ==, 0);
    cfg_write(t, cap + MSI_MASK, 0, 4);

    /* One vector enabled: the data is used as programmed, vector 1 dropped. */
    cfg_write(t, cap + MSI_DATA, 0x43, 2);
    cfg_write(t, cap + MSI_CONTROL, 0x0001, 2);
    msi_notify_locked(t, 1);
    g_assert_cmpuint(rec.msis, ==, sent + 2);
    msi_notify_locked(t, 0);
    g_assert_cmpuint(rec.msis, ==, sent + 3);
    g_assert_cmphex(rec.msi_data, ==, 0x43);

    /* More vectors enabled than offered count as those offered. */
    cfg_write(t, cap + MSI_CONTROL, 0x0051, 2);
    msi_notify_locked(t, 3);
    g_assert_cmphex(rec.msi_data, ==, 0x43);
    msi_notify_locked(t, 4);
    g_assert_cmpuint(rec.msis, ==, sent + 4);
}

/* ---- MSI-X ---- */

#define MSIX_BAR_ADDR   0xe4000000u
#define MSIX_BAR        4

static uint32_t mmio_read32(uint64_t addr)
{
    uint32_t value = 0;
    g_assert_cmpint(address_space_read(address_space_memory, addr, &value, 4), ==, MEMTX_OK);
    return value;
}

static void mmio_write32(uint64_t addr, uint32_t value)
{
    g_assert_cmpint(address_space_write(address_space_memory, addr, &value, 4), ==, MEMTX_OK);
}

static void msix_notify_locked(TestFn *t, unsigned vector)
{
    device_lock(&t->pci.qdev);
    msix_notify(&t->pci, vector);
    device_unlock(&t->pci.qdev);
}

static uint64_t msix_entry_addr(unsigned vector, unsigned field)
{
    return MSIX_BAR_ADDR + vector * MSIX_TABLE_ENTRY_SIZE + field;
}

static TestFn *msix_testfn_new(uint8_t *cap)
{
    TestFn *t = testfn_new(new_bus(), -1, 1);
    device_lock(&t->pci.qdev);
    *cap = msix_init(&t->pci, 4, MSIX_BAR);
    device_unlock(&t->pci.qdev);

    /* Table at 0 and PBA at 4 KiB: an 8 KiB BAR. */
    cfg_write(t, bar_offset(MSIX_BAR), 0xffffffff, 4);
    g_assert_cmphex(cfg_read(t, bar_offset(MSIX_BAR), 4), ==, 0xffffe000);
    g_assert_cmphex(cfg_read(t, *cap, 1), ==, PCI_CAP_ID_MSIX);
    g_assert_cmphex(cfg_read(t, *cap + MSIX_CONTROL, 2), ==, 3);
    g_assert_cmphex(cfg_read(t, *cap + MSIX_TABLE, 4), ==, MSIX_BAR);
    g_assert_cmphex(cfg_read(t, *cap + MSIX_PBA, 4), ==, 0x1000 | MSIX_BAR);
    cfg_write(t, bar_offset(MSIX_BAR), MSIX_BAR_ADDR, 4);
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
    return t;
}

/* Run ctx until nothing is ready (the notifier's watch included). */
static void run_context(GMainContext *ctx)
{
    while (g_main_context_iteration(ctx, FALSE)) {
    }
}

/* An MSI vector raised through an event notifier. Without KVM there is no
 * irqfd: user space reads the notifier and sends the message, with the
 * same masking and pending behaviour as msi_notify. */
static void test_msi_vector_notifier(void)
{
    TestFn *t = testfn_new(new_bus(), -1, 1);
    GMainContext *ctx = g_main_context_new();
    EventNotifier notifier;
    Error *err = NULL;
    g_assert_true(event_notifier_init(&notifier, &err));
    device_lock(&t->pci.qdev);
    uint8_t cap = msi_init(&t->pci, 4);
    msi_vector_use_notifier(&t->pci, 1, &notifier, ctx);
    device_unlock(&t->pci.qdev);
    g_assert_false(msi_vector_in_kernel(&t->pci, 1));

    cfg_write(t, cap + MSI_ADDRESS_LO, MSI_WINDOW, 4);
    cfg_write(t, cap + MSI_DATA, 0x40, 2);
    unsigned sent = rec.msis;
    event_notifier_set(&notifier);              /* MSI off: dropped */
    run_context(ctx);
    g_assert_cmpuint(rec.msis, ==, sent);

    cfg_write(t, cap + MSI_CONTROL, 0x0021, 2); /* enable, 4 vectors */
    event_notifier_set(&notifier);
    run_context(ctx);
    g_assert_cmpuint(rec.msis, ==, sent + 1);
    g_assert_cmphex(rec.msi_data, ==, 0x41);

    /* Masked: the pending bits show the signal at once, nothing is sent;
     * the unmask sends it. */
    cfg_write(t, cap + MSI_MASK, 0x2, 4);
    event_notifier_set(&notifier);
    g_assert_cmphex(cfg_read(t, cap + MSI_PENDING, 4), ==, 0x2);
    run_context(ctx);
    g_assert_cmpuint(rec.msis, ==, sent + 1);
    cfg_write(t, cap + MSI_MASK, 0, 4);
    g_assert_cmpuint(rec.msis, ==, sent + 2);
    g_assert_cmphex(cfg_read(t, cap + MSI_PENDING, 4), ==, 0);

    /* A new message applies to the next signal. */
    cfg_write(t, cap + MSI_DATA, 0x50, 2);
    event_notifier_set(&notifier);
    run_context(ctx);
    g_assert_cmpuint(rec.msis, ==, sent + 3);
    g_assert_cmphex(rec.msi_data, ==, 0x51);
}

static void test_msix_masking(void)
{
    uint8_t cap;
    TestFn *t = msix_testfn_new(&cap);

    for (unsigned v = 0; v < 4; v++) {
        g_assert_cmphex(mmio_read32(msix_entry_addr(v, 12)), ==, 1);  /* starts masked */
        g_assert_true(msix_vector_masked(&t->pci, v));
    }
    mmio_write32(msix_entry_addr(0, 0), MSI_WINDOW | 0x1000);
    mmio_write32(msix_entry_addr(0, 4), 0);
    mmio_write32(msix_entry_addr(0, 8), 0x55);
    g_assert_cmphex(mmio_read32(msix_entry_addr(0, 8)), ==, 0x55);
    cfg_write(t, cap + MSIX_CONTROL, MSIX_ENABLE, 2);
    g_assert_true(msix_enabled(&t->pci));

    unsigned sent = rec.msis;
    msix_notify_locked(t, 0);
    g_assert_cmpuint(rec.msis, ==, sent);
    g_assert_cmphex(mmio_read32(MSIX_BAR_ADDR + 0x1000), ==, 0x1);     /* PBA */

    mmio_write32(msix_entry_addr(0, 12), 0);       /* unmask: delivered */
    g_assert_cmpuint(rec.msis, ==, sent + 1);
    g_assert_cmphex(rec.msi_address, ==, MSI_WINDOW | 0x1000);
    g_assert_cmphex(rec.msi_data, ==, 0x55);
    g_assert_cmphex(mmio_read32(MSIX_BAR_ADDR + 0x1000), ==, 0);
    g_assert_false(msix_vector_masked(&t->pci, 0));

    msix_notify_locked(t, 0);
    g_assert_cmpuint(rec.msis, ==, sent + 2);

    /* The function mask holds every vector back. */
    cfg_write(t, cap + MSIX_CONTROL, MSIX_ENABLE | MSIX_FUNCTION_MASK, 2);
    g_assert_true(msix_vector_masked(&t->pci, 0));
    msix_notify_locked(t, 0);
    g_assert_cmpuint(rec.msis, ==, sent + 2);
    g_assert_cmphex(mmio_read32(MSIX_BAR_ADDR + 0x1000), ==, 0x1);
    cfg_write(t, cap + MSIX_CONTROL, MSIX_ENABLE, 2);
    g_assert_cmpuint(rec.msis, ==, sent + 3);
    g_assert_cmphex(mmio_read32(MSIX_BAR_ADDR + 0x1000), ==, 0);

    /* 8-byte accesses: address lo+hi of vector 1 at once. */
    uint64_t address = MSI_WINDOW | 0x2000, read_back = 0;
    g_assert_cmpint(address_space_write(address_space_memory, msix_entry_addr(1, 0), &address,
                                        8), ==, MEMTX_OK);
    g_assert_cmpint(address_space_read(address_space_memory, msix_entry_addr(1, 0), &read_back,
                                       8), ==, MEMTX_OK);
    g_assert_cmphex(read_back, ==, address);
    mmio_write32(msix_entry_addr(1, 8), 0x66);
    mmio_write32(msix_entry_addr(1, 12), 0);
    msix_notify_locked(t, 1);
    g_assert_cmpuint(rec.msis, ==, sent + 4);
    g_assert_cmphex(rec.msi_address, ==, MSI_WINDOW | 0x2000);
    g_assert_cmphex(rec.msi_data, ==, 0x66);

    /* Disabled: nothing sent, nothing pending. */
    cfg_write(t, cap + MSIX_CONTROL, 0, 2);
    msix_notify_locked(t, 1);
    g_assert_cmpuint(rec.msis, ==, sent + 4);
    g_assert_cmphex(mmio_read32(MSIX_BAR_ADDR + 0x1000), ==, 0);
    cfg_write(t, PCI_COMMAND, 0, 2);
}

static void test_msix_bad_access(void)
{
    uint8_t cap;
    TestFn *t = msix_testfn_new(&cap);
    cfg_write(t, cap + MSIX_CONTROL, MSIX_ENABLE, 2);
    mmio_write32(msix_entry_addr(2, 0), MSI_WINDOW);
    mmio_write32(msix_entry_addr(2, 8), 0x77);

    unsigned sent = rec.msis;
    msix_notify_locked(t, 4);                       /* out of range */
    msix_notify_locked(t, 1000);
    g_assert_cmpuint(rec.msis, ==, sent);
    g_assert_cmphex(mmio_read32(MSIX_BAR_ADDR + 0x1000), ==, 0);

    /* Wrong sizes and misaligned accesses change nothing. */
    uint16_t word = 0x1234;
    g_assert_cmpint(address_space_write(address_space_memory, msix_entry_addr(2, 8), &word, 2),
                    ==, MEMTX_OK);
    uint8_t byte = 0;
    g_assert_cmpint(address_space_write(address_space_memory, msix_entry_addr(2, 12), &byte, 1),
                    ==, MEMTX_OK);
    g_assert_cmpint(address_space_read(address_space_memory, msix_entry_addr(2, 8), &word, 2),
                    ==, MEMTX_OK);
    g_assert_cmphex(word, ==, 0);
    mmio_write32(msix_entry_addr(2, 10), 0);
    g_assert_cmphex(mmio_read32(msix_entry_addr(2, 8)), ==, 0x77);
    g_assert_true(msix_vector_masked(&t->pci, 2));

    /* Past the table, between table and PBA, past the PBA: holes of the
     * BAR, unassigned. The PBA itself is read-only. */
    const uint64_t holes[] = { msix_entry_addr(4, 0), MSIX_BAR_ADDR + 0x800,
                               MSIX_BAR_ADDR + 0x1008 };
    for (size_t i = 0; i < G_N_ELEMENTS(holes); i++) {
        uint32_t value = 0;
        g_assert_cmpint(address_space_write(address_space_memory, holes[i], &value, 4), ==,
                        MEMTX_UNASSIGNED);
        g_assert_cmpint(address_space_read(address_space_memory, holes[i], &value, 4), ==,
                        MEMTX_UNASSIGNED);
        g_assert_cmphex(value, ==, 0xffffffff);
    }
    msix_notify_locked(t, 2);
    mmio_write32(MSIX_BAR_ADDR + 0x1000, 0);
    g_assert_cmphex(mmio_read32(MSIX_BAR_ADDR + 0x1000), ==, 0x4);
    g_assert_cmpuint(rec.msis, ==, sent);

    /* Reserved vector-control bits stay zero; unmask delivers vector 2. */
    mmio_write32(msix_entry_addr(2, 12), 0xfffffffe);
    g_assert_cmphex(mmio_read32(msix_entry_addr(2, 12)), ==, 0);
    g_assert_cmpuint(rec.msis, ==, sent + 1);
    g_assert_cmphex(rec.msi_data, ==, 0x77);
    cfg_write(t, PCI_COMMAND, 0, 2);
}

/*
 * MSI-X in a BAR shared with the function's other registers, as virtio-pci
 * lays it out: registers at 0, the table at 0x2000 and the PBA at 0x3000
 * of a 16 KiB BAR. Each part is reached under the function's lock, holes
 * are unassigned, moving the BAR moves everything, and no false "hidden
 * BAR" warning is logged for the holes at its ends (checked in a
 * subprocess, whose stderr the parent reads).
 */
#define SHARED_BAR_ADDR     0xe8000000u
#define SHARED_BAR_MOVED    0xe8010000u

static void test_msix_in_shared_bar(void)
{
    if (!g_test_subprocess()) {
        g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
        g_test_trap_assert_passed();
        g_test_trap_assert_stderr_unmatched("*hides it*");
        return;
    }
    TestFn *t = testfn_new(new_bus(), -1, 1);
    MemoryRegion *bar = g_new0(MemoryRegion, 1), *regs = g_new0(MemoryRegion, 1);
    memory_region_init_container(bar, &t->pci.qdev, "shared-bar", 0x4000);
    memory_region_init_io(regs, &t->pci.qdev, &testfn_ops, t, "common-cfg", 0x100);
    memory_region_add_subregion(bar, 0, regs, 0);
    device_lock(&t->pci.qdev);
    pci_register_bar(&t->pci, MSIX_BAR, 0, bar);
    uint8_t cap = msix_init_in_bar(&t->pci, 4, MSIX_BAR, 0x2000, 0x3000);
    device_unlock(&t->pci.qdev);

    cfg_write(t, bar_offset(MSIX_BAR), 0xffffffff, 4);
    g_assert_cmphex(cfg_read(t, bar_offset(MSIX_BAR), 4), ==, 0xffffc000);
    g_assert_cmphex(cfg_read(t, cap + MSIX_TABLE, 4), ==, 0x2000 | MSIX_BAR);
    g_assert_cmphex(cfg_read(t, cap + MSIX_PBA, 4), ==, 0x3000 | MSIX_BAR);
    cfg_write(t, bar_offset(MSIX_BAR), SHARED_BAR_ADDR, 4);
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);

    uint64_t acquired = atomic_load(&t->pci.qdev.lock.acquisitions);
    g_assert_cmphex(mmio_read32(SHARED_BAR_ADDR + 4), ==, 0xab000004);
    mmio_write32(SHARED_BAR_ADDR + 0x2000, MSI_WINDOW | 0x3000);
    mmio_write32(SHARED_BAR_ADDR + 0x2008, 0x99);
    g_assert_cmpuint(atomic_load(&t->pci.qdev.lock.acquisitions), ==, acquired + 3);

    cfg_write(t, cap + MSIX_CONTROL, MSIX_ENABLE, 2);
    unsigned sent = rec.msis;
    msix_notify_locked(t, 0);                       /* masked: pending */
    g_assert_cmphex(mmio_read32(SHARED_BAR_ADDR + 0x3000), ==, 0x1);
    mmio_write32(SHARED_BAR_ADDR + 0x200c, 0);
    g_assert_cmpuint(rec.msis, ==, sent + 1);
    g_assert_cmphex(rec.msi_address, ==, MSI_WINDOW | 0x3000);
    g_assert_cmphex(rec.msi_data, ==, 0x99);

    uint32_t value = 0;
    g_assert_cmpint(address_space_read(address_space_memory, SHARED_BAR_ADDR + 0x1000, &value,
                                       4), ==, MEMTX_UNASSIGNED);
    g_assert_cmphex(value, ==, 0xffffffff);
    g_assert_true(address_space_lookup_mapping(address_space_memory,
                                               SHARED_BAR_ADDR + 0x3ffc) == bar);

    /* The guest moves the BAR: all of it follows, in one step. */
    cfg_write(t, bar_offset(MSIX_BAR), SHARED_BAR_MOVED, 4);
    g_assert_null(mem_at(SHARED_BAR_ADDR + 0x2008));
    g_assert_cmphex(mmio_read32(SHARED_BAR_MOVED + 0x2008), ==, 0x99);
    g_assert_cmphex(mmio_read32(SHARED_BAR_MOVED + 8), ==, 0xab000008);
    cfg_write(t, PCI_COMMAND, 0, 2);
    g_assert_null(mem_at(SHARED_BAR_MOVED + 0x2008));
}

/* ---- building, resources, reset ---- */

static void test_devfn_and_multifunction(void)
{
    PCIBus *bus = new_bus();
    Error *err = NULL;
    TestFn *first = testfn_new(bus, -1, 0);
    g_assert_cmpuint(first->pci.devfn, ==, PCI_DEVFN(0, 0));
    TestFn *fn1 = testfn_new(bus, PCI_DEVFN(1, 1), 0);
    g_assert_cmphex(cfg_read(fn1, PCI_HEADER_TYPE, 1), ==, 0);
    TestFn *next = testfn_new(bus, -1, 0);
    g_assert_cmpuint(next->pci.devfn, ==, PCI_DEVFN(2, 0));     /* slot 1 is in use */

    /* Function 0 arriving after function 1, and function 3 after 0. */
    TestFn *fn0 = testfn_new(bus, PCI_DEVFN(1, 0), 0);
    g_assert_cmphex(cfg_read(fn0, PCI_HEADER_TYPE, 1), ==, PCI_HEADER_TYPE_MULTI_FUNCTION);
    g_assert_cmphex(cfg_read(next, PCI_HEADER_TYPE, 1), ==, 0);
    testfn_new(bus, PCI_DEVFN(2, 3), 0);
    g_assert_cmphex(cfg_read(next, PCI_HEADER_TYPE, 1), ==, PCI_HEADER_TYPE_MULTI_FUNCTION);
    cfg_write(next, PCI_HEADER_TYPE, 0, 1);
    g_assert_cmphex(cfg_read(next, PCI_HEADER_TYPE, 1), ==, PCI_HEADER_TYPE_MULTI_FUNCTION);
    g_assert_true(pci_bus_device(bus, PCI_DEVFN(1, 0)) == &fn0->pci);

    PCIDevice *dup = g_new0(PCIDevice, 1);
    g_assert_false(pci_device_init(dup, bus, PCI_DEVFN(1, 1), "dup", "dup", 1, 2, 0, 0, 0,
                                   &err));
    g_assert_nonnull(strstr(err->msg, "01.1"));
    error_free(err);
    err = NULL;
    g_assert_false(pci_device_init(dup, bus, 256, "dup", "dup", 1, 2, 0, 0, 0, &err));
    g_assert_nonnull(err);
    error_free(err);
    err = NULL;
    g_assert_false(pci_device_init(dup, bus, PCI_DEVFN(9, 0), "dup", "dup", 1, 2, 0, 0, 5,
                                   &err));
    g_assert_nonnull(err);
    error_free(err);
    err = NULL;
    for (unsigned slot = 3; slot < PCI_SLOT_MAX; slot++) {
        testfn_new(bus, -1, 0);
    }
    g_assert_false(pci_device_init(dup, bus, -1, "dup", "dup", 1, 2, 0, 0, 0, &err));
    g_assert_nonnull(strstr(err->msg, "no free PCI slot"));
    error_free(err);
    g_free(dup);
}

static void test_assign_resources(void)
{
    PCIBus *bus = new_bus();
    TestFn *a = testfn_new(bus, PCI_DEVFN(3, 0), 1);
    TestFn *b = testfn_new(bus, PCI_DEVFN(4, 0), 2);
    Error *err = NULL;

    g_assert_true(pci_bus_assign_resources(bus, 0xc000, 0xffff, 0xc0000000, 0xc00fffff, &err));
    g_assert_null(err);
    TestFn *fns[] = { a, b };
    GArray *ranges = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    for (unsigned i = 0; i < G_N_ELEMENTS(fns); i++) {
        PCIDevice *d = &fns[i]->pci;
        g_assert_cmpuint(pci_get_byte(d, PCI_INTERRUPT_LINE), ==, d->intx.gsi);
        g_assert_cmphex(pci_get_word(d, PCI_COMMAND), ==, 0);
        for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
            PCIBar *bar = &d->bars[nr];
            if (!bar->region) {
                continue;
            }
            uint32_t low = pci_get_long(d, bar_offset(nr));
            uint64_t addr = low & ~(uint64_t)((bar->type & PCI_BASE_ADDRESS_SPACE_IO) ? 3 : 0xf);
            g_assert_cmphex(low & ((bar->type & PCI_BASE_ADDRESS_SPACE_IO) ? 3 : 0xf), ==,
                            bar->type);
            g_assert_cmphex(addr % bar->size, ==, 0);
            if (bar->type & PCI_BASE_ADDRESS_SPACE_IO) {
                g_assert_cmphex(addr, >=, 0xc000);
                g_assert_cmphex(addr + bar->size - 1, <=, 0xffff);
            } else {
                g_assert_cmphex(addr, >=, 0xc0000000);
                g_assert_cmphex(addr + bar->size - 1, <=, 0xc00fffff);
            }
            g_assert_cmphex(bar->addr, ==, PCI_BAR_UNMAPPED);   /* decoding stays off */
            uint64_t range[2] = { addr, addr + bar->size - 1 };
            g_array_append_vals(ranges, range, 2);
        }
    }
    /* Memory BARs never overlap one another (I/O ones neither). */
    for (guint i = 0; i < ranges->len; i += 2) {
        for (guint j = i + 2; j < ranges->len; j += 2) {
            uint64_t *x = &g_array_index(ranges, uint64_t, i);
            uint64_t *y = &g_array_index(ranges, uint64_t, j);
            g_assert_true(x[1] < y[0] || y[1] < x[0]);
        }
    }
    g_array_free(ranges, TRUE);
    /* Largest first: the 16 KiB BAR of slot 3 is at the window's start. */
    g_assert_cmphex(pci_get_long(&a->pci, bar_offset(TEST_MMIO64_BAR)) & ~0xfu, ==, 0xc0000000);

    cfg_write(b, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
    g_assert_true(mem_at(b->pci.bars[TEST_MMIO_BAR].addr) == &b->mmio);
    cfg_write(b, PCI_COMMAND, 0, 2);

    /* A window too small for three 4 KiB-or-larger BARs each. */
    g_assert_false(pci_bus_assign_resources(bus, 0xc000, 0xffff, 0xc0000000, 0xc0007fff,
                                            &err));
    g_assert_nonnull(strstr(err->msg, "memory"));
    error_free(err);
    err = NULL;
    g_assert_false(pci_bus_assign_resources(bus, 0xc000, 0xc02f, 0xc0000000, 0xc00fffff,
                                            &err));
    g_assert_nonnull(strstr(err->msg, "I/O"));
    error_free(err);
}

static void test_reset(void)
{
    TestFn *t = testfn_new(new_bus(), PCI_DEVFN(6, 0), 1);
    device_lock(&t->pci.qdev);
    uint8_t cap = msi_init(&t->pci, 1);
    device_unlock(&t->pci.qdev);
    Error *err = NULL;
    g_assert_true(pci_bus_assign_resources(t->bus, 0xd000, 0xdfff, 0xc8000000, 0xc80fffff,
                                           &err));
    uint8_t power_on[PCI_CONFIG_SPACE_SIZE];
    memcpy(power_on, t->pci.config, sizeof(power_on));
    unsigned gsi = t->pci.intx.gsi;

    cfg_write(t, bar_offset(TEST_MMIO_BAR), 0xc8100000, 4);
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
    cfg_write(t, PCI_INTERRUPT_LINE, 3, 1);
    cfg_write(t, cap + MSI_CONTROL, 1, 2);
    set_irq(t, true);
    g_assert_true(mem_at(0xc8100000) == &t->mmio);
    g_assert_true(irq_line_level(gsi));
    g_assert_true(msi_enabled(&t->pci));

    device_lock(&t->pci.qdev);
    pci_device_reset(&t->pci);
    device_unlock(&t->pci.qdev);
    g_assert_cmpmem(t->pci.config, sizeof(power_on), power_on, sizeof(power_on));
    g_assert_null(mem_at(0xc8100000));
    for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
        g_assert_cmphex(t->pci.bars[nr].addr, ==, PCI_BAR_UNMAPPED);
    }
    g_assert_false(irq_line_level(gsi));
    g_assert_false(t->pci.intx_asserted);
    g_assert_false(msi_enabled(&t->pci));
    g_assert_cmpuint(cfg_read(t, PCI_INTERRUPT_LINE, 1), ==, gsi);
}

/* ---- the i440FX host: configuration mechanism #1 and 0xcf9 ---- */

static uint32_t conf1_address(unsigned bus, unsigned devfn, unsigned reg)
{
    return 0x80000000u | bus << 16 | devfn << 8 | reg;
}

#define CONF1_RACE_ROUNDS   2000

static gpointer conf1_racer_thread(gpointer unused)
{
    for (unsigned i = 0; i < CONF1_RACE_ROUNDS; i++) {
        outl(0xcf8, conf1_address(0, PIIX3_DEVFN, PCI_VENDOR_ID));
        uint32_t ids = io_read(0xcfc, 4);
        g_assert_true(ids == 0x12378086 || ids == 0x70008086);
    }
    return NULL;
}

static void test_i440fx(void)
{
    Error *err = NULL;
    PCIBus *bus = i440fx_init(test_map_irq, &err);
    g_assert_nonnull(bus);
    g_assert_null(err);

    outl(0xcf8, 0x80000000);
    g_assert_cmphex(io_read(0xcf8, 4), ==, 0x80000000);
    /* QEMU keeps every bit of the latch, reserved ones included. */
    outl(0xcf8, 0xffffffff);
    g_assert_cmphex(io_read(0xcf8, 4), ==, 0xffffffff);

    outl(0xcf8, conf1_address(0, I440FX_DEVFN, PCI_VENDOR_ID));
    g_assert_cmphex(io_read(0xcfc, 4), ==, 0x12378086);
    g_assert_cmphex(io_read(0xcfe, 2), ==, 0x1237);
    g_assert_cmphex(io_read(0xcfd, 1), ==, 0x80);
    outl(0xcf8, conf1_address(0, I440FX_DEVFN, PCI_REVISION_ID));
    g_assert_cmphex(io_read(0xcfc, 4), ==, 0x06000002);

    outl(0xcf8, conf1_address(0, PIIX3_DEVFN, PCI_VENDOR_ID));
    g_assert_cmphex(io_read(0xcfc, 4), ==, 0x70008086);
    outl(0xcf8, conf1_address(0, PIIX3_DEVFN, PCI_REVISION_ID));
    g_assert_cmphex(io_read(0xcfc, 4) >> 8, ==, 0x060100);
    outl(0xcf8, conf1_address(0, PIIX3_DEVFN, 0x0c));
    g_assert_cmphex(io_read(0xcfe, 1), ==, PCI_HEADER_TYPE_MULTI_FUNCTION);

    /* PIIX3's PIRQ route registers: 0x80 each, writable, nothing else. */
    outl(0xcf8, conf1_address(0, PIIX3_DEVFN, 0x60));
    g_assert_cmphex(io_read(0xcfc, 4), ==, 0x80808080);
    io_write(0xcfd, 0x0b, 1);
    g_assert_cmphex(io_read(0xcfc, 4), ==, 0x80800b80);

    /* Disabled latch, other buses, empty slots: all ones. */
    outl(0xcf8, conf1_address(0, I440FX_DEVFN, 0) & ~0x80000000u);
    g_assert_cmphex(io_read(0xcfc, 4), ==, 0xffffffff);
    outl(0xcf8, conf1_address(1, I440FX_DEVFN, 0));
    g_assert_cmphex(io_read(0xcfc, 4), ==, 0xffffffff);
    io_write(0xcfc, 0, 4);
    outl(0xcf8, conf1_address(0, PCI_DEVFN(31, 7), 0));
    g_assert_cmphex(io_read(0xcfc, 2), ==, 0xffff);
    /* A misaligned data access. */
    outl(0xcf8, conf1_address(0, I440FX_DEVFN, 0));
    g_assert_cmphex(io_read(0xcfd, 2), ==, 0xffff);
    /* The latch's bits 1:0 are ORed into the register offset, as on QEMU,
     * where guest programs read a device id through CONFIG_ADDRESS | 2. */
    outl(0xcf8, conf1_address(0, PIIX3_DEVFN, 0) | 2);
    g_assert_cmphex(io_read(0xcfc, 2), ==, 0x7000);
    g_assert_cmphex(io_read(0xcfe, 2), ==, 0x7000);
    g_assert_cmphex(io_read(0xcf8, 4), ==, conf1_address(0, PIIX3_DEVFN, 0) | 2);
    outl(0xcf8, conf1_address(0, I440FX_DEVFN, 0) | 1);
    g_assert_cmphex(io_read(0xcfc, 1), ==, 0x80);
    g_assert_cmphex(io_read(0xcfe, 1), ==, 0x12);     /* 1 | 2: device id high byte */
    g_assert_cmphex(io_read(0xcfc, 2), ==, 0xffff);   /* misaligned: all ones */

    /* Linux's mechanism #1 probe: byte writes beside the latch change nothing. */
    outl(0xcf8, conf1_address(0, PIIX3_DEVFN, 0));
    io_write(0xcfb, 0x01, 1);
    io_write(0xcfa, 0x0101, 2);
    g_assert_cmphex(io_read(0xcf8, 4), ==, conf1_address(0, PIIX3_DEVFN, 0));
    g_assert_cmphex(io_read(0xcfa, 2), ==, 0xffff);

    /* Reset control at 0xcf9 (byte wide; leaves the latch alone). */
    g_assert_false(runstate_take_reset_request(NULL));
    g_assert_cmphex(io_read(0xcf9, 1), ==, 0);
    io_write(0xcf9, PIIX3_RCR_SYSTEM_RESET, 1);
    g_assert_false(runstate_take_reset_request(NULL));
    g_assert_cmphex(io_read(0xcf9, 1), ==, PIIX3_RCR_SYSTEM_RESET);
    io_write(0xcf9, PIIX3_RCR_SYSTEM_RESET | PIIX3_RCR_RESET_CPU, 1);
    ShutdownCause cause = SHUTDOWN_CAUSE_NONE;
    g_assert_true(runstate_take_reset_request(&cause));
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_GUEST_RESET);
    g_assert_cmphex(io_read(0xcf9, 1), ==, 0x06);
    g_assert_cmphex(io_read(0xcf8, 4), ==, conf1_address(0, PIIX3_DEVFN, 0));

    /* Two vCPUs racing on the one latch read one function or the other. */
    GThread *racer = g_thread_new("conf1-racer", conf1_racer_thread, NULL);
    for (unsigned i = 0; i < CONF1_RACE_ROUNDS; i++) {
        outl(0xcf8, conf1_address(0, I440FX_DEVFN, PCI_VENDOR_ID));
        uint32_t ids = io_read(0xcfc, 4);
        g_assert_true(ids == 0x12378086 || ids == 0x70008086);
    }
    g_thread_join(racer);

    /* Machine reset: latch, reset control and PIRQ routes to power-on values. */
    device_reset_all();
    g_assert_cmphex(io_read(0xcf8, 4), ==, 0);
    g_assert_cmphex(io_read(0xcf9, 1), ==, 0);
    g_assert_cmphex(pci_bus_config_read(bus, PIIX3_DEVFN, 0x60, 4), ==, 0x80808080);
    g_assert_false(runstate_take_reset_request(NULL));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    qemu_loglevel = LOG_GUEST_ERROR;    /* exercise the logging paths */
    static const IrqBackend backend = {
        .set_level = rec_set_level,
        .send_msi = rec_send_msi,
    };
    irq_set_backend(&backend);

    g_test_add_func("/pci/config/masks", test_config_masks);
    g_test_add_func("/pci/config/bad-access", test_config_bad_access);
    g_test_add_func("/pci/bar/sizing", test_bar_sizing);
    g_test_add_func("/pci/bar/mapping", test_bar_mapping);
    g_test_add_func("/pci/bar/over-ram", test_bar_over_ram);
    g_test_add_func("/pci/bar/move-under-readers", test_bar_move_under_readers);
    g_test_add_func("/pci/intx/sharing", test_intx_sharing);
    g_test_add_func("/pci/intx/disable", test_intx_disable);
    g_test_add_func("/pci/intx/unrouted-pin", test_intx_unrouted_pin);
    g_test_add_func("/pci/msi/vector-notifier", test_msi_vector_notifier);
    g_test_add_func("/pci/msi", test_msi);
    g_test_add_func("/pci/msix/masking", test_msix_masking);
    g_test_add_func("/pci/msix/bad-access", test_msix_bad_access);
    g_test_add_func("/pci/msix/in-shared-bar", test_msix_in_shared_bar);
    g_test_add_func("/pci/devfn-and-multifunction", test_devfn_and_multifunction);
    g_test_add_func("/pci/assign-resources", test_assign_resources);
    g_test_add_func("/pci/reset", test_reset);
    g_test_add_func("/pci/i440fx", test_i440fx);
    return g_test_run();
}
