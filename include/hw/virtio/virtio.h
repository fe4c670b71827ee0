/*
 * The transport-independent part of a virtio 1.x device: feature
 * negotiation, the device status and its reset, the queues as the driver
 * configures them, the device-specific configuration space, interrupts
 * and the DEVICE_NEEDS_RESET state a broken driver leads to.
 *
 * A device model (virtio-blk) embeds a VirtIODevice and fills its ops; a
 * transport (virtio-pci) maps the driver's register accesses onto the
 * functions below and delivers interrupts through transport_notify.
 *
 * Locking: everything here is the state of one QEMUDevice (the transport's
 * PCI function) and is touched with device_lock(vdev->qdev) held: register
 * accesses arrive with it held, and a device's completions take it.
 *
 * Queue locks (docs/locking.md, "virtio-net queue pairs"): a device may
 * give a queue a lock of its own (virtio_queue_set_lock, a sub-lock of the
 * device; one lock may serve several queues, as a pair's two). Such a
 * queue's data path (kicks, pops, pushes, its interrupt) runs under that
 * lock alone (virtio_queue_lock), never the device lock. Then:
 *  - the queue's own fields (ring, size, addresses, vector, enabled,
 *    pushed) are written with the device lock and the queue's lock held,
 *    and read under either;
 *  - the device-wide fields a data path reads (features, status, reset,
 *    the device's own state such as a receive filter) are written only
 *    while every queue lock is held too (virtio_queues_quiesce): a reset
 *    or a status change waits for a data path in progress, and none
 *    starts until it is done;
 *  - status and broken are atomics besides, because a data path that
 *    meets a broken driver sets DEVICE_NEEDS_RESET under its queue lock
 *    only (virtio_error), while a register read of the status holds only
 *    the device lock;
 *  - an interrupt the transport cannot raise without the device lock (the
 *    ISR and INTx, or a vector sent from user space) waits until the queue
 *    lock is released and is then sent under the device lock
 *    (virtio_queue_unlock): the device lock is never taken under a queue
 *    lock.
 * A queue without a lock of its own is the device lock's, as before.
 */
#ifndef HW_VIRTIO_VIRTIO_H
#define HW_VIRTIO_VIRTIO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>
#include "hw/qdev.h"
#include "hw/virtio/virtqueue.h"

/* Device status (virtio 1.x, "Device Status Field"). */
#define VIRTIO_CONFIG_S_ACKNOWLEDGE     0x01
#define VIRTIO_CONFIG_S_DRIVER          0x02
#define VIRTIO_CONFIG_S_DRIVER_OK       0x04
#define VIRTIO_CONFIG_S_FEATURES_OK     0x08
#define VIRTIO_CONFIG_S_NEEDS_RESET     0x40
#define VIRTIO_CONFIG_S_FAILED          0x80

/* Feature bits every device here offers (virtio 1.x, "Reserved Feature Bits"). */
#define VIRTIO_F_RING_INDIRECT_DESC     28
#define VIRTIO_F_RING_EVENT_IDX         29
#define VIRTIO_F_VERSION_1              32

/* "No MSI-X vector" in msix_config and queue_msix_vector. */
#define VIRTIO_NO_VECTOR                0xffff

/* ISR status bits (the interrupt cause when MSI-X is off). */
#define VIRTIO_ISR_QUEUE                0x1
#define VIRTIO_ISR_CONFIG               0x2

/* virtio device ids ("Device Types"). */
#define VIRTIO_ID_NET                   1
#define VIRTIO_ID_BLOCK                 2

#define VIRTIO_BIT(n)                   (1ULL << (n))

typedef struct VirtIODevice VirtIODevice;
typedef struct VirtQueue VirtQueue;

/* Called when the driver kicks a queue, with the queue's lock held (the
 * device lock for a queue without one; see "Queue locks"). */
typedef void VirtQueueHandler(VirtIODevice *vdev, VirtQueue *vq);

struct VirtQueue {
    VirtIODevice *vdev;
    unsigned index;
    VRing ring;                 /* mapped while enabled */
    /* As the driver configures it through the transport. */
    uint16_t num_max;           /* offered size */
    uint16_t num;               /* chosen size (power of two <= num_max) */
    uint16_t vector;            /* MSI-X vector, or VIRTIO_NO_VECTOR */
    bool enabled;
    uint64_t desc_addr, driver_addr, device_addr;
    bool pushed;                /* chains returned since the last interrupt decision */
    VirtQueueHandler *handler;
    /* The queue's own lock (a sub-lock of the device), or NULL: the
     * device lock guards it. Set at realize. */
    DeviceLock *lock;
    /* Inside a section of the queue's lock (virtio_queue_lock): whether
     * the thread holds the device lock too (then interrupts go out at
     * once), and what had to wait for the device lock until the section
     * ends: the queue's interrupt, a configuration interrupt. A section
     * entered by one queue pushes to that queue only (a pair's RX path
     * does not touch its transmitq), so these flags are the queue's. */
    bool section_has_device_lock;
    bool irq_deferred, config_irq_deferred;
};

