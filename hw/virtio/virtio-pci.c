/*
 * The virtio PCI transport (hw/virtio/virtio-pci.h has the layout): the
 * function, its interrupts and doorbells, and the modern register
 * structures; the legacy register block is in virtio-pci-legacy.c. Every
 * register access arrives with the function's device lock held (dispatch
 * takes the owner's lock of each subregion).
 */
#include <inttypes.h>
#include <string.h>
#include <glib.h>
#include "hw/pci/msi.h"
#include "hw/virtio/virtio-pci.h"
#include "virtio-pci-internal.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "sysemu/kvm.h"

/* struct virtio_pci_cap, and the notify capability's extra field. */
#define VIRTIO_CAP_CFG_TYPE     3
#define VIRTIO_CAP_BAR          4
#define VIRTIO_CAP_OFFSET       8
#define VIRTIO_CAP_LENGTH       12
#define VIRTIO_CAP_SIZE         16
#define VIRTIO_CAP_NOTIFY_MULT  16
#define VIRTIO_NOTIFY_CAP_SIZE  20

static VirtIOPCIProxy *proxy_of(VirtIODevice *vdev)
{
    return vdev->transport;
}

/* ---- the two seams: interrupts out, kicks in ---- */

/*
 * Every interrupt of the device leaves here: an MSI-X vector through its
 * notifier, which KVM injects (irqfd) while the vector is enabled and
 * unmasked; masked, the signal sets its PBA bit and is sent on unmask;
 * with MSI-X off the function raises INTx and the ISR bits, and INTx
 * stays asserted until the driver reads the ISR. Any thread, with the
 * device lock held (the ISR, the MSI-X table and PBA are device state).
 */
static void virtio_pci_send_interrupt(VirtIODevice *vdev, uint16_t vector, uint8_t isr_bits)
{
    VirtIOPCIProxy *p = proxy_of(vdev);
    if (msix_enabled(&p->pci)) {
        /* virtio_pci_checked_vector let only the function's vectors in. */
        if (vector == VIRTIO_NO_VECTOR) {
            return;
        }
        if (p->vector_notifiers) {
            event_notifier_set(&p->vector_notifiers[vector]);
        } else {
            msix_notify(&p->pci, vector);   /* x-irqfd=off: KVM_SIGNAL_MSI, now */
        }
        return;
    }
    vdev->isr |= isr_bits;
    pci_set_irq(&p->pci, true);
}

/*
 * A queue's vector from a data path under the queue's own lock: an
 * event_notifier_set needs no lock, and the vector (the queue's, read
 * under its lock) has its notifier for good. The MSI-X table, the PBA,
 * the ISR and INTx are the device lock's: without the notifiers, or with
 * MSI-X off, the caller sends after it has dropped the queue lock.
 */
static bool virtio_pci_send_interrupt_lockfree(VirtIODevice *vdev, uint16_t vector)
{
    VirtIOPCIProxy *p = proxy_of(vdev);
    if (!atomic_load(&p->vectors_lockfree)) {
        return false;
    }
    if (vector != VIRTIO_NO_VECTOR) {
        event_notifier_set(&p->vector_notifiers[vector]);
    }
    return true;
}

/* After any config write or reset, under the device lock. A data path
 * that read the old value raced the guest's own change, as a real
 * device's interrupt in flight does: an MSI-X vector raised through its
 * notifier just after the driver disabled MSI-X is dropped by the
 * notifier's handler (msix_notify), as it would be then anyway. */
static void virtio_pci_update_lockfree_state(VirtIOPCIProxy *p)
{
    atomic_store(&p->vectors_lockfree, p->vector_notifiers && msix_enabled(&p->pci));
    atomic_store(&p->bus_master, pci_bus_master_enabled(&p->pci));
}

static void virtio_pci_config_written(PCIDevice *dev, uint32_t offset, uint32_t value,
                                      unsigned len)
{
    virtio_pci_update_lockfree_state((VirtIOPCIProxy *)dev);
}

/* Every queue notification enters here, with the queue's lock held
 * (virtio_queue_lock, or _nested under the device lock): from the queue's
 * notifier on the device's context, or from a doorbell's write handler
 * for a write the notifier does not match (all of them with
 * ioeventfd=off). */
void virtio_pci_queue_kicked(VirtIOPCIProxy *p, unsigned queue)
{
    if (queue < p->vdev->num_queues && p->kicks[queue].redirect) {
        event_notifier_set(p->kicks[queue].redirect);   /* vhost has the queue */
        return;
    }
    /* Processing a queue is DMA: not without bus mastering. */
    if (!atomic_load(&p->bus_master)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: kick of queue %u with bus mastering off: "
                      "ignored\n", virtio_name(p->vdev), queue);
        return;
    }
    virtio_queue_notify(p->vdev, queue);
}

