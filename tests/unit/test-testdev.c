/*
 * The test devices (pc-testdev, pci-testdev, pdl-testdev) driven as a vCPU
 * drives them: config space through the PCI bus, registers through the
 * address spaces, DMA into a RAM region at guest-physical 0.
 */
#include <string.h>
#include <sys/mman.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/irq.h"
#include "hw/misc/pdl-testdev-regs.h"
#include "hw/misc/testdev.h"
#include "pio.h"
#include "qemu/main-loop.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "hw/qdev.h"

#define RAM_SIZE        (16 * 1024 * 1024)

#define PDL_DEVFN       PCI_DEVFN(3, 0)
#define PDL_GSI         (16 + 3)            /* map_irq(slot 3, INTA) */
#define PDL_MMIO_BASE   0xfebf0000ULL
#define PDL_MSIX_BASE   0xfebe0000ULL
#define PDL_IO_BASE     0xc000
#define PCITEST_DEVFN   PCI_DEVFN(4, 0)
#define PCITEST_MMIO    0xfebf2000ULL
#define PCITEST_IO      0xc100

/* MSI capability (64-bit, per-vector masking) and MSI-X capability
 * offsets, PCI Local Bus Specification 3.0, 6.8. */
#define MSI_FLAGS           2
#define  MSI_FLAGS_ENABLE       0x0001
#define MSI_ADDRESS_LO      4
#define MSI_ADDRESS_HI      8
#define MSI_DATA_64         12
#define MSIX_FLAGS          2
#define  MSIX_FLAGS_ENABLE      0x8000
#define MSIX_PBA            8
#define MSIX_ENTRY_ADDR_LO  0
#define MSIX_ENTRY_DATA     8
#define MSIX_ENTRY_CTRL     12

static PCIBus *bus;
static uint8_t *ram;

/* ---- a recording interrupt backend ---- */

static struct {
    GMutex lock;
    unsigned count;
    uint64_t address;
    uint32_t data;
} msi_log;

static void record_msi(void *opaque, uint64_t address, uint32_t data)
{
    g_mutex_lock(&msi_log.lock);
    msi_log.count++;
    msi_log.address = address;
    msi_log.data = data;
    g_mutex_unlock(&msi_log.lock);
}

static unsigned msis_recorded(void)
{
    g_mutex_lock(&msi_log.lock);
    unsigned count = msi_log.count;
    g_mutex_unlock(&msi_log.lock);
    return count;
}

static unsigned map_irq(unsigned slot, unsigned pin)
{
    return 16 + ((slot + pin - 1) & 3);
}

/* ---- access helpers ---- */

static uint32_t pdl_read(unsigned reg)
{
    return mem_read(PDL_MMIO_BASE + reg, 4);
}

static void pdl_write(unsigned reg, uint32_t value)
{
    mem_write(PDL_MMIO_BASE + reg, value, 4);
}

static uint32_t cfg_read(unsigned devfn, unsigned offset, unsigned len)
{
    return pci_bus_config_read(bus, devfn, offset, len);
}

static void cfg_write(unsigned devfn, unsigned offset, uint32_t value, unsigned len)
{
    pci_bus_config_write(bus, devfn, offset, value, len);
}

static void set_command(unsigned devfn, uint16_t command)
{
    cfg_write(devfn, PCI_COMMAND, command, 2);
}

static uint8_t find_capability(unsigned devfn, uint8_t id)
{
    g_assert_true(cfg_read(devfn, PCI_STATUS, 2) & PCI_STATUS_CAP_LIST);
    for (uint8_t pos = cfg_read(devfn, PCI_CAPABILITY_LIST, 1); pos; ) {
        if (cfg_read(devfn, pos, 1) == id) {
            return pos;
        }
        pos = cfg_read(devfn, pos + 1, 1);
    }
    g_assert_not_reached();
}

static void program_bars(void)
{
    const uint16_t io_mem_master = PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
    cfg_write(PDL_DEVFN, PCI_BASE_ADDRESS_0 + 4 * PDL_TESTDEV_MMIO_BAR, PDL_MMIO_BASE, 4);
    cfg_write(PDL_DEVFN, PCI_BASE_ADDRESS_0 + 4 * PDL_TESTDEV_IO_BAR, PDL_IO_BASE, 4);
    cfg_write(PDL_DEVFN, PCI_BASE_ADDRESS_0 + 4 * PDL_TESTDEV_MSIX_BAR, PDL_MSIX_BASE, 4);
    set_command(PDL_DEVFN, io_mem_master);
    cfg_write(PCITEST_DEVFN, PCI_BASE_ADDRESS_0, PCITEST_MMIO, 4);
    cfg_write(PCITEST_DEVFN, PCI_BASE_ADDRESS_0 + 4, PCITEST_IO, 4);
    set_command(PCITEST_DEVFN, io_mem_master);
}

/* ---- pdl-testdev: identity and registers ---- */

static void test_pdl_config(void)
{
    g_assert_cmphex(cfg_read(PDL_DEVFN, PCI_VENDOR_ID, 2), ==, PDL_TESTDEV_VENDOR_ID);
    g_assert_cmphex(cfg_read(PDL_DEVFN, PCI_DEVICE_ID, 2), ==, PDL_TESTDEV_DEVICE_ID);
    g_assert_cmphex(cfg_read(PDL_DEVFN, PCI_CLASS_PROG, 1) |
                    cfg_read(PDL_DEVFN, PCI_CLASS_DEVICE, 2) << 8, ==, PDL_TESTDEV_CLASS);
    g_assert_cmpuint(cfg_read(PDL_DEVFN, PCI_INTERRUPT_PIN, 1), ==, 1);
    g_assert_cmphex(cfg_read(PDL_DEVFN, PCI_BASE_ADDRESS_0, 4), ==, PDL_MMIO_BASE);
    g_assert_cmphex(cfg_read(PDL_DEVFN, PCI_BASE_ADDRESS_0 + 4, 4), ==,
                    PDL_IO_BASE | PCI_BASE_ADDRESS_SPACE_IO);
    find_capability(PDL_DEVFN, PCI_CAP_ID_MSI);
    find_capability(PDL_DEVFN, PCI_CAP_ID_MSIX);
}

