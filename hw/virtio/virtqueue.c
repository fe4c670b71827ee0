/*
 * Split virtqueue parsing and filling (hw/virtio/virtqueue.h): what the
 * rules are, and why each check is there, is in the header.
 */
#include <inttypes.h>
#include <string.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/virtio/virtqueue.h"
#include "qemu/iov.h"

/* Guest memory is read as the host lays integers out: virtio 1.x rings are
 * little-endian, as is every x86 host. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "virtio rings are little-endian");

/* avail: flags, idx, ring[num], used_event. */
#define AVAIL_IDX       1
#define AVAIL_RING      2
/* used header: flags, idx. */
#define USED_FLAGS      0
#define USED_IDX        1

/* ---- ring fields: the driver changes them concurrently ---- */

static uint16_t vring_avail_idx(const VRing *r)
{
    /* Acquire: the ring entries and descriptors it covers are read after. */
    return __atomic_load_n(&r->avail[AVAIL_IDX], __ATOMIC_ACQUIRE);
}

static uint16_t vring_avail_flags(const VRing *r)
{
    return __atomic_load_n(&r->avail[0], __ATOMIC_RELAXED);
}

/* Sequentially consistent, after our used index store (vring_push). */
static uint16_t vring_used_event(const VRing *r)
{
    return __atomic_load_n(&r->avail[AVAIL_RING + r->num], __ATOMIC_SEQ_CST);
}

static uint16_t *vring_avail_event(const VRing *r)
{
    return (uint16_t *)&r->used_ring[r->num];
}

/* ---- mapping ---- */

static void *vring_map_part(const char *what, uint64_t addr, uint64_t size, uint64_t align,
                            Error **errp)
{
    if (addr % align) {
        error_setg(errp, "%s at 0x%" PRIx64 " is not aligned to %" PRIu64 " bytes", what,
                   addr, align);
        return NULL;
    }
    void *p = dma_memory_map(addr, size);
    if (!p) {
        error_setg(errp, "%s at 0x%" PRIx64 " (%" PRIu64 " bytes) is not in guest RAM", what,
                   addr, size);
    }
    return p;
}

bool vring_map(VRing *r, uint16_t num, uint64_t desc, uint64_t avail, uint64_t used,
               bool event_idx, bool indirect, Error **errp)
{
    vring_unmap(r);
    if (num == 0 || num > VIRTQUEUE_MAX_SIZE || (num & (num - 1))) {
        error_setg(errp, "queue size %u is not a power of two up to %u", num,
                   VIRTQUEUE_MAX_SIZE);
        return false;
    }
    VRingDesc *d = vring_map_part("descriptor table", desc, vring_desc_size(num),
                                  VRING_DESC_ALIGN, errp);
    uint16_t *a = d ? vring_map_part("available ring", avail, vring_avail_size(num),
                                     VRING_AVAIL_ALIGN, errp) : NULL;
    uint16_t *u = a ? vring_map_part("used ring", used, vring_used_size(num),
                                     VRING_USED_ALIGN, errp) : NULL;
    if (!u) {
        return false;
    }
    r->num = num;
    r->desc = d;
    r->avail = a;
    r->used_hdr = u;
    r->used_ring = (VRingUsedElem *)(u + 2);
    r->event_idx = event_idx;
    r->indirect = indirect;
    r->segs = g_new(DMASegment, num + VIRTQUEUE_MAX_INDIRECT);
    r->iov = g_new(struct iovec, 2 * VIRTQUEUE_MAX_IOV);
    return true;
}

void vring_unmap(VRing *r)
{
    g_free(r->segs);
    g_free(r->iov);
    memset(r, 0, sizeof(*r));
}

/* ---- popping a chain ---- */

const uint16_t *vring_avail_idx_addr(const VRing *r)
{
    return &r->avail[AVAIL_IDX];
}

bool vring_has_avail(const VRing *r)
{
    /* Sequentially consistent, after a store of vring_set_notification:
     * a chain made available before the driver could see that store is
     * found here. */
    return __atomic_load_n(&r->avail[AVAIL_IDX], __ATOMIC_SEQ_CST) != r->last_avail_idx;
}

/* Where a chain's descriptors come from: the queue's table, or one
 * indirect table it switched to. */