/* A doorbell write that reached a register handler (device lock held):
 * the queue's lock too, as a kick needs it. */
void virtio_pci_register_kick(VirtIOPCIProxy *p, unsigned queue)
{
    VirtQueue *vq = virtio_get_queue(p->vdev, queue);
    if (!vq) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: kick of queue %u, which does not exist: "
                      "ignored\n", virtio_name(p->vdev), queue);
        return;
    }
    virtio_queue_lock_nested(vq);
    virtio_pci_queue_kicked(p, queue);
    virtio_queue_unlock_nested(vq);
}

/*
 * A kick consumed with the queue's lock held (the device lock for a queue
 * without one), so that virtio_pci_flush_kicks (a drain) and a reset
 * (which quiesces the queues) see no kick taken but not yet served. A
 * signal
 * for a queue the reset disabled is dropped: the driver that made it has
 * reset the queue. (One that outlives a re-enable is a spurious kick,
 * which virtio allows.)
 */
static void virtio_pci_serve_kick(VirtIOPCIKick *kick)
{
    VirtIOPCIProxy *p = kick->proxy;
    VirtQueue *vq = &p->vdev->vqs[kick->queue];
    virtio_queue_lock(vq);
    if (event_notifier_test_and_clear(&kick->notifier) && kick->region) {
        virtio_pci_queue_kicked(p, kick->queue);
    }
    virtio_queue_unlock(vq);
}

/* On the device's context: KVM (or dispatch) signalled a queue's doorbell. */
static void virtio_pci_kick_notified(EventNotifier *e)
{
    virtio_pci_serve_kick((VirtIOPCIKick *)e);
}

void virtio_pci_flush_kicks(VirtIOPCIProxy *p)
{
    for (unsigned i = 0; i < p->vdev->num_queues; i++) {
        virtio_pci_serve_kick(&p->kicks[i]);
    }
}

/*
 * The queue's doorbell as an ioeventfd while the queue is enabled.
 * Modern: Linux's vp_notify writes the queue index with iowrite16 at the
 * queue's own address, so the address alone says which queue: no data
 * match. Where KVM takes writes of any width it handles them without
 * decoding the instruction, its fastest MMIO exit; else 2 bytes, what
 * drivers write (another width reaches the write handler, which kicks
 * too). Legacy: every queue shares QUEUE_NOTIFY, a 2-byte port write of
 * the queue's index, so the index is matched as data.
 */
void virtio_pci_declare_doorbell(VirtIOPCIProxy *p, unsigned queue,
                                 VirtIOPCIDriverInterface iface)
{
    VirtIOPCIKick *kick = &p->kicks[queue];
    if (!p->conf.ioeventfd || kick->region) {
        return;
    }
    bool legacy = iface == VIRTIO_PCI_DRIVER_LEGACY;
    bool any_width = kvm_fast_paths() & KVM_FAST_PATH_IOEVENTFD_ANY_LENGTH;
    kick->region = legacy ? &p->legacy_bar : &p->notify;
    kick->offset = legacy ? VIRTIO_PCI_LEGACY_QUEUE_NOTIFY : queue * VIRTIO_PCI_NOTIFY_MULTIPLIER;
    kick->width = legacy || !any_width ? 2 : 0;
    kick->match_data = legacy;
    kick->declared_with = kick->redirect ? kick->redirect : &kick->notifier;
    memory_region_add_eventfd(kick->region, kick->offset, kick->width, kick->match_data, queue,
                              kick->declared_with);
}

static void virtio_pci_remove_doorbell(VirtIOPCIKick *kick)
{
    if (kick->region) {
        memory_region_del_eventfd(kick->region, kick->offset, kick->width, kick->match_data,
                                  kick->queue, kick->declared_with);
        kick->region = NULL;
    }
}

static void virtio_pci_transport_reset(VirtIODevice *vdev)
{
    VirtIOPCIProxy *p = proxy_of(vdev);
    p->device_feature_select = 0;
    p->driver_feature_select = 0;
    p->queue_select = 0;
    p->driver_interface = VIRTIO_PCI_DRIVER_NONE;
    pci_set_irq(&p->pci, false);
    /* Every queue is disabled: their doorbells go back to the handlers. */
    for (unsigned i = 0; i < vdev->num_queues; i++) {
        virtio_pci_remove_doorbell(&p->kicks[i]);
    }
}

/* ---- one interface at a time ---- */

