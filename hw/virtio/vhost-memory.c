/*
 * vhost's view of guest RAM (hw/virtio/vhost-memory.h): a memory listener
 * that keeps the RAM sections of an address space and builds the kernel's
 * memory table from them.
 */
#include <stdlib.h>
#include "hw/virtio/vhost-memory.h"

static VhostMemory *memory_of(MemoryListener *l)
{
    return (VhostMemory *)((char *)l - offsetof(VhostMemory, listener));
}

static VhostMemoryRange range_of(const MemoryRegionSection *s)
{
    return (VhostMemoryRange) {
        .gpa = s->base, .size = s->size, .hva = (uintptr_t)(s->mr->ram + s->offset),
    };
}

/* The index of the first section at or above gpa. */
static guint section_index(const GArray *sections, uint64_t gpa)
{
    guint lo = 0, hi = sections->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        if (g_array_index(sections, VhostMemoryRange, mid).gpa < gpa) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static void vhost_memory_region_add(MemoryListener *l, AddressSpace *as,
                                    const MemoryRegionSection *s)
{
    if (!s->mr->ram) {
        return;
    }
    VhostMemory *m = memory_of(l);
    VhostMemoryRange r = range_of(s);
    pthread_mutex_lock(&m->lock);
    /* Sections of one view do not overlap, and a del precedes an add. */
    g_array_insert_val(m->sections, section_index(m->sections, r.gpa), r);
    m->dirty = true;
    pthread_mutex_unlock(&m->lock);
}

static void vhost_memory_region_del(MemoryListener *l, AddressSpace *as,
                                    const MemoryRegionSection *s)
{
    if (!s->mr->ram) {
        return;
    }
    VhostMemory *m = memory_of(l);
    VhostMemoryRange r = range_of(s);
    pthread_mutex_lock(&m->lock);
    guint i = section_index(m->sections, r.gpa);
    g_assert(i < m->sections->len &&
             g_array_index(m->sections, VhostMemoryRange, i).gpa == r.gpa &&
             g_array_index(m->sections, VhostMemoryRange, i).size == r.size);
    g_array_remove_index(m->sections, i);
    m->dirty = true;
    pthread_mutex_unlock(&m->lock);
}

/* Merged regions of the sorted sections; with m->lock held. */
static VhostUapiMemory *build_table(const GArray *sections)
{
    VhostUapiMemory *t = g_malloc0(sizeof(*t) + sections->len * sizeof(t->regions[0]));
    for (guint i = 0; i < sections->len; i++) {
        const VhostMemoryRange *r = &g_array_index(sections, VhostMemoryRange, i);
        VhostUapiMemoryRegion *last = t->nregions ? &t->regions[t->nregions - 1] : NULL;
        if (last && last->guest_phys_addr + last->memory_size == r->gpa &&
            last->userspace_addr + last->memory_size == r->hva) {
            last->memory_size += r->size;
            continue;
        }
        t->regions[t->nregions++] = (VhostUapiMemoryRegion) {
            .guest_phys_addr = r->gpa, .memory_size = r->size, .userspace_addr = r->hva,
        };
    }
    return t;
}

VhostUapiMemory *vhost_memory_table(VhostMemory *m)
{
    pthread_mutex_lock(&m->lock);
    VhostUapiMemory *t = build_table(m->sections);
    pthread_mutex_unlock(&m->lock);
    return t;
}

/* Commits of one address space are serialised by its writer lock, so
 * tables reach the kernel in the order the views were published. */
static void vhost_memory_commit(MemoryListener *l, AddressSpace *as)
{
    VhostMemory *m = memory_of(l);
    pthread_mutex_lock(&m->lock);
    VhostUapiMemory *t = m->dirty ? build_table(m->sections) : NULL;
    m->dirty = false;
    pthread_mutex_unlock(&m->lock);
    if (t) {
        m->changed(m->opaque, t);
        g_free(t);
    }
}

bool vhost_memory_translate(VhostMemory *m, uint64_t gpa, uint64_t len, uint64_t *hva)
{
    if (len == 0 || gpa + len < gpa) {
        return false;
    }
    g_autofree VhostUapiMemory *t = vhost_memory_table(m);
    for (uint32_t i = 0; i < t->nregions; i++) {
        const VhostUapiMemoryRegion *r = &t->regions[i];
        if (gpa >= r->guest_phys_addr && gpa - r->guest_phys_addr < r->memory_size &&
            len <= r->memory_size - (gpa - r->guest_phys_addr)) {
            *hva = r->userspace_addr + (gpa - r->guest_phys_addr);
            return true;
        }
    }
    return false;
}

void vhost_memory_init(VhostMemory *m, VhostMemoryChangedFn *changed, void *opaque)
{
    *m = (VhostMemory) {
        .listener = {
            .region_add = vhost_memory_region_add,
            .region_del = vhost_memory_region_del,
            .commit = vhost_memory_commit,
        },
        .sections = g_array_new(FALSE, FALSE, sizeof(VhostMemoryRange)),
        .dirty = true,          /* the first commit hands over even an empty table */
        .changed = changed,
        .opaque = opaque,
    };
    pthread_mutex_init(&m->lock, NULL);
}

void vhost_memory_listen(VhostMemory *m, AddressSpace *as)
{
    m->as = as;
    memory_listener_register(&m->listener, as);
}

void vhost_memory_destroy(VhostMemory *m)
{
    if (m->as) {
        /* Its commit hands the kernel an empty table: harmless, the owner
         * closes the fd next. */
        memory_listener_unregister(&m->listener, m->as);
        m->as = NULL;
    }
    g_array_free(m->sections, TRUE);
    pthread_mutex_destroy(&m->lock);
}
