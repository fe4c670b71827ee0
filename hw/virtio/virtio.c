/*
 * The transport-independent virtio 1.x device (hw/virtio/virtio.h):
 * features, status and reset, queue configuration, configuration space,
 * interrupts and DEVICE_NEEDS_RESET. Every function runs with the
 * device lock held, except a queue's data path under its own lock
 * (virtio_queue_lock; virtio.h, "Queue locks").
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <glib.h>
#include "hw/virtio/virtio.h"
#include "qemu/log.h"

#define VIRTIO_TRANSPORT_FEATURES \
    (VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | \
     VIRTIO_BIT(VIRTIO_F_RING_INDIRECT_DESC))

const char *virtio_name(const VirtIODevice *vdev)
{
    return vdev->qdev && vdev->qdev->id ? vdev->qdev->id : "virtio";
}

void virtio_init(VirtIODevice *vdev, uint16_t device_id, const VirtIODeviceOps *ops,
                 uint64_t device_features, size_t config_len, unsigned num_queues,
                 uint16_t queue_size, VirtQueueHandler *handler)
{
    g_assert(num_queues >= 1 && queue_size >= 1 && queue_size <= VIRTQUEUE_MAX_SIZE &&
             !(queue_size & (queue_size - 1)));
    vdev->device_id = device_id;
    vdev->ops = ops;
    vdev->host_features = device_features | VIRTIO_TRANSPORT_FEATURES;
    vdev->config_len = config_len;
    vdev->config = g_malloc0(config_len);
    vdev->num_queues = num_queues;
    vdev->vqs = g_new0(VirtQueue, num_queues);
    vdev->queue_locks = g_ptr_array_new();
    for (unsigned i = 0; i < num_queues; i++) {
        vdev->vqs[i] = (VirtQueue) {
            .vdev = vdev, .index = i, .num_max = queue_size, .handler = handler,
        };
    }
    virtio_reset(vdev);
}

void virtio_set_config_len(VirtIODevice *vdev, size_t len)
{
    g_assert(len <= vdev->config_len);
    vdev->config_len = len;
}

void virtio_cleanup(VirtIODevice *vdev)
{
    for (unsigned i = 0; i < vdev->num_queues; i++) {
        vring_unmap(&vdev->vqs[i].ring);
    }
    g_clear_pointer(&vdev->vqs, g_free);
    g_clear_pointer(&vdev->queue_locks, g_ptr_array_unref);
    g_clear_pointer(&vdev->config, g_free);
}

/* ---- queue locks ---- */

/* The queue whose lock this thread holds without the device lock, if
 * any: virtio_error, which cannot know who calls it, leaves its
 * configuration interrupt to that section's end. */
static _Thread_local VirtQueue *queue_section;

void virtio_queue_set_lock(VirtQueue *vq, DeviceLock *lock)
{
    vq->lock = lock;
    if (!g_ptr_array_find(vq->vdev->queue_locks, lock, NULL)) {
        g_ptr_array_add(vq->vdev->queue_locks, lock);
    }
}

void virtio_queue_lock(VirtQueue *vq)
{
    if (!vq->lock) {
        device_lock(vq->vdev->qdev);
        return;
    }
    device_sublock_lock(vq->lock);
    /* With device-lock=off the sub-lock is the global lock, which is the
     * device lock too: interrupts go out at once, as in the baseline. */
    vq->section_has_device_lock = !device_lock_is_per_device();
    queue_section = vq->section_has_device_lock ? NULL : vq;
}

/* An interrupt decided under the queue lock, now under the device lock:
 * unless a reset came in between (the driver has let go of the queue). */
static void virtio_queue_send_deferred(VirtQueue *vq, bool irq, bool config)
{
    VirtIODevice *vdev = vq->vdev;
    device_lock(vdev->qdev);
    if (irq && vq->enabled && (vdev->status & VIRTIO_CONFIG_S_DRIVER_OK)) {
        vdev->transport_notify(vdev, vq->vector, VIRTIO_ISR_QUEUE);
    }
    if (config) {
        virtio_notify_config(vdev);
    }
    device_unlock(vdev->qdev);
}