static const char *const driver_interface_names[] = {
    [VIRTIO_PCI_DRIVER_LEGACY] = "legacy", [VIRTIO_PCI_DRIVER_MODERN] = "modern",
};

/*
 * virtio asks a driver to use one interface (virtio 1.x, "Legacy
 * Interfaces: ... Transitional Device"): the two keep their queue
 * addresses, features and doorbells differently, so a write through the
 * other one after the driver chose would mix two drivers' views of one
 * device. The choice lasts until a reset.
 */
bool virtio_pci_driver_uses(VirtIOPCIProxy *p, VirtIOPCIDriverInterface iface,
                            const char *what)
{
    if (p->driver_interface == VIRTIO_PCI_DRIVER_NONE) {
        p->driver_interface = iface;
    }
    if (p->driver_interface == iface) {
        return true;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s %s written while the driver uses the %s interface "
                  "(reset first): ignored\n", virtio_name(p->vdev), driver_interface_names[iface],
                  what, driver_interface_names[p->driver_interface]);
    return false;
}

void virtio_pci_write_status(VirtIOPCIProxy *p, VirtIOPCIDriverInterface iface,
                             uint8_t status)
{
    /* A reset is the one write both interfaces may make at any time: it
     * is how a driver of either kind starts. */
    if (status == 0 || virtio_pci_driver_uses(p, iface, "status")) {
        virtio_set_status(p->vdev, status);
    }
}

/* ---- common configuration ---- */

/* The width of each field; 64-bit addresses are two 32-bit halves, as
 * drivers write them and as dispatch splits an 8-byte access. */
static unsigned common_field_size(uint64_t offset)
{
    switch (offset) {
    case VIRTIO_PCI_COMMON_DFSELECT:
    case VIRTIO_PCI_COMMON_DF:
    case VIRTIO_PCI_COMMON_GFSELECT:
    case VIRTIO_PCI_COMMON_GF:
    case VIRTIO_PCI_COMMON_Q_DESCLO:
    case VIRTIO_PCI_COMMON_Q_DESCHI:
    case VIRTIO_PCI_COMMON_Q_AVAILLO:
    case VIRTIO_PCI_COMMON_Q_AVAILHI:
    case VIRTIO_PCI_COMMON_Q_USEDLO:
    case VIRTIO_PCI_COMMON_Q_USEDHI:
        return 4;
    case VIRTIO_PCI_COMMON_MSIX:
    case VIRTIO_PCI_COMMON_NUMQ:
    case VIRTIO_PCI_COMMON_Q_SELECT:
    case VIRTIO_PCI_COMMON_Q_SIZE:
    case VIRTIO_PCI_COMMON_Q_MSIX:
    case VIRTIO_PCI_COMMON_Q_ENABLE:
    case VIRTIO_PCI_COMMON_Q_NOFF:
        return 2;
    case VIRTIO_PCI_COMMON_STATUS:
    case VIRTIO_PCI_COMMON_CFGGENERATION:
        return 1;
    default:
        return 0;
    }
}

/* The spec asks drivers for whole, naturally sized field accesses. */
static bool common_access_ok(VirtIOPCIProxy *p, uint64_t offset, unsigned size,
                             const char *what)
{
    if (common_field_size(offset) == size) {
        return true;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: common config %s of %u bytes at 0x%" PRIx64
                  " is not a field: ignored\n", virtio_name(p->vdev), what, size, offset);
    return false;
}

static uint64_t queue_addr_half(uint64_t addr, uint64_t offset)
{
    return offset % 8 ? addr >> 32 : (uint32_t)addr;
}

static uint64_t common_read_queue(VirtQueue *vq, uint64_t offset)
{
    switch (offset) {
    case VIRTIO_PCI_COMMON_Q_SIZE:
        return vq->num;
    case VIRTIO_PCI_COMMON_Q_MSIX:
        return vq->vector;
    case VIRTIO_PCI_COMMON_Q_ENABLE:
        return vq->enabled;
    case VIRTIO_PCI_COMMON_Q_NOFF:
        return vq->index;
    case VIRTIO_PCI_COMMON_Q_DESCLO:
    case VIRTIO_PCI_COMMON_Q_DESCHI:
        return queue_addr_half(vq->desc_addr, offset);
    case VIRTIO_PCI_COMMON_Q_AVAILLO:
    case VIRTIO_PCI_COMMON_Q_AVAILHI:
        return queue_addr_half(vq->driver_addr, offset);
    default:
        return queue_addr_half(vq->device_addr, offset);
    }
}

