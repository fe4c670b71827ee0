/*
 * Register layout of pdl-testdev, our PCI test device. Plain C with no
 * dependencies: guest programs include it too.
 *
 * PCI ids: vendor 0x7e57 (not assigned by the PCI-SIG to anyone; test use
 * only), device 0x0001, class 0xff0000 (unassigned), INTA.
 * BAR0: 4 KiB memory, BAR1: 64 bytes of I/O, both with the registers
 * below up to 0x40 (32-bit accesses; other sizes are ignored and logged);
 * the irqfd registers from 0x100 are in BAR0 only.
 * BAR2: 8 KiB memory, the MSI-X table and, at 4 KiB, the PBA
 * (PDL_TESTDEV_MSIX_VECTORS).
 * An MSI capability with PDL_TESTDEV_MSI_VECTORS vectors as well.
 */
#ifndef PDL_TESTDEV_REGS_H
#define PDL_TESTDEV_REGS_H

#define PDL_TESTDEV_VENDOR_ID       0x7e57
#define PDL_TESTDEV_DEVICE_ID       0x0001
#define PDL_TESTDEV_CLASS           0xff0000
#define PDL_TESTDEV_MMIO_BAR        0
#define PDL_TESTDEV_IO_BAR          1
#define PDL_TESTDEV_MSIX_BAR        2
#define PDL_TESTDEV_MMIO_SIZE       0x1000
#define PDL_TESTDEV_IO_SIZE         0x40
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
