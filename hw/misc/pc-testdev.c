/*
 * pc-testdev: the ISA test device of QEMU (kvm-unit-tests drives it), with
 * the same ports and behaviour as QEMU 7.2's:
 *
 *  I/O 0xe0..0xe3   a 32-bit scratch register, any width at any byte
 *  I/O 0xe4..0xe7   "flush page": a 32-bit write of a guest-physical address
 *                   makes KVM drop its mapping of that page (see below)
 *  I/O 0xe8..0xeb   the scratch register again (QEMU serves it byte by byte)
 *  I/O 0x2000+N     a byte write sets GSI N (0..23) to (value != 0)
 *  MMIO 0xff000000  64 KiB of device memory that reads back what was written
 *
 * Write-only ports read 0 and accesses of a width a port does not accept
 * are ignored, as in QEMU. QEMU's device has no reset handler, so neither
 * scratch register nor memory window is cleared by a machine reset here.
 */
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/irq.h"
#include "hw/misc/testdev.h"
#include "qemu/log.h"

#define PC_TESTDEV_SCRATCH_PORT     0xe0
#define PC_TESTDEV_FLUSH_PORT       0xe4
#define PC_TESTDEV_SCRATCH_ALIAS    0xe8
#define PC_TESTDEV_IRQ_PORT         0x2000
#define PC_TESTDEV_IOMEM_BASE       0xff000000ULL
#define PC_TESTDEV_IOMEM_SIZE       0x10000
#define PC_TESTDEV_PAGE_SIZE        4096ULL

typedef struct PCTestdevState {
    QEMUDevice dev;
    MemoryRegion scratch_io;
    MemoryRegion scratch_alias_io;
    MemoryRegion flush_io;
    MemoryRegion irq_io;
    MemoryRegion iomem;
    uint32_t scratch;
    IrqSource irq[IRQ_MAX_GSI];
    uint8_t iomem_buf[PC_TESTDEV_IOMEM_SIZE];
} PCTestdevState;

/* ---- scratch register (0xe0 and its alias 0xe8) ---- */

static uint32_t byte_lane_mask(uint64_t offset, unsigned size)
{
    uint32_t width_mask = size >= 4 ? UINT32_MAX : (1u << (size * 8)) - 1;
    return width_mask << ((offset & 3) * 8);
}

static uint64_t pc_testdev_scratch_read(void *opaque, uint64_t offset, unsigned size)
{
    PCTestdevState *s = opaque;
    return (s->scratch & byte_lane_mask(offset, size)) >> ((offset & 3) * 8);
}

static void pc_testdev_scratch_write(void *opaque, uint64_t offset, uint64_t value,
                                     unsigned size)
{
    PCTestdevState *s = opaque;
    uint32_t mask = byte_lane_mask(offset, size);
    s->scratch = (s->scratch & ~mask) | (((uint32_t)value << ((offset & 3) * 8)) & mask);
}

static const MemoryRegionOps pc_testdev_scratch_ops = {
    .read = pc_testdev_scratch_read,
    .write = pc_testdev_scratch_write,
    .max_access_size = 4,
};

static const MemoryRegionOps pc_testdev_scratch_alias_ops = {
    .read = pc_testdev_scratch_read,
    .write = pc_testdev_scratch_write,
    .max_access_size = 1,
};

/* ---- flush page (0xe4) ---- */

static uint64_t pc_testdev_write_only_read(void *opaque, uint64_t offset, unsigned size)
{
    return 0;
}

/*
 * QEMU takes the page's host mapping away and gives it back (mprotect), so
 * that KVM's MMU notifier zaps the guest's mapping of that page and the
 * next guest access faults into KVM again. We do the same, but only drop
 * write permission for the instant in between: that change triggers the
 * same MMU notifier invalidation, and another thread reading the page
 * meanwhile cannot fault.
 */
static void pc_testdev_flush_page(uint64_t gpa)
{
    uint8_t *host = dma_memory_map(gpa, PC_TESTDEV_PAGE_SIZE);
    if (!host) {
        qemu_log_mask(LOG_GUEST_ERROR, "pc-testdev: flush-page 0x%" PRIx64
                      " is not a page of guest RAM: ignored\n", gpa);
        return;
    }
    if ((uintptr_t)host % (uintptr_t)sysconf(_SC_PAGESIZE) != 0 ||
        mprotect(host, PC_TESTDEV_PAGE_SIZE, PROT_READ) != 0) {
        qemu_log_mask(LOG_UNIMP, "pc-testdev: flush-page 0x%" PRIx64
                      ": guest RAM there is not host-page aligned: no-op\n", gpa);
        return;
    }
    /* Restoring the protection cannot fail: it is the mapping's original. */
    mprotect(host, PC_TESTDEV_PAGE_SIZE, PROT_READ | PROT_WRITE);
}