void virtio_queue_unlock(VirtQueue *vq)
{
    if (!vq->lock) {
        device_unlock(vq->vdev->qdev);
        return;
    }
    bool irq = vq->irq_deferred, config = vq->config_irq_deferred;
    vq->irq_deferred = vq->config_irq_deferred = false;
    queue_section = NULL;
    device_sublock_unlock(vq->lock);
    /* Only now: the device lock is never taken under a queue lock. */
    if (irq || config) {
        virtio_queue_send_deferred(vq, irq, config);
    }
}

void virtio_queue_lock_nested(VirtQueue *vq)
{
    if (vq->lock) {
        device_sublock_lock_nested(vq->lock);
        vq->section_has_device_lock = true;
    }
}

void virtio_queue_unlock_nested(VirtQueue *vq)
{
    if (vq->lock) {
        device_sublock_unlock_nested(vq->lock);
    }
}

void virtio_queues_quiesce(VirtIODevice *vdev)
{
    for (unsigned i = 0; vdev->queue_locks && i < vdev->queue_locks->len; i++) {
        device_sublock_lock_nested(g_ptr_array_index(vdev->queue_locks, i));
    }
    /* Whatever a quiesced queue pushes (vhost handing a ring back, the
     * control queue at a pair's index) interrupts at once. */
    for (unsigned i = 0; i < vdev->num_queues; i++) {
        if (vdev->vqs[i].lock) {
            vdev->vqs[i].section_has_device_lock = true;
        }
    }
}

void virtio_queues_resume(VirtIODevice *vdev)
{
    for (unsigned i = vdev->queue_locks ? vdev->queue_locks->len : 0; i-- > 0;) {
        device_sublock_unlock_nested(g_ptr_array_index(vdev->queue_locks, i));
    }
}

/* ---- features ---- */

static uint32_t feature_word(uint64_t features, uint32_t select)
{
    return select < 2 ? (uint32_t)(features >> (32 * select)) : 0;
}

uint32_t virtio_get_device_features(const VirtIODevice *vdev, uint32_t select)
{
    return feature_word(vdev->host_features, select);
}

uint32_t virtio_get_driver_features(const VirtIODevice *vdev, uint32_t select)
{
    return feature_word(vdev->guest_features, select);
}

void virtio_set_driver_features(VirtIODevice *vdev, uint32_t select, uint32_t value)
{
    if (vdev->status & VIRTIO_CONFIG_S_FEATURES_OK) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: driver features written after FEATURES_OK: "
                      "ignored\n", virtio_name(vdev));
        return;
    }
    if (select >= 2) {
        if (value) {
            qemu_log_mask(LOG_GUEST_ERROR, "%s: driver features word %" PRIu32 " set to "
                          "0x%" PRIx32 ": no such features, ignored\n", virtio_name(vdev),
                          select, value);
        }
        return;
    }
    uint64_t offered = feature_word(vdev->host_features, select);
    if (value & ~offered) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: driver accepts features 0x%" PRIx32 " of word %"
                      PRIu32 " that were not offered: dropped\n", virtio_name(vdev),
                      (uint32_t)(value & ~offered), select);
    }
    unsigned shift = 32 * select;
    virtio_queues_quiesce(vdev);
    vdev->guest_features = (vdev->guest_features & ~(0xffffffffULL << shift)) |
                           (uint64_t)(value & offered) << shift;
    virtio_queues_resume(vdev);
}

bool virtio_has_feature(const VirtIODevice *vdev, unsigned bit)
{
    return vdev->guest_features & VIRTIO_BIT(bit);
}

/* ---- status and reset ---- */

uint8_t virtio_get_status(const VirtIODevice *vdev)
{
    return vdev->status;
}

static unsigned virtio_in_flight(VirtIODevice *vdev)
{
    return vdev->ops->in_flight ? vdev->ops->in_flight(vdev) : 0;
}

