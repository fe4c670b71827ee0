/* Flat views, containers, dispatch, lock modes and DMA of softmmu/memory.c
 * and softmmu/dma-helpers.c. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <glib.h>
#include "exec/memory.h"
#include "sysemu/dma.h"

typedef struct TestDev {
    QEMUDevice dev;
    MemoryRegion mr;
    uint64_t last_offset, last_value;
    unsigned last_size, writes, reads;
    uint8_t id;
} TestDev;

static uint64_t testdev_read(void *opaque, uint64_t offset, unsigned size)
{
    TestDev *t = opaque;
    t->reads++;
    t->last_offset = offset;
    t->last_size = size;
    return 0x1122334455667788ULL >> (8 * (8 - size)) ^ t->id;
}

static void testdev_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    TestDev *t = opaque;
    t->writes++;
    t->last_offset = offset;
    t->last_value = value;
    t->last_size = size;
}

static const MemoryRegionOps testdev_ops = {
    .read = testdev_read, .write = testdev_write, .max_access_size = 4,
};

static TestDev *testdev_new(uint8_t id, uint64_t size)
{
    TestDev *t = g_new0(TestDev, 1);
    t->id = id;
    device_init(&t->dev, "test-device", "testdev");
    memory_region_init_io(&t->mr, &t->dev, &testdev_ops, t, "testdev", size);
    return t;
}

static void test_overlap_priority(void)
{
    AddressSpace *as = address_space_new("t");
    uint8_t *ram = g_malloc0(0x10000);
    MemoryRegion ram_mr;
    memory_region_init_ram(&ram_mr, "ram", 0x10000, ram);
    TestDev *hi = testdev_new(1, 0x1000), *tie = testdev_new(2, 0x100);
    uint64_t off;

    address_space_map(as, &ram_mr, 0, 0);
    address_space_map(as, &hi->mr, 0x8000, 1);
    g_assert(address_space_lookup(as, 0x7fff, &off) == &ram_mr && off == 0x7fff);
    g_assert(address_space_lookup(as, 0x8000, &off) == &hi->mr && off == 0);
    g_assert(address_space_lookup(as, 0x8fff, &off) == &hi->mr && off == 0xfff);
    g_assert(address_space_lookup(as, 0x9000, &off) == &ram_mr && off == 0x9000);
    g_assert(address_space_lookup(as, 0x10000, &off) == NULL);

    /* Equal priority: the later mapping wins, but a higher one still wins. */
    address_space_map(as, &tie->mr, 0x8080, 1);
    g_assert(address_space_lookup(as, 0x8080, &off) == &tie->mr && off == 0);
    g_assert(address_space_lookup(as, 0x8180, &off) == &hi->mr && off == 0x180);
    address_space_unmap(as, &hi->mr);
    g_assert(address_space_lookup(as, 0x8000, &off) == &ram_mr && off == 0x8000);
    g_assert(address_space_lookup(as, 0x80ff, &off) == &tie->mr && off == 0x7f);

    /* A region reaching the very top of the space. */
    TestDev *top = testdev_new(3, 0x1000);
    address_space_map(as, &top->mr, UINT64_MAX - 0xfff, 0);
    g_assert(address_space_lookup(as, UINT64_MAX, &off) == &top->mr && off == 0xfff);
    address_space_free(as);
    g_free(ram);
}

static void test_dispatch_and_split(void)
{
    AddressSpace *as = address_space_new("t");
    TestDev *a = testdev_new(0x10, 0x10), *b = testdev_new(0x20, 0x10);
    address_space_map(as, &a->mr, 0x100, 0);
    address_space_map(as, &b->mr, 0x200, 0);

    uint32_t v32 = 0xdeadbeef;
    g_assert_cmpint(address_space_write(as, 0x204, &v32, 4), ==, MEMTX_OK);
    g_assert_cmpuint(b->writes, ==, 1);
    g_assert_cmpuint(a->writes, ==, 0);
    g_assert_cmphex(b->last_value, ==, 0xdeadbeef);
    g_assert_cmpuint(b->last_offset, ==, 4);

    /* 8 bytes into a region that takes at most 4: two little-endian halves. */
    uint64_t v64 = 0x0102030405060708ULL;
    address_space_write(as, 0x108, &v64, 8);
    g_assert_cmpuint(a->writes, ==, 2);
    g_assert_cmphex(a->last_value, ==, 0x01020304);
    g_assert_cmpuint(a->last_offset, ==, 0xc);

    uint16_t v16 = 0;
    address_space_read(as, 0x102, &v16, 2);
    g_assert_cmphex(v16, ==, 0x1122 ^ 0x10);
    g_assert_cmpuint(a->last_size, ==, 2);
    address_space_free(as);
}

/* rep outsw/insw at one port: every element reaches the device in order,
 * under one acquisition of its lock; an unassigned port reads all ones. */