static void test_pdl_registers(void)
{
    g_assert_cmphex(pdl_read(PDL_REG_ID), ==, PDL_TESTDEV_MAGIC);
    g_assert_cmphex(io_read(PDL_IO_BASE + PDL_REG_ID, 4), ==, PDL_TESTDEV_MAGIC);

    pdl_write(PDL_REG_SCRATCH, 0xdeadbeef);
    g_assert_cmphex(pdl_read(PDL_REG_SCRATCH), ==, 0xdeadbeef);
    g_assert_cmphex(io_read(PDL_IO_BASE + PDL_REG_SCRATCH, 4), ==, 0xdeadbeef);
    io_write(PDL_IO_BASE + PDL_REG_SCRATCH, 0x12345678, 4);
    g_assert_cmphex(pdl_read(PDL_REG_SCRATCH), ==, 0x12345678);

    /* ACCESSES includes the read of itself, through either BAR. */
    uint32_t before = pdl_read(PDL_REG_ACCESSES);
    g_assert_cmpuint(pdl_read(PDL_REG_ACCESSES), ==, before + 1);
    pdl_write(PDL_REG_SCRATCH, 1);
    g_assert_cmpuint(io_read(PDL_IO_BASE + PDL_REG_ACCESSES, 4), ==, before + 3);

    /* Read-only registers ignore writes. */
    pdl_write(PDL_REG_ID, 0);
    pdl_write(PDL_REG_IRQ_COUNT, 1234);
    g_assert_cmphex(pdl_read(PDL_REG_ID), ==, PDL_TESTDEV_MAGIC);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), !=, 1234);

    /* DMA address halves are independent. */
    pdl_write(PDL_REG_DMA_ADDR_HI, 0x1);
    pdl_write(PDL_REG_DMA_ADDR_LO, 0x2000);
    g_assert_cmphex(pdl_read(PDL_REG_DMA_ADDR_HI), ==, 0x1);
    g_assert_cmphex(pdl_read(PDL_REG_DMA_ADDR_LO), ==, 0x2000);
    pdl_write(PDL_REG_DMA_ADDR_HI, 0);
}

static void test_pdl_bad_sizes(void)
{
    pdl_write(PDL_REG_SCRATCH, 0xa5a5a5a5);
    uint32_t accesses = pdl_read(PDL_REG_ACCESSES);

    mem_write(PDL_MMIO_BASE + PDL_REG_SCRATCH, 0x1111, 2);
    mem_write(PDL_MMIO_BASE + PDL_REG_SCRATCH + 1, 0x22, 1);
    io_write(PDL_IO_BASE + PDL_REG_SCRATCH, 0x33, 1);
    g_assert_cmphex(mem_read(PDL_MMIO_BASE + PDL_REG_SCRATCH, 1), ==, 0);
    g_assert_cmphex(mem_read(PDL_MMIO_BASE + PDL_REG_ID, 2), ==, 0);
    g_assert_cmphex(io_read(PDL_IO_BASE + PDL_REG_ID + 2, 2), ==, 0);
    /* An unaligned dword is not a register access either. */
    mem_write(PDL_MMIO_BASE + PDL_REG_SCRATCH + 2, 0x44444444, 4);

    g_assert_cmphex(pdl_read(PDL_REG_SCRATCH), ==, 0xa5a5a5a5);
    /* Only the two good reads (ACCESSES, SCRATCH) and this one counted. */
    g_assert_cmpuint(pdl_read(PDL_REG_ACCESSES), ==, accesses + 2);

    /* Unknown registers and the rest of the BAR read 0 and ignore writes. */
    pdl_write(0x800, 0x5555);
    g_assert_cmphex(pdl_read(0x800), ==, 0);
    g_assert_cmphex(pdl_read(PDL_REG_IRQ_RAISE), ==, 0);
}

/* ---- pdl-testdev: interrupts ---- */

static void test_pdl_intx(void)
{
    uint32_t count = pdl_read(PDL_REG_IRQ_COUNT);
    g_assert_false(irq_line_level(PDL_GSI));

    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_INTX);
    g_assert_true(irq_line_level(PDL_GSI));
    g_assert_true(cfg_read(PDL_DEVFN, PCI_STATUS, 2) & PCI_STATUS_INTERRUPT);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, count + 1);

    /* INTX_DISABLE masks the line but not the status (uio_pci_generic's way). */
    uint16_t command = cfg_read(PDL_DEVFN, PCI_COMMAND, 2);
    set_command(PDL_DEVFN, command | PCI_COMMAND_INTX_DISABLE);
    g_assert_false(irq_line_level(PDL_GSI));
    g_assert_true(cfg_read(PDL_DEVFN, PCI_STATUS, 2) & PCI_STATUS_INTERRUPT);
    set_command(PDL_DEVFN, command);
    g_assert_true(irq_line_level(PDL_GSI));

    io_write(PDL_IO_BASE + PDL_REG_IRQ_ACK, 0, 4);
    g_assert_false(irq_line_level(PDL_GSI));
    g_assert_false(cfg_read(PDL_DEVFN, PCI_STATUS, 2) & PCI_STATUS_INTERRUPT);

    /* An unknown kind raises nothing. */
    pdl_write(PDL_REG_IRQ_RAISE, 0x7f);
    g_assert_false(irq_line_level(PDL_GSI));
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, count + 1);
}

