/*
 * The virtio PCI transport ("Virtio Over PCI Bus"): a virtio 1.x
 * function, with the legacy (virtio 0.9.5) interface beside it as QEMU
 * gives by default on the pc machine, in QEMU's layout, which Linux's
 * virtio_pci drives:
 *
 *   BAR 0  I/O, the legacy register block (transitional devices only):
 *            the header (VIRTIO_PCI_LEGACY_*) then the device configuration
 *   BAR 1  4 KiB, 32-bit memory    MSI-X table at 0, PBA at 0x800
 *   BAR 4  16 KiB, 64-bit prefetchable memory, a container of
 *            0x0000  common configuration   (VIRTIO_PCI_CAP_COMMON_CFG)
 *            0x1000  ISR status             (VIRTIO_PCI_CAP_ISR_CFG)
 *            0x2000  device configuration   (VIRTIO_PCI_CAP_DEVICE_CFG)
 *            0x3000  queue notifications    (VIRTIO_PCI_CAP_NOTIFY_CFG),
 *                    queue n at 0x3000 + 4 * n (notify_off_multiplier 4)
 *          (modern devices only), with one vendor-specific capability per
 *          structure
 *
 * MSI-X with one vector per queue plus one for configuration changes, and
 * INTx (pin A) with the ISR when MSI-X is off. QEMU's switches pick the
 * interfaces (VirtIOPCIConf): a transitional device (the default,
 * disable-legacy=auto on a conventional bus) is 1af4:1000+ (the spec's
 * transitional id), revision 0, subsystem 1af4:<virtio id>, with both
 * interfaces; disable-legacy=on makes it modern only, 1af4:1040+id,
 * revision 1, no BAR 0; disable-modern=on legacy only, no BAR 4 and no
 * vendor capabilities. A driver drives it through one interface between
 * two resets (docs/design.md, "virtio").
 *
 * The two seams, on the KVM fast paths (docs/design.md, "The two seams"):
 *  - kicks in: each enabled queue's doorbell (its modern notify address,
 *    or the legacy QUEUE_NOTIFY port with the queue's index as data) is
 *    an ioeventfd (memory_region_add_eventfd), consumed on the device's
 *    context (its I/O thread's, or the main loop's) under the queue's
 *    lock (the device lock, unless the device gave the queue its own:
 *    virtio.h, "Queue locks"). KVM signals it without an exit to user
 *    space; where KVM cannot, dispatch does. ioeventfd=off: no doorbell
 *    is declared, every kick exits to user space and is served on the
 *    vCPU under the device lock (and the queue's).
 *  - interrupts out: every MSI-X vector of the function is bound to an
 *    EventNotifier at realize (msix_vector_use_notifier), an irqfd where
 *    KVM has them; an interrupt is one event_notifier_set. x-irqfd=off:
 *    no binding, a vector is sent from user space (msix_notify, i.e.
 *    KVM_SIGNAL_MSI) by the thread that raises it. INTx and the ISR stay
 *    in user space.
 */
#ifndef HW_VIRTIO_VIRTIO_PCI_H
#define HW_VIRTIO_VIRTIO_PCI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "exec/memory.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "hw/virtio/virtio.h"
#include "qemu/error.h"
#include "hw/qdev-properties.h"
#include "qemu/event-notifier.h"
#include "sysemu/iothread.h"

#define PCI_VENDOR_ID_REDHAT_QUMRANET   0x1af4
#define VIRTIO_PCI_DEVICE_ID_BASE       0x1040  /* + virtio device id */
#define VIRTIO_PCI_REVISION             1       /* modern-only devices */
#define VIRTIO_PCI_TRANSITIONAL_REVISION 0

#define VIRTIO_PCI_LEGACY_BAR           0
#define VIRTIO_PCI_MODERN_BAR           4
#define VIRTIO_PCI_MSIX_BAR             1

/* The legacy register block in BAR 0 (virtio 1.x, "Legacy Interfaces: A
 * Note on PCI Device Layout"), little-endian as x86 is. */