typedef struct DescTable {
    const VRingDesc *desc;
    unsigned size;
    bool indirect;
} DescTable;

/* The segments of one chain, split by direction as they are found. */
typedef struct ChainSegs {
    DMASegment *out, *in;   /* out grows up from segs[0], in is collected after */
    size_t out_num, in_num;
} ChainSegs;

/* Switch from the queue's table to the indirect table d describes. */
static bool vring_enter_indirect(const VRing *r, const VRingDesc *d, DescTable *t,
                                 Error **errp)
{
    if (!r->indirect) {
        error_setg(errp, "indirect descriptor, but INDIRECT_DESC was not negotiated");
        return false;
    }
    if (t->indirect) {
        error_setg(errp, "indirect descriptor inside an indirect table");
        return false;
    }
    if (d->flags & VRING_DESC_F_NEXT) {
        error_setg(errp, "indirect descriptor with NEXT set");
        return false;
    }
    if (d->len == 0 || d->len % sizeof(VRingDesc) ||
        d->len / sizeof(VRingDesc) > VIRTQUEUE_MAX_INDIRECT) {
        error_setg(errp, "indirect table of %" PRIu32 " bytes (a multiple of %zu, at most "
                   "%u entries)", d->len, sizeof(VRingDesc), VIRTQUEUE_MAX_INDIRECT);
        return false;
    }
    /* Linux allocates each table in one piece; one RAM range is required. */
    const VRingDesc *table = vring_map_part("indirect table", d->addr, d->len,
                                            VRING_DESC_ALIGN, errp);
    if (!table) {
        return false;
    }
    *t = (DescTable) { .desc = table, .size = d->len / sizeof(VRingDesc), .indirect = true };
    return true;
}

/* Copy descriptor i of t once: the driver may change it while we look. */
static VRingDesc vring_read_desc(const DescTable *t, unsigned i)
{
    VRingDesc d;
    memcpy(&d, &t->desc[i], sizeof(d));
    return d;
}

/*
 * Walk the chain at head into r->segs: device-readable segments first,
 * then device-writable ones. Each table is walked at most its size times,
 * so a loop ends as a chain that is too long.
 */
static bool vring_walk_chain(VRing *r, uint16_t head, size_t *out_num, size_t *in_num,
                             Error **errp)
{
    DescTable t = { .desc = r->desc, .size = r->num };
    unsigned i = head, visited = 0;
    size_t nsegs = 0, first_in = SIZE_MAX;
    for (;;) {
        if (++visited > t.size) {
            error_setg(errp, "descriptor chain at head %u loops or is longer than its table "
                       "(%u entries)", head, t.size);
            return false;
        }
        VRingDesc d = vring_read_desc(&t, i);
        if (d.flags & VRING_DESC_F_INDIRECT) {
            if (!vring_enter_indirect(r, &d, &t, errp)) {
                return false;
            }
            i = 0;
            visited = 0;
            continue;
        }
        if (d.flags & VRING_DESC_F_WRITE) {
            first_in = MIN(first_in, nsegs);
        } else if (first_in != SIZE_MAX) {
            error_setg(errp, "device-readable descriptor after a device-writable one "
                       "(chain at head %u)", head);
            return false;
        }
        /* Bounded: r->num visits in the queue's table plus at most
         * VIRTQUEUE_MAX_INDIRECT in one indirect table. */
        r->segs[nsegs++] = (DMASegment) { .addr = d.addr, .len = d.len };
        if (!(d.flags & VRING_DESC_F_NEXT)) {
            break;
        }
        if (d.next >= t.size) {
            error_setg(errp, "descriptor next index %u past the table's %u entries",
                       d.next, t.size);
            return false;
        }
        i = d.next;
    }
    *out_num = MIN(first_in, nsegs);
    *in_num = nsegs - *out_num;
    return true;
}

