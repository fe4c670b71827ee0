/*
 * Memory listeners (softmmu/memory-listener.c): what a listener is told
 * when regions are mapped, moved and unmapped, in which order, and how
 * the fast paths a region declares follow its sections.
 */
#include <glib.h>
#include "exec/memory.h"

typedef struct RecordingListener {
    MemoryListener l;
    const char *name;
    GString *log;               /* "del pio@0x1000+0x800/0x0;" ... */
} RecordingListener;

static void record(RecordingListener *r, const char *what, const MemoryRegionSection *s)
{
    g_string_append_printf(r->log, "%s%s %s@0x%" G_GINT64_MODIFIER "x+0x%" G_GINT64_MODIFIER
                           "x/0x%" G_GINT64_MODIFIER "x;", r->name, what, s->mr->name,
                           s->base, s->size, s->offset);
}

static void recording_add(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    record((RecordingListener *)l, "add", s);
}

static void recording_del(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    record((RecordingListener *)l, "del", s);
}

static RecordingListener *recording_new(const char *name, GString *log)
{
    RecordingListener *r = g_new0(RecordingListener, 1);
    r->l = (MemoryListener) { .region_add = recording_add, .region_del = recording_del };
    r->name = name;
    r->log = log;
    return r;
}

/* The log since the last call. */
static char *take(GString *log)
{
    char *s = g_strdup(log->str);
    g_string_truncate(log, 0);
    return s;
}

static const MemoryRegionOps nop_ops = { .max_access_size = 4 };

/* Regions live as long as their device, which stays in the device list
 * for the program's life: they are kept here, where they stay reachable. */
static GPtrArray *regions;

static MemoryRegion *io_region(const char *name, uint64_t size)
{
    QEMUDevice *dev = g_new0(QEMUDevice, 1);
    device_init(dev, "test-device", "listened");
    MemoryRegion *mr = g_new0(MemoryRegion, 1);
    memory_region_init_io(mr, dev, &nop_ops, NULL, name, size);
    if (!regions) {
        regions = g_ptr_array_new();
    }
    g_ptr_array_add(regions, mr);
    return mr;
}

#define assert_log(log, expected) do {              \
        g_autofree char *got_ = take(log);          \
        g_assert_cmpstr(got_, ==, expected);        \
    } while (0)

static void test_add_del_and_order(void)
{
    AddressSpace *as = address_space_new("t");
    GString *log = g_string_new("");
    RecordingListener *r = recording_new("", log);
    memory_listener_register(&r->l, as);
    assert_log(log, "");

    MemoryRegion *big = io_region("big", 0x1000), *small = io_region("small", 0x100);
    address_space_map(as, big, 0x1000, 0);
    assert_log(log, "add big@0x1000+0x1000/0x0;");

    /* small splits big: the old section goes first, then the three new
     * ones in address order. */
    address_space_map(as, small, 0x1800, 1);
    assert_log(log, "del big@0x1000+0x1000/0x0;"
                    "add big@0x1000+0x800/0x0;add small@0x1800+0x100/0x0;"
                    "add big@0x1900+0x700/0x900;");

    /* Unchanged sections are not mentioned. */
    MemoryRegion *far = io_region("far", 0x10);
    address_space_map(as, far, 0x8000, 0);
    assert_log(log, "add far@0x8000+0x10/0x0;");

    address_space_unmap(as, small);
    assert_log(log, "del big@0x1000+0x800/0x0;del small@0x1800+0x100/0x0;"
                    "del big@0x1900+0x700/0x900;add big@0x1000+0x1000/0x0;");
    address_space_unmap(as, far);
    assert_log(log, "del far@0x8000+0x10/0x0;");

    memory_listener_unregister(&r->l, as);
    g_free(r);
    assert_log(log, "del big@0x1000+0x1000/0x0;");
    address_space_unmap(as, big);
    assert_log(log, "");
    address_space_free(as);
    g_string_free(log, TRUE);
}

/* A BAR move is one transaction: the listener sees one difference, the
 * old place deleted before the new one is added. */