#define VIRTIO_PCI_LEGACY_HOST_FEATURES 0x00    /* 32, read-only: bits 0-31 */
#define VIRTIO_PCI_LEGACY_GUEST_FEATURES 0x04   /* 32 */
#define VIRTIO_PCI_LEGACY_QUEUE_PFN     0x08    /* 32: the ring's 4 KiB page */
#define VIRTIO_PCI_LEGACY_QUEUE_NUM     0x0c    /* 16, read-only */
#define VIRTIO_PCI_LEGACY_QUEUE_SEL     0x0e    /* 16 */
#define VIRTIO_PCI_LEGACY_QUEUE_NOTIFY  0x10    /* 16: the queue's index */
#define VIRTIO_PCI_LEGACY_STATUS        0x12    /* 8 */
#define VIRTIO_PCI_LEGACY_ISR           0x13    /* 8, read-only, a read clears */
#define VIRTIO_PCI_LEGACY_MSIX_CONFIG   0x14    /* 16, only while MSI-X is on */
#define VIRTIO_PCI_LEGACY_MSIX_QUEUE    0x16    /* 16, only while MSI-X is on */
/* The device configuration follows the header, whose size depends on
 * whether MSI-X is on now. */
#define VIRTIO_PCI_LEGACY_CONFIG_OFFSET(msix_on) ((msix_on) ? 0x18 : 0x14)
/* Legacy rings: the PFN's page holds the descriptors, then the available
 * ring; the used ring starts at the next 4 KiB boundary. */
#define VIRTIO_PCI_LEGACY_PFN_SHIFT     12
#define VIRTIO_PCI_LEGACY_VRING_ALIGN   4096

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

/*
 * QEMU's virtio-pci switches, as -device properties
 * (DEFINE_VIRTIO_PCI_PROPERTIES). disable_legacy auto means legacy too on
 * a conventional PCI bus, which every bus here is (QEMU's pc machine).
 */
typedef struct VirtIOPCIConf {
    OnOffAuto disable_legacy;
    bool disable_modern;
    bool ioeventfd;             /* doorbells as ioeventfds */
    bool irqfd;                 /* x-irqfd: vectors on notifiers (irqfd) */
    /* MSI-X table size; VIRTIO_PCI_VECTORS_AUTO: one per queue plus one
     * for configuration changes. Fewer makes the driver share them. */
    uint32_t vectors;
} VirtIOPCIConf;

#define VIRTIO_PCI_VECTORS_AUTO         UINT32_MAX  /* QEMU's "unspecified" */

/* What -device gives without the properties (virtio_pci_init's NULL). */
#define VIRTIO_PCI_CONF_DEFAULTS \
    { .disable_legacy = ON_OFF_AUTO_AUTO, .disable_modern = false, .ioeventfd = true, \
      .irqfd = true, .vectors = VIRTIO_PCI_VECTORS_AUTO }

/* The transport's properties, for a virtio PCI device's property table:
 * field is the VirtIOPCIConf in the device's options struct State. QEMU's
 * help lines for its own; x-irqfd is ours (QEMU has no such switch). */
#define DEFINE_VIRTIO_PCI_PROPERTIES(State, field) \
    DEFINE_PROP_ON_OFF_AUTO("disable-legacy", State, field.disable_legacy, ON_OFF_AUTO_AUTO, \
                            NULL), \
    DEFINE_PROP_BOOL("disable-modern", State, field.disable_modern, false, ""), \
    DEFINE_PROP_BOOL("ioeventfd", State, field.ioeventfd, true, NULL), \
    DEFINE_PROP_BOOL("x-irqfd", State, field.irqfd, true, \
                     "on/off: MSI-X vectors through KVM irqfds (off: KVM_SIGNAL_MSI)"), \
    DEFINE_PROP_UINT32("vectors", State, field.vectors, VIRTIO_PCI_VECTORS_AUTO, "")

/* Which interface the driver uses since the last reset (its first write
 * other than a reset decides). */
typedef enum VirtIOPCIDriverInterface {
    VIRTIO_PCI_DRIVER_NONE,
    VIRTIO_PCI_DRIVER_LEGACY,
    VIRTIO_PCI_DRIVER_MODERN,
} VirtIOPCIDriverInterface;

