/*
 * Memory regions, address spaces, flat views and dispatch (exec/memory.h).
 *
 * Writers (map/unmap, under the address space's mutex) rebuild an immutable
 * FlatView and publish it with an atomic release store; the old view is freed by
 * call_rcu once no reader can hold it. Readers (vCPU threads on every exit,
 * DMA from I/O threads) take only the RCU read side: a lookup never waits
 * for a writer, and a handler that remaps its own BAR cannot deadlock. The
 * writer never calls synchronize_rcu, so it is safe from inside a handler.
 * Containers are flattened when a view is built: a view holds only RAM and
 * I/O regions, so lookup and dispatch never walk a region tree.
 */
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include "qemu/log.h"
#include "memory-internal.h"

typedef struct Mapping {
    MemoryRegion *mr;
    uint64_t base;
    int priority;
    uint64_t seq;               /* later mappings win ties */
} Mapping;

AddressSpace *address_space_io;
AddressSpace *address_space_memory;
static atomic_uint_fast64_t dma_refused;

/* ---- RCU reader registration: automatic for any thread that dispatches ---- */

/*
 * ThreadSanitizer cannot see that a grace period orders every earlier read
 * section (and the call_rcu that queued the object) before the callback.
 * Tell it: readers leaving and writers queueing release a sync object, and
 * the reclaimer acquires it before freeing.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char rcu_grace_period;
#define rcu_tsan_reader_done() __tsan_release(&rcu_grace_period)
#define rcu_tsan_grace_period_over() __tsan_acquire(&rcu_grace_period)
#else
#define rcu_tsan_reader_done() do { } while (0)
#define rcu_tsan_grace_period_over() do { } while (0)
#endif

/* Every address space, in creation order, for memory_region_redeclare. */
static GPtrArray *address_spaces;
static pthread_mutex_t address_spaces_mutex = PTHREAD_MUTEX_INITIALIZER;

static pthread_key_t rcu_thread_key;
static pthread_once_t rcu_key_once = PTHREAD_ONCE_INIT;
static __thread bool rcu_thread_registered;

static void rcu_thread_exit(void *unused)
{
    urcu_memb_unregister_thread();
}

static void rcu_key_create(void)
{
    pthread_key_create(&rcu_thread_key, rcu_thread_exit);
}

void memory_rcu_read_lock(void)
{
    if (!rcu_thread_registered) {
        pthread_once(&rcu_key_once, rcu_key_create);
        urcu_memb_register_thread();
        /* Any non-NULL value makes the key's destructor run at thread exit. */
        pthread_setspecific(rcu_thread_key, &rcu_thread_registered);
        rcu_thread_registered = true;
    }
    urcu_memb_read_lock();
}

void memory_rcu_read_unlock(void)
{
    rcu_tsan_reader_done();
    urcu_memb_read_unlock();
}

void memory_call_rcu(struct rcu_head *head, void (*fn)(struct rcu_head *head))
{
    rcu_tsan_reader_done();     /* the writer, too, is done with the object */
    urcu_memb_call_rcu(head, fn);
}

void memory_rcu_reclaim(void)
{
    rcu_tsan_grace_period_over();
}

/* ---- regions ---- */

void memory_region_init_io(MemoryRegion *mr, QEMUDevice *owner,
                           const MemoryRegionOps *ops, void *opaque,
                           const char *name, uint64_t size)
{
    *mr = (MemoryRegion) {
        .name = name, .owner = owner, .ops = ops, .opaque = opaque, .size = size,
    };
}

void memory_region_init_ram(MemoryRegion *mr, const char *name, uint64_t size, uint8_t *host)
{
    *mr = (MemoryRegion) { .name = name, .size = size, .ram = host };
}

void memory_region_init_container(MemoryRegion *mr, QEMUDevice *owner, const char *name,
                                  uint64_t size)
{
    g_assert(size > 0);
    *mr = (MemoryRegion) { .name = name, .owner = owner, .size = size, .is_container = true };
}

/* ---- flat view construction ---- */

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A subregion may reach past the end of the space (its container clips
 * it), so the last byte saturates. */