static void test_move_in_a_transaction(void)
{
    AddressSpace *as = address_space_new("t");
    GString *log = g_string_new("");
    RecordingListener *r = recording_new("", log);
    MemoryRegion *bar = io_region("bar", 0x100), *other = io_region("other", 0x100);
    address_space_map(as, other, 0x100, 0);
    address_space_map(as, bar, 0x4000, 0);
    memory_listener_register(&r->l, as);
    /* Registering tells what is there already. */
    assert_log(log, "add other@0x100+0x100/0x0;add bar@0x4000+0x100/0x0;");

    address_space_begin(as);
    address_space_unmap(as, bar);
    address_space_map(as, bar, 0x200, 0);
    assert_log(log, "");
    address_space_commit(as);
    assert_log(log, "del bar@0x4000+0x100/0x0;add bar@0x200+0x100/0x0;");

    /* Moving it back and forth inside one transaction: nothing changed. */
    address_space_begin(as);
    address_space_unmap(as, bar);
    address_space_map(as, bar, 0x8000, 0);
    address_space_unmap(as, bar);
    address_space_map(as, bar, 0x200, 0);
    address_space_commit(as);
    assert_log(log, "");

    memory_listener_replay(&r->l, as);
    assert_log(log, "add other@0x100+0x100/0x0;add bar@0x200+0x100/0x0;");
    memory_listener_unregister(&r->l, as);
    g_free(r);
    address_space_free(as);
    g_string_free(log, TRUE);
}

/* Additions run the listeners in registration order, deletions in the
 * reverse; one listener may listen to two address spaces. */
static void test_listener_order_and_spaces(void)
{
    AddressSpace *a = address_space_new("a"), *b = address_space_new("b");
    GString *log = g_string_new("");
    RecordingListener *first = recording_new("1", log), *second = recording_new("2", log);
    memory_listener_register(&first->l, a);
    memory_listener_register(&second->l, a);
    memory_listener_register(&first->l, b);
    MemoryRegion *mr = io_region("r", 0x10);
    address_space_map(a, mr, 0, 0);
    assert_log(log, "1add r@0x0+0x10/0x0;2add r@0x0+0x10/0x0;");
    address_space_unmap(a, mr);
    assert_log(log, "2del r@0x0+0x10/0x0;1del r@0x0+0x10/0x0;");
    address_space_map(b, mr, 0x30, 0);
    assert_log(log, "1add r@0x30+0x10/0x0;");
    memory_listener_unregister(&first->l, b);
    address_space_unmap(b, mr);
    memory_listener_unregister(&second->l, a);
    memory_listener_unregister(&first->l, a);
    g_free(first);
    g_free(second);
    assert_log(log, "1del r@0x30+0x10/0x0;");
    address_space_free(a);
    address_space_free(b);
    g_string_free(log, TRUE);
}

/*
 * A fake kernel: the listener keeps the ioeventfds and coalesced zones it
 * would have registered, as "e@ADDR/SIZE" and "z@ADDR+SIZE" in a set, as
 * KVM's listeners do with ioctls.
 */
typedef struct FakeKernel {
    MemoryListener l;
    GHashTable *registered;
} FakeKernel;

static void fake_eventfd(const SectionEventfd *e, void *opaque)
{
    g_hash_table_add(opaque, g_strdup_printf("e@0x%" G_GINT64_MODIFIER "x/%u", e->addr,
                                             e->size));
}

static void fake_zone(uint64_t addr, uint64_t size, void *opaque)
{
    g_hash_table_add(opaque, g_strdup_printf("z@0x%" G_GINT64_MODIFIER "x+0x%"
                                             G_GINT64_MODIFIER "x", addr, size));
}

/* What KVM would be told for section s: its ioeventfds and zones. */
static GHashTable *fake_kernel_objects(const MemoryRegionSection *s)
{
    GHashTable *mine = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    memory_section_for_each_eventfd(s, fake_eventfd, mine);
    memory_section_for_each_coalesced(s, fake_zone, mine);
    return mine;
}

