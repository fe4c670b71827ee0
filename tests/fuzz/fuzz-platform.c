/*
 * libFuzzer harness for the pc platform's devices, driven the way a guest
 * drives them: every access goes through address_space_read/write on the
 * port I/O or memory space (flat-view lookup, the owner's device lock, the
 * region's ops), with no KVM and no vCPU thread. The devices are those of
 * hw/i386/pc.c, wired as it wires them (the PIIX3 IDE function included),
 * plus those of the device table in fuzz-devices.c: the test devices, IDE
 * drives and virtio-blk-pci on small temporary images.
 *
 * An input is a sequence of operations (README.md has the format). Each
 * run starts from a machine reset and fresh images, and host I/O
 * completes only where the input settles or at its end, so a crash
 * reproduces from its input alone. Guest requests (reset, suspend, shutdown) are acted on as the
 * machine's main loop would: a reset resets every device, a suspend is
 * woken at once, a shutdown ends the input.
 *
 * FUZZ_TRACE=1 prints every operation and what a read returned;
 * FUZZ_LOG=guest_errors,unimp turns on the VMM's -d logging.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "chardev/char.h"
#include "fuzz.h"
#include "hw/acpi/acpi.h"
#include "hw/char/serial.h"
#include "hw/ide/ide.h"
#include "hw/input/i8042.h"
#include "hw/irq.h"
#include "hw/misc/isa-misc.h"
#include "hw/misc/pdl-testdev-regs.h"
#include "hw/misc/testdev.h"
#include "hw/nvram/fw_cfg.h"
#include "hw/pci-host/i440fx.h"
#include "hw/rtc/mc146818rtc.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "sysemu/runstate.h"

#define RAM_SIZE            FUZZ_RAM_SIZE

/* The windows hw/i386/pc.c gives the PCI bus (memory below the IOAPIC). */
#define PCI_IO_BASE         0xc000
#define PCI_IO_LIMIT        0xffff
#define PCI_MEM_BASE        0xe0000000ULL
#define PCI_MEM_LIMIT       0xfebfffffULL
#define PCI_INTX_GSI_BASE   16

#define PDL_DEVFN           PCI_DEVFN(3, 0)     /* where fuzz-devices.c puts it */
#define COM1_IOBASE         0x3f8
#define COM1_GSI            4
#define DEBUG_EXIT_IOBASE   0xf4    /* where the tests put isa-debug-exit */

/*
 * The input format. Each operation starts with a kind byte:
 *   bits 0-2  the operation (FuzzOp)
 *   bits 3-4  log2 of the access size (1, 2, 4, 8; port I/O and config
 *             space have no 8-byte accesses and use 4)
 *   bits 5-7  an operand: the memory window of OP_MEM_*, flags of OP_DMA,
 *             the machine operation of OP_MACHINE
 * then the operation's operands, little-endian. An input that ends in the
 * middle of an operation reads zeros for what is missing.
 */
typedef enum FuzzOp {
    OP_IO_READ,         /* port:2 */
    OP_IO_WRITE,        /* port:2 value:size */
    OP_MEM_READ,        /* offset:3 (or address:8 in the raw window) */
    OP_MEM_WRITE,       /* offset:3 (or address:8) value:size */
    OP_PCI_CONFIG_READ, /* devfn:1 offset:1 (bus 0, through 0xcf8/0xcfc) */
    OP_PCI_CONFIG_WRITE,/* devfn:1 offset:1 value:size */
    OP_DMA,             /* see dma_op() */
    OP_MACHINE,         /* see MachineOp */
} FuzzOp;

/* OP_MACHINE's operand. */
typedef enum MachineOp {
    MOP_RUN_TIMERS,     /* run the device timers that are due */
    MOP_SETTLE,         /* complete what the devices started (fuzz_settle) */
    MOP_RAM_WRITE,      /* address:3 length:1 bytes:length, into RAM */
    MOP_BAR_ACCESS,     /* devfn:1 bar:1 offset:2 [value:size]; bar bit 7: write */
    MOP_DEVICE_OP,      /* device:1, then its driver's operation */
} MachineOp;
#define BAR_ACCESS_WRITE    0x80

#define KIND_OP(kind)       ((kind) & 7)
#define KIND_SIZE(kind)     (1u << (((kind) >> 3) & 3))
#define KIND_OPERAND(kind)  ((kind) >> 5)

