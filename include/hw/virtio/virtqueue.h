/*
 * Split virtqueues (virtio 1.x, "Split Virtqueues"): the descriptor table,
 * the available ring the driver fills and the used ring the device fills,
 * all in guest RAM. This module only parses and fills rings; it knows
 * nothing of transports, devices or locks, so unit tests drive it against
 * a RAM region of their own.
 *
 * Guest input is hostile. vring_pop refuses, with an error that says why,
 * an available index that moved by more than the queue size, a head or
 * next index past the table, a chain that loops or is longer than its
 * table, an indirect table inside an indirect table, with NEXT set, of a
 * bad length, outside RAM or not negotiated, a device-readable descriptor
 * after a device-writable one, and buffers outside RAM. It never loops
 * without bound and allocates at most one element per call. The caller
 * (hw/virtio/virtio.c) turns an error into DEVICE_NEEDS_RESET.
 *
 * Ordering (virtio 1.x, "Driver Requirements: ... Memory barriers"): the
 * available index is read with acquire semantics before the ring entry
 * and descriptors it publishes; a used element is written before the used
 * index is released; the used index store and the used_event load
 * (whether to interrupt), and the avail_event or used flags store and the
 * available index load that follows it (whether a kick was missed), are
 * sequentially consistent, so each store is ordered before its load (a
 * locked instruction on x86: the full barrier the spec asks for, in a form
 * ThreadSanitizer understands, which a bare fence is not).
 *
 * The caller serialises every call on one VRing (the device lock). Ring
 * memory is reached through host pointers taken when the queue is enabled
 * (vring_map): guest RAM is never unmapped, as sysemu/dma.h says, and the
 * flat view lookup would otherwise be paid for every descriptor.
 */
#ifndef HW_VIRTIO_VIRTQUEUE_H
#define HW_VIRTIO_VIRTQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "qemu/error.h"
#include "sysemu/dma.h"

/* Descriptor flags. */
#define VRING_DESC_F_NEXT           1
#define VRING_DESC_F_WRITE          2
#define VRING_DESC_F_INDIRECT       4
/* avail->flags: the driver needs no interrupt (without EVENT_IDX). */
#define VRING_AVAIL_F_NO_INTERRUPT  1
/* used->flags: the device needs no kick (without EVENT_IDX). */
#define VRING_USED_F_NO_NOTIFY      1

/* The largest queue a device offers (virtio allows 32768; Linux uses what
 * the device offers, and QEMU's devices offer at most this). */
#define VIRTQUEUE_MAX_SIZE          1024
/* The most entries an indirect table may have. */
#define VIRTQUEUE_MAX_INDIRECT      1024
/* The most host iovecs one direction of an element may need: what preadv
 * and io_uring take in one call (IOV_MAX). */
#define VIRTQUEUE_MAX_IOV           1024

/* Alignments the driver must keep (virtio 1.x, "Virtqueue Alignment"). */
#define VRING_DESC_ALIGN            16
#define VRING_AVAIL_ALIGN           2
#define VRING_USED_ALIGN            4

/* One descriptor, as it is laid out in guest RAM (little-endian). */
typedef struct VRingDesc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
} VRingDesc;

/* One used element: the chain's head and the bytes the device wrote. */
typedef struct VRingUsedElem {
    uint32_t id;
    uint32_t len;
} VRingUsedElem;

/* Bytes of each part of a queue of num entries, event fields included. */
static inline uint64_t vring_desc_size(unsigned num)
{
    return (uint64_t)num * sizeof(VRingDesc);
}

static inline uint64_t vring_avail_size(unsigned num)
{
    return 2 + 2 + 2 * (uint64_t)num + 2;   /* flags, idx, ring[], used_event */
}

static inline uint64_t vring_used_size(unsigned num)
{
    return 2 + 2 + sizeof(VRingUsedElem) * (uint64_t)num + 2;  /* ..., avail_event */
}