typedef struct VirtIODeviceOps {
    /* Fill config (config_len bytes) with the current configuration. */
    void (*get_config)(VirtIODevice *vdev, uint8_t *config);
    /* The driver wrote into config; apply what it may change. May be NULL. */
    void (*set_config)(VirtIODevice *vdev, const uint8_t *config);
    /* Back to the state after realize; nothing is in flight. May be NULL. */
    void (*reset)(VirtIODevice *vdev);
    /* Requests handed to the host and not completed yet: a reset the
     * driver asks for waits for them (virtio_set_status). May be NULL. */
    unsigned (*in_flight)(VirtIODevice *vdev);
    /* The driver wrote a non-zero status that took effect (old_status is
     * the one before): a device starts its host side at DRIVER_OK (a
     * NIC's offloads, vhost). A reset goes to reset instead. May be NULL. */
    void (*status_changed)(VirtIODevice *vdev, uint8_t old_status);
} VirtIODeviceOps;

struct VirtIODevice {
    QEMUDevice *qdev;           /* whose lock guards all of this (the transport's) */
    uint16_t device_id;         /* VIRTIO_ID_* */
    const VirtIODeviceOps *ops;
    uint64_t host_features;     /* offered, the transport bits included */
    uint64_t guest_features;    /* accepted by the driver (a subset) */
    _Atomic uint8_t status;     /* atomic: see "Queue locks" above */
    uint8_t isr;                /* VIRTIO_ISR_* not yet read by the driver */
    uint8_t config_generation;
    uint16_t config_vector;
    uint8_t *config;
    size_t config_len;
    unsigned num_queues;
    VirtQueue *vqs;
    /* The driver broke the rules: DEVICE_NEEDS_RESET is set and no queue
     * is processed until a reset. */
    atomic_bool broken;
    /* The queue locks (virtio_queue_set_lock), each once, in the order
     * they were given: the order virtio_queues_quiesce takes them in. */
    GPtrArray *queue_locks;
    /* The driver wrote 0 to the status while requests were in flight: the
     * reset completes, and the status reads 0, once they have. */
    bool reset_pending;

    /* Set by the transport: deliver vector (MSI-X) or, without MSI-X,
     * raise INTx for isr_bits. The one way an interrupt leaves. */
    void (*transport_notify)(VirtIODevice *vdev, uint16_t vector, uint8_t isr_bits);
    /* Set by the transport, may be NULL: raise a queue's vector with no
     * lock held (an irqfd), or return false if that needs the device lock
     * now (MSI-X off, or vectors sent from user space). Any thread. */
    bool (*transport_notify_lockfree)(VirtIODevice *vdev, uint16_t vector);
    /* Set by the transport: the device was reset (its interrupt line
     * drops, its register selectors go back to 0). May be NULL. */
    void (*transport_reset)(VirtIODevice *vdev);
    void *transport;
};

/*
 * Set up vdev (before the transport attaches): device_features are the
 * device's own bits; VERSION_1, EVENT_IDX and INDIRECT_DESC are added.
 * Every queue offers queue_size entries and calls handler when kicked.
 */
void virtio_init(VirtIODevice *vdev, uint16_t device_id, const VirtIODeviceOps *ops,
                 uint64_t device_features, size_t config_len, unsigned num_queues,
                 uint16_t queue_size, VirtQueueHandler *handler);
/* Shrink the configuration the driver sees to len bytes (at most
 * virtio_init's config_len), for a device whose size depends on the
 * features it offers. Before the transport is set up. */
void virtio_set_config_len(VirtIODevice *vdev, size_t len);
/* Undo virtio_init, for a device whose transport could not be set up. */
void virtio_cleanup(VirtIODevice *vdev);
/* Log name of the device ("virtio-blk0"). */
const char *virtio_name(const VirtIODevice *vdev);

/* ---- the driver's side, as the transport calls it ---- */

/* 32 feature bits from bit 32 * select. */
uint32_t virtio_get_device_features(const VirtIODevice *vdev, uint32_t select);
uint32_t virtio_get_driver_features(const VirtIODevice *vdev, uint32_t select);
void virtio_set_driver_features(VirtIODevice *vdev, uint32_t select, uint32_t value);
bool virtio_has_feature(const VirtIODevice *vdev, unsigned bit);

/* The status as the driver reads it (the old one while a reset waits for
 * requests in flight). */
uint8_t virtio_get_status(const VirtIODevice *vdev);
/* 0 resets (at once, or when the last request in flight completes);
 * FEATURES_OK sticks only if the accepted features are acceptable. */
void virtio_set_status(VirtIODevice *vdev, uint8_t status);

/* ---- queue locks (see "Queue locks" above) ---- */

/* Give vq the lock lock (a sub-lock of vdev->qdev), at realize. */
void virtio_queue_set_lock(VirtQueue *vq, DeviceLock *lock);
/* Holding no lock: enter vq's data path (its lock, or the device lock for
 * a queue without one). The unlock sends what waited for the device lock. */
void virtio_queue_lock(VirtQueue *vq);
void virtio_queue_unlock(VirtQueue *vq);
/* Holding the device lock: take vq's own lock too (nothing for a queue
 * without one), for a register write that configures or kicks it. */