/* virtio_reset, the queues quiesced. */
static void virtio_reset_quiesced(VirtIODevice *vdev)
{
    vdev->guest_features = 0;
    vdev->status = 0;
    vdev->isr = 0;
    vdev->config_vector = VIRTIO_NO_VECTOR;
    vdev->broken = false;
    vdev->reset_pending = false;
    for (unsigned i = 0; i < vdev->num_queues; i++) {
        VirtQueue *vq = &vdev->vqs[i];
        vring_unmap(&vq->ring);
        vq->num = vq->num_max;
        vq->vector = VIRTIO_NO_VECTOR;
        vq->enabled = false;
        vq->desc_addr = vq->driver_addr = vq->device_addr = 0;
        vq->pushed = false;
    }
    if (vdev->ops->reset) {
        vdev->ops->reset(vdev);
    }
    if (vdev->transport_reset) {
        vdev->transport_reset(vdev);
    }
}

void virtio_reset(VirtIODevice *vdev)
{
    virtio_queues_quiesce(vdev);
    virtio_reset_quiesced(vdev);
    virtio_queues_resume(vdev);
}

/* FEATURES_OK is the modern interface's, which needs VERSION_1 (virtio
 * 1.x, "Legacy Interface: ..."): a driver without it is a legacy one,
 * which uses the legacy interface and never sets FEATURES_OK. */
static bool virtio_features_acceptable(const VirtIODevice *vdev)
{
    return virtio_has_feature(vdev, VIRTIO_F_VERSION_1);
}

/* virtio_set_status, the queues quiesced: no data path sees a status,
 * feature set or queue state half changed, and none is in progress when
 * a reset clears the rings under it. */
static void virtio_set_status_quiesced(VirtIODevice *vdev, uint8_t status)
{
    if (status == 0) {
        /* The driver polls the status until it reads 0: a reset with host
         * I/O in flight completes when the last request does. */
        vdev->reset_pending = true;
        if (virtio_in_flight(vdev) == 0) {
            virtio_reset_quiesced(vdev);
        }
        return;
    }
    if (vdev->reset_pending) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: status 0x%x written before the reset completed: "
                      "ignored\n", virtio_name(vdev), status);
        return;
    }
    if ((status & VIRTIO_CONFIG_S_FEATURES_OK) &&
        !(vdev->status & VIRTIO_CONFIG_S_FEATURES_OK) && !virtio_features_acceptable(vdev)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: features 0x%" PRIx64 " lack VERSION_1: "
                      "FEATURES_OK refused\n", virtio_name(vdev), vdev->guest_features);
        status &= ~VIRTIO_CONFIG_S_FEATURES_OK;
    }
    /* NEEDS_RESET is the device's to set; the driver cannot clear it. */
    uint8_t old_status = vdev->status;
    vdev->status = (status & ~VIRTIO_CONFIG_S_NEEDS_RESET) |
                   (vdev->status & VIRTIO_CONFIG_S_NEEDS_RESET);
    if (vdev->ops->status_changed) {
        vdev->ops->status_changed(vdev, old_status);
    }
}

void virtio_set_status(VirtIODevice *vdev, uint8_t status)
{
    virtio_queues_quiesce(vdev);
    virtio_set_status_quiesced(vdev, status);
    virtio_queues_resume(vdev);
}

void virtio_request_completed(VirtIODevice *vdev)
{
    if (vdev->reset_pending && virtio_in_flight(vdev) == 0) {
        virtio_reset(vdev);
    }
}

/* ---- queue configuration ---- */

VirtQueue *virtio_get_queue(VirtIODevice *vdev, unsigned index)
{
    return index < vdev->num_queues ? &vdev->vqs[index] : NULL;
}

static bool virtio_queue_configurable(VirtQueue *vq, const char *what)
{
    if (vq->enabled) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: queue %u %s written while the queue is enabled: "
                      "ignored\n", virtio_name(vq->vdev), vq->index, what);
        return false;
    }
    return true;
}

void virtio_queue_set_num(VirtQueue *vq, uint16_t num)
{
    if (!virtio_queue_configurable(vq, "size")) {
        return;
    }
    if (num == 0 || num > vq->num_max || (num & (num - 1))) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: queue %u size %u is not a power of two up to %u: "
                      "ignored\n", virtio_name(vq->vdev), vq->index, num, vq->num_max);
        return;
    }
    vq->num = num;
}