static uint64_t virtio_pci_common_read(void *opaque, uint64_t offset, unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    VirtIODevice *vdev = p->vdev;
    if (!common_access_ok(p, offset, size, "read")) {
        return 0;
    }
    switch (offset) {
    case VIRTIO_PCI_COMMON_DFSELECT:
        return p->device_feature_select;
    case VIRTIO_PCI_COMMON_DF:
        return virtio_get_device_features(vdev, p->device_feature_select);
    case VIRTIO_PCI_COMMON_GFSELECT:
        return p->driver_feature_select;
    case VIRTIO_PCI_COMMON_GF:
        return virtio_get_driver_features(vdev, p->driver_feature_select);
    case VIRTIO_PCI_COMMON_MSIX:
        return vdev->config_vector;
    case VIRTIO_PCI_COMMON_NUMQ:
        return vdev->num_queues;
    case VIRTIO_PCI_COMMON_STATUS:
        return virtio_get_status(vdev);
    case VIRTIO_PCI_COMMON_CFGGENERATION:
        return vdev->config_generation;
    case VIRTIO_PCI_COMMON_Q_SELECT:
        return p->queue_select;
    default: {
        /* A queue that does not exist reads as size 0: "not available". */
        VirtQueue *vq = virtio_get_queue(vdev, p->queue_select);
        return vq ? common_read_queue(vq, offset) : 0;
    }
    }
}

/* A vector the function does not have reads back as NO_VECTOR, which is
 * how the driver learns that its choice failed. */
uint16_t virtio_pci_checked_vector(VirtIOPCIProxy *p, uint64_t value)
{
    if (value != VIRTIO_NO_VECTOR && value >= p->nvectors) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: MSI-X vector %" PRIu64 " of %u: none used\n",
                      virtio_name(p->vdev), value, p->nvectors);
        return VIRTIO_NO_VECTOR;
    }
    return value;
}

static uint64_t with_half(uint64_t addr, uint64_t offset, uint64_t value)
{
    return offset % 8 ? (addr & 0xffffffffULL) | value << 32
                      : (addr & ~0xffffffffULL) | (uint32_t)value;
}

static void common_write_queue(VirtIOPCIProxy *p, VirtQueue *vq, uint64_t offset,
                               uint64_t value)
{
    switch (offset) {
    case VIRTIO_PCI_COMMON_Q_SIZE:
        virtio_queue_set_num(vq, value);
        break;
    case VIRTIO_PCI_COMMON_Q_MSIX:
        virtio_queue_set_vector(vq, virtio_pci_checked_vector(p, value));
        break;
    case VIRTIO_PCI_COMMON_Q_ENABLE:
        virtio_queue_set_enable(vq, value);
        if (vq->enabled) {
            virtio_pci_declare_doorbell(p, vq->index, VIRTIO_PCI_DRIVER_MODERN);
        }
        break;
    case VIRTIO_PCI_COMMON_Q_DESCLO:
    case VIRTIO_PCI_COMMON_Q_DESCHI:
        virtio_queue_set_addr(vq, with_half(vq->desc_addr, offset, value), vq->driver_addr,
                              vq->device_addr);
        break;
    case VIRTIO_PCI_COMMON_Q_AVAILLO:
    case VIRTIO_PCI_COMMON_Q_AVAILHI:
        virtio_queue_set_addr(vq, vq->desc_addr, with_half(vq->driver_addr, offset, value),
                              vq->device_addr);
        break;
    case VIRTIO_PCI_COMMON_Q_USEDLO:
    case VIRTIO_PCI_COMMON_Q_USEDHI:
        virtio_queue_set_addr(vq, vq->desc_addr, vq->driver_addr,
                              with_half(vq->device_addr, offset, value));
        break;
    default:    /* queue_notify_off */
        qemu_log_mask(LOG_GUEST_ERROR, "%s: common config 0x%" PRIx64 " is read-only\n",
                      virtio_name(p->vdev), offset);
        break;
    }
}

