/*
 * pdl-testdev: our PCI test function (register layout and ids in
 * include/hw/misc/pdl-testdev-regs.h). The same registers appear in BAR0
 * (memory) and BAR1 (I/O); BAR2 holds the MSI-X table and PBA. One MSI-X
 * vector is raised through an irqfd from the main loop. It lets the
 * guest exercise the PCI core (BARs, INTx, MSI, MSI-X, bus mastering)
 * before real devices exist, and gives the lock benchmarks a device whose
 * every register access takes its device lock.
 *
 * All state is guarded by the device lock, which dispatch takes around the
 * register callbacks. DMA goes to guest RAM only (dma_memory_*), which
 * needs no lock and can never re-enter a device, so doing it synchronously
 * inside the doorbell write is safe.
 *
 * The doorbell (PDL_REG_DOORBELL) is an ioeventfd in both BARs: under KVM
 * the guest's write signals it in the kernel, and the device counts the
 * rings when it consumes the notifier on the main loop, under its lock,
 * off the vCPU's path, each time the notifier is signalled, as a real
 * device serves its kicks (reading DOORBELL_COUNT consumes what is
 * pending too). EVENTFD_EXITS tells the guest how many of its writes an
 * ioeventfd matched in user space instead: rings that left the kernel.
 * ARRAY is declared coalesced in both BARs: dispatch
 * replays its queued writes in order before any other access, so the
 * write handler is the ordinary one.
 *
 * Guest mistakes (wrong access width, writes to read-only registers,
 * unknown commands, DMA without bus mastering or outside RAM) are logged
 * under -d guest_errors and ignored, or fail the DMA command with
 * PDL_DMA_STATUS_ERROR.
 */
#include <inttypes.h>
#include <string.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/misc/pdl-testdev-regs.h"
#include "hw/misc/testdev.h"
#include "hw/pci/intx-irqfd.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "qemu/bh.h"
#include "qemu/event-notifier.h"
#include "qemu/fd-watch.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "sysemu/kvm.h"

#define PDL_TESTDEV_REG_SIZE    4
/* DMA moves through a bounce buffer of this size, on the vCPU's stack. */
#define PDL_TESTDEV_DMA_CHUNK   4096
#define PDL_IRQ_KIND_MASK       0xff
#define PDL_IRQ_VECTOR_SHIFT    8

typedef struct PDLTestdevState {
    PCIDevice pci;
    MemoryRegion mmio;
    MemoryRegion io;
    uint32_t scratch;
    uint32_t accesses;
    uint32_t irq_count;
    uint64_t dma_addr;
    uint32_t dma_len;
    uint8_t dma_pattern;
    uint32_t dma_status;
    uint32_t dma_result;
    EventNotifier doorbell;
    FdWatch *doorbell_watch;        /* main loop */
    uint32_t doorbell_count;
    uint32_t array[PDL_ARRAY_ENTRIES];
    uint32_t log_count;
    uint32_t log_digest;
    EventNotifier irqfd_notifier;   /* raises MSI-X PDL_TESTDEV_IRQFD_VECTOR */
    QEMUBH *irqfd_bh;
    bool irqfd_requested;
    uint32_t irqfd_signals;
} PDLTestdevState;

/* ---- interrupts ---- */

/* MSI and MSI-X differ only in these; one path sends either. */
typedef struct MessageIrqKind {
    const char *name;
    unsigned vectors;
    bool (*enabled)(const PCIDevice *dev);
    void (*notify)(PCIDevice *dev, unsigned vector);
} MessageIrqKind;

static const MessageIrqKind pdl_msi = {
    "MSI", PDL_TESTDEV_MSI_VECTORS, msi_enabled, msi_notify,
};
static const MessageIrqKind pdl_msix = {
    "MSI-X", PDL_TESTDEV_MSIX_VECTORS, msix_enabled, msix_notify,
};

static bool pdl_testdev_send_message(PDLTestdevState *s, const MessageIrqKind *kind,
                                     uint32_t vector)
{
    if (!kind->enabled(&s->pci)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: %s vector %u raised with %s disabled: ignored\n",
                      s->pci.qdev.id, kind->name, vector, kind->name);
        return false;
    }
    if (vector >= kind->vectors) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: %s vector %u does not exist (%u vectors): "
                      "ignored\n", s->pci.qdev.id, kind->name, vector, kind->vectors);
        return false;
    }
    kind->notify(&s->pci, vector);
    return true;
}