static void test_string_pio_takes_the_lock_once(void)
{
    AddressSpace *as = address_space_new("io");
    TestDev *t = testdev_new(7, 8);
    address_space_map(as, &t->mr, 0x1f0, 0);
    uint16_t sector[256];
    for (unsigned i = 0; i < 256; i++) {
        sector[i] = 0x1000 + i;
    }
    uint64_t acquired = atomic_load(&t->dev.lock.acquisitions);
    g_assert_cmpint(address_space_rw_repeated(as, 0x1f0, sector, 2, 256, true), ==, MEMTX_OK);
    g_assert_cmpuint(atomic_load(&t->dev.lock.acquisitions), ==, acquired + 1);
    g_assert_cmpuint(t->writes, ==, 256);
    g_assert_cmphex(t->last_value, ==, 0x10ff);
    g_assert_cmpuint(t->last_offset, ==, 0);

    memset(sector, 0, sizeof(sector));
    address_space_rw_repeated(as, 0x1f2, sector, 2, 256, false);
    g_assert_cmpuint(atomic_load(&t->dev.lock.acquisitions), ==, acquired + 2);
    g_assert_cmpuint(t->reads, ==, 256);
    g_assert_cmphex(sector[255], ==, 0x1122 ^ 7);

    uint8_t bytes[4] = { 0 };
    g_assert_cmpint(address_space_rw_repeated(as, 0x80, bytes, 1, 4, false), ==,
                    MEMTX_UNASSIGNED);
    g_assert_cmphex(bytes[3], ==, 0xff);
    address_space_free(as);
}

static void test_unassigned(void)
{
    AddressSpace *as = address_space_new("t");
    TestDev *a = testdev_new(0x30, 0x2);
    address_space_map(as, &a->mr, 0x10, 0);
    uint32_t v = 0;
    g_assert_cmpint(address_space_read(as, 0x80, &v, 4), ==, MEMTX_UNASSIGNED);
    g_assert_cmphex(v, ==, 0xffffffff);
    /* Half hits the device, half is unassigned (reads as ones). */
    g_assert_cmpint(address_space_read(as, 0x10, &v, 4), ==, MEMTX_UNASSIGNED);
    g_assert_cmphex(v, ==, 0xffff0000 | (0x1122 ^ 0x30));
    g_assert_cmpint(address_space_write(as, 0x80, &v, 4), ==, MEMTX_UNASSIGNED);
    g_assert_cmpuint(a->writes, ==, 0);
    address_space_free(as);
}

static void test_lock_mode_statistics(void)
{
    AddressSpace *as = address_space_new("t");
    TestDev *a = testdev_new(0x40, 0x4);
    address_space_map(as, &a->mr, 0, 0);
    uint8_t byte;

    uint64_t own0 = atomic_load(&a->dev.lock.acquisitions);
    uint64_t global0 = atomic_load(&device_global_lock()->acquisitions);
    address_space_read(as, 0, &byte, 1);
    g_assert_cmpuint(atomic_load(&a->dev.lock.acquisitions), ==, own0 + 1);
    g_assert_cmpuint(atomic_load(&device_global_lock()->acquisitions), ==, global0);

    device_lock_set_per_device(false);
    address_space_read(as, 0, &byte, 1);
    address_space_read(as, 0, &byte, 1);
    g_assert_cmpuint(atomic_load(&a->dev.lock.acquisitions), ==, own0 + 1);
    g_assert_cmpuint(atomic_load(&device_global_lock()->acquisitions), ==, global0 + 2);
    device_lock_set_per_device(true);
    address_space_free(as);
}

/*
 * The lock statistics add no shared write of their own (docs/locking.md,
 * "Statistics"): the counters follow the mutex inside 64 bytes, so in a
 * lock aligned to a cache line (the global one) they share the mutex's
 * line, which its holder owns already; what the readers write (the reset
 * values) is outside it; and a reading, with reset or not, writes nothing
 * into the counters (only lock holders do).
 */
static void test_lock_counters_beside_the_mutex(void)
{
    g_assert_cmpuint(offsetof(DeviceLock, mutex), ==, 0);
    g_assert_cmpuint(offsetof(DeviceLock, acquisitions), ==, sizeof(pthread_mutex_t));
    g_assert_cmpuint(offsetof(DeviceLock, wait_ns) + sizeof(atomic_uint_fast64_t), <=, 64);
    g_assert_cmpuint(offsetof(DeviceLock, reset_acquisitions), >=, 64);
    DeviceLock *global = device_global_lock();
    g_assert_cmpuint((uintptr_t)global % 64, ==, 0);

    TestDev *a = testdev_new(0x50, 0x4);
    uint64_t raw = atomic_load(&a->dev.lock.acquisitions);
    for (unsigned i = 0; i < 3; i++) {
        device_lock(&a->dev);
        device_unlock(&a->dev);
    }
    g_assert_cmpuint(device_lock_stats_read(&a->dev.lock, true).acquisitions, ==, raw + 3);
    g_assert_cmpuint(atomic_load(&a->dev.lock.acquisitions), ==, raw + 3);
    device_lock(&a->dev);
    device_unlock(&a->dev);
    g_assert_cmpuint(device_lock_stats_read(&a->dev.lock, false).acquisitions, ==, 1);
    g_assert_cmpuint(device_lock_stats_read(&a->dev.lock, true).acquisitions, ==, 1);
    g_assert_cmpuint(device_lock_stats_read(&a->dev.lock, false).acquisitions, ==, 0);
    g_assert_cmpuint(atomic_load(&a->dev.lock.acquisitions), ==, raw + 4);
}

/* REGION_LOCK_FREE skips the lock only with per-device locks: under the
 * global lock it is serialised like every device, as under a big lock.
 * REGION_LOCK_BY_HANDLER is never locked by dispatch. */