static void virtio_pci_common_write(void *opaque, uint64_t offset, uint64_t value,
                                    unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    VirtIODevice *vdev = p->vdev;
    if (!common_access_ok(p, offset, size, "write")) {
        return;
    }
    if (offset == VIRTIO_PCI_COMMON_STATUS) {
        virtio_pci_write_status(p, VIRTIO_PCI_DRIVER_MODERN, value);
        return;
    }
    if (!virtio_pci_driver_uses(p, VIRTIO_PCI_DRIVER_MODERN, "common configuration")) {
        return;
    }
    switch (offset) {
    case VIRTIO_PCI_COMMON_DFSELECT:
        p->device_feature_select = value;
        break;
    case VIRTIO_PCI_COMMON_GFSELECT:
        p->driver_feature_select = value;
        break;
    case VIRTIO_PCI_COMMON_GF:
        virtio_set_driver_features(vdev, p->driver_feature_select, value);
        break;
    case VIRTIO_PCI_COMMON_MSIX:
        vdev->config_vector = virtio_pci_checked_vector(p, value);
        break;
    case VIRTIO_PCI_COMMON_Q_SELECT:
        p->queue_select = value;
        break;
    case VIRTIO_PCI_COMMON_DF:
    case VIRTIO_PCI_COMMON_NUMQ:
    case VIRTIO_PCI_COMMON_CFGGENERATION:
        qemu_log_mask(LOG_GUEST_ERROR, "%s: common config 0x%" PRIx64 " is read-only\n",
                      virtio_name(vdev), offset);
        break;
    default: {
        VirtQueue *vq = virtio_get_queue(vdev, p->queue_select);
        if (!vq) {
            qemu_log_mask(LOG_GUEST_ERROR, "%s: write to queue %u, which does not exist: "
                          "ignored\n", virtio_name(vdev), p->queue_select);
            return;
        }
        virtio_queue_lock_nested(vq);
        common_write_queue(p, vq, offset, value);
        virtio_queue_unlock_nested(vq);
        break;
    }
    }
}

static const MemoryRegionOps virtio_pci_common_ops = {
    .read = virtio_pci_common_read,
    .write = virtio_pci_common_write,
    .max_access_size = 4,
};

/* ---- ISR, device configuration, notifications ---- */

/* Reading acknowledges: the bits clear and INTx drops. */
uint8_t virtio_pci_isr_acknowledge(VirtIOPCIProxy *p)
{
    uint8_t isr = virtio_isr_read_and_clear(p->vdev);
    pci_set_irq(&p->pci, false);
    return isr;
}

static uint64_t virtio_pci_isr_read(void *opaque, uint64_t offset, unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    return offset == 0 ? virtio_pci_isr_acknowledge(p) : 0;
}

static void virtio_pci_isr_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    qemu_log_mask(LOG_GUEST_ERROR, "%s: ISR status is read-only\n", virtio_name(p->vdev));
}

static const MemoryRegionOps virtio_pci_isr_ops = {
    .read = virtio_pci_isr_read,
    .write = virtio_pci_isr_write,
    .max_access_size = 4,
};

static uint64_t virtio_pci_device_read(void *opaque, uint64_t offset, unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    return virtio_config_read(p->vdev, offset, size);
}

static void virtio_pci_device_write(void *opaque, uint64_t offset, uint64_t value,
                                    unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    if (virtio_pci_driver_uses(p, VIRTIO_PCI_DRIVER_MODERN, "device configuration")) {
        virtio_config_write(p->vdev, offset, value, size);
    }
}

static const MemoryRegionOps virtio_pci_device_ops = {
    .read = virtio_pci_device_read,
    .write = virtio_pci_device_write,
    .max_access_size = 8,
};

static uint64_t virtio_pci_notify_read(void *opaque, uint64_t offset, unsigned size)
{
    return 0;
}

static void virtio_pci_notify_write(void *opaque, uint64_t offset, uint64_t value,
                                    unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    if (offset % VIRTIO_PCI_NOTIFY_MULTIPLIER) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: notify write at 0x%" PRIx64 " between queues: "
                      "ignored\n", virtio_name(p->vdev), offset);
        return;
    }
    if (virtio_pci_driver_uses(p, VIRTIO_PCI_DRIVER_MODERN, "queue notification")) {
        virtio_pci_register_kick(p, offset / VIRTIO_PCI_NOTIFY_MULTIPLIER);
    }
}

static const MemoryRegionOps virtio_pci_notify_ops = {
    .read = virtio_pci_notify_read,
    .write = virtio_pci_notify_write,
    .max_access_size = 4,
};

/* ---- building the function ---- */

static void virtio_pci_add_cap(PCIDevice *dev, uint8_t cfg_type, uint32_t offset,
                               uint32_t length, uint8_t cap_len)
{
    uint8_t cap = pci_add_capability(dev, PCI_CAP_ID_VNDR, cap_len);
    pci_set_byte(dev, cap + 2, cap_len);    /* cap_len, after id and next */
    pci_set_byte(dev, cap + VIRTIO_CAP_CFG_TYPE, cfg_type);
    pci_set_byte(dev, cap + VIRTIO_CAP_BAR, VIRTIO_PCI_MODERN_BAR);
    pci_set_long(dev, cap + VIRTIO_CAP_OFFSET, offset);
    pci_set_long(dev, cap + VIRTIO_CAP_LENGTH, length);
    if (cfg_type == VIRTIO_PCI_CAP_NOTIFY_CFG) {
        pci_set_long(dev, cap + VIRTIO_CAP_NOTIFY_MULT, VIRTIO_PCI_NOTIFY_MULTIPLIER);
    }
}