static void pdl_testdev_irq_raise(PDLTestdevState *s, uint32_t value)
{
    uint32_t vector = value >> PDL_IRQ_VECTOR_SHIFT;
    bool raised;
    switch (value & PDL_IRQ_KIND_MASK) {
    case PDL_IRQ_INTX:
        pci_set_irq(&s->pci, true);
        raised = true;
        break;
    case PDL_IRQ_MSI:
        raised = pdl_testdev_send_message(s, &pdl_msi, vector);
        break;
    case PDL_IRQ_MSIX:
        raised = pdl_testdev_send_message(s, &pdl_msix, vector);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "%s: IRQ_RAISE 0x%x: unknown interrupt kind\n",
                      s->pci.qdev.id, value);
        raised = false;
        break;
    }
    if (raised) {
        s->irq_count++;
    }
}

/* ---- MSI-X vector on irqfd ----
 *
 * The guest asks; the main loop signals the notifier (hw/pci/msi.h,
 * msix_vector_use_notifier). The signal is sent under the device lock only
 * so that IRQFD_SIGNALS never counts a signal not yet sent: the interrupt's
 * path itself (eventfd, KVM) takes no lock.
 */

static void pdl_testdev_irqfd_signal(void *opaque)
{
    PDLTestdevState *s = opaque;
    device_lock(&s->pci.qdev);
    if (s->irqfd_requested) {
        s->irqfd_requested = false;
        event_notifier_set(&s->irqfd_notifier);
        s->irqfd_signals++;
    }
    device_unlock(&s->pci.qdev);
}

static void pdl_testdev_irqfd_trigger(PDLTestdevState *s)
{
    s->irqfd_requested = true;
    qemu_bh_schedule(s->irqfd_bh);
}

static uint32_t pdl_testdev_irqfd_status(PDLTestdevState *s)
{
    return msix_vector_in_kernel(&s->pci, PDL_TESTDEV_IRQFD_VECTOR) ? PDL_IRQFD_IN_KERNEL : 0;
}

static bool pdl_testdev_irqfd_init(PDLTestdevState *s, Error **errp)
{
    if (!event_notifier_init(&s->irqfd_notifier, errp)) {
        return false;
    }
    s->irqfd_bh = qemu_bh_new(main_loop_context(), pdl_testdev_irqfd_signal, s);
    msix_vector_use_notifier(&s->pci, PDL_TESTDEV_IRQFD_VECTOR, &s->irqfd_notifier,
                             main_loop_context());
    /* INTx too, where KVM can resample it. */
    return pci_intx_irqfd_enable(&s->pci, main_loop_context(), errp);
}

/* ---- DMA ---- */

static bool pdl_testdev_dma_fill(PDLTestdevState *s)
{
    uint8_t chunk[PDL_TESTDEV_DMA_CHUNK];
    memset(chunk, s->dma_pattern, sizeof(chunk));
    for (uint32_t done = 0; done < s->dma_len; ) {
        uint32_t n = MIN(s->dma_len - done, (uint32_t)sizeof(chunk));
        if (!dma_memory_write(s->dma_addr + done, chunk, n)) {
            return false;
        }
        done += n;
    }
    return true;
}

static bool pdl_testdev_dma_sum(PDLTestdevState *s)
{
    uint8_t chunk[PDL_TESTDEV_DMA_CHUNK];
    uint32_t sum = 0;
    for (uint32_t done = 0; done < s->dma_len; ) {
        uint32_t n = MIN(s->dma_len - done, (uint32_t)sizeof(chunk));
        if (!dma_memory_read(s->dma_addr + done, chunk, n)) {
            return false;
        }
        for (uint32_t i = 0; i < n; i++) {
            sum += chunk[i];
        }
        done += n;
    }
    s->dma_result = sum;
    return true;
}