static void test_region_locking_kinds(void)
{
    static const MemoryRegionOps free_ops = {
        .read = testdev_read, .write = testdev_write, .locking = REGION_LOCK_FREE,
    };
    static const MemoryRegionOps by_handler_ops = {
        .read = testdev_read, .write = testdev_write, .locking = REGION_LOCK_BY_HANDLER,
    };
    AddressSpace *as = address_space_new("t");
    TestDev *lock_free = testdev_new(1, 4), *by_handler = testdev_new(2, 4);
    memory_region_init_io(&lock_free->mr, &lock_free->dev, &free_ops, lock_free, "free", 4);
    memory_region_init_io(&by_handler->mr, &by_handler->dev, &by_handler_ops, by_handler,
                          "by-handler", 4);
    address_space_map(as, &lock_free->mr, 0, 0);
    address_space_map(as, &by_handler->mr, 4, 0);
    DeviceLock *global = device_global_lock();
    uint8_t byte;

    uint64_t global0 = atomic_load(&global->acquisitions);
    /* Dispatch to a lock-free region writes no shared memory: not its
     * region, not its device's lock (vCPUs reading the PM timer at once
     * would bounce that cache line between them). */
    MemoryRegion region_before = lock_free->mr;
    DeviceLock lock_before = lock_free->dev.lock;
    address_space_read(as, 0, &byte, 1);
    g_assert_cmpmem(&region_before, sizeof(region_before), &lock_free->mr, sizeof(lock_free->mr));
    g_assert_cmpmem(&lock_before, sizeof(lock_before), &lock_free->dev.lock,
                    sizeof(lock_free->dev.lock));
    address_space_read(as, 4, &byte, 1);
    g_assert_cmpuint(atomic_load(&lock_free->dev.lock.acquisitions), ==, 0);
    g_assert_cmpuint(atomic_load(&by_handler->dev.lock.acquisitions), ==, 0);
    g_assert_cmpuint(atomic_load(&global->acquisitions), ==, global0);

    device_lock_set_per_device(false);
    address_space_read(as, 0, &byte, 1);
    g_assert_cmpuint(atomic_load(&global->acquisitions), ==, global0 + 1);
    address_space_read(as, 4, &byte, 1);
    g_assert_cmpuint(atomic_load(&global->acquisitions), ==, global0 + 1);
    device_lock_set_per_device(true);
    g_assert_cmpuint(lock_free->reads, ==, 2);
    g_assert_cmpuint(by_handler->reads, ==, 2);
    address_space_free(as);
}

/* Two devices whose handlers each wait for the other to be inside its own
 * handler: only possible when the two are not serialised by one lock. */
typedef struct Rendezvous {
    pthread_mutex_t mutex;      /* not GMutex: ThreadSanitizer sees pthreads */
    pthread_cond_t cond;
    int inside;     /* handlers running right now */
    bool met;       /* two were inside at once */
} Rendezvous;

static Rendezvous rendezvous = {
    .mutex = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
};

static uint64_t rendezvous_read(void *opaque, uint64_t offset, unsigned size)
{
    Rendezvous *r = &rendezvous;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 300 * 1000 * 1000;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->mutex);
    r->inside++;
    pthread_cond_broadcast(&r->cond);
    while (r->inside < 2 && pthread_cond_timedwait(&r->cond, &r->mutex, &deadline) == 0) {
    }
    if (r->inside >= 2) {
        r->met = true;
    }
    r->inside--;
    pthread_mutex_unlock(&r->mutex);
    return 0;
}

static const MemoryRegionOps rendezvous_ops = { .read = rendezvous_read };

static gpointer read_one(gpointer addr_ptr)
{
    uint8_t byte;
    address_space_read(address_space_io, GPOINTER_TO_UINT(addr_ptr), &byte, 1);
    return NULL;
}

static bool two_devices_meet(void)
{
    pthread_mutex_lock(&rendezvous.mutex);
    rendezvous.inside = 0;
    rendezvous.met = false;
    pthread_mutex_unlock(&rendezvous.mutex);
    GThread *t1 = g_thread_new("vcpu0", read_one, GUINT_TO_POINTER(0x1000));
    GThread *t2 = g_thread_new("vcpu1", read_one, GUINT_TO_POINTER(0x1001));
    g_thread_join(t1);
    g_thread_join(t2);
    pthread_mutex_lock(&rendezvous.mutex);
    bool met = rendezvous.met;
    pthread_mutex_unlock(&rendezvous.mutex);
    return met;
}

static void test_devices_run_concurrently(void)
{
    static QEMUDevice d1, d2;
    static MemoryRegion m1, m2;
    memory_init();
    device_init(&d1, "rendezvous", "rv");
    device_init(&d2, "rendezvous", "rv");
    memory_region_init_io(&m1, &d1, &rendezvous_ops, NULL, "rv1", 1);
    memory_region_init_io(&m2, &d2, &rendezvous_ops, NULL, "rv2", 1);
    address_space_map(address_space_io, &m1, 0x1000, 0);
    address_space_map(address_space_io, &m2, 0x1001, 0);

    g_assert_true(two_devices_meet());          /* device-lock=on */
    device_lock_set_per_device(false);
    g_assert_false(two_devices_meet());         /* device-lock=off */
    g_assert_cmpuint(atomic_load(&device_global_lock()->contended), >=, 1);
    device_lock_set_per_device(true);
    address_space_unmap(address_space_io, &m1);
    address_space_unmap(address_space_io, &m2);
}

/* A handler that moves its own region (a BAR reprogrammed from inside the
 * device's register write) must not deadlock. */
static AddressSpace *moving_as;
static MemoryRegion moving_mr;

static void moving_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    address_space_begin(moving_as);
    address_space_unmap(moving_as, &moving_mr);
    address_space_map(moving_as, &moving_mr, value, 0);
    address_space_commit(moving_as);
}

static const MemoryRegionOps moving_ops = { .write = moving_write };