static void virtio_pci_add_region(VirtIOPCIProxy *p, MemoryRegion *mr,
                                  const MemoryRegionOps *ops, const char *name,
                                  uint64_t offset)
{
    memory_region_init_io(mr, &p->pci.qdev, ops, p, name, VIRTIO_PCI_REGION_SIZE);
    memory_region_add_subregion(&p->modern_bar, offset, mr, 0);
}

static void virtio_pci_qdev_reset(QEMUDevice *dev)
{
    VirtIOPCIProxy *p = (VirtIOPCIProxy *)dev;
    virtio_reset(p->vdev);
    pci_device_reset(&p->pci);
    virtio_pci_update_lockfree_state(p);
}

static void virtio_pci_notifiers_free(VirtIOPCIProxy *p)
{
    for (unsigned i = 0; i < p->vdev->num_queues; i++) {
        event_notifier_cleanup(&p->kicks[i].notifier);
    }
    for (unsigned v = 0; p->vector_notifiers && v < p->nvectors; v++) {
        event_notifier_cleanup(&p->vector_notifiers[v]);
    }
    g_free(p->kicks);
    g_free(p->vector_notifiers);
}

/* One notifier per queue's doorbell and, unless x-irqfd=off, one per
 * MSI-X vector. */
static bool virtio_pci_notifiers_new(VirtIOPCIProxy *p, Error **errp)
{
    p->kicks = g_new0(VirtIOPCIKick, p->vdev->num_queues);
    p->vector_notifiers = p->conf.irqfd ? g_new0(EventNotifier, p->nvectors) : NULL;
    /* Each one is tried, so that every fd is valid or -1 for the cleanup. */
    bool ok = true;
    for (unsigned i = 0; i < p->vdev->num_queues; i++) {
        p->kicks[i].proxy = p;
        p->kicks[i].queue = i;
        ok = event_notifier_init(&p->kicks[i].notifier, ok ? errp : NULL) && ok;
    }
    for (unsigned v = 0; p->vector_notifiers && v < p->nvectors; v++) {
        ok = event_notifier_init(&p->vector_notifiers[v], ok ? errp : NULL) && ok;
    }
    if (!ok) {
        virtio_pci_notifiers_free(p);
    }
    return ok;
}

/*
 * On the device's context (or before it runs): kicks are consumed there,
 * and so are the signals of a vector KVM does not inject. Every vector is
 * bound now, used by a queue or not: a binding lasts as long as the
 * device (msix_vector_use_notifier has no unbind), so the vector a driver
 * picks later must already be bound. An unused vector costs an eventfd;
 * its MSI route is only taken once the guest enables and unmasks it.
 */
static void virtio_pci_attach_context(void *opaque)
{
    VirtIOPCIProxy *p = opaque;
    for (unsigned i = 0; i < p->vdev->num_queues; i++) {
        event_notifier_set_handler(&p->kicks[i].notifier, p->ctx, virtio_pci_kick_notified);
    }
    for (unsigned v = 0; p->vector_notifiers && v < p->nvectors; v++) {
        msix_vector_use_notifier(&p->pci, v, &p->vector_notifiers[v], p->ctx);
    }
}

/* The spec's transitional PCI device ids ("Legacy Interfaces: ...
 * Transitional PCI Device ID"), which do not follow the virtio ids; 0 for
 * a device type that has none (it cannot be legacy). */
static uint16_t virtio_pci_transitional_device_id(uint16_t virtio_id)
{
    static const uint16_t ids[] = {
        [VIRTIO_ID_NET] = 0x1000, [VIRTIO_ID_BLOCK] = 0x1001, [3] = 0x1003 /* console */,
        [4] = 0x1005 /* entropy */, [5] = 0x1002 /* balloon */, [8] = 0x1004 /* SCSI */,
        [9] = 0x1009 /* 9P */,
    };
    return virtio_id < G_N_ELEMENTS(ids) ? ids[virtio_id] : 0;
}

/* The transport's property table, only to know its names. */
typedef struct VirtIOPCIConfHolder {
    VirtIOPCIConf conf;
} VirtIOPCIConfHolder;
static const DeviceProperty virtio_pci_transport_properties[] = {
    DEFINE_VIRTIO_PCI_PROPERTIES(VirtIOPCIConfHolder, conf),
};