/* Why the DMA command may not run, or NULL if it may. */
static const char *pdl_testdev_dma_refusal(const PDLTestdevState *s)
{
    if (!pci_bus_master_enabled(&s->pci)) {
        return "bus mastering is off";
    }
    if (s->dma_len == 0 || s->dma_len > PDL_TESTDEV_DMA_MAX) {
        return "length is 0 or above the maximum";
    }
    if (s->dma_addr > UINT64_MAX - (s->dma_len - 1)) {
        return "the range wraps around the address space";
    }
    return NULL;
}

/* Runs the command; returns why it failed, or NULL. A transfer that runs
 * off RAM part-way stops there: the chunks before the refused one have
 * been moved, as with a real device. */
static const char *pdl_testdev_dma_run(PDLTestdevState *s, uint32_t command)
{
    const char *refusal = pdl_testdev_dma_refusal(s);
    if (refusal) {
        return refusal;
    }
    switch (command) {
    case PDL_DMA_FILL:
        return pdl_testdev_dma_fill(s) ? NULL : "the range is not all guest RAM";
    case PDL_DMA_SUM:
        return pdl_testdev_dma_sum(s) ? NULL : "the range is not all guest RAM";
    default:
        return "unknown command";
    }
}

static void pdl_testdev_dma_doorbell(PDLTestdevState *s, uint32_t command)
{
    if (command == PDL_DMA_SUM) {
        s->dma_result = 0;  /* a failed SUM must not leave an old sum behind */
    }
    const char *failure = pdl_testdev_dma_run(s, command);
    if (failure) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: DMA command %u of %u bytes at 0x%" PRIx64
                      " failed: %s\n", s->pci.qdev.id, command, s->dma_len, s->dma_addr,
                      failure);
    }
    s->dma_status = failure ? PDL_DMA_STATUS_ERROR : PDL_DMA_STATUS_DONE;
}

/* ---- fast paths ---- */

/* Under the device lock. */
static void pdl_testdev_doorbell_consume(PDLTestdevState *s)
{
    s->doorbell_count += (uint32_t)event_notifier_take(&s->doorbell);
}

/* Main loop: the doorbell rang (in KVM, or signalled by dispatch). */
static void pdl_testdev_doorbell_rang(void *opaque, GIOCondition revents)
{
    PDLTestdevState *s = opaque;
    device_lock(&s->pci.qdev);
    pdl_testdev_doorbell_consume(s);
    device_unlock(&s->pci.qdev);
}

static uint32_t pdl_testdev_vcpu_exits(void)
{
    KVMExitCounts exits;
    kvm_vcpu_exit_counts(&exits);
    return (uint32_t)(exits.io + exits.mmio);
}

static uint32_t pdl_testdev_fast_paths(void)
{
    unsigned kvm = kvm_fast_paths();
    return (kvm & KVM_FAST_PATH_IOEVENTFD ? PDL_FAST_IOEVENTFD : 0) |
           (kvm & KVM_FAST_PATH_COALESCED_MMIO ? PDL_FAST_COALESCED_MMIO : 0) |
           (kvm & KVM_FAST_PATH_COALESCED_PIO ? PDL_FAST_COALESCED_PIO : 0);
}

static void pdl_testdev_log_clear(PDLTestdevState *s)
{
    s->log_count = 0;
    s->log_digest = PDL_LOG_DIGEST_INIT;
}

static void pdl_testdev_array_write(PDLTestdevState *s, unsigned index, uint32_t value)
{
    s->array[index] = value;
    s->log_count++;
    s->log_digest = pdl_log_digest_step(s->log_digest, index, value);
}

static bool pdl_testdev_is_array(uint64_t offset)
{
    return offset >= PDL_REG_ARRAY && offset < PDL_REG_ARRAY + 4 * PDL_ARRAY_ENTRIES;
}

/* ---- registers (BAR0 and BAR1) ---- */

static bool pdl_testdev_access_ok(PDLTestdevState *s, uint64_t offset, unsigned size,
                                  const char *what)
{
    if (size == PDL_TESTDEV_REG_SIZE && offset % PDL_TESTDEV_REG_SIZE == 0) {
        s->accesses++;
        return true;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %u-byte %s at offset 0x%" PRIx64
                  " (registers take aligned 32-bit accesses): ignored\n",
                  s->pci.qdev.id, size, what, offset);
    return false;
}