static void test_remap_from_handler(void)
{
    static QEMUDevice dev;
    device_init(&dev, "mover", "mover");
    moving_as = address_space_new("t");
    memory_region_init_io(&moving_mr, &dev, &moving_ops, NULL, "mover", 0x10);
    address_space_map(moving_as, &moving_mr, 0x100, 0);
    uint32_t target = 0x400;
    address_space_write(moving_as, 0x100, &target, 4);
    g_assert_null(address_space_lookup(moving_as, 0x100, NULL));
    g_assert(address_space_lookup(moving_as, 0x400, NULL) == &moving_mr);
    address_space_free(moving_as);
}

/* Readers never see a half-built map: a writer that unmaps and maps a
 * region back at the same place inside one transaction, over and over,
 * must never make it disappear for a concurrent reader. */
static atomic_bool stop_readers;

static gpointer lookup_loop(gpointer as_ptr)
{
    AddressSpace *as = as_ptr;
    unsigned misses = 0, lookups = 0;
    while (!stop_readers || lookups < 1000) {
        misses += address_space_lookup(as, 0x1008, NULL) == NULL;
        lookups++;
    }
    return GUINT_TO_POINTER(misses);
}

static void test_concurrent_readers_see_whole_views(void)
{
    static QEMUDevice dev;
    static MemoryRegion mr, other;
    device_init(&dev, "mover", "mover");
    AddressSpace *as = address_space_new("t");
    memory_region_init_io(&mr, &dev, &testdev_ops, NULL, "stable", 0x10);
    memory_region_init_io(&other, &dev, &testdev_ops, NULL, "moving", 0x10);
    address_space_map(as, &mr, 0x1000, 0);
    stop_readers = false;
    GThread *reader = g_thread_new("reader", lookup_loop, as);
    for (int i = 0; i < 20000; i++) {
        address_space_begin(as);
        address_space_unmap(as, &mr);
        address_space_unmap(as, &other);
        address_space_map(as, &other, 0x2000 + (i % 16) * 0x10, 0);
        address_space_map(as, &mr, 0x1000, 0);
        address_space_commit(as);
    }
    stop_readers = true;
    g_assert_cmpuint(GPOINTER_TO_UINT(g_thread_join(reader)), ==, 0);
    address_space_free(as);
}

/* Two vCPUs moving their own devices at once: each, once its commit
 * returns, finds its device at the new address (a shared transaction
 * counter used to leave the first commit unpublished). */
#define MOVER_ROUNDS 20000
typedef struct Mover {
    AddressSpace *as;
    TestDev *dev;
    uint64_t base;
    unsigned unseen;
} Mover;

static void *move_back_and_forth(void *opaque)
{
    Mover *m = opaque;
    for (unsigned i = 0; i < MOVER_ROUNDS; i++) {
        uint64_t to = m->base + (i % 2) * 0x10000;
        address_space_begin(m->as);
        address_space_unmap(m->as, &m->dev->mr);
        address_space_map(m->as, &m->dev->mr, to, 0);
        address_space_commit(m->as);
        uint64_t off;
        m->unseen += address_space_lookup(m->as, to, &off) != &m->dev->mr;
    }
    return NULL;
}

static void test_concurrent_transactions_each_publish(void)
{
    AddressSpace *as = address_space_new("t");
    Mover movers[2] = {
        { .as = as, .dev = testdev_new(1, 0x1000), .base = 0x100000 },
        { .as = as, .dev = testdev_new(2, 0x1000), .base = 0x200000 },
    };
    pthread_t threads[2];
    for (unsigned i = 0; i < 2; i++) {
        pthread_create(&threads[i], NULL, move_back_and_forth, &movers[i]);
    }
    for (unsigned i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        g_assert_cmpuint(movers[i].unseen, ==, 0);
    }
    address_space_free(as);
}

/* ---- containers ---- */

static void assert_decodes(AddressSpace *as, uint64_t addr, MemoryRegion *mr, uint64_t offset)
{
    uint64_t found_offset = UINT64_MAX;
    MemoryRegion *found = address_space_lookup(as, addr, &found_offset);
    g_assert(found == mr);
    if (mr) {
        g_assert_cmphex(found_offset, ==, offset);
    }
}

/*
 * A BAR-like container at 0x10000 (0x1000 bytes) over RAM of lower
 * priority, holding two overlapping children, a third added later at
 * the same priority as one of them, a nested container whose child
 * reaches past the nested container's end, and a child that reaches past
 * the outer container's end. Every 16th address from 0xf000 to 0x12000
 * must decode as the table in the test draws it.
 */
typedef struct Drawn {
    uint64_t start;             /* up to the next entry's start */
    MemoryRegion *mr;           /* NULL: unassigned */
    uint64_t base;              /* where mr's offset 0 is */
} Drawn;

