/*
 * QEMUDevice registry and the device lock (see hw/qdev.h, docs/locking.md).
 *
 * device_lock() is the one switch between per-device and global locking.
 * Statistics belong to the lock actually taken, so a test can observe which
 * one a dispatch used: in global mode the devices' own mutexes stay at zero
 * acquisitions and the global lock counts them all.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <glib.h>
#include "hw/qdev.h"

static bool per_device_locking = true;
/* Aligned so that the mutex and its counters share one cache line (a
 * device's lock lies wherever its device was allocated). */
static _Alignas(64) DeviceLock global_lock = {
    .mutex = PTHREAD_MUTEX_INITIALIZER,
    .name = "global",
};

/* The registry changes only while the machine is built (single thread). */
static QEMUDevice *device_list;
static QEMUDevice **device_list_tail = &device_list;

static void device_lock_init(DeviceLock *lock, const char *name)
{
    pthread_mutex_init(&lock->mutex, NULL);
    lock->name = name;
    atomic_init(&lock->acquisitions, 0);
    atomic_init(&lock->contended, 0);
    atomic_init(&lock->wait_ns, 0);
    lock->reset_acquisitions = lock->reset_contended = lock->reset_wait_ns = 0;
}

void device_init(QEMUDevice *dev, const char *type, const char *id_prefix)
{
    unsigned n = 0;
    char *id;
    while (device_find(id = g_strdup_printf("%s%u", id_prefix, n))) {
        g_free(id);
        n++;
    }
    dev->type = type;
    dev->id = id;
    dev->id_given = false;
    device_lock_init(&dev->lock, dev->id);
    dev->lock.owner = NULL;
    dev->sublocks = NULL;
    dev->next = NULL;
    *device_list_tail = dev;
    device_list_tail = &dev->next;
}

void device_lock_set_per_device(bool per_device)
{
    per_device_locking = per_device;
}

bool device_lock_is_per_device(void)
{
    return per_device_locking;
}

DeviceLock *device_lock_of(QEMUDevice *dev)
{
    return per_device_locking ? &dev->lock : &global_lock;
}

DeviceLock *device_global_lock(void)
{
    return &global_lock;
}

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Device locks and sub-locks this thread holds (device_locks_held). */
static _Thread_local unsigned locks_held;

unsigned device_locks_held(void)
{
    return locks_held;
}

/* Add n to a counter of a lock the caller holds: the holder is the only
 * writer, so a load and a store do (no locked instruction); the mutex
 * orders one holder's store before the next one's load. Atomic only so
 * that readers may load it at any time. */
