/*
 * The fast paths as dispatch sees them, without KVM: a write an ioeventfd
 * matches signals it instead of reaching the device, and the writes KVM
 * would hold back in its coalesced ring (a fake ring in memory here) are
 * replayed in order, once each, before any other access.
 */
#include <pthread.h>
#include <string.h>
#include <glib.h>
#include "exec/coalesced-ring.h"
#include "exec/memory.h"
#include "fake-coalesced-ring.h"

/* A device that logs what reaches its handlers, under its lock. Devices
 * live as long as the program (the registry keeps them). */
typedef struct LogDev {
    QEMUDevice dev;
    MemoryRegion mr;
    GArray *log;                /* of uint64_t: value written, or READ_MARK */
    uint64_t expected_next;     /* for the in-order check of the race */
    bool check_sequence;
} LogDev;

#define READ_MARK UINT64_MAX

static uint64_t logdev_read(void *opaque, uint64_t offset, unsigned size)
{
    LogDev *d = opaque;
    uint64_t mark = READ_MARK;
    g_array_append_val(d->log, mark);
    return d->log->len;
}

static void logdev_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    LogDev *d = opaque;
    if (d->check_sequence) {
        /* Never twice, never out of order. */
        g_assert_cmpuint(value, ==, d->expected_next);
        d->expected_next++;
    }
    g_array_append_val(d->log, value);
}

static const MemoryRegionOps logdev_ops = {
    .read = logdev_read, .write = logdev_write, .max_access_size = 8,
};

static LogDev *logdev_new(void)
{
    LogDev *d = g_new0(LogDev, 1);
    device_init(&d->dev, "test-device", "logdev");
    d->log = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    memory_region_init_io(&d->mr, &d->dev, &logdev_ops, d, "logdev", 0x100);
    return d;
}

/* ---- ioeventfd without KVM ---- */

#define DEV_ADDR 0x10000

static void write_u(uint64_t addr, uint64_t value, unsigned size)
{
    g_assert_cmpint(address_space_write(address_space_memory, addr, &value, size), ==, MEMTX_OK);
}

static void test_ioeventfd_fallback(void)
{
    memory_init();
    LogDev *d = logdev_new();
    address_space_map(address_space_memory, &d->mr, DEV_ADDR, 0);
    EventNotifier wild, match, any;
    g_assert_true(event_notifier_init(&wild, NULL) && event_notifier_init(&match, NULL) &&
                  event_notifier_init(&any, NULL));
    memory_region_add_eventfd(&d->mr, 0x10, 4, false, 0, &wild);
    memory_region_add_eventfd(&d->mr, 0x20, 2, true, 0xbeef, &match);
    memory_region_add_eventfd(&d->mr, 0x30, 0, false, 0, &any);

    /* Without datamatch: any value of the right width. */
    write_u(DEV_ADDR + 0x10, 1, 4);
    write_u(DEV_ADDR + 0x10, 0xffffffff, 4);
    g_assert_cmpuint(event_notifier_take(&wild), ==, 2);
    g_assert_cmpuint(d->log->len, ==, 0);
    /* Another width or offset is the device's. */
    write_u(DEV_ADDR + 0x10, 7, 2);
    write_u(DEV_ADDR + 0x14, 8, 4);
    g_assert_cmpuint(event_notifier_take(&wild), ==, 0);
    g_assert_cmpuint(d->log->len, ==, 2);

    /* With datamatch: only the value. */
    write_u(DEV_ADDR + 0x20, 0xbeef, 2);
    write_u(DEV_ADDR + 0x20, 0xbeee, 2);
    write_u(DEV_ADDR + 0x20, 0xbeef, 4);
    g_assert_cmpuint(event_notifier_take(&match), ==, 1);
    g_assert_cmpuint(d->log->len, ==, 4);
    g_assert_cmphex(g_array_index(d->log, uint64_t, 2), ==, 0xbeee);
    g_assert_cmphex(g_array_index(d->log, uint64_t, 3), ==, 0xbeef);

    /* Size 0: every width. Reads always reach the device. */
    write_u(DEV_ADDR + 0x30, 1, 1);
    write_u(DEV_ADDR + 0x30, 1, 8);
    g_assert_cmpuint(event_notifier_take(&any), ==, 2);
    uint32_t v;
    address_space_read(address_space_memory, DEV_ADDR + 0x30, &v, 4);
    g_assert_cmpuint(d->log->len, ==, 5);

    /* Removed: the device's again. */
    memory_region_del_eventfd(&d->mr, 0x20, 2, true, 0xbeef, &match);
    write_u(DEV_ADDR + 0x20, 0xbeef, 2);
    g_assert_cmpuint(event_notifier_take(&match), ==, 0);
    g_assert_cmpuint(d->log->len, ==, 6);

    memory_region_del_eventfd(&d->mr, 0x10, 4, false, 0, &wild);
    memory_region_del_eventfd(&d->mr, 0x30, 0, false, 0, &any);
    address_space_unmap(address_space_memory, &d->mr);
    event_notifier_cleanup(&wild);
    event_notifier_cleanup(&match);
    event_notifier_cleanup(&any);
}