/* One queue's doorbell: the notifier KVM (or dispatch) signals. */
typedef struct VirtIOPCIKick {
    EventNotifier notifier;     /* first: its handler is given this */
    struct VirtIOPCIProxy *proxy;
    unsigned queue;
    /* Where the doorbell is declared while the queue is enabled: the
     * modern notify region, the legacy block (NULL: nowhere, e.g. with
     * ioeventfd=off), at which offset, of which width (0: any), matching
     * the queue's index as data or not; written under the device lock
     * and the queue's lock, read under either. */
    MemoryRegion *region;
    uint64_t offset;
    unsigned width;
    bool match_data;
    EventNotifier *declared_with;   /* the notifier KVM signals for it */
    /* Kicks go there instead, not served here (vhost has the queue; see
     * virtio_pci_redirect_kicks); NULL: served here. Written under the
     * device lock with the queues quiesced (vhost start and stop). */
    EventNotifier *redirect;
} VirtIOPCIKick;

typedef struct VirtIOPCIProxy {
    PCIDevice pci;              /* first: the QEMUDevice whose lock guards all */
    VirtIODevice *vdev;
    bool legacy, modern;        /* the interfaces the function offers */
    VirtIOPCIConf conf;
    VirtIOPCIDriverInterface driver_interface;
    MemoryRegion legacy_bar;    /* the legacy register block */
    MemoryRegion modern_bar;    /* container */
    MemoryRegion common, isr, device_cfg, notify;
    MemoryRegion msix_bar;      /* container for the MSI-X table and PBA */
    unsigned nvectors;
    uint32_t device_feature_select;
    uint32_t driver_feature_select;
    uint16_t queue_select;      /* both interfaces' */
    GMainContext *ctx;                  /* the device's: kicks are served there */
    VirtIOPCIKick *kicks;               /* one per queue */
    EventNotifier *vector_notifiers;    /* one per MSI-X vector, bound for good;
                                         * NULL with x-irqfd=off */
    /* Copies of config space state that a queue's data path reads under
     * its own lock (virtio.h, "Queue locks"), kept by the config write
     * hook and reset under the device lock: vectors go out through their
     * notifiers (MSI-X on, x-irqfd on), and COMMAND.MASTER. */
    atomic_bool vectors_lockfree;
    atomic_bool bus_master;
} VirtIOPCIProxy;

/*
 * Make proxy the PCI function of vdev (set up by virtio_init): type and
 * id_prefix as pci_device_init takes them, at devfn (-1: first free slot),
 * with the 24-bit class_code. One MSI-X vector per queue plus one, at most
 * VIRTIO_PCI_MAX_VECTORS. Sets vdev->qdev and the QEMUDevice's reset.
 * Kicks are served, and vectors sent where KVM does not inject them, on
 * iothread's context (NULL: the main loop's), which must be running or
 * the caller's. conf: the switches (NULL: VIRTIO_PCI_CONF_DEFAULTS);
 * fails, with QEMU's message, when they leave no interface. Before the
 * vCPUs run.
 */
bool virtio_pci_init(VirtIOPCIProxy *proxy, VirtIODevice *vdev, PCIBus *bus, int devfn,
                     const char *type, const char *id_prefix, uint32_t class_code,
                     IOThread *iothread, const VirtIOPCIConf *conf, Error **errp);

/*
 * Serve now, on the calling thread, the kicks signalled and not yet
 * consumed (takes each queue's lock: virtio_queue_lock). A device's drain calls it before
 * waiting for its host I/O: with the vCPUs paused no kick can follow, so
 * no request is submitted after the drain returns.
 */
void virtio_pci_flush_kicks(VirtIOPCIProxy *proxy);

/* ---- for info qtree, which shows a virtio PCI function as QEMU does:
 * the transport's properties on it, the virtio device's on a
 * virtio-bus below it ---- */

/* Whether name is one of DEFINE_VIRTIO_PCI_PROPERTIES' (the transport's). */
bool virtio_pci_is_transport_property(const char *name);
/* The switches as the function qdev (a virtio PCI function's) was
 * realized: disable-legacy "on" or "off" as chosen, vectors its MSI-X
 * table size; the others as given. Fixed at realize: no lock. */
void virtio_pci_chosen_conf(const QEMUDevice *qdev, VirtIOPCIConf *conf);

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
