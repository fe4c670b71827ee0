/*
 * The virtio 1.x PCI transport ("Virtio Over PCI Bus"), modern only: a
 * PCI function 1af4:(0x1040 + device id), revision 1, with QEMU's BAR
 * layout, which Linux's virtio_pci drives:
 *
 *   BAR 1  4 KiB, 32-bit memory    MSI-X table at 0, PBA at 0x800
 *   BAR 4  16 KiB, 64-bit prefetchable memory, a container of
 *            0x0000  common configuration   (VIRTIO_PCI_CAP_COMMON_CFG)
 *            0x1000  ISR status             (VIRTIO_PCI_CAP_ISR_CFG)
 *            0x2000  device configuration   (VIRTIO_PCI_CAP_DEVICE_CFG)
 *            0x3000  queue notifications    (VIRTIO_PCI_CAP_NOTIFY_CFG),
 *                    queue n at 0x3000 + 4 * n (notify_off_multiplier 4)
 *
 * one vendor-specific capability per structure, MSI-X with one vector per
 * queue plus one for configuration changes, and INTx (pin A) with the ISR
 * when MSI-X is off. No legacy I/O BAR: see docs/design.md ("virtio") for
 * why, and for what QEMU's disable-legacy / disable-modern would mean.
 *
 * The two seams, on the KVM fast paths (docs/design.md, "The two seams"):
 *  - kicks in: each enabled queue's notify address is an ioeventfd
 *    (memory_region_add_eventfd), consumed on the device's context (its
 *    I/O thread's, or the main loop's) under the device lock. KVM signals
 *    it without an exit to user space; where KVM cannot, dispatch does.
 *  - interrupts out: every MSI-X vector of the function is bound to an
 *    EventNotifier at realize (msix_vector_use_notifier), an irqfd where
 *    KVM has them; an interrupt is one event_notifier_set. INTx and the
 *    ISR stay in user space.
 */
#ifndef HW_VIRTIO_VIRTIO_PCI_H
#define HW_VIRTIO_VIRTIO_PCI_H

#include <stdbool.h>
#include <stdint.h>
#include "exec/memory.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "hw/virtio/virtio.h"
#include "qemu/error.h"
#include "qemu/event-notifier.h"
#include "sysemu/iothread.h"

#define PCI_VENDOR_ID_REDHAT_QUMRANET   0x1af4
#define VIRTIO_PCI_DEVICE_ID_BASE       0x1040  /* + virtio device id */
#define VIRTIO_PCI_REVISION             1       /* modern-only devices */

#define VIRTIO_PCI_MODERN_BAR           4
#define VIRTIO_PCI_MSIX_BAR             1

/* Offsets inside the modern BAR. */
#define VIRTIO_PCI_COMMON_OFFSET        0x0000
#define VIRTIO_PCI_ISR_OFFSET           0x1000
#define VIRTIO_PCI_DEVICE_OFFSET        0x2000
#define VIRTIO_PCI_NOTIFY_OFFSET        0x3000
#define VIRTIO_PCI_REGION_SIZE          0x1000
#define VIRTIO_PCI_MODERN_BAR_SIZE      0x4000
#define VIRTIO_PCI_NOTIFY_MULTIPLIER    4

/* The MSI-X BAR, as QEMU lays it out. */
#define VIRTIO_PCI_MSIX_BAR_SIZE        0x1000
#define VIRTIO_PCI_MSIX_PBA_OFFSET      0x800
#define VIRTIO_PCI_MAX_VECTORS          (VIRTIO_PCI_MSIX_PBA_OFFSET / MSIX_TABLE_ENTRY_SIZE)

/* Vendor capability cfg_type values. */
#define VIRTIO_PCI_CAP_COMMON_CFG       1
#define VIRTIO_PCI_CAP_NOTIFY_CFG       2
#define VIRTIO_PCI_CAP_ISR_CFG          3
#define VIRTIO_PCI_CAP_DEVICE_CFG       4