static void test_container_nesting_priorities_clipping(void)
{
    AddressSpace *as = address_space_new("t");
    uint8_t *ram = g_malloc0(0x20000);
    MemoryRegion ram_mr, bar, nested;
    memory_region_init_ram(&ram_mr, "ram", 0x20000, ram);
    TestDev *low = testdev_new(1, 0x100), *high = testdev_new(2, 0x200);
    TestDev *tie = testdev_new(3, 0x10), *deep = testdev_new(4, 0x1000);
    TestDev *edge = testdev_new(5, 0x100);
    memory_region_init_container(&bar, &low->dev, "bar", 0x1000);
    memory_region_init_container(&nested, &low->dev, "nested", 0x200);
    /* The high one first: priority, not age, must make it win. */
    memory_region_add_subregion(&bar, 0x080, &high->mr, 1);
    memory_region_add_subregion(&bar, 0x000, &low->mr, 0);
    memory_region_add_subregion(&bar, 0xa00, &nested, 0);
    memory_region_add_subregion(&nested, 0x100, &deep->mr, 0);
    memory_region_add_subregion(&bar, 0xf80, &edge->mr, 0);
    address_space_map(as, &ram_mr, 0, -2);
    address_space_map(as, &bar, 0x10000, -1);
    /* Equal priority: the child added later wins. */
    memory_region_add_subregion(&bar, 0x10, &tie->mr, 0);

    const Drawn drawn[] = {
        { 0x00000, &ram_mr, 0 },
        { 0x10000, &low->mr, 0x10000 },
        { 0x10010, &tie->mr, 0x10010 },
        { 0x10020, &low->mr, 0x10000 },
        { 0x10080, &high->mr, 0x10080 },
        { 0x10280, NULL, 0 },                   /* holes hide the RAM */
        { 0x10b00, &deep->mr, 0x10b00 },        /* nested's hole before it */
        { 0x10c00, NULL, 0 },                   /* deep clipped by nested */
        { 0x10f80, &edge->mr, 0x10f80 },
        { 0x11000, &ram_mr, 0 },                /* edge clipped by bar */
    };
    size_t i = 0;
    for (uint64_t addr = 0xf000; addr < 0x12000; addr += 0x10) {
        while (i + 1 < G_N_ELEMENTS(drawn) && drawn[i + 1].start <= addr) {
            i++;
        }
        assert_decodes(as, addr, drawn[i].mr, addr - drawn[i].base);
        assert_decodes(as, addr + 0xf, drawn[i].mr, addr + 0xf - drawn[i].base);
    }

    /* What dispatch reaches, holes included, in one access. */
    uint8_t bytes[8];
    g_assert_cmpint(address_space_read(as, 0x1027c, bytes, 8), ==, MEMTX_UNASSIGNED);
    g_assert_cmphex(bytes[4], ==, 0xff);
    g_assert_cmpuint(high->last_offset, ==, 0x1fc);
    address_space_free(as);
    g_free(ram);
}

/* A container mapped near the top of the space: children past 2^64 are
 * clipped away, not wrapped to address 0. */
static void test_container_at_the_top(void)
{
    AddressSpace *as = address_space_new("t");
    MemoryRegion outer, inner;
    /* wrapped starts past 2^64; from its wrapped-around start, its size
     * would cover everything. */
    TestDev *below = testdev_new(1, 0x10), *wrapped = testdev_new(2, UINT64_MAX);
    memory_region_init_container(&outer, &below->dev, "outer", 0x100);
    memory_region_init_container(&inner, &below->dev, "inner", 0x1000);
    memory_region_add_subregion(&outer, 0xf0, &inner, 0);
    memory_region_add_subregion(&inner, 0x0, &below->mr, 0);
    memory_region_add_subregion(&inner, 0x800, &wrapped->mr, 0);
    address_space_map(as, &outer, UINT64_MAX - 0xff, 0);
    assert_decodes(as, UINT64_MAX - 0xf, &below->mr, 0);
    assert_decodes(as, UINT64_MAX, &below->mr, 0xf);
    assert_decodes(as, 0x7ff, NULL, 0);
    address_space_free(as);
}

/* Moving a container (a BAR reprogrammed) moves its children; what was
 * there becomes unassigned. */
static void test_container_move(void)
{
    AddressSpace *as = address_space_new("t");
    TestDev *regs = testdev_new(1, 0x100), *table = testdev_new(2, 0x40);
    MemoryRegion bar;
    memory_region_init_container(&bar, &regs->dev, "bar", 0x4000);
    memory_region_add_subregion(&bar, 0, &regs->mr, 0);
    memory_region_add_subregion(&bar, 0x2000, &table->mr, 0);
    address_space_map(as, &bar, 0xe0000000, -1);
    assert_decodes(as, 0xe0002010, &table->mr, 0x10);

    address_space_begin(as);
    address_space_unmap(as, &bar);
    address_space_map(as, &bar, 0xe0010000, -1);
    assert_decodes(as, 0xe0002010, &table->mr, 0x10);     /* not yet published */
    address_space_commit(as);
    assert_decodes(as, 0xe0002010, NULL, 0);
    assert_decodes(as, 0xe0012010, &table->mr, 0x10);
    assert_decodes(as, 0xe0010004, &regs->mr, 4);
    g_assert(address_space_lookup_mapping(as, 0xe0011000) == &bar);    /* a hole */
    g_assert_null(address_space_lookup_mapping(as, 0xe0002010));
    address_space_free(as);
}

/* Subregions added to or removed from a mapped container appear and go at
 * once; inside a transaction, at its commit. A region leaves one container
 * and joins another. */
static void test_container_changes_republish(void)
{
    AddressSpace *as = address_space_new("t");
    TestDev *a = testdev_new(1, 0x10), *b = testdev_new(2, 0x10);
    MemoryRegion bar, other;
    memory_region_init_container(&bar, &a->dev, "bar", 0x100);
    memory_region_init_container(&other, &a->dev, "other", 0x100);
    address_space_map(as, &bar, 0x1000, 0);
    address_space_map(as, &other, 0x2000, 0);
    assert_decodes(as, 0x1000, NULL, 0);

    memory_region_add_subregion(&bar, 0x20, &a->mr, 0);
    assert_decodes(as, 0x1020, &a->mr, 0);

    address_space_begin(as);
    memory_region_add_subregion(&bar, 0x40, &b->mr, 0);
    memory_region_del_subregion(&bar, &a->mr);
    assert_decodes(as, 0x1020, &a->mr, 0);
    assert_decodes(as, 0x1040, NULL, 0);
    address_space_commit(as);
    assert_decodes(as, 0x1020, NULL, 0);
    assert_decodes(as, 0x1040, &b->mr, 0);

    memory_region_del_subregion(&bar, &b->mr);
    memory_region_add_subregion(&other, 0, &b->mr, 0);
    assert_decodes(as, 0x1040, NULL, 0);
    assert_decodes(as, 0x2000, &b->mr, 0);

    /* An unmapped container is built without any view; mapping it shows all. */
    address_space_unmap(as, &bar);
    memory_region_add_subregion(&bar, 0, &a->mr, 0);
    assert_decodes(as, 0x1000, NULL, 0);
    address_space_map(as, &bar, 0x3000, 0);
    assert_decodes(as, 0x3000, &a->mr, 0);
    address_space_free(as);
}