static void test_pdl_msi(void)
{
    uint8_t cap = find_capability(PDL_DEVFN, PCI_CAP_ID_MSI);
    uint32_t count = pdl_read(PDL_REG_IRQ_COUNT);
    unsigned sent = msis_recorded();

    /* Not enabled yet: ignored. */
    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_MSI);
    g_assert_cmpuint(msis_recorded(), ==, sent);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, count);

    cfg_write(PDL_DEVFN, cap + MSI_ADDRESS_LO, 0xfee00000, 4);
    cfg_write(PDL_DEVFN, cap + MSI_ADDRESS_HI, 0, 4);
    cfg_write(PDL_DEVFN, cap + MSI_DATA_64, 0x4041, 2);
    uint16_t flags = cfg_read(PDL_DEVFN, cap + MSI_FLAGS, 2);
    cfg_write(PDL_DEVFN, cap + MSI_FLAGS, flags | MSI_FLAGS_ENABLE, 2);

    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_MSI);
    g_assert_cmpuint(msis_recorded(), ==, sent + 1);
    g_assert_cmphex(msi_log.address, ==, 0xfee00000);
    g_assert_cmphex(msi_log.data, ==, 0x4041);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, count + 1);
    g_assert_false(irq_line_level(PDL_GSI));

    /* The device has one MSI vector: vector 1 does not exist. */
    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_MSI | 1 << 8);
    g_assert_cmpuint(msis_recorded(), ==, sent + 1);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, count + 1);

    cfg_write(PDL_DEVFN, cap + MSI_FLAGS, flags & ~MSI_FLAGS_ENABLE, 2);
}

static void test_pdl_msix(void)
{
    uint8_t cap = find_capability(PDL_DEVFN, PCI_CAP_ID_MSIX);
    uint32_t pba_reg = cfg_read(PDL_DEVFN, cap + MSIX_PBA, 4);
    g_assert_cmpuint(pba_reg & 7, ==, PDL_TESTDEV_MSIX_BAR);
    uint64_t pba = PDL_MSIX_BASE + (pba_reg & ~7u);
    uint64_t entry1 = PDL_MSIX_BASE + MSIX_TABLE_ENTRY_SIZE;
    uint32_t count = pdl_read(PDL_REG_IRQ_COUNT);
    unsigned sent = msis_recorded();

    /* Disabled: ignored. */
    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_MSIX | 1 << 8);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, count);

    uint16_t flags = cfg_read(PDL_DEVFN, cap + MSIX_FLAGS, 2);
    g_assert_cmpuint((flags & 0x7ff) + 1, ==, PDL_TESTDEV_MSIX_VECTORS);
    cfg_write(PDL_DEVFN, cap + MSIX_FLAGS, flags | MSIX_FLAGS_ENABLE, 2);
    mem_write(entry1 + MSIX_ENTRY_ADDR_LO, 0xfee00000, 4);
    mem_write(entry1 + MSIX_ENTRY_DATA, 0x51, 4);

    /* Every vector starts masked: the message waits in the PBA. */
    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_MSIX | 1 << 8);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, count + 1);
    g_assert_cmpuint(msis_recorded(), ==, sent);
    g_assert_cmphex(mem_read(pba, 4) & 2, ==, 2);

    mem_write(entry1 + MSIX_ENTRY_CTRL, 0, 4);
    g_assert_cmpuint(msis_recorded(), ==, sent + 1);
    g_assert_cmphex(msi_log.address, ==, 0xfee00000);
    g_assert_cmphex(msi_log.data, ==, 0x51);
    g_assert_cmphex(mem_read(pba, 4) & 2, ==, 0);

    /* Unmasked: straight through. Past the last vector: dropped. */
    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_MSIX | 1 << 8);
    g_assert_cmpuint(msis_recorded(), ==, sent + 2);
    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_MSIX | PDL_TESTDEV_MSIX_VECTORS << 8);
    g_assert_cmpuint(msis_recorded(), ==, sent + 2);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, count + 2);

    mem_write(entry1 + MSIX_ENTRY_CTRL, 1, 4);
    cfg_write(PDL_DEVFN, cap + MSIX_FLAGS, flags, 2);
}

/* ---- pdl-testdev: the MSI-X vector on irqfd, without KVM ---- */

/* Run the main loop (the device's bottom half, the notifier's watch) until
 * the device has sent `signals` signals and `msis` messages went out, or a
 * while longer if the messages are expected not to come. */
static void run_main_loop_until(uint32_t signals, unsigned msis)
{
    for (int i = 0; i < 1000; i++) {
        g_main_context_iteration(NULL, FALSE);
        if (pdl_read(PDL_REG_IRQFD_SIGNALS) >= signals && msis_recorded() >= msis && i >= 10) {
            return;
        }
        g_usleep(1000);
    }
}

/* Without KVM there is no irqfd: user space reads the notifier and sends
 * the message (KVM_SIGNAL_MSI under KVM), with the same behaviour. */