void virtio_queue_set_addr(VirtQueue *vq, uint64_t desc, uint64_t driver, uint64_t device)
{
    if (virtio_queue_configurable(vq, "address")) {
        vq->desc_addr = desc;
        vq->driver_addr = driver;
        vq->device_addr = device;
    }
}

void virtio_queue_set_vector(VirtQueue *vq, uint16_t vector)
{
    vq->vector = vector;
}

void virtio_queue_set_enable(VirtQueue *vq, uint16_t enable)
{
    VirtIODevice *vdev = vq->vdev;
    if (enable != 1) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: queue %u enable written with %u (only 1 is "
                      "allowed without RING_RESET): ignored\n", virtio_name(vdev), vq->index,
                      enable);
        return;
    }
    if (vq->enabled) {
        return;
    }
    Error *err = NULL;
    if (!vring_map(&vq->ring, vq->num, vq->desc_addr, vq->driver_addr, vq->device_addr,
                   virtio_has_feature(vdev, VIRTIO_F_RING_EVENT_IDX),
                   virtio_has_feature(vdev, VIRTIO_F_RING_INDIRECT_DESC), &err)) {
        virtio_error(vdev, "queue %u: %s", vq->index, err->msg);
        error_free(err);
        return;
    }
    vq->enabled = true;
}

/* ---- kicks and chains ---- */

bool virtio_queue_runnable(const VirtQueue *vq)
{
    const VirtIODevice *vdev = vq->vdev;
    return !vdev->broken && !vdev->reset_pending && vq->enabled &&
           (vdev->status & VIRTIO_CONFIG_S_DRIVER_OK);
}

void virtio_queue_notify(VirtIODevice *vdev, unsigned index)
{
    VirtQueue *vq = virtio_get_queue(vdev, index);
    if (!vq) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: kick of queue %u, which does not exist: "
                      "ignored\n", virtio_name(vdev), index);
        return;
    }
    if (!virtio_queue_runnable(vq)) {
        /* A device that needs a reset, or a driver not ready: nothing to do. */
        qemu_log_mask(LOG_GUEST_ERROR, "%s: kick of queue %u while it cannot run (status "
                      "0x%x, queue %s): ignored\n", virtio_name(vdev), index, vdev->status,
                      vq->enabled ? "enabled" : "disabled");
        return;
    }
    vq->handler(vdev, vq);
}

VirtQueueElement *virtqueue_pop(VirtQueue *vq)
{
    VirtIODevice *vdev = vq->vdev;
    if (vdev->broken || !vq->enabled) {
        return NULL;
    }
    Error *err = NULL;
    VirtQueueElement *elem = vring_pop(&vq->ring, &err);
    if (err) {
        virtio_error(vdev, "queue %u: %s", vq->index, err->msg);
        error_free(err);
    }
    return elem;
}

void virtqueue_push_batch(VirtQueue *vq, VirtQueueElement **elems, const uint32_t *lens,
                          unsigned n)
{
    /* A reset pending or done: the driver has let go of the rings. */
    if (!vq->vdev->reset_pending && vq->enabled) {
        vring_push_batch(&vq->ring, elems, lens, n);
        vq->pushed = true;
    }
    for (unsigned i = 0; i < n; i++) {
        g_free(elems[i]);
    }
}

void virtqueue_push(VirtQueue *vq, VirtQueueElement *elem, uint32_t len)
{
    virtqueue_push_batch(vq, &elem, &len, 1);
}

void virtqueue_set_notification(VirtQueue *vq, bool enable)
{
    if (vq->enabled) {
        vring_set_notification(&vq->ring, enable);
    }
}

bool virtqueue_has_avail(VirtQueue *vq)
{
    return vq->enabled && !vq->vdev->broken && vring_has_avail(&vq->ring);
}