static uint64_t mapping_last(const Mapping *m)
{
    uint64_t room = UINT64_MAX - m->base;
    return m->mr->size - 1 > room ? UINT64_MAX : m->base + (m->mr->size - 1);
}

/* The mapping visible at addr: highest priority, then most recent. */
static const Mapping *mapping_winner(GArray *mappings, uint64_t addr)
{
    const Mapping *best = NULL;
    for (guint i = 0; i < mappings->len; i++) {
        const Mapping *m = &g_array_index(mappings, Mapping, i);
        if (addr < m->base || addr > mapping_last(m)) {
            continue;
        }
        if (!best || m->priority > best->priority ||
            (m->priority == best->priority && m->seq > best->seq)) {
            best = m;
        }
    }
    return best;
}

/* Append a range, merged into the previous one when it continues it. */
static void flatview_append(GArray *ranges, uint64_t start, uint64_t last, MemoryRegion *mr,
                            uint64_t offset)
{
    FlatRange *prev = ranges->len ? &g_array_index(ranges, FlatRange, ranges->len - 1) : NULL;
    if (prev && prev->mr == mr && prev->last + 1 == start &&
        prev->offset + (start - prev->start) == offset) {
        prev->last = last;
        return;
    }
    FlatRange range = { .start = start, .last = last, .mr = mr, .offset = offset };
    g_array_append_val(ranges, range);
}

/* A container's children as mappings at their addresses, the newest with
 * the highest seq (the list is newest first). */
static GArray *container_mappings(const MemoryRegion *container, uint64_t base)
{
    GArray *children = g_array_new(FALSE, FALSE, sizeof(Mapping));
    uint64_t seq = UINT64_MAX;
    for (MemoryRegion *child = container->subregions; child; child = child->next_sibling) {
        /* A container that itself reaches past 2^64 may hold children
         * that start there: they are clipped away entirely. */
        if (child->container_offset <= UINT64_MAX - base) {
            Mapping m = { .mr = child, .base = base + child->container_offset,
                          .priority = child->container_priority, .seq = seq-- };
            g_array_append_val(children, m);
        }
    }
    return children;
}

/*
 * Append to ranges, in address order, what mappings show in [lo, hi].
 * Every place where the visible mapping may change starts an elementary
 * interval, whose winner is constant; a container that wins an interval
 * is rendered in it from its own children, so it is clipped to the
 * interval and its holes stay empty.
 */
static void flatview_render(GArray *mappings, uint64_t lo, uint64_t hi, GArray *ranges)
{
    GArray *starts = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    for (guint i = 0; i < mappings->len; i++) {
        const Mapping *m = &g_array_index(mappings, Mapping, i);
        uint64_t first = MAX(m->base, lo), last = MIN(mapping_last(m), hi);
        if (first > last) {
            continue;
        }
        g_array_append_val(starts, first);
        if (last != hi) {
            uint64_t after = last + 1;
            g_array_append_val(starts, after);
        }
    }
    g_array_sort(starts, compare_u64);

    for (guint i = 0; i < starts->len; i++) {
        uint64_t start = g_array_index(starts, uint64_t, i);
        if (i > 0 && start == g_array_index(starts, uint64_t, i - 1)) {
            continue;
        }
        uint64_t last = hi;
        for (guint j = i + 1; j < starts->len; j++) {
            if (g_array_index(starts, uint64_t, j) != start) {
                last = g_array_index(starts, uint64_t, j) - 1;
                break;
            }
        }
        const Mapping *w = mapping_winner(mappings, start);
        if (!w) {
            continue;
        }
        if (w->mr->is_container) {
            GArray *children = container_mappings(w->mr, w->base);
            flatview_render(children, start, last, ranges);
            g_array_free(children, TRUE);
        } else {
            flatview_append(ranges, start, last, w->mr, start - w->base);
        }
    }
    g_array_free(starts, TRUE);
}