/* Register (add) or unregister section s's objects with the fake. */
static void fake_kernel_update(MemoryListener *l, const MemoryRegionSection *s, bool add)
{
    FakeKernel *k = (FakeKernel *)l;
    GHashTable *mine = fake_kernel_objects(s);
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, mine);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        if (add) {
            /* KVM refuses a duplicate: so does the fake. */
            g_assert_false(g_hash_table_contains(k->registered, key));
            g_hash_table_add(k->registered, g_strdup(key));
        } else {
            g_assert_true(g_hash_table_remove(k->registered, key));
        }
    }
    g_hash_table_destroy(mine);
}

static void fake_kernel_add(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    fake_kernel_update(l, s, true);
}

static void fake_kernel_del(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    fake_kernel_update(l, s, false);
}

/* The registered set, sorted, as one string. */
static char *fake_kernel_state(FakeKernel *k)
{
    GList *keys = g_list_sort(g_hash_table_get_keys(k->registered), (GCompareFunc)g_strcmp0);
    GString *s = g_string_new("");
    for (GList *i = keys; i; i = i->next) {
        g_string_append_printf(s, "%s;", (char *)i->data);
    }
    g_list_free(keys);
    return g_string_free(s, FALSE);
}

#define assert_kernel(k, expected) do {                 \
        g_autofree char *got_ = fake_kernel_state(k);   \
        g_assert_cmpstr(got_, ==, expected);            \
    } while (0)

/* A BAR's ioeventfd and coalesced zone follow it when it moves, go when
 * it is unmapped, and come back when it is mapped again; declarations
 * made while it is mapped reach the kernel at once. */
static void test_fast_paths_follow_the_region(void)
{
    memory_init();
    FakeKernel k = {
        .l = { .region_add = fake_kernel_add, .region_del = fake_kernel_del },
        .registered = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
    };
    memory_listener_register(&k.l, address_space_memory);
    MemoryRegion *bar = io_region("bar", 0x1000);
    EventNotifier doorbell;
    g_assert_true(event_notifier_init(&doorbell, NULL));
    memory_region_add_eventfd(bar, 0x40, 4, false, 0, &doorbell);
    assert_kernel(&k, "");      /* not mapped yet */

    address_space_map(address_space_memory, bar, 0xe0000000, -1);
    assert_kernel(&k, "e@0xe0000040/4;");
    memory_region_add_coalescing(bar, 0x60, 0x20);
    assert_kernel(&k, "e@0xe0000040/4;z@0xe0000060+0x20;");

    address_space_begin(address_space_memory);
    address_space_unmap(address_space_memory, bar);
    address_space_map(address_space_memory, bar, 0xe0100000, -1);
    address_space_commit(address_space_memory);
    assert_kernel(&k, "e@0xe0100040/4;z@0xe0100060+0x20;");

    /* Half the zone hidden by another region: only the visible half. */
    MemoryRegion *cover = io_region("cover", 0x10);
    address_space_map(address_space_memory, cover, 0xe0100070, 0);
    assert_kernel(&k, "e@0xe0100040/4;z@0xe0100060+0x10;");
    address_space_unmap(address_space_memory, cover);

    address_space_unmap(address_space_memory, bar);     /* disabled */
    assert_kernel(&k, "");
    address_space_map(address_space_memory, bar, 0xe0000000, -1);
    memory_region_del_eventfd(bar, 0x40, 4, false, 0, &doorbell);
    assert_kernel(&k, "z@0xe0000060+0x20;");
    memory_region_add_eventfd(bar, 0x44, 0, false, 0, &doorbell);
    assert_kernel(&k, "e@0xe0000044/0;z@0xe0000060+0x20;");

    address_space_unmap(address_space_memory, bar);
    memory_listener_unregister(&k.l, address_space_memory);
    g_hash_table_destroy(k.registered);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/memory-listener/add-del-order", test_add_del_and_order);
    g_test_add_func("/memory-listener/move-in-a-transaction", test_move_in_a_transaction);
    g_test_add_func("/memory-listener/listener-order-and-spaces",
                    test_listener_order_and_spaces);
    g_test_add_func("/memory-listener/fast-paths-follow-the-region",
                    test_fast_paths_follow_the_region);
    return g_test_run();
}
