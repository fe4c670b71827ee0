/*
 * The legacy (virtio 0.9.5) register block of a transitional virtio PCI
 * function: I/O BAR 0, as the virtio 1.x specification's "Legacy
 * Interfaces: A Note on PCI Device Layout" gives it and Linux's
 * virtio_pci_legacy drives it. Only feature bits 0-31 exist here, so a
 * legacy driver never sees VERSION_1; a queue is placed by one page
 * number and always has the size the device offers; the device
 * configuration follows the header, in the guest's byte order (x86:
 * little-endian, which is how virtio.c keeps it). Accesses arrive with
 * the function's device lock held.
 */
#include <inttypes.h>
#include <glib.h>
#include "hw/pci/msi.h"
#include "hw/virtio/virtio-pci.h"
#include "qemu/log.h"
#include "virtio-pci-internal.h"

/* The width of each header field; 0 past the header (or for the MSI-X
 * vectors while MSI-X is off: that is device configuration then). */
static unsigned legacy_field_size(uint64_t offset)
{
    switch (offset) {
    case VIRTIO_PCI_LEGACY_HOST_FEATURES:
    case VIRTIO_PCI_LEGACY_GUEST_FEATURES:
    case VIRTIO_PCI_LEGACY_QUEUE_PFN:
        return 4;
    case VIRTIO_PCI_LEGACY_QUEUE_NUM:
    case VIRTIO_PCI_LEGACY_QUEUE_SEL:
    case VIRTIO_PCI_LEGACY_QUEUE_NOTIFY:
    case VIRTIO_PCI_LEGACY_MSIX_CONFIG:
    case VIRTIO_PCI_LEGACY_MSIX_QUEUE:
        return 2;
    case VIRTIO_PCI_LEGACY_STATUS:
    case VIRTIO_PCI_LEGACY_ISR:
        return 1;
    default:
        return 0;
    }
}

/* Where the device configuration starts now. */
static uint64_t legacy_config_offset(VirtIOPCIProxy *p)
{
    return VIRTIO_PCI_LEGACY_CONFIG_OFFSET(msix_enabled(&p->pci));
}

/* Whole fields at their own width, as drivers access them. */
static bool legacy_access_ok(VirtIOPCIProxy *p, uint64_t offset, unsigned size,
                             const char *what)
{
    if (legacy_field_size(offset) == size) {
        return true;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: legacy header %s of %u bytes at 0x%" PRIx64 " is not "
                  "a field: ignored\n", virtio_name(p->vdev), what, size, offset);
    return false;
}

static uint64_t virtio_pci_legacy_read(void *opaque, uint64_t offset, unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    VirtIODevice *vdev = p->vdev;
    uint64_t config = legacy_config_offset(p);
    if (offset >= config) {
        return virtio_config_read(vdev, offset - config, size);
    }
    if (!legacy_access_ok(p, offset, size, "read")) {
        return 0;
    }
    /* A queue that does not exist reads as size 0: "not available". */
    VirtQueue *vq = virtio_get_queue(vdev, p->queue_select);
    switch (offset) {
    case VIRTIO_PCI_LEGACY_HOST_FEATURES:
        return virtio_get_device_features(vdev, 0);
    case VIRTIO_PCI_LEGACY_GUEST_FEATURES:
        return virtio_get_driver_features(vdev, 0);
    case VIRTIO_PCI_LEGACY_QUEUE_PFN:
        return vq ? vq->desc_addr >> VIRTIO_PCI_LEGACY_PFN_SHIFT : 0;
    case VIRTIO_PCI_LEGACY_QUEUE_NUM:
        return vq ? vq->num : 0;
    case VIRTIO_PCI_LEGACY_QUEUE_SEL:
        return p->queue_select;
    case VIRTIO_PCI_LEGACY_STATUS:
        return virtio_get_status(vdev);
    case VIRTIO_PCI_LEGACY_ISR:
        return virtio_pci_isr_acknowledge(p);
    case VIRTIO_PCI_LEGACY_MSIX_CONFIG:
        return vdev->config_vector;
    case VIRTIO_PCI_LEGACY_MSIX_QUEUE:
        return vq ? vq->vector : VIRTIO_NO_VECTOR;
    default:    /* QUEUE_NOTIFY */
        return 0;
    }
}

/*
 * A page number places the whole queue (virtio 1.x, "Legacy Interfaces:
 * A Note on Virtqueue Layout"): descriptors at the page, the available
 * ring right after them, the used ring at the next 4 KiB boundary; the
 * queue runs from then on. 0 is what Linux writes when it deletes a queue
 * that a reset has already disabled; an enabled queue can only be
 * disabled by a reset (as in the modern interface without RING_RESET).
 */
