/*
 * Register layout of pdl-testdev, our PCI test device. Plain C with no
 * dependencies: guest programs include it too.
 *
 * PCI ids: vendor 0x7e57 (not assigned by the PCI-SIG to anyone; test use
 * only), device 0x0001, class 0xff0000 (unassigned), INTA.
 * BAR0: 4 KiB memory, BAR1: 128 bytes of I/O, both with the registers
 * below up to 0x80 (32-bit accesses; other sizes are ignored and logged);
 * the irqfd registers from 0x100 are in BAR0 only.
 * BAR2: 8 KiB memory, the MSI-X table and, at 4 KiB, the PBA
 * (PDL_TESTDEV_MSIX_VECTORS).
 * An MSI capability with PDL_TESTDEV_MSI_VECTORS vectors as well.
 */
#ifndef PDL_TESTDEV_REGS_H
#define PDL_TESTDEV_REGS_H

#include <stdint.h>

#define PDL_TESTDEV_VENDOR_ID       0x7e57
#define PDL_TESTDEV_DEVICE_ID       0x0001
#define PDL_TESTDEV_CLASS           0xff0000
#define PDL_TESTDEV_MMIO_BAR        0
#define PDL_TESTDEV_IO_BAR          1
#define PDL_TESTDEV_MSIX_BAR        2
#define PDL_TESTDEV_MMIO_SIZE       0x1000
#define PDL_TESTDEV_IO_SIZE         0x80
#define PDL_TESTDEV_MSI_VECTORS     1
#define PDL_TESTDEV_MSIX_VECTORS    4
#define PDL_TESTDEV_DMA_MAX         (1u << 20)

#define PDL_TESTDEV_MAGIC           0x7e570001u

#define PDL_REG_ID          0x00    /* RO: PDL_TESTDEV_MAGIC */
#define PDL_REG_SCRATCH     0x04    /* RW */
#define PDL_REG_ACCESSES    0x08    /* RO: register accesses so far (this one included) */
#define PDL_REG_IRQ_RAISE   0x0c    /* WO: PDL_IRQ_* | vector << 8 */
#define  PDL_IRQ_INTX           1   /* assert INTx until PDL_REG_IRQ_ACK */
#define  PDL_IRQ_MSI            2   /* send MSI vector */
#define  PDL_IRQ_MSIX           3   /* send MSI-X vector */
#define PDL_REG_IRQ_ACK     0x10    /* WO: deassert INTx */
#define PDL_REG_IRQ_COUNT   0x14    /* RO: interrupts raised (all kinds) */
#define PDL_REG_DMA_ADDR_LO 0x18    /* RW: guest-physical address */
#define PDL_REG_DMA_ADDR_HI 0x1c    /* RW */
#define PDL_REG_DMA_LEN     0x20    /* RW: bytes, at most PDL_TESTDEV_DMA_MAX */
#define PDL_REG_DMA_PATTERN 0x24    /* RW: byte value that DMA_FILL writes */
#define PDL_REG_DMA_DOORBELL 0x28   /* WO: a PDL_DMA_* command, done at once */
#define  PDL_DMA_FILL           1   /* write LEN bytes of PATTERN at ADDR */
#define  PDL_DMA_SUM            2   /* read LEN bytes at ADDR into DMA_RESULT */
#define PDL_REG_DMA_STATUS  0x2c    /* RO: PDL_DMA_STATUS_* of the last command */
#define  PDL_DMA_STATUS_IDLE    0
#define  PDL_DMA_STATUS_DONE    1
#define  PDL_DMA_STATUS_ERROR   2   /* bus mastering off, bad length, not RAM */
#define PDL_REG_DMA_RESULT  0x30    /* RO: byte sum of the last DMA_SUM */

/*
 * The KVM fast paths. DOORBELL is an ioeventfd: under KVM a write never
 * leaves the kernel, and the device counts the rings when it consumes the
 * eventfd, on the main loop (those writes do not count in ACCESSES).
 * ARRAY is a coalesced range: KVM may queue its writes, and the VMM
 * applies them later in the order they were made, before any other access
 * to the device.
 */
#define PDL_REG_DOORBELL    0x40    /* WO: any write, of any width, is one ring */
#define PDL_REG_DOORBELL_COUNT 0x44 /* RO: rings so far (pending ones consumed first) */
#define PDL_REG_VCPU_EXITS  0x48    /* RO: the reading vCPU's exits to user space for
                                     * I/O and MMIO (this read included), low 32 bits */
#define PDL_REG_FAST_PATHS  0x4c    /* RO: PDL_FAST_* that the VMM's KVM provides */
#define  PDL_FAST_IOEVENTFD     (1u << 0)   /* KVM_CAP_IOEVENTFD */
#define  PDL_FAST_COALESCED_MMIO (1u << 1)  /* KVM_CAP_COALESCED_MMIO */
#define  PDL_FAST_COALESCED_PIO (1u << 2)   /* KVM_CAP_COALESCED_PIO */
#define PDL_REG_LOG_COUNT   0x50    /* RW: ARRAY writes applied so far; a write clears
                                     * it and LOG_DIGEST */
#define PDL_REG_LOG_DIGEST  0x54    /* RO: pdl_log_digest_step over those writes, in order */
#define PDL_REG_EVENTFD_EXITS 0x58  /* RO: the reading vCPU's writes that an ioeventfd
                                     * matched and that still exited to user space (the
                                     * VMM signalled the eventfd, not KVM), low 32 bits:
                                     * doorbell rings that left the kernel */
#define PDL_REG_ARRAY       0x60    /* RW: PDL_ARRAY_ENTRIES registers, writes coalesced */
#define PDL_ARRAY_ENTRIES       8

/* FNV-1a over (index, value) of each ARRAY write: it tells the order of
 * the writes apart, and a write applied twice or lost. */
#define PDL_LOG_DIGEST_INIT     2166136261u
static inline uint32_t pdl_log_digest_step(uint32_t digest, uint32_t index, uint32_t value)
{
    digest = (digest ^ index) * 16777619u;
    return (digest ^ value) * 16777619u;
}

/*
 * MSI-X vector PDL_TESTDEV_IRQFD_VECTOR on irqfd, BAR0 only: a write to
 * IRQFD_TRIGGER asks the main loop to signal the vector's event notifier,
 * so the interrupt reaches the guest with no vCPU on its path (KVM injects
 * it; masked, it sets the PBA bit). Writes before the signal merge into
 * one; IRQFD_SIGNALS counts the signals sent.
 */
#define PDL_TESTDEV_IRQFD_VECTOR    1
#define PDL_REG_IRQFD_TRIGGER 0x100 /* WO: any value */
#define PDL_REG_IRQFD_SIGNALS 0x104 /* RO: notifier signals sent so far */
#define PDL_REG_IRQFD_STATUS  0x108 /* RO: PDL_IRQFD_* */
#define  PDL_IRQFD_IN_KERNEL    1   /* KVM delivers the vector now (irqfd assigned) */

#endif