/* The common configuration structure (struct virtio_pci_common_cfg). */
#define VIRTIO_PCI_COMMON_DFSELECT      0x00
#define VIRTIO_PCI_COMMON_DF            0x04
#define VIRTIO_PCI_COMMON_GFSELECT      0x08
#define VIRTIO_PCI_COMMON_GF            0x0c
#define VIRTIO_PCI_COMMON_MSIX          0x10
#define VIRTIO_PCI_COMMON_NUMQ          0x12
#define VIRTIO_PCI_COMMON_STATUS        0x14
#define VIRTIO_PCI_COMMON_CFGGENERATION 0x15
#define VIRTIO_PCI_COMMON_Q_SELECT      0x16
#define VIRTIO_PCI_COMMON_Q_SIZE        0x18
#define VIRTIO_PCI_COMMON_Q_MSIX        0x1a
#define VIRTIO_PCI_COMMON_Q_ENABLE      0x1c
#define VIRTIO_PCI_COMMON_Q_NOFF        0x1e
#define VIRTIO_PCI_COMMON_Q_DESCLO      0x20
#define VIRTIO_PCI_COMMON_Q_DESCHI      0x24
#define VIRTIO_PCI_COMMON_Q_AVAILLO     0x28
#define VIRTIO_PCI_COMMON_Q_AVAILHI     0x2c
#define VIRTIO_PCI_COMMON_Q_USEDLO      0x30
#define VIRTIO_PCI_COMMON_Q_USEDHI      0x34
#define VIRTIO_PCI_COMMON_SIZE          0x38

/* One queue's doorbell: the notifier KVM (or dispatch) signals. */
typedef struct VirtIOPCIKick {
    EventNotifier notifier;     /* first: its handler is given this */
    struct VirtIOPCIProxy *proxy;
    unsigned queue;
    /* Declared on the notify region (the queue is enabled), with which
     * width (0: any); under the device lock. */
    bool declared;
    unsigned width;
    /* Kicks go there instead, not served here (vhost has the queue; see
     * virtio_pci_redirect_kicks); NULL: served here. Under the device lock. */
    EventNotifier *redirect;
} VirtIOPCIKick;

typedef struct VirtIOPCIProxy {
    PCIDevice pci;              /* first: the QEMUDevice whose lock guards all */
    VirtIODevice *vdev;
    MemoryRegion modern_bar;    /* container */
    MemoryRegion common, isr, device_cfg, notify;
    MemoryRegion msix_bar;      /* container for the MSI-X table and PBA */
    unsigned nvectors;
    uint32_t device_feature_select;
    uint32_t driver_feature_select;
    uint16_t queue_select;
    GMainContext *ctx;                  /* the device's: kicks are served there */
    VirtIOPCIKick *kicks;               /* one per queue */
    EventNotifier *vector_notifiers;    /* one per MSI-X vector, bound for good */
} VirtIOPCIProxy;

/*
 * Make proxy the PCI function of vdev (set up by virtio_init): type and
 * id_prefix as pci_device_init takes them, at devfn (-1: first free slot),
 * with the 24-bit class_code. One MSI-X vector per queue plus one, at most
 * VIRTIO_PCI_MAX_VECTORS. Sets vdev->qdev and the QEMUDevice's reset.
 * Kicks are served, and vectors sent where KVM does not inject them, on
 * iothread's context (NULL: the main loop's), which must be running or
 * the caller's. Before the vCPUs run.
 */
bool virtio_pci_init(VirtIOPCIProxy *proxy, VirtIODevice *vdev, PCIBus *bus, int devfn,
                     const char *type, const char *id_prefix, uint32_t class_code,
                     IOThread *iothread, Error **errp);

/*
 * Serve now, on the calling thread, the kicks signalled and not yet
 * consumed (takes the device lock). A device's drain calls it before
 * waiting for its host I/O: with the vCPUs paused no kick can follow, so
 * no request is submitted after the drain returns.
 */
void virtio_pci_flush_kicks(VirtIOPCIProxy *proxy);

/* ---- handing a queue to vhost (hw/virtio/vhost-net.h) ---- */

/*
 * From now on every kick of queue signals to and is not served in user
 * space: the queue's ioeventfd is re-declared with to as its notifier (so
 * KVM signals it directly), and a kick that still reaches the transport
 * (the notify handler, a signal of the old notifier not yet consumed) is
 * passed on to it. NULL gives the queue back: its own notifier is declared
 * again and signalled once, so that user space looks at the ring. With the
 * device lock held. A reset does not undo it: the device stops its vhost
 * (and gives the queue back) in its reset op, before the transport's.
 */
void virtio_pci_redirect_kicks(VirtIOPCIProxy *proxy, unsigned queue, EventNotifier *to);

/*
 * The notifier that interrupts the driver for queue: its MSI-X vector's
 * (an irqfd where KVM has them; masked, it sets the PBA bit), for the
 * kernel to signal (VHOST_SET_VRING_CALL). NULL when MSI-X is off or the
 * queue has no vector: INTx needs the ISR, which only user space sets, so
 * the queue stays in user space.
 */
EventNotifier *virtio_pci_queue_call_notifier(VirtIOPCIProxy *proxy, unsigned queue);

#endif
