/*
 * A vhost device: a /dev/vhost-* fd that serves virtqueues in the host
 * kernel (Linux's vhost uAPI, <linux/vhost.h>). This is the part common to
 * every vhost device: ownership, features, the memory table (kept by
 * hw/virtio/vhost-memory.h) and the rings' size, indexes, addresses and
 * notifiers. What connects the rings to a backend (vhost-net's tap) is the
 * device's own (hw/virtio/vhost-net.c).
 *
 * Notifiers: the kernel takes kicks from the ring's kick notifier (owned
 * here; the transport redirects the queue's doorbell to it) and interrupts
 * the guest through the call notifier it is given (the transport's MSI-X
 * vector notifier, an irqfd in KVM). Neither is tied to the VM fd, so a VM
 * re-created on reset or S3 leaves the vhost side as it is: KVM's hooks
 * re-register the ioeventfds and irqfds on the same eventfds.
 *
 * Threads: init and cleanup on the main thread; start and stop with the
 * owning device's lock held. The memory table follows map changes on
 * whichever thread makes them (a memory listener).
 */
#ifndef HW_VIRTIO_VHOST_H
#define HW_VIRTIO_VHOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "hw/virtio/vhost-uapi.h"
#include "hw/virtio/vhost-memory.h"
#include "qemu/error.h"
#include "qemu/event-notifier.h"

typedef struct VhostRing {
    EventNotifier kick;         /* VHOST_UAPI_SET_VRING_KICK */
    EventNotifier err;          /* VHOST_UAPI_SET_VRING_ERR: a guest error, logged */
} VhostRing;

typedef struct VhostDev {
    int fd;
    char *name;                 /* for messages: "vhost-net n0" */
    uint64_t features;          /* what the kernel offers (VHOST_UAPI_GET_FEATURES) */
    unsigned nrings;
    VhostRing *rings;
    VhostMemory mem;
    atomic_bool mem_failed;     /* the last VHOST_UAPI_SET_MEM_TABLE failed */
} VhostDev;

/* How a ring starts: the driver's layout and user space's progress. */
typedef struct VhostRingSetup {
    uint16_t num;
    uint16_t last_avail_idx;
    uint64_t desc, avail, used;         /* guest-physical */
    EventNotifier *call;
    /* How long the kernel polls before it waits for a kick, in
     * microseconds (-netdev tap,poll-us=); 0: the kernel's default, none. */
    uint32_t busyloop_us;
} VhostRingSetup;

/*
 * Take fd (closed by vhost_dev_cleanup, or here on failure): become its
 * owner, read its features, make each ring's kick and error notifiers and
 * start following address_space_memory's RAM.
 */
bool vhost_dev_init(VhostDev *d, int fd, unsigned nrings, const char *name, Error **errp);
void vhost_dev_cleanup(VhostDev *d);

/*
 * Tell the kernel the acked features and every ring's setup (NUM, BASE,
 * ADDR, KICK, CALL, ERR, and BUSYLOOP_TIMEOUT when asked for). The kernel
 * serves nothing yet: the device attaches its backend next. False, errp
 * set, when a ring is not in RAM or the kernel refuses.
 */
bool vhost_dev_start(VhostDev *d, uint64_t features, const VhostRingSetup *setup,
                     Error **errp);
/* After the device detached its backend: each ring's last available index
 * as the kernel left it (VHOST_GET_VRING_BASE) replaces last_avail[i],
 * which holds the index the ring started from (kept if the call fails). */
void vhost_dev_stop(VhostDev *d, uint16_t *last_avail);

/* The host addresses of ring index's parts, or false (errp set) unless each
 * part lies wholly in RAM. */
bool vhost_ring_addr(VhostMemory *mem, unsigned index, const VhostRingSetup *setup,
                     VhostUapiVringAddr *addr, Error **errp);

#endif