static FlatView *flatview_build(GArray *mappings)
{
    GArray *ranges = g_array_new(FALSE, FALSE, sizeof(FlatRange));
    flatview_render(mappings, 0, UINT64_MAX, ranges);
    FlatView *view = g_malloc0(sizeof(FlatView) + ranges->len * sizeof(FlatRange));
    view->nr = ranges->len;
    if (view->nr) {             /* an empty GArray's data may be NULL */
        memcpy(view->ranges, ranges->data, view->nr * sizeof(FlatRange));
    }
    g_array_free(ranges, TRUE);
    return view;
}

static void flatview_free_rcu(struct rcu_head *head)
{
    memory_rcu_reclaim();
    g_free(caa_container_of(head, FlatView, rcu));
}

/* Its address tells this thread from the others. */
static _Thread_local char this_thread;

static bool in_own_transaction(AddressSpace *as)
{
    return atomic_load_explicit(&as->transaction_owner, memory_order_relaxed) == &this_thread;
}

void address_space_writer_enter(AddressSpace *as)
{
    if (!in_own_transaction(as)) {
        pthread_mutex_lock(&as->writer_lock);
    }
}

void address_space_writer_leave(AddressSpace *as)
{
    if (!in_own_transaction(as)) {
        pthread_mutex_unlock(&as->writer_lock);
    }
}

/* Called with writer_lock held. */
static void address_space_publish(AddressSpace *as)
{
    if (as->transaction_depth) {
        return;
    }
    FlatView *old = atomic_load_explicit(&as->view, memory_order_relaxed);
    FlatView *new = flatview_build(as->mappings);
    atomic_store_explicit(&as->view, new, memory_order_release);
    memory_listeners_publish(as, old, new);
    memory_call_rcu(&old->rcu, flatview_free_rcu);
}

AddressSpace *address_space_new(const char *name)
{
    AddressSpace *as = g_new0(AddressSpace, 1);
    as->name = name;
    pthread_mutex_init(&as->writer_lock, NULL);
    as->mappings = g_array_new(FALSE, FALSE, sizeof(Mapping));
    as->listeners = g_ptr_array_new();
    atomic_init(&as->view, flatview_build(as->mappings));
    pthread_mutex_lock(&address_spaces_mutex);
    if (!address_spaces) {
        address_spaces = g_ptr_array_new();
    }
    g_ptr_array_add(address_spaces, as);
    pthread_mutex_unlock(&address_spaces_mutex);
    return as;
}

void address_space_free(AddressSpace *as)
{
    pthread_mutex_lock(&address_spaces_mutex);
    g_ptr_array_remove(address_spaces, as);
    pthread_mutex_unlock(&address_spaces_mutex);
    g_assert(as->listeners->len == 0);
    g_ptr_array_free(as->listeners, TRUE);
    for (guint i = 0; i < as->mappings->len; i++) {
        g_array_index(as->mappings, Mapping, i).mr->mapped_in = NULL;
    }
    g_array_free(as->mappings, TRUE);
    g_free(atomic_load(&as->view));
    pthread_mutex_destroy(&as->writer_lock);
    g_free(as);
}

GPtrArray *address_spaces_lock(void)
{
    pthread_mutex_lock(&address_spaces_mutex);
    return address_spaces;
}

void address_spaces_unlock(void)
{
    pthread_mutex_unlock(&address_spaces_mutex);
}

void memory_init(void)
{
    if (!address_space_io) {
        address_space_io = address_space_new("io");
        address_space_memory = address_space_new("memory");
    }
}

void address_space_map(AddressSpace *as, MemoryRegion *mr, uint64_t base, int priority)
{
    g_assert(mr->size > 0 && base + (mr->size - 1) >= base);
    /* A subregion is mapped through its container; a region is mapped in
     * one space, which is where changes of its tree are published. */
    g_assert(!mr->container && (!mr->mapped_in || mr->mapped_in == as));
    address_space_writer_enter(as);
    Mapping m = { .mr = mr, .base = base, .priority = priority, .seq = as->next_seq++ };
    g_array_append_val(as->mappings, m);
    mr->mapped_in = as;
    address_space_publish(as);
    address_space_writer_leave(as);
}