static void test_pdl_msix_irqfd_user_space(void)
{
    uint8_t cap = find_capability(PDL_DEVFN, PCI_CAP_ID_MSIX);
    uint64_t pba = PDL_MSIX_BASE + (cfg_read(PDL_DEVFN, cap + MSIX_PBA, 4) & ~7u);
    uint64_t entry = PDL_MSIX_BASE + PDL_TESTDEV_IRQFD_VECTOR * MSIX_TABLE_ENTRY_SIZE;
    uint32_t vector_bit = 1u << PDL_TESTDEV_IRQFD_VECTOR;
    uint16_t flags = cfg_read(PDL_DEVFN, cap + MSIX_FLAGS, 2);
    uint32_t signals = pdl_read(PDL_REG_IRQFD_SIGNALS);
    unsigned sent = msis_recorded();

    cfg_write(PDL_DEVFN, cap + MSIX_FLAGS, flags | MSIX_FLAGS_ENABLE, 2);
    mem_write(entry + MSIX_ENTRY_ADDR_LO, 0xfee00000, 4);
    mem_write(entry + MSIX_ENTRY_DATA, 0x61, 4);
    mem_write(entry + MSIX_ENTRY_CTRL, 0, 4);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQFD_STATUS), ==, 0);    /* not in the kernel */

    /* The main loop signals, and only then the message goes out. */
    pdl_write(PDL_REG_IRQFD_TRIGGER, 1);
    g_assert_cmpuint(msis_recorded(), ==, sent);
    run_main_loop_until(++signals, ++sent);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQFD_SIGNALS), ==, signals);
    g_assert_cmpuint(msis_recorded(), ==, sent);
    g_assert_cmphex(msi_log.data, ==, 0x61);

    /* Masked: pending in the PBA, not sent; sent on unmask. */
    mem_write(entry + MSIX_ENTRY_CTRL, 1, 4);
    pdl_write(PDL_REG_IRQFD_TRIGGER, 1);
    run_main_loop_until(++signals, sent + 1);
    g_assert_cmpuint(msis_recorded(), ==, sent);
    g_assert_cmphex(mem_read(pba, 4) & vector_bit, ==, vector_bit);
    mem_write(entry + MSIX_ENTRY_CTRL, 0, 4);
    g_assert_cmpuint(msis_recorded(), ==, ++sent);
    g_assert_cmphex(mem_read(pba, 4) & vector_bit, ==, 0);

    /* The function mask holds it back the same way. */
    cfg_write(PDL_DEVFN, cap + MSIX_FLAGS, flags | MSIX_FLAGS_ENABLE | 0x4000, 2);
    pdl_write(PDL_REG_IRQFD_TRIGGER, 1);
    run_main_loop_until(++signals, sent + 1);
    g_assert_cmpuint(msis_recorded(), ==, sent);
    g_assert_cmphex(mem_read(pba, 4) & vector_bit, ==, vector_bit);
    cfg_write(PDL_DEVFN, cap + MSIX_FLAGS, flags | MSIX_FLAGS_ENABLE, 2);
    g_assert_cmpuint(msis_recorded(), ==, ++sent);

    /* MSI-X off: dropped, and nothing left pending for later. */
    cfg_write(PDL_DEVFN, cap + MSIX_FLAGS, flags, 2);
    pdl_write(PDL_REG_IRQFD_TRIGGER, 1);
    run_main_loop_until(++signals, sent + 1);
    cfg_write(PDL_DEVFN, cap + MSIX_FLAGS, flags | MSIX_FLAGS_ENABLE, 2);
    g_assert_cmpuint(msis_recorded(), ==, sent);
    mem_write(entry + MSIX_ENTRY_CTRL, 1, 4);
    cfg_write(PDL_DEVFN, cap + MSIX_FLAGS, flags, 2);
}

/* ---- pdl-testdev: DMA ---- */

static uint32_t pdl_dma(uint64_t addr, uint32_t len, uint32_t command)
{
    pdl_write(PDL_REG_DMA_ADDR_LO, (uint32_t)addr);
    pdl_write(PDL_REG_DMA_ADDR_HI, addr >> 32);
    pdl_write(PDL_REG_DMA_LEN, len);
    pdl_write(PDL_REG_DMA_DOORBELL, command);
    return pdl_read(PDL_REG_DMA_STATUS);
}

static void test_pdl_dma_fill_sum(void)
{
    /* More than one bounce-buffer chunk, and not a multiple of it. */
    const uint64_t addr = 0x10003;
    const uint32_t len = 3 * 4096 + 123;
    memset(ram + addr - 16, 0x11, len + 32);

    pdl_write(PDL_REG_DMA_PATTERN, 0x1a5);
    g_assert_cmphex(pdl_read(PDL_REG_DMA_PATTERN), ==, 0xa5);
    g_assert_cmpuint(pdl_dma(addr, len, PDL_DMA_FILL), ==, PDL_DMA_STATUS_DONE);
    for (uint32_t i = 0; i < len; i++) {
        g_assert_cmphex(ram[addr + i], ==, 0xa5);
    }
    for (unsigned i = 1; i <= 16; i++) {
        g_assert_cmphex(ram[addr - i], ==, 0x11);
        g_assert_cmphex(ram[addr + len - 1 + i], ==, 0x11);
    }

    uint32_t expected = 0;
    for (uint32_t i = 0; i < len; i++) {
        ram[addr + i] = (uint8_t)(i * 7 + 3);
        expected += ram[addr + i];
    }
    g_assert_cmpuint(pdl_dma(addr, len, PDL_DMA_SUM), ==, PDL_DMA_STATUS_DONE);
    g_assert_cmpuint(pdl_read(PDL_REG_DMA_RESULT), ==, expected);

    /* The largest transfer, ending at the last byte of RAM. */
    g_assert_cmpuint(pdl_dma(RAM_SIZE - PDL_TESTDEV_DMA_MAX, PDL_TESTDEV_DMA_MAX, PDL_DMA_FILL),
                     ==, PDL_DMA_STATUS_DONE);
    g_assert_cmphex(ram[RAM_SIZE - 1], ==, 0xa5);
    g_assert_cmpuint(pdl_dma(RAM_SIZE - PDL_TESTDEV_DMA_MAX, PDL_TESTDEV_DMA_MAX, PDL_DMA_SUM),
                     ==, PDL_DMA_STATUS_DONE);
    g_assert_cmpuint(pdl_read(PDL_REG_DMA_RESULT), ==, 0xa5u * PDL_TESTDEV_DMA_MAX);
}