static uint64_t pdl_testdev_read(void *opaque, uint64_t offset, unsigned size)
{
    PDLTestdevState *s = opaque;
    if (!pdl_testdev_access_ok(s, offset, size, "read")) {
        return 0;
    }
    if (pdl_testdev_is_array(offset)) {
        return s->array[(offset - PDL_REG_ARRAY) / 4];
    }
    switch (offset) {
    case PDL_REG_ID:
        return PDL_TESTDEV_MAGIC;
    case PDL_REG_SCRATCH:
        return s->scratch;
    case PDL_REG_ACCESSES:
        return s->accesses;
    case PDL_REG_IRQ_COUNT:
        return s->irq_count;
    case PDL_REG_DMA_ADDR_LO:
        return (uint32_t)s->dma_addr;
    case PDL_REG_DMA_ADDR_HI:
        return s->dma_addr >> 32;
    case PDL_REG_DMA_LEN:
        return s->dma_len;
    case PDL_REG_DMA_PATTERN:
        return s->dma_pattern;
    case PDL_REG_DMA_STATUS:
        return s->dma_status;
    case PDL_REG_DMA_RESULT:
        return s->dma_result;
    case PDL_REG_DOORBELL_COUNT:
        pdl_testdev_doorbell_consume(s);
        return s->doorbell_count;
    case PDL_REG_VCPU_EXITS:
        return pdl_testdev_vcpu_exits();
    case PDL_REG_EVENTFD_EXITS:
        return (uint32_t)memory_eventfd_user_signals();
    case PDL_REG_FAST_PATHS:
        return pdl_testdev_fast_paths();
    case PDL_REG_LOG_COUNT:
        return s->log_count;
    case PDL_REG_LOG_DIGEST:
        return s->log_digest;
    case PDL_REG_IRQFD_SIGNALS:
        return s->irqfd_signals;
    case PDL_REG_IRQFD_STATUS:
        return pdl_testdev_irqfd_status(s);
    case PDL_REG_IRQ_RAISE:
    case PDL_REG_IRQ_ACK:
    case PDL_REG_DMA_DOORBELL:
    case PDL_REG_DOORBELL:
    case PDL_REG_IRQFD_TRIGGER:
        return 0;   /* write-only */
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "%s: read of unknown register 0x%" PRIx64 "\n",
                      s->pci.qdev.id, offset);
        return 0;
    }
}

static void pdl_testdev_write(void *opaque, uint64_t offset, uint64_t value64, unsigned size)
{
    PDLTestdevState *s = opaque;
    uint32_t value = (uint32_t)value64;
    if (!pdl_testdev_access_ok(s, offset, size, "write")) {
        return;
    }
    if (pdl_testdev_is_array(offset)) {
        pdl_testdev_array_write(s, (offset - PDL_REG_ARRAY) / 4, value);
        return;
    }
    switch (offset) {
    case PDL_REG_SCRATCH:
        s->scratch = value;
        break;
    case PDL_REG_IRQ_RAISE:
        pdl_testdev_irq_raise(s, value);
        break;
    case PDL_REG_IRQ_ACK:
        pci_set_irq(&s->pci, false);
        break;
    case PDL_REG_DMA_ADDR_LO:
        s->dma_addr = (s->dma_addr & ~(uint64_t)UINT32_MAX) | value;
        break;
    case PDL_REG_DMA_ADDR_HI:
        s->dma_addr = (s->dma_addr & UINT32_MAX) | (uint64_t)value << 32;
        break;
    case PDL_REG_DMA_LEN:
        s->dma_len = value;
        break;
    case PDL_REG_DMA_PATTERN:
        s->dma_pattern = (uint8_t)value;
        break;
    case PDL_REG_DMA_DOORBELL:
        pdl_testdev_dma_doorbell(s, value);
        break;
    case PDL_REG_LOG_COUNT:
        pdl_testdev_log_clear(s);
        break;
    case PDL_REG_IRQFD_TRIGGER:
        pdl_testdev_irqfd_trigger(s);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "%s: write of 0x%x to read-only or unknown register "
                      "0x%" PRIx64 ": ignored\n", s->pci.qdev.id, value, offset);
        break;
    }
}