typedef struct VRing {
    uint16_t num;               /* 0: not mapped */
    VRingDesc *desc;            /* host pointers into guest RAM */
    uint16_t *avail;            /* flags, idx, ring[num], used_event */
    uint16_t *used_hdr;         /* flags, idx */
    VRingUsedElem *used_ring;   /* ring[num], then avail_event */
    bool event_idx;             /* VIRTIO_F_RING_EVENT_IDX negotiated */
    bool indirect;              /* VIRTIO_F_RING_INDIRECT_DESC negotiated */

    uint16_t last_avail_idx;    /* the next available entry to take */
    uint16_t used_idx;          /* the used index as last published */
    uint16_t signalled_used;    /* used_idx when the driver was last interrupted */
    bool signalled_used_valid;  /* false until the first interrupt decision */
    unsigned inuse;             /* popped, not yet pushed */

    /* Scratch for vring_pop (the caller's lock serialises it). */
    DMASegment *segs;           /* num + VIRTQUEUE_MAX_INDIRECT */
    struct iovec *iov;          /* 2 * VIRTQUEUE_MAX_IOV */
} VRing;

/*
 * A chain taken from the available ring: out_sg are the device-readable
 * buffers (the request), in_sg the device-writable ones (the reply), as
 * host iovecs into guest RAM. Freed with g_free by whoever pushes it.
 */
typedef struct VirtQueueElement {
    uint16_t head;
    unsigned out_num, in_num;
    size_t out_len, in_len;     /* bytes of each direction */
    struct iovec *out_sg, *in_sg;
    struct iovec iov[];         /* out_num then in_num entries */
} VirtQueueElement;

/*
 * Map a queue of num entries (a power of two up to VIRTQUEUE_MAX_SIZE)
 * whose parts the driver placed at the given guest-physical addresses,
 * with the negotiated ring features, and start from index 0. Fails if an
 * address is misaligned or a part is not wholly in one RAM range.
 */
bool vring_map(VRing *r, uint16_t num, uint64_t desc, uint64_t avail, uint64_t used,
               bool event_idx, bool indirect, Error **errp);
/* Forget the mapping (queue reset); r may be mapped or not. */
void vring_unmap(VRing *r);
static inline bool vring_is_mapped(const VRing *r)
{
    return r->num != 0;
}

/* Does the available ring hold chains not yet popped? */
bool vring_has_avail(const VRing *r);
/* Where the driver's available index is (mapped rings only). */
const uint16_t *vring_avail_idx_addr(const VRing *r);
/*
 * Take the next chain. Returns it; or NULL with no error if the ring is
 * empty; or NULL with *errp set (errp must not be NULL) if the driver
 * broke the rules, after which the queue must not be used until reset.
 */
VirtQueueElement *vring_pop(VRing *r, Error **errp);
/* Return elem's chain to the driver with len bytes written into its
 * device-writable buffers, and publish it. Does not free elem. */
void vring_push(VRing *r, const VirtQueueElement *elem, uint32_t len);
/*
 * Return n chains (elems[i] with lens[i] bytes written) and publish them
 * with one used index store, so the driver sees all of them or none: a
 * frame spread over mergeable receive buffers must not be seen in part.
 * Does not free the elements.
 */
void vring_push_batch(VRing *r, VirtQueueElement *const *elems, const uint32_t *lens,
                      unsigned n);
/*
 * After pushes: should the driver be interrupted now? With EVENT_IDX,
 * when the used index passed used_event since the last interrupt; else
 * unless the driver set VRING_AVAIL_F_NO_INTERRUPT. Records the decision.
 */
bool vring_should_notify(VRing *r);
/*
 * Ask the driver for kicks (enable) or tell it none are needed while the
 * device is polling the ring anyway: avail_event with EVENT_IDX, else
 * VRING_USED_F_NO_NOTIFY. After enabling, the caller checks
 * vring_has_avail again: a chain made available just before is not
 * kicked.
 */
void vring_set_notification(VRing *r, bool enable);

#endif