bool virtio_pci_is_transport_property(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(virtio_pci_transport_properties); i++) {
        if (!strcmp(virtio_pci_transport_properties[i].name, name)) {
            return true;
        }
    }
    return false;
}

void virtio_pci_chosen_conf(const QEMUDevice *qdev, VirtIOPCIConf *conf)
{
    /* Every virtio PCI function is a proxy: PCIDevice first, QEMUDevice
     * first in that. */
    const VirtIOPCIProxy *p = (const VirtIOPCIProxy *)((const char *)qdev -
                                                       offsetof(VirtIOPCIProxy, pci.qdev));
    *conf = p->conf;
    conf->disable_legacy = p->legacy ? ON_OFF_AUTO_OFF : ON_OFF_AUTO_ON;
    conf->vectors = p->nvectors;
}

/* Which interfaces the switches leave, as QEMU decides on a conventional
 * PCI bus (disable-legacy=auto: legacy too, where the type has an id). */
static bool virtio_pci_choose_interfaces(VirtIOPCIProxy *p, Error **errp)
{
    uint16_t transitional_id = virtio_pci_transitional_device_id(p->vdev->device_id);
    p->modern = !p->conf.disable_modern;
    p->legacy = p->conf.disable_legacy == ON_OFF_AUTO_OFF ||
                (p->conf.disable_legacy == ON_OFF_AUTO_AUTO && transitional_id);
    if (p->legacy && !transitional_id) {
        error_setg(errp, "virtio device type %u has no legacy interface: disable-legacy=off "
                   "is not possible", p->vdev->device_id);
        return false;
    }
    if (!p->legacy && !p->modern) {
        error_setg(errp, "device cannot work as neither modern nor legacy mode is enabled "
                   "(set either disable-modern or disable-legacy to off)");
        return false;
    }
    return true;
}

/* BAR 4 with the modern structures, and their capabilities. */
static void virtio_pci_modern_init(VirtIOPCIProxy *p)
{
    memory_region_init_container(&p->modern_bar, &p->pci.qdev, "virtio-pci",
                                 VIRTIO_PCI_MODERN_BAR_SIZE);
    virtio_pci_add_region(p, &p->common, &virtio_pci_common_ops, "virtio-pci-common",
                          VIRTIO_PCI_COMMON_OFFSET);
    virtio_pci_add_region(p, &p->isr, &virtio_pci_isr_ops, "virtio-pci-isr",
                          VIRTIO_PCI_ISR_OFFSET);
    virtio_pci_add_region(p, &p->device_cfg, &virtio_pci_device_ops, "virtio-pci-device",
                          VIRTIO_PCI_DEVICE_OFFSET);
    virtio_pci_add_region(p, &p->notify, &virtio_pci_notify_ops, "virtio-pci-notify",
                          VIRTIO_PCI_NOTIFY_OFFSET);
    pci_register_bar(&p->pci, VIRTIO_PCI_MODERN_BAR,
                     PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &p->modern_bar);

    virtio_pci_add_cap(&p->pci, VIRTIO_PCI_CAP_COMMON_CFG, VIRTIO_PCI_COMMON_OFFSET,
                       VIRTIO_PCI_REGION_SIZE, VIRTIO_CAP_SIZE);
    virtio_pci_add_cap(&p->pci, VIRTIO_PCI_CAP_ISR_CFG, VIRTIO_PCI_ISR_OFFSET,
                       VIRTIO_PCI_REGION_SIZE, VIRTIO_CAP_SIZE);
    virtio_pci_add_cap(&p->pci, VIRTIO_PCI_CAP_DEVICE_CFG, VIRTIO_PCI_DEVICE_OFFSET,
                       VIRTIO_PCI_REGION_SIZE, VIRTIO_CAP_SIZE);
    virtio_pci_add_cap(&p->pci, VIRTIO_PCI_CAP_NOTIFY_CFG, VIRTIO_PCI_NOTIFY_OFFSET,
                       VIRTIO_PCI_REGION_SIZE, VIRTIO_NOTIFY_CAP_SIZE);
}