static void virtio_pci_legacy_set_pfn(VirtIOPCIProxy *p, VirtQueue *vq, uint32_t pfn)
{
    if (pfn == 0) {
        if (vq->enabled) {
            qemu_log_mask(LOG_GUEST_ERROR, "%s: queue %u PFN 0 written while the queue runs "
                          "(a reset disables it): ignored\n", virtio_name(p->vdev), vq->index);
        }
        return;
    }
    uint64_t desc = (uint64_t)pfn << VIRTIO_PCI_LEGACY_PFN_SHIFT;
    uint64_t avail = desc + vring_desc_size(vq->num);
    uint64_t avail_end = avail + vring_avail_size(vq->num);
    uint64_t used = (avail_end + VIRTIO_PCI_LEGACY_VRING_ALIGN - 1) &
                    ~(uint64_t)(VIRTIO_PCI_LEGACY_VRING_ALIGN - 1);
    virtio_queue_set_addr(vq, desc, avail, used);
    virtio_queue_set_enable(vq, 1);
    if (vq->enabled) {
        virtio_pci_declare_doorbell(p, vq->index, VIRTIO_PCI_DRIVER_LEGACY);
    }
}

/* The fields a driver may write, with the device's queue as selected. */
static void legacy_write_field(VirtIOPCIProxy *p, uint64_t offset, uint64_t value)
{
    VirtIODevice *vdev = p->vdev;
    VirtQueue *vq = virtio_get_queue(vdev, p->queue_select);
    switch (offset) {
    case VIRTIO_PCI_LEGACY_GUEST_FEATURES:
        virtio_set_driver_features(vdev, 0, value);
        return;
    case VIRTIO_PCI_LEGACY_QUEUE_SEL:
        p->queue_select = value;
        return;
    case VIRTIO_PCI_LEGACY_QUEUE_NOTIFY:
        virtio_pci_register_kick(p, value);
        return;
    case VIRTIO_PCI_LEGACY_MSIX_CONFIG:
        vdev->config_vector = virtio_pci_checked_vector(p, value);
        return;
    }
    /* QUEUE_PFN, MSIX_QUEUE: the selected queue's. */
    if (!vq) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: legacy write to queue %u, which does not exist: "
                      "ignored\n", virtio_name(vdev), p->queue_select);
        return;
    }
    virtio_queue_lock_nested(vq);
    if (offset == VIRTIO_PCI_LEGACY_QUEUE_PFN) {
        virtio_pci_legacy_set_pfn(p, vq, value);
    } else {
        virtio_queue_set_vector(vq, virtio_pci_checked_vector(p, value));
    }
    virtio_queue_unlock_nested(vq);
}

static void virtio_pci_legacy_write(void *opaque, uint64_t offset, uint64_t value,
                                    unsigned size)
{
    VirtIOPCIProxy *p = opaque;
    uint64_t config = legacy_config_offset(p);
    if (offset >= config) {
        if (virtio_pci_driver_uses(p, VIRTIO_PCI_DRIVER_LEGACY, "device configuration")) {
            virtio_config_write(p->vdev, offset - config, value, size);
        }
        return;
    }
    if (!legacy_access_ok(p, offset, size, "write")) {
        return;
    }
    switch (offset) {
    case VIRTIO_PCI_LEGACY_STATUS:
        virtio_pci_write_status(p, VIRTIO_PCI_DRIVER_LEGACY, value);
        return;
    case VIRTIO_PCI_LEGACY_HOST_FEATURES:
    case VIRTIO_PCI_LEGACY_QUEUE_NUM:
    case VIRTIO_PCI_LEGACY_ISR:
        qemu_log_mask(LOG_GUEST_ERROR, "%s: legacy header 0x%" PRIx64 " is read-only\n",
                      virtio_name(p->vdev), offset);
        return;
    }
    if (virtio_pci_driver_uses(p, VIRTIO_PCI_DRIVER_LEGACY, "header")) {
        legacy_write_field(p, offset, value);
    }
}

static const MemoryRegionOps virtio_pci_legacy_ops = {
    .read = virtio_pci_legacy_read,
    .write = virtio_pci_legacy_write,
    .max_access_size = 4,
};

void virtio_pci_legacy_init(VirtIOPCIProxy *p)
{
    /* The header with the MSI-X fields and the device configuration,
     * rounded up to a power of two as a BAR must be (QEMU's size too:
     * 128 bytes for virtio-blk, 32 for virtio-net). */
    uint64_t needed = VIRTIO_PCI_LEGACY_CONFIG_OFFSET(true) + p->vdev->config_len;
    uint64_t size = 4;
    while (size < needed) {
        size <<= 1;
    }
    memory_region_init_io(&p->legacy_bar, &p->pci.qdev, &virtio_pci_legacy_ops, p,
                          "virtio-pci-legacy", size);
    pci_register_bar(&p->pci, VIRTIO_PCI_LEGACY_BAR, PCI_BASE_ADDRESS_SPACE_IO, &p->legacy_bar);
}
