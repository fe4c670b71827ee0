/*
 * Memory listeners (exec/memory.h): each published view change is told to
 * an address space's listeners as the sections that went away and the
 * sections that appeared.
 */
#include "memory-internal.h"

static MemoryRegionSection section_of(const FlatRange *r)
{
    return (MemoryRegionSection) {
        .mr = r->mr, .base = r->start, .size = r->last - r->start + 1, .offset = r->offset,
    };
}

static bool flat_range_equal(const FlatRange *a, const FlatRange *b)
{
    return a->start == b->start && a->last == b->last && a->mr == b->mr &&
           a->offset == b->offset;
}

/* Deletions run listeners last-registered first, additions first-registered
 * first, so that a listener built on another's mirror finds it in place. */
static void notify_del(AddressSpace *as, const FlatRange *r)
{
    MemoryRegionSection s = section_of(r);
    for (guint i = as->listeners->len; i-- > 0;) {
        MemoryListener *l = g_ptr_array_index(as->listeners, i);
        l->region_del(l, as, &s);
    }
}

static void notify_add(AddressSpace *as, const FlatRange *r)
{
    MemoryRegionSection s = section_of(r);
    for (guint i = 0; i < as->listeners->len; i++) {
        MemoryListener *l = g_ptr_array_index(as->listeners, i);
        l->region_add(l, as, &s);
    }
}

static void notify_commit(AddressSpace *as)
{
    for (guint i = 0; i < as->listeners->len; i++) {
        MemoryListener *l = g_ptr_array_index(as->listeners, i);
        if (l->commit) {
            l->commit(l, as);
        }
    }
}

/*
 * Both views are sorted and their ranges do not overlap. Walking them
 * side by side, a range present in both is skipped; otherwise the one that
 * starts first (the old one on a tie) cannot be in the other view, whose
 * ranges still to come start later and whose ranges already passed started
 * earlier: it is a deletion (old) or an addition (new).
 */
void memory_listeners_publish(AddressSpace *as, const FlatView *old, const FlatView *new)
{
    if (as->listeners->len == 0) {
        return;
    }
    size_t old_nr = old ? old->nr : 0;
    GPtrArray *added = g_ptr_array_new();
    size_t i = 0, j = 0;
    while (i < old_nr || j < new->nr) {
        const FlatRange *o = i < old_nr ? &old->ranges[i] : NULL;
        const FlatRange *n = j < new->nr ? &new->ranges[j] : NULL;
        if (o && n && flat_range_equal(o, n)) {
            i++;
            j++;
        } else if (o && (!n || o->start <= n->start)) {
            notify_del(as, o);
            i++;
        } else {
            g_ptr_array_add(added, (gpointer)n);
            j++;
        }
    }
    for (guint k = 0; k < added->len; k++) {
        notify_add(as, g_ptr_array_index(added, k));
    }
    g_ptr_array_free(added, TRUE);
    notify_commit(as);
}

/* Call fn for every section of as's current view, then l's commit
 * (writer lock held). */
static void for_each_section(AddressSpace *as, MemoryListener *l,
                             void (*fn)(MemoryListener *l, AddressSpace *as,
                                        const MemoryRegionSection *s))
{
    const FlatView *view = atomic_load_explicit(&as->view, memory_order_relaxed);
    for (size_t i = 0; i < view->nr; i++) {
        MemoryRegionSection s = section_of(&view->ranges[i]);
        fn(l, as, &s);
    }
    if (l->commit) {
        l->commit(l, as);
    }
}

void memory_listener_register(MemoryListener *l, AddressSpace *as)
{
    address_space_writer_enter(as);
    g_ptr_array_add(as->listeners, l);
    for_each_section(as, l, l->region_add);
    address_space_writer_leave(as);
}

void memory_listener_unregister(MemoryListener *l, AddressSpace *as)
{
    address_space_writer_enter(as);
    for_each_section(as, l, l->region_del);
    g_assert(g_ptr_array_remove(as->listeners, l));
    address_space_writer_leave(as);
}

void memory_listener_replay(MemoryListener *l, AddressSpace *as)
{
    address_space_writer_enter(as);
    for_each_section(as, l, l->region_add);
    address_space_writer_leave(as);
}

/* Every range of as's current view that shows mr, told to the listeners. */
static void notify_region(AddressSpace *as, MemoryRegion *mr,
                          void (*notify)(AddressSpace *as, const FlatRange *r))
{
    const FlatView *view = atomic_load_explicit(&as->view, memory_order_relaxed);
    for (size_t i = 0; i < view->nr; i++) {
        if (view->ranges[i].mr == mr) {
            notify(as, &view->ranges[i]);
        }
    }
}

void memory_region_redeclare(MemoryRegion *mr, void (*change)(MemoryRegion *mr, void *opaque),
                             void *opaque)
{
    GPtrArray *spaces = address_spaces_lock();
    for (guint i = 0; spaces && i < spaces->len; i++) {
        address_space_writer_enter(g_ptr_array_index(spaces, i));
    }
    for (guint i = 0; spaces && i < spaces->len; i++) {
        notify_region(g_ptr_array_index(spaces, i), mr, notify_del);
    }
    change(mr, opaque);
    for (guint i = 0; spaces && i < spaces->len; i++) {
        notify_region(g_ptr_array_index(spaces, i), mr, notify_add);
        notify_commit(g_ptr_array_index(spaces, i));
    }
    for (guint i = spaces ? spaces->len : 0; i-- > 0;) {
        address_space_writer_leave(g_ptr_array_index(spaces, i));
    }
    address_spaces_unlock();
}