bool virtio_pci_init(VirtIOPCIProxy *p, VirtIODevice *vdev, PCIBus *bus, int devfn,
                     const char *type, const char *id_prefix, uint32_t class_code,
                     IOThread *iothread, const VirtIOPCIConf *conf, Error **errp)
{
    static const VirtIOPCIConf defaults = VIRTIO_PCI_CONF_DEFAULTS;
    g_assert(vdev->num_queues + 1 <= VIRTIO_PCI_MAX_VECTORS &&
             vdev->config_len <= VIRTIO_PCI_REGION_SIZE);
    p->vdev = vdev;
    p->conf = conf ? *conf : defaults;
    p->nvectors = p->conf.vectors == VIRTIO_PCI_VECTORS_AUTO ? vdev->num_queues + 1
                                                              : p->conf.vectors;
    if (p->nvectors < 1 || p->nvectors > VIRTIO_PCI_MAX_VECTORS) {
        /* QEMU takes 0 for "no MSI-X"; INTx alone is not offered here. */
        error_setg(errp, "vectors=%u is not supported (1 to %u)", p->conf.vectors,
                   VIRTIO_PCI_MAX_VECTORS);
        return false;
    }
    if (!virtio_pci_choose_interfaces(p, errp) || !virtio_pci_notifiers_new(p, errp)) {
        return false;
    }
    /* A transitional device has the legacy ids (virtio 1.x, "PCI Device
     * Discovery"): the legacy driver knows the type by its subsystem id. */
    uint16_t device_id = p->legacy ? virtio_pci_transitional_device_id(vdev->device_id)
                                   : VIRTIO_PCI_DEVICE_ID_BASE + vdev->device_id;
    uint8_t revision = p->legacy ? VIRTIO_PCI_TRANSITIONAL_REVISION : VIRTIO_PCI_REVISION;
    if (!pci_device_init(&p->pci, bus, devfn, type, id_prefix, PCI_VENDOR_ID_REDHAT_QUMRANET,
                         device_id, revision, class_code, 1, errp)) {
        virtio_pci_notifiers_free(p);
        return false;
    }
    if (p->legacy) {
        pci_set_word(&p->pci, PCI_SUBSYSTEM_ID, vdev->device_id);
    }
    vdev->qdev = &p->pci.qdev;
    vdev->transport = p;
    vdev->transport_notify = virtio_pci_send_interrupt;
    vdev->transport_notify_lockfree = virtio_pci_send_interrupt_lockfree;
    vdev->transport_reset = virtio_pci_transport_reset;
    p->pci.qdev.reset = virtio_pci_qdev_reset;
    p->pci.config_written = virtio_pci_config_written;

    if (p->legacy) {
        virtio_pci_legacy_init(p);
    }
    if (p->modern) {
        virtio_pci_modern_init(p);
    }
    memory_region_init_container(&p->msix_bar, &p->pci.qdev, "virtio-pci-msix",
                                 VIRTIO_PCI_MSIX_BAR_SIZE);
    pci_register_bar(&p->pci, VIRTIO_PCI_MSIX_BAR, 0, &p->msix_bar);
    msix_init_in_bar(&p->pci, p->nvectors, VIRTIO_PCI_MSIX_BAR, 0, VIRTIO_PCI_MSIX_PBA_OFFSET);
    virtio_pci_update_lockfree_state(p);

    p->ctx = iothread ? iothread_context(iothread) : main_loop_context();
    if (iothread) {
        iothread_run_sync(iothread, virtio_pci_attach_context, p);
    } else {
        virtio_pci_attach_context(p);
    }
    return true;
}

/* ---- handing a queue to vhost ---- */

/*
 * The doorbell is re-declared rather than its watch stopped: the watch
 * belongs to the device's context and may only change on its thread,
 * while this runs on whichever thread holds the device lock. The queue's
 * own notifier stays watched and is simply no longer signalled.
 */
void virtio_pci_redirect_kicks(VirtIOPCIProxy *p, unsigned queue, EventNotifier *to)
{
    g_assert(queue < p->vdev->num_queues);
    VirtIOPCIKick *kick = &p->kicks[queue];
    if (kick->redirect == to) {
        return;
    }
    MemoryRegion *declared_on = kick->region;
    virtio_pci_remove_doorbell(kick);
    kick->redirect = to;
    if (declared_on) {
        virtio_pci_declare_doorbell(p, queue, declared_on == &p->legacy_bar ?
                                    VIRTIO_PCI_DRIVER_LEGACY : VIRTIO_PCI_DRIVER_MODERN);
    }
    if (!to) {
        /* Whatever the kernel left in the ring is looked at here now. */
        event_notifier_set(&kick->notifier);
    }
}

EventNotifier *virtio_pci_queue_call_notifier(VirtIOPCIProxy *p, unsigned queue)
{
    VirtQueue *vq = virtio_get_queue(p->vdev, queue);
    if (!vq || !msix_enabled(&p->pci) || vq->vector == VIRTIO_NO_VECTOR) {
        return NULL;
    }
    /* virtio_pci_checked_vector let only the function's vectors in. */
    return &p->vector_notifiers[vq->vector];
}