/* ---- the coalesced ring ---- */

#define PORT 0x3000

typedef struct ReplayCheck {
    struct kvm_coalesced_mmio_ring *ring;
    GArray *seen;
} ReplayCheck;

static void check_replay(const struct kvm_coalesced_mmio *e, void *opaque)
{
    ReplayCheck *c = opaque;
    /* The slot is still ours while it is replayed. */
    g_assert_true(&c->ring->coalesced_mmio[c->ring->first] == e);
    uint64_t value;
    memcpy(&value, e->data, 8);
    g_array_append_val(c->seen, value);
}

/* The drain logic alone, on a ring that wraps. */
static void test_ring_replay_in_order(void)
{
    struct kvm_coalesced_mmio_ring *ring = fake_ring_new();
    ReplayCheck c = { ring, g_array_new(FALSE, FALSE, sizeof(uint64_t)) };
    uint64_t next = 0;
    for (unsigned round = 0; round < 5; round++) {
        unsigned n = FAKE_RING_CAPACITY - 1 - round;     /* full, then less: the ends move */
        for (unsigned i = 0; i < n; i++) {
            g_assert_false(fake_ring_full(ring));
            fake_ring_push(ring, 0, next + i, 8, false);
        }
        g_assert_cmpuint(coalesced_ring_replay(ring, FAKE_RING_CAPACITY, check_replay, &c), ==,
                         n);
        g_assert_cmpuint(ring->first, ==, ring->last);
        for (unsigned i = 0; i < n; i++) {
            g_assert_cmpuint(g_array_index(c.seen, uint64_t, i), ==, next + i);
        }
        next += n;
        g_array_set_size(c.seen, 0);
    }
    /* Empty: nothing, and nothing twice. */
    g_assert_cmpuint(coalesced_ring_replay(ring, FAKE_RING_CAPACITY, check_replay, &c), ==, 0);
    /* An entry no kernel writes is skipped, not replayed. */
    fake_ring_push(ring, 0, 1, 8, false);
    ring->coalesced_mmio[ring->last - 1].len = 9;
    g_assert_cmpuint(coalesced_ring_replay(ring, FAKE_RING_CAPACITY, check_replay, &c), ==, 0);
    g_assert_cmpuint(ring->first, ==, ring->last);
    g_array_free(c.seen, TRUE);
    g_free(ring);
}

/* Dispatch replays what the ring holds before the access it dispatches,
 * PIO entries into the I/O space, MMIO ones into memory. */
static void test_dispatch_drains_first(void)
{
    memory_init();
    LogDev *mem = logdev_new(), *io = logdev_new();
    address_space_map(address_space_memory, &mem->mr, DEV_ADDR, 0);
    address_space_map(address_space_io, &io->mr, PORT, 0);
    struct kvm_coalesced_mmio_ring *ring = fake_ring_new();
    memory_coalesced_attach(ring, FAKE_RING_CAPACITY);

    fake_ring_push(ring, DEV_ADDR + 8, 1, 8, false);
    fake_ring_push(ring, PORT, 2, 8, true);
    fake_ring_push(ring, DEV_ADDR + 8, 3, 8, false);
    uint64_t v;
    /* A read of the memory device: both devices' writes come first. */
    address_space_read(address_space_memory, DEV_ADDR, &v, 8);
    g_assert_cmpuint(mem->log->len, ==, 3);
    g_assert_cmpuint(g_array_index(mem->log, uint64_t, 0), ==, 1);
    g_assert_cmpuint(g_array_index(mem->log, uint64_t, 1), ==, 3);
    g_assert_cmpuint(g_array_index(mem->log, uint64_t, 2), ==, READ_MARK);
    g_assert_cmpuint(io->log->len, ==, 1);
    g_assert_cmpuint(g_array_index(io->log, uint64_t, 0), ==, 2);
    g_assert_cmpuint(ring->first, ==, ring->last);

    /* A write that is not coalesced comes after the queued ones too. */
    fake_ring_push(ring, PORT, 4, 8, true);
    write_u(DEV_ADDR, 5, 8);
    g_assert_cmpuint(g_array_index(io->log, uint64_t, 1), ==, 4);
    g_assert_cmpuint(g_array_index(mem->log, uint64_t, 3), ==, 5);
    /* An explicit drain of an empty ring does nothing. */
    memory_coalesced_drain();
    g_assert_cmpuint(io->log->len, ==, 2);

    memory_coalesced_attach(NULL, 0);
    address_space_unmap(address_space_memory, &mem->mr);
    address_space_unmap(address_space_io, &io->mr);
    g_free(ring);
}