/* An access to a child runs under the child's owner's lock, not the
 * container's owner's; a lock-free child takes none. */
static void test_container_dispatch_locks_the_child_owner(void)
{
    static const MemoryRegionOps free_ops = {
        .read = testdev_read, .write = testdev_write, .locking = REGION_LOCK_FREE,
    };
    AddressSpace *as = address_space_new("t");
    TestDev *bar_owner = testdev_new(1, 0x10), *child = testdev_new(2, 0x10);
    TestDev *lock_free = testdev_new(3, 0x10);
    memory_region_init_io(&lock_free->mr, &lock_free->dev, &free_ops, lock_free, "free", 0x10);
    MemoryRegion bar;
    memory_region_init_container(&bar, &bar_owner->dev, "bar", 0x100);
    memory_region_add_subregion(&bar, 0x10, &child->mr, 0);
    memory_region_add_subregion(&bar, 0x20, &lock_free->mr, 0);
    address_space_map(as, &bar, 0x1000, 0);

    uint32_t value = 0x1234;
    g_assert_cmpint(address_space_write(as, 0x1014, &value, 4), ==, MEMTX_OK);
    g_assert_cmpuint(child->writes, ==, 1);
    g_assert_cmpuint(child->last_offset, ==, 4);
    g_assert_cmpuint(atomic_load(&child->dev.lock.acquisitions), ==, 1);
    g_assert_cmpuint(atomic_load(&bar_owner->dev.lock.acquisitions), ==, 0);

    g_assert_cmpint(address_space_read(as, 0x1020, &value, 4), ==, MEMTX_OK);
    g_assert_cmpuint(lock_free->reads, ==, 1);
    g_assert_cmpuint(atomic_load(&lock_free->dev.lock.acquisitions), ==, 0);
    g_assert_cmpuint(atomic_load(&bar_owner->dev.lock.acquisitions), ==, 0);
    address_space_free(as);
}

/*
 * A reader keeps looking while a writer, in one transaction per round,
 * moves a container between two places, takes its high-priority child out
 * and puts it back, and unmaps and maps a second container at the same
 * place. Every view the reader gets must be whole: the moving container
 * shows its high child (at the right offset) over the low one, or nothing;
 * the second container's child never disappears.
 */
typedef struct MovingContainer {
    AddressSpace *as;
    MemoryRegion bar, steady_bar;
    TestDev *low, *high, *steady;
    atomic_bool stop;
    unsigned inconsistent, lookups;
} MovingContainer;

static bool sees_a_whole_view(MovingContainer *mc, uint64_t base)
{
    uint64_t off;
    MemoryRegion *found = address_space_lookup(mc->as, base + 0x48, &off);
    return found ? found == &mc->high->mr && off == 0x8 : true;
}

static gpointer watch_containers(gpointer opaque)
{
    MovingContainer *mc = opaque;
    while (!atomic_load(&mc->stop) || mc->lookups < 1000) {
        uint64_t off = 0;
        mc->inconsistent += !sees_a_whole_view(mc, 0x10000);
        mc->inconsistent += !sees_a_whole_view(mc, 0x20000);
        mc->inconsistent += address_space_lookup(mc->as, 0x30014, &off) != &mc->steady->mr ||
                            off != 4;
        mc->lookups++;
    }
    return NULL;
}

static void test_container_moves_under_a_reader(void)
{
    MovingContainer *mc = g_new0(MovingContainer, 1);
    mc->as = address_space_new("t");
    mc->low = testdev_new(1, 0x100);
    mc->high = testdev_new(2, 0x10);
    mc->steady = testdev_new(3, 0x10);
    memory_region_init_container(&mc->bar, &mc->low->dev, "bar", 0x1000);
    memory_region_init_container(&mc->steady_bar, &mc->steady->dev, "steady-bar", 0x100);
    memory_region_add_subregion(&mc->bar, 0, &mc->low->mr, 0);
    memory_region_add_subregion(&mc->bar, 0x40, &mc->high->mr, 1);
    memory_region_add_subregion(&mc->steady_bar, 0x10, &mc->steady->mr, 0);
    address_space_map(mc->as, &mc->steady_bar, 0x30000, 0);
    address_space_map(mc->as, &mc->bar, 0x10000, 0);
    GThread *reader = g_thread_new("reader", watch_containers, mc);
    for (unsigned i = 0; i < 20000; i++) {
        address_space_begin(mc->as);
        address_space_unmap(mc->as, &mc->bar);
        address_space_map(mc->as, &mc->bar, i % 2 ? 0x10000 : 0x20000, 0);
        memory_region_del_subregion(&mc->bar, &mc->high->mr);
        memory_region_add_subregion(&mc->bar, 0x40, &mc->high->mr, 1);
        address_space_unmap(mc->as, &mc->steady_bar);
        address_space_map(mc->as, &mc->steady_bar, 0x30000, 0);
        address_space_commit(mc->as);
    }
    atomic_store(&mc->stop, true);
    g_thread_join(reader);
    g_assert_cmpuint(mc->inconsistent, ==, 0);
    assert_decodes(mc->as, 0x10048, &mc->high->mr, 0x8);
    assert_decodes(mc->as, 0x20048, NULL, 0);
    address_space_free(mc->as);
    g_free(mc);
}