VirtQueueElement *vring_pop(VRing *r, Error **errp)
{
    g_assert(errp);
    uint16_t avail_idx = vring_avail_idx(r);
    uint16_t pending = avail_idx - r->last_avail_idx;
    if (pending == 0) {
        return NULL;
    }
    if (pending > r->num) {
        error_setg(errp, "available index %u is %u entries ahead of the device, more than "
                   "the queue's %u", avail_idx, pending, r->num);
        return NULL;
    }
    uint16_t head = __atomic_load_n(&r->avail[AVAIL_RING + r->last_avail_idx % r->num],
                                    __ATOMIC_RELAXED);
    if (head >= r->num) {
        error_setg(errp, "available ring entry %u names head %u past the queue's %u entries",
                   r->last_avail_idx, head, r->num);
        return NULL;
    }
    size_t nout, nin, niov_out, niov_in;
    if (!vring_walk_chain(r, head, &nout, &nin, errp)) {
        return NULL;
    }
    struct iovec *iov_out = r->iov, *iov_in = r->iov + VIRTQUEUE_MAX_IOV;
    if (!dma_memory_map_sg(r->segs, nout, iov_out, VIRTQUEUE_MAX_IOV, &niov_out) ||
        !dma_memory_map_sg(r->segs + nout, nin, iov_in, VIRTQUEUE_MAX_IOV, &niov_in)) {
        error_setg(errp, "descriptor chain at head %u has a buffer outside guest RAM or "
                   "needs more than %u pieces", head, VIRTQUEUE_MAX_IOV);
        return NULL;
    }
    VirtQueueElement *elem = g_malloc(sizeof(*elem) +
                                      (niov_out + niov_in) * sizeof(struct iovec));
    elem->head = head;
    elem->out_num = niov_out;
    elem->in_num = niov_in;
    elem->out_sg = elem->iov;
    elem->in_sg = elem->iov + niov_out;
    memcpy(elem->out_sg, iov_out, niov_out * sizeof(struct iovec));
    memcpy(elem->in_sg, iov_in, niov_in * sizeof(struct iovec));
    elem->out_len = iov_size(elem->out_sg, niov_out);
    elem->in_len = iov_size(elem->in_sg, niov_in);
    r->last_avail_idx++;
    r->inuse++;
    return elem;
}

/* ---- returning chains and notifications ---- */

/* Write the used element offset entries past the published index. */
static void vring_fill(VRing *r, unsigned offset, uint16_t head, uint32_t len)
{
    VRingUsedElem *slot = &r->used_ring[(uint16_t)(r->used_idx + offset) % r->num];
    slot->id = head;
    slot->len = len;
}

/* Publish the n elements filled past the used index. */
static void vring_publish(VRing *r, unsigned n)
{
    r->used_idx += n;
    /* The elements are visible before the index that covers them
     * (release), and the index before used_event is read (sequentially
     * consistent: a locked instruction on x86, the full barrier the spec
     * asks for). */
    __atomic_store_n(&r->used_hdr[USED_IDX], r->used_idx, __ATOMIC_SEQ_CST);
    r->inuse -= n;
}

void vring_push(VRing *r, const VirtQueueElement *elem, uint32_t len)
{
    vring_fill(r, 0, elem->head, len);
    vring_publish(r, 1);
}

void vring_push_batch(VRing *r, VirtQueueElement *const *elems, const uint32_t *lens,
                      unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        vring_fill(r, i, elems[i]->head, lens[i]);
    }
    vring_publish(r, n);
}

/* Has new_idx passed event since old (virtio's vring_need_event)? */
static bool vring_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
    return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

bool vring_should_notify(VRing *r)
{
    if (!r->event_idx) {
        return !(vring_avail_flags(r) & VRING_AVAIL_F_NO_INTERRUPT);
    }
    uint16_t old = r->signalled_used;
    bool valid = r->signalled_used_valid;
    r->signalled_used = r->used_idx;
    r->signalled_used_valid = true;
    return !valid || vring_need_event(vring_used_event(r), r->used_idx, old);
}

void vring_set_notification(VRing *r, bool enable)
{
    if (r->event_idx) {
        /* Without a kick wanted, avail_event just stays behind. */
        if (enable) {
            __atomic_store_n(vring_avail_event(r), vring_avail_idx(r), __ATOMIC_SEQ_CST);
        }
    } else {
        __atomic_store_n(&r->used_hdr[USED_FLAGS], enable ? 0 : VRING_USED_F_NO_NOTIFY,
                         __ATOMIC_SEQ_CST);
    }
}