static const MemoryRegionOps pdl_testdev_ops = {
    .read = pdl_testdev_read,
    .write = pdl_testdev_write,
    .max_access_size = PDL_TESTDEV_REG_SIZE,
};

/* ---- life cycle ---- */

static void pdl_testdev_reset(QEMUDevice *dev)
{
    PDLTestdevState *s = (PDLTestdevState *)dev;
    s->scratch = 0;
    s->accesses = 0;
    s->irq_count = 0;
    s->dma_addr = 0;
    s->dma_len = 0;
    s->dma_pattern = 0;
    s->dma_status = PDL_DMA_STATUS_IDLE;
    s->dma_result = 0;
    event_notifier_take(&s->doorbell);     /* rung before the reset */
    s->doorbell_count = 0;
    memset(s->array, 0, sizeof(s->array));
    pdl_testdev_log_clear(s);
    s->irqfd_requested = false;     /* the guest that asked is gone */
    s->irqfd_signals = 0;
    pci_device_reset(&s->pci);
}

/* The doorbell and the coalesced array, in a BAR's register region. */
static void pdl_testdev_declare_fast_paths(PDLTestdevState *s, MemoryRegion *bar)
{
    /* Any width: KVM's fastest exit for MMIO, where it has it. */
    memory_region_add_eventfd(bar, PDL_REG_DOORBELL, 0, false, 0, &s->doorbell);
    memory_region_add_coalescing(bar, PDL_REG_ARRAY, 4 * PDL_ARRAY_ENTRIES);
}

QEMUDevice *pdl_testdev_new(PCIBus *bus, int devfn, Error **errp)
{
    PDLTestdevState *s = g_new0(PDLTestdevState, 1);
    if (!pci_device_init(&s->pci, bus, devfn, "pdl-testdev", "pdltest",
                         PDL_TESTDEV_VENDOR_ID, PDL_TESTDEV_DEVICE_ID, 0, PDL_TESTDEV_CLASS,
                         1, errp)) {
        g_free(s);
        return NULL;
    }
    s->pci.qdev.reset = pdl_testdev_reset;
    pdl_testdev_log_clear(s);
    if (!event_notifier_init(&s->doorbell, errp)) {
        return NULL;
    }
    s->doorbell_watch = fd_watch_new(main_loop_context(), s->doorbell.fd, G_IO_IN, NULL,
                                     pdl_testdev_doorbell_rang, s);
    memory_region_init_io(&s->mmio, &s->pci.qdev, &pdl_testdev_ops, s,
                          "pdl-testdev-mmio", PDL_TESTDEV_MMIO_SIZE);
    memory_region_init_io(&s->io, &s->pci.qdev, &pdl_testdev_ops, s,
                          "pdl-testdev-io", PDL_TESTDEV_IO_SIZE);
    pdl_testdev_declare_fast_paths(s, &s->mmio);
    pdl_testdev_declare_fast_paths(s, &s->io);
    pci_register_bar(&s->pci, PDL_TESTDEV_MMIO_BAR, 0, &s->mmio);
    pci_register_bar(&s->pci, PDL_TESTDEV_IO_BAR, PCI_BASE_ADDRESS_SPACE_IO, &s->io);
    msi_init(&s->pci, PDL_TESTDEV_MSI_VECTORS);
    msix_init(&s->pci, PDL_TESTDEV_MSIX_VECTORS, PDL_TESTDEV_MSIX_BAR);
    return pdl_testdev_irqfd_init(s, errp) ? &s->pci.qdev : NULL;
}

static QEMUDevice *pdl_testdev_realize(const void *options, const DeviceBuses *buses,
                                       Error **errp)
{
    return pdl_testdev_new(buses->pci, ((const PCIDeviceOptions *)options)->addr, errp);
}

const DeviceTypeInfo pdl_testdev_type = {
    .name = "pdl-testdev",
    .bus = DEVICE_BUS_PCI,
    .category = DEVICE_CATEGORY_MISC,
    .description = "our PCI test device 7e57:0001 (MMIO/IO BARs, INTx, MSI, MSI-X, DMA)",
    DEVICE_PROPERTIES(pci_device_properties),
    .options_size = sizeof(PCIDeviceOptions),
    .realize = pdl_testdev_realize,
};