static void counter_add_as_holder(atomic_uint_fast64_t *counter, uint64_t n)
{
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Take lock, counting it; the uncontended path costs one trylock and a
 * plain increment in the line the trylock just took. */
static void device_lock_acquire(DeviceLock *lock)
{
    if (pthread_mutex_trylock(&lock->mutex) != 0) {
        int64_t start = monotonic_ns();
        pthread_mutex_lock(&lock->mutex);
        counter_add_as_holder(&lock->wait_ns, monotonic_ns() - start);
        counter_add_as_holder(&lock->contended, 1);
    }
    counter_add_as_holder(&lock->acquisitions, 1);
    locks_held++;
}

static void device_lock_release(DeviceLock *lock)
{
    locks_held--;
    pthread_mutex_unlock(&lock->mutex);
}

void device_lock(QEMUDevice *dev)
{
    device_lock_acquire(device_lock_of(dev));
}

void device_unlock(QEMUDevice *dev)
{
    device_lock_release(device_lock_of(dev));
}

/* ---- sub-locks (hw/qdev.h) ---- */

static char *sublock_name(const QEMUDevice *dev, const char *suffix)
{
    return g_strdup_printf("%s.%s", dev->id, suffix);
}

void device_sublock_init(QEMUDevice *dev, DeviceLock *lock, const char *suffix)
{
    device_lock_init(lock, sublock_name(dev, suffix));
    lock->owner = dev;
    lock->suffix = suffix;
    lock->next_sub = NULL;
    DeviceLock **tail = &dev->sublocks;
    while (*tail) {
        tail = &(*tail)->next_sub;
    }
    *tail = lock;
}

void device_sublock_lock(DeviceLock *lock)
{
    device_lock_acquire(per_device_locking ? lock : &global_lock);
}

void device_sublock_unlock(DeviceLock *lock)
{
    device_lock_release(per_device_locking ? lock : &global_lock);
}

void device_sublock_lock_nested(DeviceLock *lock)
{
    if (per_device_locking) {
        device_lock_acquire(lock);
    }
}

void device_sublock_unlock_nested(DeviceLock *lock)
{
    if (per_device_locking) {
        device_lock_release(lock);
    }
}

QEMUDevice *device_find(const char *id)
{
    for (QEMUDevice *dev = device_list; dev; dev = dev->next) {
        if (strcmp(dev->id, id) == 0) {
            return dev;
        }
    }
    return NULL;
}

void device_set_id(QEMUDevice *dev, const char *id)
{
    g_free(dev->id);
    dev->id = g_strdup(id);
    dev->id_given = true;
    dev->lock.name = dev->id;
    /* The sub-locks' names follow (the machine is still being built). */
    for (DeviceLock *sub = dev->sublocks; sub; sub = sub->next_sub) {
        g_free((char *)sub->name);
        sub->name = sublock_name(dev, sub->suffix);
    }
}

void device_drain_all(void)
{
    for (QEMUDevice *dev = device_list; dev; dev = dev->next) {
        if (dev->drain) {
            dev->drain(dev);
        }
    }
}

void device_foreach(void (*fn)(QEMUDevice *dev, void *opaque), void *opaque)
{
    for (QEMUDevice *dev = device_list; dev; dev = dev->next) {
        fn(dev, opaque);
    }
}

void device_reset_all(void)
{
    /* A completion arriving after the reset would write into the state
     * the reset just cleared (and needs the lock the reset holds). */
    device_drain_all();
    for (QEMUDevice *dev = device_list; dev; dev = dev->next) {
        if (dev->reset) {
            device_lock(dev);
            dev->reset(dev);
            device_unlock(dev);
        }
    }
}

/* Serialises the readers, whose reset values it guards. A leaf: holders
 * of device locks never take it. */
static pthread_mutex_t stats_readers = PTHREAD_MUTEX_INITIALIZER;

/* A counter since its reset value; with reset, now is the new one. The
 * counters only grow, so a reading never goes below the last reset. */
static uint64_t counter_since_reset(atomic_uint_fast64_t *counter, uint64_t *at_reset,
                                    bool reset)
{
    uint64_t now = atomic_load_explicit(counter, memory_order_relaxed);
    uint64_t since = now - *at_reset;
    if (reset) {
        *at_reset = now;
    }
    return since;
}

DeviceLockStats device_lock_stats_read(DeviceLock *lock, bool reset)
{
    pthread_mutex_lock(&stats_readers);
    DeviceLockStats st = {
        .acquisitions = counter_since_reset(&lock->acquisitions, &lock->reset_acquisitions,
                                            reset),
        .contended = counter_since_reset(&lock->contended, &lock->reset_contended, reset),
        .wait_ns = counter_since_reset(&lock->wait_ns, &lock->reset_wait_ns, reset),
    };
    pthread_mutex_unlock(&stats_readers);
    return st;
}

void device_lock_foreach(void (*fn)(const char *type, DeviceLock *lock, void *opaque),
                         void *opaque)
{
    fn("(global)", &global_lock, opaque);
    for (QEMUDevice *dev = device_list; dev; dev = dev->next) {
        fn(dev->type, &dev->lock, opaque);
        for (DeviceLock *sub = dev->sublocks; sub; sub = sub->next_sub) {
            fn(dev->type, sub, opaque);
        }
    }
}

static void print_lock(const char *type, DeviceLock *lock, void *opaque)
{
    DeviceLockStats st = device_lock_stats_read(lock, false);
    fprintf(opaque, "  %-16s %-16s %12" PRIu64 " %12" PRIu64 " %14.3f\n",
            lock->name, type, st.acquisitions, st.contended, st.wait_ns / 1e6);
}

void device_lock_stats_print(FILE *out)
{
    fprintf(out, "lock statistics (device-lock=%s):\n", per_device_locking ? "on" : "off");
    fprintf(out, "  %-16s %-16s %12s %12s %14s\n", "lock", "type", "acquired",
            "contended", "wait-ms");
    device_lock_foreach(print_lock, out);
}