/* OP_DMA operand bits. */
#define DMA_TO_FW_CFG       1   /* fw_cfg's DMA interface, else pdl-testdev's */
#define DMA_ADDR_IN_RAM     2   /* reduce the (first) address modulo RAM_SIZE */
#define DMA_SECOND_IN_RAM   4   /* fw_cfg: same for the transfer's address;
                                 * pdl-testdev: FILL instead of SUM */

/*
 * Where OP_MEM_* offsets point: guest RAM, the end of RAM and what follows
 * it, the bottom of the PCI memory window (where the BARs are assigned)
 * and its top, the IOAPIC and LAPIC (MSI) windows, pc-testdev's iomem.
 * The last window takes a full 64-bit address instead of a 20-bit offset.
 */
static const uint64_t mem_windows[] = {
    0, RAM_SIZE - 0x80000, PCI_MEM_BASE, PCI_MEM_LIMIT + 1 - 0x100000,
    0xfec00000, 0xfee00000, 0xff000000,
};
#define MEM_WINDOW_OFFSET_MASK  0xfffff
#define MEM_WINDOW_RAW          G_N_ELEMENTS(mem_windows)
_Static_assert(G_N_ELEMENTS(mem_windows) == 7, "seven windows and the raw one fill 3 bits");

static uint8_t *guest_ram;
static AcpiPMState *acpi_pm;

/* ---- the special operations ---- */

static uint64_t dma_address(uint64_t addr, bool in_ram)
{
    return in_ram ? addr % RAM_SIZE : addr;
}

/*
 * pdl-testdev's doorbell, as its driver rings it: bus mastering and memory
 * decoding on, then address, length and pattern through BAR0 wherever the
 * guest has put it. Operands: address:8 length:4 pattern:1.
 */