static void test_dma_ram_only(void)
{
    memory_init();
    static uint8_t ram[0x2000];
    static MemoryRegion ram_mr;
    memory_region_init_ram(&ram_mr, "dma-ram", sizeof(ram), ram);
    TestDev *mmio = testdev_new(0x50, 0x1000);
    address_space_map(address_space_memory, &ram_mr, 0x100000, 0);
    address_space_map(address_space_memory, &mmio->mr, 0x102000, 0);

    const char msg[] = "dma to ram";
    g_assert_true(dma_memory_write(0x100010, msg, sizeof(msg)));
    g_assert_cmpstr((char *)ram + 0x10, ==, msg);
    char back[sizeof(msg)];
    g_assert_true(dma_memory_read(0x100010, back, sizeof(back)));
    g_assert_cmpstr(back, ==, msg);
    g_assert(dma_memory_map(0x100010, 16) == ram + 0x10);

    /* Straddling RAM and MMIO: refused as a whole, nothing written. */
    uint64_t refused = dma_refused_count();
    memset(ram + 0x1ff0, 0xaa, 0x10);
    uint8_t zeros[0x20] = { 0 };
    g_assert_false(dma_memory_write(0x101ff0, zeros, sizeof(zeros)));
    g_assert_cmphex(ram[0x1ff0], ==, 0xaa);
    g_assert_cmpuint(mmio->writes, ==, 0);
    g_assert_cmpuint(dma_refused_count(), ==, refused + 1);
    g_assert_null(dma_memory_map(0x101ff0, 0x20));
    address_space_unmap(address_space_memory, &ram_mr);
    address_space_unmap(address_space_memory, &mmio->mr);
}

/* ---- scatter-gather DMA ---- */

/*
 * Guest RAM as a PC lays it out, shrunk: two RAM regions that meet at
 * 0x210000, a device's MMIO at 0x220000, more RAM after it at 0x221000.
 * The two that meet are cut from one host block in the other order, so
 * they never continue each other in host memory.
 */
typedef struct SGLayout {
    uint8_t *backing, *low, *high, *after;
    MemoryRegion low_mr, high_mr, after_mr;
    TestDev *mmio;
} SGLayout;

#define SG_LOW      0x200000
#define SG_HIGH     0x210000
#define SG_MMIO     0x220000
#define SG_AFTER    0x221000

static SGLayout *sg_layout_new(void)
{
    memory_init();
    SGLayout *l = g_new0(SGLayout, 1);
    l->backing = g_malloc0(0x21000);
    l->high = l->backing;
    l->low = l->backing + 0x11000;
    l->after = g_malloc0(0x1000);
    l->mmio = testdev_new(0x60, 0x1000);
    memory_region_init_ram(&l->low_mr, "sg-low", 0x10000, l->low);
    memory_region_init_ram(&l->high_mr, "sg-high", 0x10000, l->high);
    memory_region_init_ram(&l->after_mr, "sg-after", 0x1000, l->after);
    address_space_map(address_space_memory, &l->low_mr, SG_LOW, 0);
    address_space_map(address_space_memory, &l->high_mr, SG_HIGH, 0);
    address_space_map(address_space_memory, &l->mmio->mr, SG_MMIO, 0);
    address_space_map(address_space_memory, &l->after_mr, SG_AFTER, 0);
    return l;
}

static void sg_layout_free(SGLayout *l)
{
    address_space_unmap(address_space_memory, &l->low_mr);
    address_space_unmap(address_space_memory, &l->high_mr);
    address_space_unmap(address_space_memory, &l->mmio->mr);
    address_space_unmap(address_space_memory, &l->after_mr);
    g_free(l->backing);
    g_free(l->after);
    g_free(l);
}

static void test_dma_sg_split_and_merge(void)
{
    SGLayout *l = sg_layout_new();
    struct iovec iov[8];
    size_t n = 99;

    /* Crossing from one RAM region into the next: one iovec for each. */
    DMASegment across[] = { { SG_HIGH - 0x100, 0x300 } };
    g_assert_true(dma_memory_map_sg(across, 1, iov, 8, &n));
    g_assert_cmpuint(n, ==, 2);
    g_assert(iov[0].iov_base == l->low + 0xff00 && iov[0].iov_len == 0x100);
    g_assert(iov[1].iov_base == l->high && iov[1].iov_len == 0x200);

    /* Pieces contiguous in host memory share an iovec; empty pieces add
     * nothing, wherever they point. A write through the iovecs is a write
     * to guest RAM. */
    DMASegment list[] = {
        { SG_LOW + 0x10, 0x10 }, { SG_MMIO, 0 }, { SG_LOW + 0x20, 0x30 },
        { SG_AFTER + 0x800, 0x100 }, { UINT64_MAX, 0 },
    };
    g_assert_true(dma_memory_map_sg(list, G_N_ELEMENTS(list), iov, 8, &n));
    g_assert_cmpuint(n, ==, 2);
    g_assert(iov[0].iov_base == l->low + 0x10 && iov[0].iov_len == 0x40);
    g_assert(iov[1].iov_base == l->after + 0x800 && iov[1].iov_len == 0x100);
    memset(iov[1].iov_base, 0x5a, iov[1].iov_len);
    uint8_t back[0x100];
    g_assert_true(dma_memory_read(SG_AFTER + 0x800, back, sizeof(back)));
    g_assert_cmphex(back[0xff], ==, 0x5a);

    g_assert_true(dma_memory_map_sg(NULL, 0, iov, 8, &n));
    g_assert_cmpuint(n, ==, 0);
    g_assert_cmpuint(l->mmio->reads + l->mmio->writes, ==, 0);
    sg_layout_free(l);
}