static void test_pdl_dma_refused(void)
{
    const uint64_t addr = 0x20000;
    memset(ram + addr, 0, 4096);
    pdl_write(PDL_REG_DMA_PATTERN, 0x5a);

    /* Without bus mastering nothing moves. */
    uint16_t command = cfg_read(PDL_DEVFN, PCI_COMMAND, 2);
    set_command(PDL_DEVFN, command & ~PCI_COMMAND_MASTER);
    g_assert_cmpuint(pdl_dma(addr, 4096, PDL_DMA_FILL), ==, PDL_DMA_STATUS_ERROR);
    g_assert_cmphex(ram[addr], ==, 0);
    g_assert_cmpuint(pdl_dma(addr, 4096, PDL_DMA_SUM), ==, PDL_DMA_STATUS_ERROR);
    g_assert_cmpuint(pdl_read(PDL_REG_DMA_RESULT), ==, 0);
    set_command(PDL_DEVFN, command);
    g_assert_cmpuint(pdl_dma(addr, 1, PDL_DMA_FILL), ==, PDL_DMA_STATUS_DONE);
    g_assert_cmphex(ram[addr], ==, 0x5a);

    /* Bad lengths and unknown commands. */
    g_assert_cmpuint(pdl_dma(addr, 0, PDL_DMA_FILL), ==, PDL_DMA_STATUS_ERROR);
    g_assert_cmpuint(pdl_dma(addr, PDL_TESTDEV_DMA_MAX + 1, PDL_DMA_FILL), ==,
                     PDL_DMA_STATUS_ERROR);
    g_assert_cmphex(ram[addr + 1], ==, 0);
    g_assert_cmpuint(pdl_dma(addr, 16, 99), ==, PDL_DMA_STATUS_ERROR);

    /* Not RAM: past its end, into the device's own BAR, wrapping. */
    uint64_t refused = dma_refused_count();
    g_assert_cmpuint(pdl_dma(RAM_SIZE - 100, 200, PDL_DMA_FILL), ==, PDL_DMA_STATUS_ERROR);
    g_assert_cmphex(ram[RAM_SIZE - 100], !=, 0x5a);
    g_assert_cmpuint(pdl_dma(PDL_MMIO_BASE, 16, PDL_DMA_SUM), ==, PDL_DMA_STATUS_ERROR);
    g_assert_cmpuint(dma_refused_count(), ==, refused + 2);
    g_assert_cmpuint(pdl_dma(UINT64_MAX - 7, 16, PDL_DMA_FILL), ==, PDL_DMA_STATUS_ERROR);
    g_assert_cmphex(pdl_read(PDL_REG_ID), ==, PDL_TESTDEV_MAGIC);
}

/* Two threads acting as vCPUs on the two BARs: every access is counted
 * once, none is lost to a race on the counter. */
#define HAMMER_READS 20000

static gpointer hammer_thread(gpointer use_io_bar)
{
    for (unsigned i = 0; i < HAMMER_READS; i++) {
        uint32_t id = use_io_bar ? io_read(PDL_IO_BASE + PDL_REG_ID, 4) : pdl_read(PDL_REG_ID);
        if (id != PDL_TESTDEV_MAGIC) {
            return GUINT_TO_POINTER(FALSE);
        }
    }
    return GUINT_TO_POINTER(TRUE);
}

static void test_pdl_concurrent_accesses(void)
{
    uint32_t before = pdl_read(PDL_REG_ACCESSES);
    GThread *mmio = g_thread_new("vcpu0", hammer_thread, GUINT_TO_POINTER(FALSE));
    GThread *io = g_thread_new("vcpu1", hammer_thread, GUINT_TO_POINTER(TRUE));
    g_assert_true(GPOINTER_TO_UINT(g_thread_join(mmio)));
    g_assert_true(GPOINTER_TO_UINT(g_thread_join(io)));
    g_assert_cmpuint(pdl_read(PDL_REG_ACCESSES), ==, before + 2 * HAMMER_READS + 1);
}

static gpointer ring_doorbell_five_times(gpointer unused)
{
    for (unsigned i = 0; i < 5; i++) {
        pdl_write(PDL_REG_DOORBELL, i);
    }
    return GUINT_TO_POINTER(pdl_read(PDL_REG_EVENTFD_EXITS));
}

/* Without KVM, dispatch signals the doorbell's ioeventfd itself: the
 * device counts the rings when it consumes it, and the writes never reach
 * its register handler. Each such ring counts in EVENTFD_EXITS of the
 * thread that made it (the vCPU's, under KVM): other writes do not, nor
 * another thread's rings. */
