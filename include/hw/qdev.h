/*
 * QEMUDevice: the unit of locking.
 *
 * Every device model embeds a QEMUDevice. Code that touches a device's state
 * holds the lock that device_lock() takes: the device's own mutex with
 * -machine device-lock=on (the default), or the one global mutex with
 * device-lock=off. That choice is made once, before any vCPU runs, and
 * device_lock() is the only place it matters: device code never names a
 * mutex.
 *
 * Rules (see docs/locking.md):
 *  - a thread holds at most one device lock at a time;
 *  - raising an interrupt, reading or writing guest RAM need no device lock;
 *  - never block on host I/O while holding a device lock.
 */
#ifndef HW_QDEV_H
#define HW_QDEV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct QEMUDevice QEMUDevice;

/*
 * A mutex with always-on statistics that cost no extra shared write: the
 * counters sit right after the mutex (within 64 bytes of its start) and
 * only the thread that holds the mutex writes them, with a plain load and
 * store (no locked read-modify-write), so they travel between CPUs with
 * the lock itself. Whether the acquisition waited is told by a trylock
 * first. Readers (device_lock_stats_read) only load them.
 */
typedef struct DeviceLock DeviceLock;
struct DeviceLock {
    pthread_mutex_t mutex;
    atomic_uint_fast64_t acquisitions;  /* every successful lock */
    atomic_uint_fast64_t contended;     /* acquisitions that had to wait */
    atomic_uint_fast64_t wait_ns;       /* total time spent waiting */
    const char *name;
    /* Sub-locks only (device_sublock_init): the device whose part of the
     * state this lock guards, the name's suffix ("qp0"), and the next
     * sub-lock of that device. NULL for the device and global locks. */
    QEMUDevice *owner;
    const char *suffix;
    DeviceLock *next_sub;
    /* The counters at the last reading with reset, which readings count
     * from; the readers' own, under their mutex (softmmu/qdev.c). */
    uint64_t reset_acquisitions, reset_contended, reset_wait_ns;
};

struct QEMUDevice {
    const char *type;       /* model name, as -device spells it */
    char *id;               /* unique instance name, e.g. "serial0" */
    bool id_given;          /* the user chose id (device_set_id): QEMU's qdev_id */
    DeviceLock lock;        /* taken by device_lock() with device-lock=on */
    DeviceLock *sublocks;   /* device_sublock_init, in creation order */
    /* Return to power-on state. Called with the device lock held, while all
     * vCPUs are paused. May be NULL. */
    void (*reset)(QEMUDevice *dev);
    /* Wait until the device has no host I/O in flight and no I/O thread is
     * about to touch it (e.g. thread_pool_drain on its context). Called
     * WITHOUT the device lock, which the completions need, while all vCPUs
     * are paused: before a reset, an S3 wake-up and exit. May be NULL. */
    void (*drain)(QEMUDevice *dev);
    QEMUDevice *next;       /* registry link, in creation order */
};

/* Register dev under a unique id derived from id_prefix ("serial" ->
 * "serial0", "serial1"...). type must be a string literal. */
void device_init(QEMUDevice *dev, const char *type, const char *id_prefix);

/* Choose per-device (true) or global (false) locking. Call before any
 * device_lock(); not thread-safe. Per-device is the default. */
void device_lock_set_per_device(bool per_device);
bool device_lock_is_per_device(void);

void device_lock(QEMUDevice *dev);
void device_unlock(QEMUDevice *dev);
/* How many device locks and sub-locks the calling thread holds, for the
 * assertions of what must never run under one (the coalesced drain). */
unsigned device_locks_held(void);
/* The lock device_lock(dev) takes in the current mode. */
DeviceLock *device_lock_of(QEMUDevice *dev);
/* The single global lock (taken by every device_lock() in global mode). */
DeviceLock *device_global_lock(void);

/*
 * Sub-locks: a device may guard a part of its state that one thread
 * serves on its own (a virtio-net queue pair's data path) with a lock of
 * that part, so two parts run at once. The rules (docs/locking.md,
 * "Sub-locks"): the device lock may be held when a sub-lock is taken,
 * never taken while one is held; a thread holding no device lock holds at
 * most one sub-lock; several sub-locks of one device are taken only under
 * its device lock, in creation order (a quiesce). With device-lock=off
 * every sub-lock is the global lock, as every device lock is, so that mode
 * stays the one-big-lock baseline: device_sublock_lock() takes it, and
 * device_sublock_lock_nested() (the device lock, i.e. the global one, is
 * held) takes nothing.
 *
 * device_sublock_init names lock "<device id>.<suffix>" (suffix: a string
 * that lives as long as the device) and lists it after dev's own lock in
 * the statistics. Before any vCPU runs.
 */
void device_sublock_init(QEMUDevice *dev, DeviceLock *lock, const char *suffix);
/* Holding no lock of dev: take sub-lock lock (the global lock in off mode). */
void device_sublock_lock(DeviceLock *lock);
void device_sublock_unlock(DeviceLock *lock);
/* Holding the owner's device lock: take sub-lock lock as well (nothing in
 * off mode, where the device lock held is the global one). */
void device_sublock_lock_nested(DeviceLock *lock);
void device_sublock_unlock_nested(DeviceLock *lock);

QEMUDevice *device_find(const char *id);
/* Give dev the id the user chose (-device ...,id=NAME) in place of its
 * automatic one; the caller has checked that no device has it yet. */
void device_set_id(QEMUDevice *dev, const char *id);
/* fn for every device, the machine's own too, in creation order (what
 * info qtree walks). Takes no lock: the registry only changes while the
 * machine is built. */
void device_foreach(void (*fn)(QEMUDevice *dev, void *opaque), void *opaque);
/* Drain every device (no lock held), in creation order. */
void device_drain_all(void);
/* Reset every device, each under its own lock, in creation order; drain
 * them first. */
void device_reset_all(void);

/* One lock's counters, each read atomically (the three are not one
 * snapshot: an acquisition in progress may show in one and not yet in
 * another). */
typedef struct DeviceLockStats {
    uint64_t acquisitions, contended, wait_ns;
} DeviceLockStats;

/* lock's counters since the last reading with reset (since it was
 * created, if none). With reset, the next reading counts from these
 * values: every acquisition shows in exactly one reading with reset.
 * Any thread; takes the readers' mutex (a leaf), never a device lock, so
 * a thread holding one never waits for a reader. */
DeviceLockStats device_lock_stats_read(DeviceLock *lock, bool reset);
/* fn for the global lock (type "(global)"), then each device's own lock
 * (type: the device's) followed by its sub-locks (lock->owner set; type:
 * the device's), in creation order. Takes no lock: the registry
 * only changes while the machine is built. */
void device_lock_foreach(void (*fn)(const char *type, DeviceLock *lock, void *opaque),
                         void *opaque);

/* One line per lock with its statistics (-machine lock-stats=on). */
void device_lock_stats_print(FILE *out);

#endif
