/*
 * The fast paths a region declares (exec/memory.h): its ioeventfds, which
 * dispatch signals itself where KVM does not, and its coalesced ranges.
 * Listeners (accel/kvm) put both into the kernel; every change goes
 * through memory_region_redeclare, so a listener sees each section of the
 * region deleted with the old declarations and added with the new.
 */
#include "memory-internal.h"

static bool eventfd_equal(const struct MemoryRegionEventfd *a,
                          const struct MemoryRegionEventfd *b)
{
    return a->offset == b->offset && a->size == b->size && a->match_data == b->match_data &&
           (!a->match_data || a->data == b->data) && a->notifier == b->notifier;
}

static void eventfds_free_rcu(struct rcu_head *head)
{
    memory_rcu_reclaim();
    g_free(caa_container_of(head, MemoryRegionEventfds, rcu));
}

typedef struct EventfdChange {
    struct MemoryRegionEventfd entry;
    bool add;
} EventfdChange;

/* A new array with the entry added or removed replaces the old one, which
 * dispatch may still be reading. */
static void eventfds_change(MemoryRegion *mr, void *opaque)
{
    const EventfdChange *change = opaque;
    MemoryRegionEventfds *old = atomic_load_explicit(&mr->eventfds, memory_order_relaxed);
    unsigned old_nr = old ? old->nr : 0;
    MemoryRegionEventfds *new = g_malloc0(sizeof(*new) + (old_nr + 1) * sizeof(new->entries[0]));
    for (unsigned i = 0; i < old_nr; i++) {
        if (change->add || !eventfd_equal(&old->entries[i], &change->entry)) {
            new->entries[new->nr++] = old->entries[i];
        }
    }
    if (change->add) {
        new->entries[new->nr++] = change->entry;
    }
    g_assert(change->add || new->nr == old_nr - 1);    /* del removes what add added */
    if (new->nr == 0) {
        g_free(new);
        new = NULL;
    }
    atomic_store_explicit(&mr->eventfds, new, memory_order_release);
    if (old) {
        memory_call_rcu(&old->rcu, eventfds_free_rcu);
    }
}

static void eventfd_update(MemoryRegion *mr, uint64_t offset, unsigned size, bool match_data,
                           uint64_t data, EventNotifier *e, bool add)
{
    g_assert(!mr->is_container && !mr->ram);    /* dispatch sees only its children */
    g_assert(size == 0 || size == 1 || size == 2 || size == 4 || size == 8);
    g_assert(offset < mr->size && size <= mr->size - offset);
    g_assert(!match_data || (size != 0 && (size == 8 || data >> (8 * size) == 0)));
    EventfdChange change = {
        .entry = { .offset = offset, .size = size, .match_data = match_data,
                   .data = match_data ? data : 0, .notifier = e },
        .add = add,
    };
    memory_region_redeclare(mr, eventfds_change, &change);
}

void memory_region_add_eventfd(MemoryRegion *mr, uint64_t offset, unsigned size,
                               bool match_data, uint64_t data, EventNotifier *e)
{
    eventfd_update(mr, offset, size, match_data, data, e, true);
}

void memory_region_del_eventfd(MemoryRegion *mr, uint64_t offset, unsigned size,
                               bool match_data, uint64_t data, EventNotifier *e)
{
    eventfd_update(mr, offset, size, match_data, data, e, false);
}

/* The calling thread's memory_eventfd_user_signals(): a thread-local
 * count, so a fallback that signals every doorbell in user space bounces
 * no cache line between vCPUs. */
static _Thread_local uint64_t eventfd_user_signals;

uint64_t memory_eventfd_user_signals(void)
{
    return eventfd_user_signals;
}

bool memory_region_eventfd_signal(MemoryRegion *mr, uint64_t offset, const uint8_t *buf,
                                  unsigned len)
{
    /* Most regions have none: skip the read section for them. */
    if (!atomic_load_explicit(&mr->eventfds, memory_order_relaxed)) {
        return false;
    }
    uint64_t value = 0;
    for (unsigned i = 0; i < len && i < 8; i++) {
        value |= (uint64_t)buf[i] << (8 * i);
    }
    bool hit = false;
    memory_rcu_read_lock();
    const MemoryRegionEventfds *fds = atomic_load_explicit(&mr->eventfds, memory_order_acquire);
    for (unsigned i = 0; fds && i < fds->nr && !hit; i++) {
        const struct MemoryRegionEventfd *e = &fds->entries[i];
        if (e->offset == offset && (e->size == len || e->size == 0) &&
            (!e->match_data || e->data == value)) {
            /* Inside the read section: a device may clean a notifier up
             * once a grace period has passed after deleting it. */
            event_notifier_set(e->notifier);
            eventfd_user_signals++;
            hit = true;
        }
    }
    memory_rcu_read_unlock();
    return hit;
}

/* For listeners, with the writer lock held: nothing changes under them. */
void memory_section_for_each_eventfd(const MemoryRegionSection *s, SectionEventfdFn *fn,
                                     void *opaque)
{
    const MemoryRegionEventfds *fds = atomic_load_explicit(&s->mr->eventfds,
                                                           memory_order_relaxed);
    for (unsigned i = 0; fds && i < fds->nr; i++) {
        const struct MemoryRegionEventfd *e = &fds->entries[i];
        unsigned span = e->size ? e->size : 1;
        if (e->offset >= s->offset && e->offset - s->offset <= s->size - span) {
            SectionEventfd found = {
                .addr = s->base + (e->offset - s->offset), .size = e->size,
                .match_data = e->match_data, .data = e->data, .notifier = e->notifier,
            };
            fn(&found, opaque);
        }
    }
}

void memory_section_for_each_coalesced(const MemoryRegionSection *s, SectionRangeFn *fn,
                                       void *opaque)
{
    const MemoryRegionCoalescing *c = s->mr->coalescing;
    for (unsigned i = 0; c && i < c->nr; i++) {
        /* The part of the range the section shows, in region offsets. */
        uint64_t start = MAX(c->ranges[i].offset, s->offset);
        uint64_t last = MIN(c->ranges[i].offset + (c->ranges[i].size - 1),
                            s->offset + (s->size - 1));
        if (start <= last) {
            fn(s->base + (start - s->offset), last - start + 1, opaque);
        }
    }
}

static void coalescing_add(MemoryRegion *mr, void *opaque)
{
    const struct MemoryRegionCoalescedRange *range = opaque;
    unsigned nr = mr->coalescing ? mr->coalescing->nr : 0;
    mr->coalescing = g_realloc(mr->coalescing, sizeof(*mr->coalescing) +
                               (nr + 1) * sizeof(mr->coalescing->ranges[0]));
    mr->coalescing->ranges[nr] = *range;
    mr->coalescing->nr = nr + 1;
}

void memory_region_add_coalescing(MemoryRegion *mr, uint64_t offset, uint64_t size)
{
    g_assert(size > 0 && offset < mr->size && size <= mr->size - offset && !mr->ram &&
             !mr->is_container);
    struct MemoryRegionCoalescedRange range = { .offset = offset, .size = size };
    memory_region_redeclare(mr, coalescing_add, &range);
}