static void test_pdl_doorbell(void)
{
    uint32_t rings = pdl_read(PDL_REG_DOORBELL_COUNT);
    uint32_t eventfd_exits = pdl_read(PDL_REG_EVENTFD_EXITS);
    uint32_t accesses = pdl_read(PDL_REG_ACCESSES);
    for (unsigned i = 0; i < 3; i++) {
        pdl_write(PDL_REG_DOORBELL, i);
    }
    io_write(PDL_IO_BASE + PDL_REG_DOORBELL, 0xffffffff, 4);
    /* Any width rings. */
    io_write(PDL_IO_BASE + PDL_REG_DOORBELL, 0, 1);
    mem_write(PDL_MMIO_BASE + PDL_REG_DOORBELL, 1, 2);
    g_assert_cmpuint(pdl_read(PDL_REG_DOORBELL_COUNT), ==, rings + 6);
    /* The read of DOORBELL_COUNT and this one: rings are no register
     * accesses. */
    g_assert_cmpuint(pdl_read(PDL_REG_ACCESSES), ==, accesses + 2);
    g_assert_cmpuint(pdl_read(PDL_REG_DOORBELL), ==, 0);
    pdl_write(PDL_REG_SCRATCH, 1);
    pdl_write(PDL_REG_ARRAY, 2);
    g_assert_cmpuint(pdl_read(PDL_REG_EVENTFD_EXITS), ==, eventfd_exits + 6);
    GThread *other = g_thread_new("vcpu1", ring_doorbell_five_times, NULL);
    g_assert_cmpuint(GPOINTER_TO_UINT(g_thread_join(other)), ==, 5);
    g_assert_cmpuint(pdl_read(PDL_REG_EVENTFD_EXITS), ==, eventfd_exits + 6);
    g_assert_cmpuint(pdl_read(PDL_REG_DOORBELL_COUNT), ==, rings + 11);

    /* No KVM here: no fast path in the kernel, no vCPU to count exits of. */
    g_assert_cmphex(pdl_read(PDL_REG_FAST_PATHS), ==, 0);
    g_assert_cmpuint(pdl_read(PDL_REG_VCPU_EXITS), ==, 0);
}

/* The consumer on the main loop serves each signal of the doorbell as it
 * comes: it never stops watching the notifier after a wake-up (a rest
 * would leave the next ring to a timer, and this loop's second iteration
 * would find nothing to run). */
static void test_pdl_doorbell_consumed_at_each_ring(void)
{
    for (unsigned i = 0; i < 3; i++) {
        while (g_main_context_iteration(main_loop_context(), FALSE)) {
        }
        pdl_write(PDL_REG_DOORBELL, i);
        g_assert_true(g_main_context_iteration(main_loop_context(), FALSE));
        g_assert_false(g_main_context_iteration(main_loop_context(), FALSE));
    }
}

/* The coalesced array applies writes in order, through either BAR. */
static void test_pdl_array_log(void)
{
    pdl_write(PDL_REG_LOG_COUNT, 0);
    uint32_t digest = PDL_LOG_DIGEST_INIT;
    for (uint32_t i = 0; i < 20; i++) {
        uint32_t index = (i * 3) % PDL_ARRAY_ENTRIES, value = 0x1000 + i;
        if (i % 2) {
            pdl_write(PDL_REG_ARRAY + 4 * index, value);
        } else {
            io_write(PDL_IO_BASE + PDL_REG_ARRAY + 4 * index, value, 4);
        }
        digest = pdl_log_digest_step(digest, index, value);
    }
    g_assert_cmpuint(pdl_read(PDL_REG_LOG_COUNT), ==, 20);
    g_assert_cmphex(pdl_read(PDL_REG_LOG_DIGEST), ==, digest);
    /* The last writes to index 1 and 7 were i = 19 and i = 13. */
    g_assert_cmphex(pdl_read(PDL_REG_ARRAY + 4 * 1), ==, 0x1000 + 19);
    g_assert_cmphex(io_read(PDL_IO_BASE + PDL_REG_ARRAY + 4 * 7, 4), ==, 0x1000 + 13);
    /* The same values in another order give another digest. */
    g_assert_cmphex(pdl_log_digest_step(pdl_log_digest_step(PDL_LOG_DIGEST_INIT, 0, 1), 1, 2),
                    !=,
                    pdl_log_digest_step(pdl_log_digest_step(PDL_LOG_DIGEST_INIT, 1, 2), 0, 1));
    pdl_write(PDL_REG_LOG_COUNT, 0);
    g_assert_cmpuint(pdl_read(PDL_REG_LOG_COUNT), ==, 0);
    g_assert_cmphex(pdl_read(PDL_REG_LOG_DIGEST), ==, PDL_LOG_DIGEST_INIT);
}

static void test_pdl_reset(void)
{
    QEMUDevice *dev = device_find("pdltest0");
    g_assert_nonnull(dev);
    g_assert_cmpstr(dev->type, ==, "pdl-testdev");
    pdl_write(PDL_REG_SCRATCH, 0x77);
    pdl_write(PDL_REG_IRQ_RAISE, PDL_IRQ_INTX);
    g_assert_true(irq_line_level(PDL_GSI));
    pdl_write(PDL_REG_DOORBELL, 1);             /* rung, not yet consumed */
    pdl_write(PDL_REG_ARRAY, 0x55);

    device_lock(dev);
    dev->reset(dev);
    device_unlock(dev);

    g_assert_false(irq_line_level(PDL_GSI));
    g_assert_cmphex(cfg_read(PDL_DEVFN, PCI_COMMAND, 2), ==, 0);
    /* BARs are unmapped by the reset until programmed again. */
    uint32_t id;
    g_assert_cmpint(address_space_read(address_space_memory, PDL_MMIO_BASE, &id, 4), ==,
                    MEMTX_UNASSIGNED);
    program_bars();
    g_assert_cmphex(pdl_read(PDL_REG_SCRATCH), ==, 0);
    g_assert_cmpuint(pdl_read(PDL_REG_IRQ_COUNT), ==, 0);
    g_assert_cmpuint(pdl_read(PDL_REG_DMA_STATUS), ==, PDL_DMA_STATUS_IDLE);
    g_assert_cmpuint(pdl_read(PDL_REG_DOORBELL_COUNT), ==, 0);
    g_assert_cmpuint(pdl_read(PDL_REG_ARRAY), ==, 0);
    g_assert_cmpuint(pdl_read(PDL_REG_LOG_COUNT), ==, 0);
    g_assert_cmphex(pdl_read(PDL_REG_LOG_DIGEST), ==, PDL_LOG_DIGEST_INIT);
    g_assert_cmpuint(pdl_read(PDL_REG_ACCESSES), ==, 8);
}