void virtio_queue_lock_nested(VirtQueue *vq);
void virtio_queue_unlock_nested(VirtQueue *vq);
/* Holding the device lock: take every queue lock, in order, so that no
 * data path runs until virtio_queues_resume (reset, status, features,
 * configuration, a device's control commands). */
void virtio_queues_quiesce(VirtIODevice *vdev);
void virtio_queues_resume(VirtIODevice *vdev);

/* Queue configuration, with the device lock and the queue's lock held
 * (virtio_queue_lock_nested); writes while the queue is enabled are
 * refused. */
VirtQueue *virtio_get_queue(VirtIODevice *vdev, unsigned index);   /* NULL if none */
void virtio_queue_set_num(VirtQueue *vq, uint16_t num);
void virtio_queue_set_addr(VirtQueue *vq, uint64_t desc, uint64_t driver, uint64_t device);
void virtio_queue_set_vector(VirtQueue *vq, uint16_t vector);
/* The driver wrote queue_enable: 1 maps the rings (NEEDS_RESET if they are
 * not in RAM); 0 is refused (it needs VIRTIO_F_RING_RESET). */
void virtio_queue_set_enable(VirtQueue *vq, uint16_t enable);

/*
 * The driver kicked queue index: the one entry point of a queue
 * notification, whatever carried it (virtio-pci: the queue's ioeventfd,
 * consumed on the device's context; or, for a write the ioeventfd does
 * not match, the notify register's handler on the vCPU that wrote it).
 * With the queue's lock held (virtio_queue_lock or _nested). Ignored, and
 * logged, unless the driver is ready.
 */
void virtio_queue_notify(VirtIODevice *vdev, unsigned index);

/* May the device process vq now (the driver is ready, the queue enabled,
 * no reset pending or needed)? With the queue's lock or the device lock. */
bool virtio_queue_runnable(const VirtQueue *vq);

/* Device configuration space accesses (size 1, 2, 4 or 8; little-endian). */
uint64_t virtio_config_read(VirtIODevice *vdev, uint64_t offset, unsigned size);
void virtio_config_write(VirtIODevice *vdev, uint64_t offset, uint64_t value, unsigned size);

/* The ISR as a read gives it: returns the bits and clears them. */
uint8_t virtio_isr_read_and_clear(VirtIODevice *vdev);

/* Power-on state (machine reset; the device is drained). Device lock
 * held; quiesces the queues. */
void virtio_reset(VirtIODevice *vdev);

/* ---- the device's side ---- */

/* Take the next chain of vq, or NULL: empty, or the driver broke the rules
 * (then the device is NEEDS_RESET and the caller stops). */
VirtQueueElement *virtqueue_pop(VirtQueue *vq);
/* Return elem with len bytes written, and free it. Dropped (and freed)
 * while a reset is pending or after the queue was reset. */
void virtqueue_push(VirtQueue *vq, VirtQueueElement *elem, uint32_t len);
/* The same for n elements, published together (vring_push_batch). */
void virtqueue_push_batch(VirtQueue *vq, VirtQueueElement **elems, const uint32_t *lens,
                          unsigned n);
/* Kick suppression around a polling loop (vring_set_notification). */
void virtqueue_set_notification(VirtQueue *vq, bool enable);
bool virtqueue_has_avail(VirtQueue *vq);

/* Watching for the driver's next chain without the queue's lock (a
 * polling window that must not hold it): the available index's host
 * address and the value it has while nothing new is there. The address
 * stays readable for the VM's life (guest RAM is never unmapped), whatever
 * the driver or a reset does meanwhile, so a change only says "look again
 * under the lock". */
typedef struct VirtQueueAvailWatch {
    const uint16_t *idx;
    uint16_t seen;
} VirtQueueAvailWatch;
/* Start watching; with the queue's lock held. False: nothing to watch
 * (the queue is not in use). */
bool virtqueue_avail_watch(VirtQueue *vq, VirtQueueAvailWatch *w);
static inline bool virtqueue_avail_moved(const VirtQueueAvailWatch *w)
{
    return __atomic_load_n(w->idx, __ATOMIC_ACQUIRE) != w->seen;
}
/* Interrupt the driver for every queue under the device lock (no lock of
 * its own) that returned chains since the last call, as EVENT_IDX or
 * NO_INTERRUPT allow: once per batch. Device lock held. */
void virtio_notify_pushed(VirtIODevice *vdev);
/* The same for vq alone, under vq's lock: a queue with a lock of its own
 * interrupts for itself. */
void virtio_queue_notify_pushed(VirtQueue *vq);
/* The configuration changed: tell the driver (config vector / ISR bit 1). */
void virtio_notify_config(VirtIODevice *vdev);
/*
 * The driver broke the rules: log it (-d guest_errors), set
 * DEVICE_NEEDS_RESET, stop processing queues and send a configuration
 * interrupt, as virtio 1.x asks of a device that cannot go on.
 */
void virtio_error(VirtIODevice *vdev, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* A request that was in flight has completed: finishes a pending reset
 * when it was the last one. */
void virtio_request_completed(VirtIODevice *vdev);

#endif