static void test_dma_sg_refused(void)
{
    SGLayout *l = sg_layout_new();
    struct iovec iov[4];
    size_t n;
    uint64_t refused = dma_refused_count();

    /* RAM, then the device's MMIO: the whole list is refused. */
    DMASegment into_mmio[] = { { SG_LOW, 0x10 }, { SG_MMIO - 0x10, 0x20 } };
    g_assert_false(dma_memory_map_sg(into_mmio, 2, iov, 4, &n));
    g_assert_cmpuint(dma_refused_count(), ==, refused + 1);
    /* Beyond the last RAM byte: unassigned. */
    DMASegment past_ram[] = { { SG_AFTER + 0xfff, 2 } };
    g_assert_false(dma_memory_map_sg(past_ram, 1, iov, 4, &n));
    g_assert_cmpuint(dma_refused_count(), ==, refused + 2);

    /* addr + len wraps past 2^64, from RAM at the top onto RAM at 0. */
    static uint8_t top[0x1000], bottom[0x1000];
    MemoryRegion top_mr, bottom_mr;
    memory_region_init_ram(&top_mr, "sg-top", sizeof(top), top);
    memory_region_init_ram(&bottom_mr, "sg-bottom", sizeof(bottom), bottom);
    address_space_map(address_space_memory, &top_mr, UINT64_MAX - 0xfff, 0);
    address_space_map(address_space_memory, &bottom_mr, 0, 0);
    DMASegment up_to_the_top[] = { { UINT64_MAX - 0xf, 0x10 } };
    g_assert_true(dma_memory_map_sg(up_to_the_top, 1, iov, 4, &n));
    g_assert(n == 1 && iov[0].iov_base == top + 0xff0 && iov[0].iov_len == 0x10);
    DMASegment wraps[] = { { UINT64_MAX - 0xf, 0x20 } };
    g_assert_false(dma_memory_map_sg(wraps, 1, iov, 4, &n));
    g_assert_cmpuint(dma_refused_count(), ==, refused + 3);
    address_space_unmap(address_space_memory, &top_mr);
    address_space_unmap(address_space_memory, &bottom_mr);

    /* Five separate pieces for four iovecs; the same five fit in five. */
    DMASegment many[5];
    for (unsigned i = 0; i < 5; i++) {
        many[i] = (DMASegment) { SG_LOW + i * 0x100, 0x10 };
    }
    g_assert_false(dma_memory_map_sg(many, 5, iov, 4, &n));
    g_assert_cmpuint(dma_refused_count(), ==, refused + 4);
    struct iovec five[5];
    g_assert_true(dma_memory_map_sg(many, 5, five, 5, &n));
    g_assert_cmpuint(n, ==, 5);
    /* One piece split at a RAM boundary needs two. */
    DMASegment across[] = { { SG_HIGH - 1, 2 } };
    g_assert_false(dma_memory_map_sg(across, 1, iov, 1, &n));
    g_assert_cmpuint(dma_refused_count(), ==, refused + 5);
    g_assert_cmpuint(l->mmio->reads + l->mmio->writes, ==, 0);
    sg_layout_free(l);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/memory/overlap-priority", test_overlap_priority);
    g_test_add_func("/memory/dispatch-split", test_dispatch_and_split);
    g_test_add_func("/memory/unassigned", test_unassigned);
    g_test_add_func("/memory/string-pio", test_string_pio_takes_the_lock_once);
    g_test_add_func("/memory/lock-mode-statistics", test_lock_mode_statistics);
    g_test_add_func("/memory/lock-counters-beside-the-mutex",
                    test_lock_counters_beside_the_mutex);
    g_test_add_func("/memory/region-locking-kinds", test_region_locking_kinds);
    g_test_add_func("/memory/devices-run-concurrently", test_devices_run_concurrently);
    g_test_add_func("/memory/remap-from-handler", test_remap_from_handler);
    g_test_add_func("/memory/concurrent-readers", test_concurrent_readers_see_whole_views);
    g_test_add_func("/memory/concurrent-transactions",
                    test_concurrent_transactions_each_publish);
    g_test_add_func("/memory/container/nesting-priorities-clipping",
                    test_container_nesting_priorities_clipping);
    g_test_add_func("/memory/container/at-the-top", test_container_at_the_top);
    g_test_add_func("/memory/container/move", test_container_move);
    g_test_add_func("/memory/container/changes-republish", test_container_changes_republish);
    g_test_add_func("/memory/container/dispatch-locks-the-child-owner",
                    test_container_dispatch_locks_the_child_owner);
    g_test_add_func("/memory/container/moves-under-a-reader",
                    test_container_moves_under_a_reader);
    g_test_add_func("/memory/dma-ram-only", test_dma_ram_only);
    g_test_add_func("/memory/dma-sg/split-and-merge", test_dma_sg_split_and_merge);
    g_test_add_func("/memory/dma-sg/refused", test_dma_sg_refused);
    return g_test_run();
}