/* ---- pci-testdev ---- */

/* Select test t through a BAR and check its header. */
static uint32_t pcitest_select(AddressSpace *as, uint64_t base, unsigned t,
                               unsigned expected_index, const char *expected_name)
{
    uint8_t select = t;
    g_assert_cmpint(address_space_write(as, base, &select, 1), ==, MEMTX_OK);
    uint8_t hdr[64];
    g_assert_cmpint(address_space_read(as, base, hdr, sizeof(hdr)), ==, MEMTX_OK);
    g_assert_cmpuint(hdr[0], ==, expected_index);
    g_assert_cmpuint(hdr[1], ==, 1);
    uint32_t offset, count;
    memcpy(&offset, hdr + 4, 4);
    memcpy(&count, hdr + 12, 4);
    g_assert_cmpuint(count, ==, 0);
    g_assert_cmphex(hdr[8], ==, strstr(expected_name, "wildcard") ? 0xce : 0xfa);
    g_assert_cmpstr((const char *)hdr + 16, ==, expected_name);
    g_assert_cmpuint(hdr[16 + strlen(expected_name)], ==, 0);
    return offset;
}

static uint32_t pcitest_count(void)
{
    return mem_read(PCITEST_MMIO + 12, 4);
}

static void test_pci_testdev_config(void)
{
    g_assert_cmphex(cfg_read(PCITEST_DEVFN, PCI_VENDOR_ID, 4), ==, 0x00051b36);
    g_assert_cmphex(cfg_read(PCITEST_DEVFN, PCI_CLASS_DEVICE, 2), ==, 0x00ff);  /* as QEMU */
    g_assert_cmpuint(cfg_read(PCITEST_DEVFN, PCI_INTERRUPT_PIN, 1), ==, 0);
}

static void test_pci_testdev_mmio(void)
{
    static const char *const names[] = {
        "mmio-no-eventfd", "mmio-wildcard-eventfd", "mmio-datamatch-eventfd",
    };
    for (unsigned t = 0; t < 3; t++) {
        uint32_t offset = pcitest_select(address_space_memory, PCITEST_MMIO, t, t, names[t]);
        g_assert_cmpuint(offset, ==, 2048 + t);
        /* On the eventfd tests these go to the ioeventfd (signalled by
         * dispatch here, by KVM in a guest): as under QEMU, they do not
         * count. */
        for (unsigned i = 0; i < 5; i++) {
            mem_write(PCITEST_MMIO + offset, 0xfa, 1);
        }
        uint32_t byte_hits = t == 0 ? 5 : 0;
        g_assert_cmpuint(pcitest_count(), ==, byte_hits);
        /* A wide write is no ioeventfd's: it reaches the handler and hits
         * with its low byte. */
        mem_write(PCITEST_MMIO + offset, 0x123400fa, 4);
        g_assert_cmpuint(pcitest_count(), ==, byte_hits + 1);
        /* Other data counts nowhere (the wildcard's ioeventfd takes it);
         * other offsets never. */
        mem_write(PCITEST_MMIO + offset, 0x17, 1);
        mem_write(PCITEST_MMIO + offset + 8, 0xfa, 1);
        g_assert_cmpuint(pcitest_count(), ==, byte_hits + 1);
    }
    /* Reselecting replaces the ioeventfd with the same one. */
    pcitest_select(address_space_memory, PCITEST_MMIO, 1, 1, names[1]);
    /* Reselecting zeroes the count. */
    pcitest_select(address_space_memory, PCITEST_MMIO, 2, 2, names[2]);
}

static void test_pci_testdev_portio(void)
{
    uint32_t offset = pcitest_select(address_space_io, PCITEST_IO, 2, 5,
                                     "portio-datamatch-eventfd");
    g_assert_cmpuint(offset, ==, 128 + 5);
    io_write(PCITEST_IO + offset, 0xfa, 1);     /* the ioeventfd's */
    io_write(PCITEST_IO + offset, 0xfb, 1);     /* no match: not counted */
    io_write(PCITEST_IO + offset, 0xfa, 2);     /* another width: counted */
    /* The header reads the same through either BAR. */
    g_assert_cmpuint(io_read(PCITEST_IO + 12, 4), ==, 1);
    g_assert_cmpuint(pcitest_count(), ==, 1);

    offset = pcitest_select(address_space_io, PCITEST_IO, 1, 4, "portio-wildcard-eventfd");
    io_write(PCITEST_IO + offset, 0x00, 1);
    io_write(PCITEST_IO + offset, 0x00, 4);
    g_assert_cmpuint(io_read(PCITEST_IO + 12, 4), ==, 1);

    /* No such test: deselected, everything reads 0. */
    io_write(PCITEST_IO, 3, 1);
    g_assert_cmphex(io_read(PCITEST_IO, 4), ==, 0);
    g_assert_cmphex(mem_read(PCITEST_MMIO + 16, 4), ==, 0);
    io_write(PCITEST_IO + offset, 0x00, 1);
    g_assert_cmpuint(mem_read(PCITEST_MMIO + 12, 4), ==, 0);
}

/* ---- pc-testdev ---- */