static void dma_pdl_testdev(FuzzInput *in, unsigned flags)
{
    uint64_t addr = dma_address(input_take(in, 8), flags & DMA_ADDR_IN_RAM);
    uint32_t len = input_take(in, 4);
    uint8_t pattern = input_take(in, 1);
    uint16_t command = pci_config_read_port(PDL_DEVFN, PCI_COMMAND, 2);
    pci_config_write_port(PDL_DEVFN, PCI_COMMAND,
                          command | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
    uint64_t bar = pci_config_read_port(PDL_DEVFN, PCI_BASE_ADDRESS_0, 4) & ~0xfull;
    guest_write(address_space_memory, bar + PDL_REG_DMA_ADDR_LO, (uint32_t)addr, 4);
    guest_write(address_space_memory, bar + PDL_REG_DMA_ADDR_HI, addr >> 32, 4);
    guest_write(address_space_memory, bar + PDL_REG_DMA_LEN, len, 4);
    guest_write(address_space_memory, bar + PDL_REG_DMA_PATTERN, pattern, 4);
    guest_write(address_space_memory, bar + PDL_REG_DMA_DOORBELL,
                flags & DMA_SECOND_IN_RAM ? PDL_DMA_FILL : PDL_DMA_SUM, 4);
    guest_read(address_space_memory, bar + PDL_REG_DMA_STATUS, 4);
}

/*
 * A fw_cfg DMA transfer: the FWCfgDmaAccess (big-endian control, length,
 * address) written into guest memory, then its address written to the DMA
 * port, high half first (the low half starts it). Operands:
 * descriptor:8 control:4 length:4 address:8.
 */
static void dma_fw_cfg(FuzzInput *in, unsigned flags)
{
    uint64_t descriptor = dma_address(input_take(in, 8), flags & DMA_ADDR_IN_RAM);
    struct {
        uint32_t control, length;
        uint64_t address;
    } access = {
        .control = GUINT32_TO_BE(input_take(in, 4)),
        .length = GUINT32_TO_BE(input_take(in, 4)),
        .address = GUINT64_TO_BE(dma_address(input_take(in, 8), flags & DMA_SECOND_IN_RAM)),
    };
    address_space_write(address_space_memory, descriptor, &access, sizeof(access));
    uint64_t be_descriptor = GUINT64_TO_BE(descriptor);
    uint32_t halves[2];
    memcpy(halves, &be_descriptor, sizeof(halves));
    guest_write(address_space_io, FW_CFG_DMA_IO_BASE, halves[0], 4);
    guest_write(address_space_io, FW_CFG_DMA_IO_BASE + 4, halves[1], 4);
}

static void dma_op(FuzzInput *in, unsigned flags)
{
    if (flags & DMA_TO_FW_CFG) {
        dma_fw_cfg(in, flags);
    } else {
        dma_pdl_testdev(in, flags);
    }
}

static uint64_t mem_op_address(FuzzInput *in, unsigned window)
{
    if (window == MEM_WINDOW_RAW) {
        return input_take(in, 8);
    }
    return mem_windows[window] + (input_take(in, 3) & MEM_WINDOW_OFFSET_MASK);
}

/* Guest RAM written as a CPU would store a block (a PRD table, a request
 * header, a packet), the address wrapping in RAM. */
static void ram_write(FuzzInput *in)
{
    uint64_t addr = input_take(in, 3) % RAM_SIZE;
    size_t len = input_take(in, 1);
    len = MIN(len, in->size);
    guest_write_block(addr, in->data, len);
    in->data += len;
    in->size -= len;
}

/* A register in a BAR of a function on bus 0, wherever the guest has put
 * the BAR (a function that is not there reads as all ones: a BAR at the
 * top of the address space). */
static void bar_access(FuzzInput *in, unsigned size)
{
    uint8_t devfn = input_take(in, 1);
    uint8_t bar = input_take(in, 1);
    uint16_t offset = input_take(in, 2);
    FuzzBar where = pci_bar(devfn, bar & 7);
    size = where.as == address_space_io ? MIN(size, 4) : size;
    if (bar & BAR_ACCESS_WRITE) {
        guest_write(where.as, where.addr + offset, input_take(in, size), size);
    } else {
        guest_read(where.as, where.addr + offset, size);
    }
}

static void machine_op(FuzzInput *in, MachineOp op, unsigned size)
{
    switch (op) {
    case MOP_RUN_TIMERS:
        timers_run_due();
        break;
    case MOP_SETTLE:
        fuzz_settle();
        break;
    case MOP_RAM_WRITE:
        ram_write(in);
        break;
    case MOP_BAR_ACCESS:
        bar_access(in, size);
        break;
    case MOP_DEVICE_OP: {
        FuzzDevice *dev = fuzz_device(input_take(in, 1));
        if (dev->driver) {
            if (fuzz_trace) {
                fprintf(stderr, " %s op on %s\n", dev->driver->name, dev->option);
            }
            dev->driver->op(dev, in);
        }
        break;
    }
    }
}

static void run_op(FuzzInput *in)
{
    uint8_t kind = input_take(in, 1);
    unsigned size = KIND_SIZE(kind);
    unsigned pio_size = MIN(size, 4);

    switch ((FuzzOp)KIND_OP(kind)) {
    case OP_IO_READ:
        guest_read(address_space_io, input_take(in, 2), pio_size);
        break;
    case OP_IO_WRITE: {
        uint16_t port = input_take(in, 2);
        guest_write(address_space_io, port, input_take(in, pio_size), pio_size);
        break;
    }
    case OP_MEM_READ:
        guest_read(address_space_memory, mem_op_address(in, KIND_OPERAND(kind)), size);
        break;
    case OP_MEM_WRITE: {
        uint64_t addr = mem_op_address(in, KIND_OPERAND(kind));
        guest_write(address_space_memory, addr, input_take(in, size), size);
        break;
    }
    case OP_PCI_CONFIG_READ: {
        uint8_t devfn = input_take(in, 1);
        pci_config_read_port(devfn, input_take(in, 1), pio_size);
        break;
    }
    case OP_PCI_CONFIG_WRITE: {
        uint8_t devfn = input_take(in, 1);
        uint8_t offset = input_take(in, 1);
        pci_config_write_port(devfn, offset, input_take(in, pio_size), pio_size);
        break;
    }
    case OP_DMA:
        dma_op(in, KIND_OPERAND(kind));
        break;
    case OP_MACHINE:
        machine_op(in, KIND_OPERAND(kind), size);
        break;
    }
}

/* ---- the machine ---- */

/* What hw/i386/pc.c's reset does to the devices (no vCPUs here); the
 * devices are drained first. */
static void machine_reset(void)
{
    device_reset_all();
    irq_reset_all();
}

/*
 * Act on the guest's requests as the main loop would. Returns false once
 * the guest has asked for a shutdown: a real guest runs no further.
 */
static bool machine_handle_requests(void)
{
    int status;
    ShutdownCause cause;
    if (runstate_take_shutdown_request(&cause, &status)) {
        return false;
    }
    if (runstate_take_reset_request(&cause)) {
        machine_reset();
    }
    if (runstate_take_suspend_request()) {
        /* Woken at once, as by whatever wake event the guest enabled. */
        machine_reset();
        acpi_pm_set_woken(acpi_pm, acpi_pm_rtc_wake_enabled(acpi_pm));
    }
    runstate_take_wakeup_request();
    return true;
}

static unsigned pc_pci_map_irq(unsigned slot, unsigned pin)
{
    return PCI_INTX_GSI_BASE + ((slot + pin - 1) & 3);
}

/* Anonymous memory, so that a run can drop what the last one dirtied. */
static bool guest_ram_create(Error **errp)
{
    static MemoryRegion ram_region;
    void *ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (ram == MAP_FAILED) {
        error_setg_errno(errp, errno, "cannot allocate guest RAM");
        return false;
    }
    guest_ram = ram;
    memory_region_init_ram(&ram_region, "ram", RAM_SIZE, guest_ram);
    address_space_map(address_space_memory, &ram_region, 0, 0);
    return true;
}

static bool fw_cfg_create(const char *self, Error **errp)
{
    static const char small[] = "fuzz";
    static uint8_t large[64 * 1024];
    for (size_t i = 0; i < sizeof(large); i++) {
        large[i] = i * 7;
    }
    FWCfgState *fw = fw_cfg_new(errp);
    if (!fw) {
        return false;
    }
    fw_cfg_add_i16(fw, FW_CFG_NB_CPUS, 1);
    fw_cfg_add_i64(fw, FW_CFG_RAM_SIZE, RAM_SIZE);
    fw_cfg_add_bytes(fw, FW_CFG_CMDLINE_DATA, "console=ttyS0", sizeof("console=ttyS0"));
    /* A host-file item, as -kernel makes one: read on demand from a mapping. */
    return fw_cfg_add_mapped_file(fw, FW_CFG_KERNEL_DATA, self, errp) &&
           fw_cfg_add_file(fw, "etc/fuzz-small", small, sizeof(small), errp) &&
           fw_cfg_add_file(fw, "opt/fuzz-large", large, sizeof(large), errp);
}

/* The devices of hw/i386/pc.c's pc_create_devices, then the device table's. */
static bool machine_create(const char *self, Error **errp)
{
    Chardev *com1 = chardev_new("null", errp);
    RTCState *rtc;
    DeviceBuses buses = { 0 };
    if (!com1 || !isa_serial_new(COM1_IOBASE, COM1_GSI, com1, errp) ||
        !(rtc = rtc_new(RTC_ISA_GSI, errp))) {
        return false;
    }
    rtc_set_pc_memory_info(rtc, RAM_SIZE, 0, 1);
    port80_new();
    i8042_new();
    if (!(buses.pci = i440fx_init(pc_pci_map_irq, errp)) ||
        !(acpi_pm = acpi_pm_new(buses.pci, errp)) ||
        !fw_cfg_create(self, errp) ||
        !isa_debug_exit_new(DEBUG_EXIT_IOBASE, 4, errp) ||
        !pc_testdev_new(errp) ||
        !(buses.ide = piix3_ide_new(buses.pci, errp)) ||
        !fuzz_devices_create(&buses, errp) ||
        !pci_bus_assign_resources(buses.pci, PCI_IO_BASE, PCI_IO_LIMIT, PCI_MEM_BASE,
                                  PCI_MEM_LIMIT, errp)) {
        return false;
    }
    acpi_pm_machine_done(acpi_pm);
    fuzz_devices_probe();
    return true;
}

/* UBSan findings stop the run like ASan's (unless UBSAN_OPTIONS says otherwise). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    Error *err = NULL;
    const char *log = getenv("FUZZ_LOG");
    fuzz_trace = getenv("FUZZ_TRACE") != NULL;
    memory_init();
    if ((log && !qemu_log_parse(log, &err)) || !guest_ram_create(&err) ||
        !machine_create("/proc/self/exe", &err)) {
        error_prepend(&err, "fuzz-platform: ");
        error_report_err(err);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in = { data, size };
    machine_reset();
    fuzz_devices_reset();
    /* Zero-fill again on next touch: costs what the last run dirtied. */
    madvise(guest_ram, RAM_SIZE, MADV_DONTNEED);
    while (in.size && machine_handle_requests()) {
        run_op(&in);
    }
    /* Host I/O started by this input completes within it, so a crash in a
     * completion is blamed on the input that caused it. Then leave no
     * request behind for the next run. */
    fuzz_settle();
    machine_handle_requests();
    return 0;
}