void address_space_unmap(AddressSpace *as, MemoryRegion *mr)
{
    address_space_writer_enter(as);
    for (guint i = as->mappings->len; i-- > 0;) {
        if (g_array_index(as->mappings, Mapping, i).mr == mr) {
            g_array_remove_index(as->mappings, i);
            mr->mapped_in = NULL;
        }
    }
    address_space_publish(as);
    address_space_writer_leave(as);
}

void address_space_begin(AddressSpace *as)
{
    address_space_writer_enter(as);
    atomic_store_explicit(&as->transaction_owner, &this_thread, memory_order_relaxed);
    as->transaction_depth++;
}

void address_space_commit(AddressSpace *as)
{
    g_assert(in_own_transaction(as) && as->transaction_depth > 0);
    if (--as->transaction_depth == 0) {
        address_space_publish(as);
        atomic_store_explicit(&as->transaction_owner, NULL, memory_order_relaxed);
        pthread_mutex_unlock(&as->writer_lock);
    }
}

/* ---- containers ---- */

static MemoryRegion *memory_region_root(MemoryRegion *mr)
{
    while (mr->container) {
        mr = mr->container;
    }
    return mr;
}

/* Before changing mr's tree: the space the tree is mapped in, with its
 * writer lock taken, or NULL while no view shows the tree. */
static AddressSpace *tree_change_begin(MemoryRegion *mr)
{
    AddressSpace *as = memory_region_root(mr)->mapped_in;
    if (as) {
        address_space_writer_enter(as);
        /* The caller keeps the tree from moving between spaces meanwhile. */
        g_assert(memory_region_root(mr)->mapped_in == as);
    }
    return as;
}

static void tree_change_end(AddressSpace *as)
{
    if (as) {
        address_space_publish(as);
        address_space_writer_leave(as);
    }
}

void memory_region_add_subregion(MemoryRegion *container, uint64_t offset,
                                 MemoryRegion *child, int priority)
{
    g_assert(container->is_container && offset < container->size);
    g_assert(!child->container && !child->mapped_in && memory_region_root(container) != child);
    AddressSpace *as = tree_change_begin(container);
    child->container = container;
    child->container_offset = offset;
    child->container_priority = priority;
    child->next_sibling = container->subregions;
    container->subregions = child;
    tree_change_end(as);
}

void memory_region_del_subregion(MemoryRegion *container, MemoryRegion *child)
{
    g_assert(child->container == container);
    AddressSpace *as = tree_change_begin(container);
    MemoryRegion **link = &container->subregions;
    while (*link != child) {
        link = &(*link)->next_sibling;
    }
    *link = child->next_sibling;
    child->next_sibling = NULL;
    child->container = NULL;
    tree_change_end(as);
}

MemoryRegion *address_space_lookup_mapping(AddressSpace *as, uint64_t addr)
{
    address_space_writer_enter(as);
    const Mapping *winner = mapping_winner(as->mappings, addr);
    MemoryRegion *mr = winner ? winner->mr : NULL;
    address_space_writer_leave(as);
    return mr;
}

/* ---- lookup and dispatch ---- */

static const FlatRange *flatview_find(const FlatView *view, uint64_t addr)
{
    size_t lo = 0, hi = view->nr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const FlatRange *r = &view->ranges[mid];
        if (addr < r->start) {
            hi = mid;
        } else if (addr > r->last) {
            lo = mid + 1;
        } else {
            return r;
        }
    }
    return NULL;
}

/* A copy of what a lookup found, usable after the RCU read section: regions
 * outlive every view that maps them. */
typedef struct Hit {
    MemoryRegion *mr;           /* NULL: unassigned */
    uint64_t offset;
    uint64_t len;               /* bytes from addr that the hit covers */
} Hit;