/*
 * The race: one thread fills the ring as KVM would, as fast as it can,
 * while three threads dispatch reads, each draining first. The device
 * checks, under its lock, that the values arrive in sequence.
 */
#define RACE_WRITES 200000
#define RACE_READERS 3

typedef struct Race {
    struct kvm_coalesced_mmio_ring *ring;
    atomic_bool done;
} Race;

/* In bursts of up to a full ring, so that the readers meet on long runs
 * of entries. */
static void *race_producer(void *opaque)
{
    Race *r = opaque;
    for (uint64_t i = 0; i < RACE_WRITES;) {
        while (fake_ring_full(r->ring)) {
            sched_yield();
        }
        while (i < RACE_WRITES && !fake_ring_full(r->ring)) {
            fake_ring_push(r->ring, DEV_ADDR, i++, 8, false);
        }
    }
    atomic_store(&r->done, true);
    return NULL;
}

static void *race_reader(void *opaque)
{
    Race *r = opaque;
    while (!atomic_load(&r->done)) {
        uint8_t b;
        address_space_read(address_space_memory, DEV_ADDR + 1, &b, 1);
    }
    return NULL;
}

static void test_concurrent_drains_replay_once_in_order(void)
{
    memory_init();
    LogDev *d = logdev_new();
    d->check_sequence = true;
    address_space_map(address_space_memory, &d->mr, DEV_ADDR, 0);
    Race r = { .ring = fake_ring_new() };
    memory_coalesced_attach(r.ring, FAKE_RING_CAPACITY);
    pthread_t producer, readers[RACE_READERS];
    pthread_create(&producer, NULL, race_producer, &r);
    for (int i = 0; i < RACE_READERS; i++) {
        pthread_create(&readers[i], NULL, race_reader, &r);
    }
    pthread_join(producer, NULL);
    for (int i = 0; i < RACE_READERS; i++) {
        pthread_join(readers[i], NULL);
    }
    memory_coalesced_drain();
    g_assert_cmpuint(d->expected_next, ==, RACE_WRITES);
    memory_coalesced_attach(NULL, 0);
    address_space_unmap(address_space_memory, &d->mr);
    g_free(r.ring);
}

/* drain_lock comes before every device lock (docs/locking.md): a drain
 * under one is a bug, caught at once even when the ring is empty. */
static void test_drain_under_a_device_lock_aborts(void)
{
    if (g_test_subprocess()) {
        LogDev *d = logdev_new();
        device_lock(&d->dev);
        memory_coalesced_drain();
        return;
    }
    LogDev *d = logdev_new();
    device_lock(&d->dev);
    g_assert_cmpuint(device_locks_held(), ==, 1);
    device_unlock(&d->dev);
    g_assert_cmpuint(device_locks_held(), ==, 0);
    memory_coalesced_drain();
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*device_locks_held() == 0*");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/memory-fastpath/ioeventfd-fallback", test_ioeventfd_fallback);
    g_test_add_func("/memory-fastpath/ring-replay-in-order", test_ring_replay_in_order);
    g_test_add_func("/memory-fastpath/dispatch-drains-first", test_dispatch_drains_first);
    g_test_add_func("/memory-fastpath/drain-under-a-device-lock-aborts",
                    test_drain_under_a_device_lock_aborts);
    g_test_add_func("/memory-fastpath/concurrent-drains",
                    test_concurrent_drains_replay_once_in_order);
    return g_test_run();
}