static void test_pc_testdev_ports(void)
{
    io_write(0xe0, 0x11223344, 4);
    g_assert_cmphex(io_read(0xe0, 4), ==, 0x11223344);
    g_assert_cmphex(io_read(0xe1, 1), ==, 0x33);
    g_assert_cmphex(io_read(0xe2, 2), ==, 0x1122);
    io_write(0xe3, 0xaa, 1);
    io_write(0xe0, 0xbbcc, 2);
    g_assert_cmphex(io_read(0xe0, 4), ==, 0xaa22bbcc);
    /* 0xe8 is the same register, served a byte at a time. */
    g_assert_cmphex(io_read(0xe8, 4), ==, 0xaa22bbcc);
    io_write(0xe9, 0x0102, 2);
    g_assert_cmphex(io_read(0xe0, 4), ==, 0xaa0102cc);

    /* 0x2000 + N drives GSI N; only byte writes count. */
    g_assert_false(irq_line_level(5));
    io_write(0x2005, 1, 1);
    g_assert_true(irq_line_level(5));
    g_assert_false(irq_line_level(4));
    io_write(0x2004, 0x0000, 2);
    g_assert_true(irq_line_level(5));
    io_write(0x2005, 0, 1);
    g_assert_false(irq_line_level(5));
    io_write(0x2017, 0x80, 1);
    g_assert_true(irq_line_level(23));
    io_write(0x2017, 0, 1);
    g_assert_false(irq_line_level(23));
    g_assert_cmphex(io_read(0x2000, 1), ==, 0);
}

static void test_pc_testdev_iomem(void)
{
    g_assert_cmphex(mem_read(0xff000000, 4), ==, 0);
    mem_write(0xff000000, 0xcafef00d, 4);
    mem_write(0xff00fffe, 0xbeef, 2);
    uint64_t wide = 0x0123456789abcdefULL;
    g_assert_cmpint(address_space_write(address_space_memory, 0xff000101, &wide, 8), ==, MEMTX_OK);
    g_assert_cmphex(mem_read(0xff000000, 4), ==, 0xcafef00d);
    g_assert_cmphex(mem_read(0xff000002, 1), ==, 0xfe);
    g_assert_cmphex(mem_read(0xff00fffe, 2), ==, 0xbeef);
    wide = 0;
    g_assert_cmpint(address_space_read(address_space_memory, 0xff000101, &wide, 8), ==, MEMTX_OK);
    g_assert_cmphex(wide, ==, 0x0123456789abcdefULL);
}

static void test_pc_testdev_flush_page(void)
{
    ram[0x5123] = 0x42;
    io_write(0xe4, 0x5123, 4);
    /* The page keeps its contents and stays writable. */
    g_assert_cmphex(ram[0x5123], ==, 0x42);
    ram[0x5124] = 0x43;
    mem_write(0x5125, 0x44, 1);
    g_assert_cmphex(ram[0x5125], ==, 0x44);
    /* Not RAM, or the wrong width: ignored. */
    io_write(0xe4, 0xfe000000, 4);
    io_write(0xe4, 0x5000, 2);
    g_assert_cmphex(io_read(0xe4, 4), ==, 0);

    Error *err = NULL;
    g_assert_false(pc_testdev_new(&err));
    g_assert_nonnull(err);
    error_free(err);
}

static void test_pci_slot_taken(void)
{
    Error *err = NULL;
    g_assert_false(pdl_testdev_new(bus, PDL_DEVFN, &err));
    g_assert_nonnull(err);
    error_free(err);
    err = NULL;
    g_assert_false(pci_testdev_new(bus, PCITEST_DEVFN, &err));
    g_assert_nonnull(err);
    error_free(err);
}

static void setup_machine(void)
{
    static MemoryRegion ram_region;
    memory_init();
    ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert_true(ram != MAP_FAILED);
    memory_region_init_ram(&ram_region, "ram", RAM_SIZE, ram);
    address_space_map(address_space_memory, &ram_region, 0, 0);
    irq_set_backend(&(IrqBackend) { .send_msi = record_msi });

    Error *err = NULL;
    bus = pci_bus_new(map_irq);
    g_assert_true(pdl_testdev_new(bus, PDL_DEVFN, &err));
    g_assert_true(pci_testdev_new(bus, PCITEST_DEVFN, &err));
    g_assert_true(pc_testdev_new(&err));
    g_assert_null(err);
    program_bars();
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    setup_machine();
    g_test_add_func("/pdl-testdev/config", test_pdl_config);
    g_test_add_func("/pdl-testdev/registers", test_pdl_registers);
    g_test_add_func("/pdl-testdev/bad-sizes", test_pdl_bad_sizes);
    g_test_add_func("/pdl-testdev/intx", test_pdl_intx);
    g_test_add_func("/pdl-testdev/msi", test_pdl_msi);
    g_test_add_func("/pdl-testdev/msix", test_pdl_msix);
    g_test_add_func("/pdl-testdev/msix-irqfd-user-space", test_pdl_msix_irqfd_user_space);
    g_test_add_func("/pdl-testdev/dma-fill-sum", test_pdl_dma_fill_sum);
    g_test_add_func("/pdl-testdev/dma-refused", test_pdl_dma_refused);
    g_test_add_func("/pdl-testdev/concurrent-accesses", test_pdl_concurrent_accesses);
    g_test_add_func("/pdl-testdev/doorbell", test_pdl_doorbell);
    g_test_add_func("/pdl-testdev/doorbell-consumed-at-each-ring",
                    test_pdl_doorbell_consumed_at_each_ring);
    g_test_add_func("/pdl-testdev/array-log", test_pdl_array_log);
    g_test_add_func("/pdl-testdev/reset", test_pdl_reset);
    g_test_add_func("/pci-testdev/config", test_pci_testdev_config);
    g_test_add_func("/pci-testdev/mmio", test_pci_testdev_mmio);
    g_test_add_func("/pci-testdev/portio", test_pci_testdev_portio);
    g_test_add_func("/pci/slot-taken", test_pci_slot_taken);
    g_test_add_func("/pc-testdev/ports", test_pc_testdev_ports);
    g_test_add_func("/pc-testdev/iomem", test_pc_testdev_iomem);
    g_test_add_func("/pc-testdev/flush-page", test_pc_testdev_flush_page);
    return g_test_run();
}