static Hit lookup(AddressSpace *as, uint64_t addr, uint64_t len)
{
    Hit hit = { .len = len };
    memory_rcu_read_lock();
    const FlatView *view = atomic_load_explicit(&as->view, memory_order_acquire);
    const FlatRange *r = flatview_find(view, addr);
    if (r) {
        hit.mr = r->mr;
        hit.offset = r->offset + (addr - r->start);
        if (r->last - addr < len - 1) {
            hit.len = r->last - addr + 1;
        }
    } else {
        /* Unassigned up to the next range (views are sorted). */
        for (size_t i = 0; i < view->nr; i++) {
            if (view->ranges[i].start > addr) {
                if (view->ranges[i].start - addr < len) {
                    hit.len = view->ranges[i].start - addr;
                }
                break;
            }
        }
    }
    memory_rcu_read_unlock();
    return hit;
}

MemoryRegion *address_space_lookup(AddressSpace *as, uint64_t addr, uint64_t *offset)
{
    Hit hit = lookup(as, addr, 1);
    if (hit.mr && offset) {
        *offset = hit.offset;
    }
    return hit.mr;
}

/* Largest power of two <= min(len, max). */
static unsigned access_chunk(uint64_t len, unsigned max)
{
    unsigned chunk = max;
    while (chunk > len) {
        chunk >>= 1;
    }
    return chunk;
}

static bool dispatch_takes_lock(const MemoryRegionOps *ops)
{
    switch (ops->locking) {
    case REGION_LOCK_DEVICE:
        return true;
    case REGION_LOCK_FREE:
        return !device_lock_is_per_device();
    case REGION_LOCK_BY_HANDLER:
        return false;
    }
    g_assert_not_reached();
}

/* One access, split into the pieces the region takes; the caller holds
 * whatever lock the region's dispatch needs. */
static void io_access_locked(MemoryRegion *mr, uint64_t offset, uint8_t *buf, uint64_t len,
                             bool is_write)
{
    const MemoryRegionOps *ops = mr->ops;
    unsigned max = ops->max_access_size ? ops->max_access_size : 8;
    while (len > 0) {
        unsigned chunk = access_chunk(len, max);
        uint64_t value = 0;
        if (is_write) {
            for (unsigned i = 0; i < chunk; i++) {
                value |= (uint64_t)buf[i] << (8 * i);
            }
            if (ops->write) {
                ops->write(mr->opaque, offset, value, chunk);
            }
        } else {
            value = ops->read ? ops->read(mr->opaque, offset, chunk) : UINT64_MAX;
            for (unsigned i = 0; i < chunk; i++) {
                buf[i] = value >> (8 * i);
            }
        }
        buf += chunk;
        offset += chunk;
        len -= chunk;
    }
}

/* count accesses of len bytes at the same offset, buf advancing by len:
 * the device lock is taken once for all of them. Writes KVM held back in
 * its coalesced ring come first, so nothing overtakes them; a write an
 * ioeventfd matches signals it instead of reaching the device (KVM did
 * not, or the access would not be here). */
static void io_access(MemoryRegion *mr, uint64_t offset, uint8_t *buf, uint64_t len,
                      uint32_t count, bool is_write)
{
    memory_coalesced_drain();
    bool locked = dispatch_takes_lock(mr->ops);
    if (locked) {
        device_lock(mr->owner);
    }
    for (uint32_t i = 0; i < count; i++, buf += len) {
        if (is_write && memory_region_eventfd_signal(mr, offset, buf, len)) {
            continue;
        }
        io_access_locked(mr, offset, buf, len, is_write);
    }
    if (locked) {
        device_unlock(mr->owner);
    }
}

static MemTxResult address_space_rw(AddressSpace *as, uint64_t addr, uint8_t *buf,
                                    uint64_t len, bool is_write)
{
    MemTxResult result = MEMTX_OK;
    while (len > 0) {
        Hit hit = lookup(as, addr, len);
        if (!hit.mr) {
            qemu_log_mask(LOG_UNIMP, "%s: unassigned %s of %" PRIu64 " bytes at 0x%" PRIx64 "\n",
                          as->name, is_write ? "write" : "read", hit.len, addr);
            if (!is_write) {
                memset(buf, 0xff, hit.len);
            }
            result = MEMTX_UNASSIGNED;
        } else if (hit.mr->ram) {
            if (is_write) {
                memcpy(hit.mr->ram + hit.offset, buf, hit.len);
            } else {
                memcpy(buf, hit.mr->ram + hit.offset, hit.len);
            }
        } else {
            io_access(hit.mr, hit.offset, buf, hit.len, 1, is_write);
        }
        buf += hit.len;
        addr += hit.len;
        len -= hit.len;
    }
    return result;
}