static void pc_testdev_flush_write(void *opaque, uint64_t offset, uint64_t value,
                                   unsigned size)
{
    if (offset != 0 || size != 4) {
        qemu_log_mask(LOG_GUEST_ERROR, "pc-testdev: flush-page write of %u bytes at "
                      "port 0x%" PRIx64 " (needs 4 at 0x%x): ignored\n",
                      size, PC_TESTDEV_FLUSH_PORT + offset, PC_TESTDEV_FLUSH_PORT);
        return;
    }
    pc_testdev_flush_page(value & ~(PC_TESTDEV_PAGE_SIZE - 1));
}

static const MemoryRegionOps pc_testdev_flush_ops = {
    .read = pc_testdev_write_only_read,
    .write = pc_testdev_flush_write,
    .max_access_size = 4,
};

/* ---- interrupt lines (0x2000 + GSI) ---- */

/* Only this device's own source on the line is driven; the level the
 * guest sees is the OR with other devices sharing the GSI. */
static void pc_testdev_irq_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    PCTestdevState *s = opaque;
    if (size != 1) {
        qemu_log_mask(LOG_GUEST_ERROR, "pc-testdev: %u-byte write to irq port 0x%" PRIx64
                      " (bytes only): ignored\n", size, PC_TESTDEV_IRQ_PORT + offset);
        return;
    }
    irq_source_set(s->irq[offset], value != 0);
}

static const MemoryRegionOps pc_testdev_irq_ops = {
    .read = pc_testdev_write_only_read,
    .write = pc_testdev_irq_write,
    .max_access_size = 4,
};

/* ---- memory window (0xff000000) ---- */

static uint64_t pc_testdev_iomem_read(void *opaque, uint64_t offset, unsigned size)
{
    PCTestdevState *s = opaque;
    uint64_t value = 0;
    for (unsigned i = 0; i < size; i++) {
        value |= (uint64_t)s->iomem_buf[offset + i] << (8 * i);
    }
    return value;
}

static void pc_testdev_iomem_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    PCTestdevState *s = opaque;
    for (unsigned i = 0; i < size; i++) {
        s->iomem_buf[offset + i] = value >> (8 * i);
    }
}

/* Dispatch never lets an access cross the region's end, so the bytes
 * touched always lie inside iomem_buf. */
static const MemoryRegionOps pc_testdev_iomem_ops = {
    .read = pc_testdev_iomem_read,
    .write = pc_testdev_iomem_write,
    .max_access_size = 4,
};

QEMUDevice *pc_testdev_new(Error **errp)
{
    static bool created;
    if (created) {
        error_setg(errp, "only one pc-testdev is possible: its ports are fixed");
        return NULL;
    }
    created = true;
    PCTestdevState *s = g_new0(PCTestdevState, 1);
    device_init(&s->dev, "pc-testdev", "pc-testdev");
    for (unsigned gsi = 0; gsi < IRQ_MAX_GSI; gsi++) {
        s->irq[gsi] = irq_source_claim(gsi);
    }
    memory_region_init_io(&s->scratch_io, &s->dev, &pc_testdev_scratch_ops, s,
                          "pc-testdev-ioport", 4);
    memory_region_init_io(&s->scratch_alias_io, &s->dev, &pc_testdev_scratch_alias_ops, s,
                          "pc-testdev-ioport-byte", 4);
    memory_region_init_io(&s->flush_io, &s->dev, &pc_testdev_flush_ops, s,
                          "pc-testdev-flush-page", 4);
    memory_region_init_io(&s->irq_io, &s->dev, &pc_testdev_irq_ops, s,
                          "pc-testdev-irq-line", IRQ_MAX_GSI);
    memory_region_init_io(&s->iomem, &s->dev, &pc_testdev_iomem_ops, s,
                          "pc-testdev-iomem", PC_TESTDEV_IOMEM_SIZE);
    address_space_map(address_space_io, &s->scratch_io, PC_TESTDEV_SCRATCH_PORT, 0);
    address_space_map(address_space_io, &s->flush_io, PC_TESTDEV_FLUSH_PORT, 0);
    address_space_map(address_space_io, &s->scratch_alias_io, PC_TESTDEV_SCRATCH_ALIAS, 0);
    address_space_map(address_space_io, &s->irq_io, PC_TESTDEV_IRQ_PORT, 0);
    address_space_map(address_space_memory, &s->iomem, PC_TESTDEV_IOMEM_BASE, 0);
    return &s->dev;
}

static QEMUDevice *pc_testdev_realize(const void *options, const DeviceBuses *buses,
                                      Error **errp)
{
    return pc_testdev_new(errp);
}

/* QEMU's pc-testdev has no properties either: its ports are fixed. */
const DeviceTypeInfo pc_testdev_type = {
    .name = "pc-testdev",
    .bus = DEVICE_BUS_ISA,
    .category = DEVICE_CATEGORY_MISC,
    .description = "QEMU's ISA test device (ports 0xe0-0xe7, 0x2000, MMIO 0xff000000)",
    .realize = pc_testdev_realize,
};