bool virtqueue_avail_watch(VirtQueue *vq, VirtQueueAvailWatch *w)
{
    if (!virtio_queue_runnable(vq)) {
        return false;
    }
    w->idx = vring_avail_idx_addr(&vq->ring);
    w->seen = vq->ring.last_avail_idx;
    return true;
}

/* ---- interrupts ---- */

/* vq's interrupt, if the ring asks for one (EVENT_IDX's used_event, or
 * NO_INTERRUPT: each queue's own). */
static void virtio_queue_interrupt_if_due(VirtQueue *vq)
{
    if (!vq->pushed || !vq->enabled) {
        return;
    }
    vq->pushed = false;
    if (!vring_should_notify(&vq->ring)) {
        return;
    }
    VirtIODevice *vdev = vq->vdev;
    if (!vq->lock || vq->section_has_device_lock) {
        vdev->transport_notify(vdev, vq->vector, VIRTIO_ISR_QUEUE);
    } else if (!vdev->transport_notify_lockfree ||
               !vdev->transport_notify_lockfree(vdev, vq->vector)) {
        vq->irq_deferred = true;    /* virtio_queue_unlock sends it */
    }
}

void virtio_notify_pushed(VirtIODevice *vdev)
{
    for (unsigned i = 0; i < vdev->num_queues; i++) {
        /* A queue with its own lock is another thread's to look at. */
        if (!vdev->vqs[i].lock) {
            virtio_queue_interrupt_if_due(&vdev->vqs[i]);
        }
    }
}

void virtio_queue_notify_pushed(VirtQueue *vq)
{
    virtio_queue_interrupt_if_due(vq);
}

void virtio_notify_config(VirtIODevice *vdev)
{
    if (!(vdev->status & VIRTIO_CONFIG_S_DRIVER_OK)) {
        return;
    }
    vdev->config_generation++;
    vdev->transport_notify(vdev, vdev->config_vector, VIRTIO_ISR_CONFIG);
}

uint8_t virtio_isr_read_and_clear(VirtIODevice *vdev)
{
    uint8_t isr = vdev->isr;
    vdev->isr = 0;
    return isr;
}

void virtio_error(VirtIODevice *vdev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s: device needs a reset\n", virtio_name(vdev), msg);
    vdev->broken = true;
    vdev->status |= VIRTIO_CONFIG_S_NEEDS_RESET;   /* an atomic or */
    if (queue_section) {
        queue_section->config_irq_deferred = true;  /* needs the device lock */
    } else {
        virtio_notify_config(vdev);
    }
}

/* ---- configuration space ---- */

static bool virtio_config_access_ok(VirtIODevice *vdev, uint64_t offset, unsigned size,
                                    const char *what)
{
    if (offset < vdev->config_len && size <= vdev->config_len - offset) {
        return true;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: config %s of %u bytes at 0x%" PRIx64 " past its %zu "
                  "bytes: ignored\n", virtio_name(vdev), what, size, offset, vdev->config_len);
    return false;
}

uint64_t virtio_config_read(VirtIODevice *vdev, uint64_t offset, unsigned size)
{
    if (!virtio_config_access_ok(vdev, offset, size, "read")) {
        /* All ones, as QEMU answers past the end. */
        return size >= 8 ? UINT64_MAX : (1ULL << (8 * size)) - 1;
    }
    vdev->ops->get_config(vdev, vdev->config);
    uint64_t value = 0;
    memcpy(&value, vdev->config + offset, size);   /* little-endian host */
    return value;
}

void virtio_config_write(VirtIODevice *vdev, uint64_t offset, uint64_t value, unsigned size)
{
    if (!virtio_config_access_ok(vdev, offset, size, "write")) {
        return;
    }
    if (!vdev->ops->set_config) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: config is read-only: write at 0x%" PRIx64
                      " ignored\n", virtio_name(vdev), offset);
        return;
    }
    vdev->ops->get_config(vdev, vdev->config);
    memcpy(vdev->config + offset, &value, size);
    /* A device's data path may read what the configuration sets (a MAC). */
    virtio_queues_quiesce(vdev);
    vdev->ops->set_config(vdev, vdev->config);
    virtio_queues_resume(vdev);
}