MemTxResult address_space_read(AddressSpace *as, uint64_t addr, void *buf, uint64_t len)
{
    return address_space_rw(as, addr, buf, len, false);
}

MemTxResult address_space_write(AddressSpace *as, uint64_t addr, const void *buf, uint64_t len)
{
    /* The write path never modifies buf; the shared helper takes it mutable. */
    return address_space_rw(as, addr, (uint8_t *)buf, len, true);
}

MemTxResult address_space_rw_repeated(AddressSpace *as, uint64_t addr, void *buf,
                                      unsigned size, uint32_t count, bool is_write)
{
    Hit hit = lookup(as, addr, size);
    if (hit.mr && !hit.mr->ram && hit.len == size) {
        io_access(hit.mr, hit.offset, buf, size, count, is_write);
        return MEMTX_OK;
    }
    MemTxResult result = MEMTX_OK;
    uint8_t *element = buf;
    for (uint32_t i = 0; i < count; i++, element += size) {
        result |= address_space_rw(as, addr, element, size, is_write);
    }
    return result;
}

/* ---- DMA: RAM only ---- */

/* Walk [addr, addr + len) through RAM ranges of view; with copy, move the
 * bytes too. False if any byte is not RAM. */
static bool dma_walk(const FlatView *view, uint64_t addr, uint8_t *buf, uint64_t len,
                     bool is_write, bool copy)
{
    while (len > 0) {
        const FlatRange *r = flatview_find(view, addr);
        if (!r || !r->mr->ram) {
            return false;
        }
        uint64_t chunk = r->last - addr < len - 1 ? r->last - addr + 1 : len;
        uint8_t *host = r->mr->ram + r->offset + (addr - r->start);
        if (copy && is_write) {
            memcpy(host, buf, chunk);
        } else if (copy) {
            memcpy(buf, host, chunk);
        }
        buf += chunk;
        addr += chunk;
        len -= chunk;
    }
    return true;
}

static bool dma_rw(uint64_t addr, uint8_t *buf, uint64_t len, bool is_write)
{
    memory_rcu_read_lock();
    const FlatView *view = atomic_load_explicit(&address_space_memory->view, memory_order_acquire);
    /* Check first, so that a refused transfer changes nothing. */
    bool ok = dma_walk(view, addr, buf, len, is_write, false) &&
              dma_walk(view, addr, buf, len, is_write, true);
    memory_rcu_read_unlock();
    if (!ok) {
        dma_count_refused();
        qemu_log_mask(LOG_GUEST_ERROR, "DMA %s of %" PRIu64 " bytes at 0x%" PRIx64
                      " refused: not all guest RAM\n", is_write ? "write" : "read", len, addr);
    }
    return ok;
}

bool dma_memory_read(uint64_t addr, void *buf, uint64_t len)
{
    return dma_rw(addr, buf, len, false);
}

bool dma_memory_write(uint64_t addr, const void *buf, uint64_t len)
{
    return dma_rw(addr, (uint8_t *)buf, len, true);
}

void *dma_memory_map(uint64_t addr, uint64_t len)
{
    uint64_t in_range = len;
    void *host = len ? dma_memory_translate(addr, &in_range) : NULL;
    return in_range == len ? host : NULL;
}

void *dma_memory_translate(uint64_t addr, uint64_t *len)
{
    g_assert(*len > 0);
    Hit hit = lookup(address_space_memory, addr, *len);
    if (!hit.mr || !hit.mr->ram) {
        return NULL;
    }
    *len = hit.len;
    return hit.mr->ram + hit.offset;
}

void dma_count_refused(void)
{
    atomic_fetch_add_explicit(&dma_refused, 1, memory_order_relaxed);
}

uint64_t dma_refused_count(void)
{
    return atomic_load(&dma_refused);
}
