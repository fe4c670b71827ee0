/*
 * The driver's side of a split virtqueue, for unit tests: descriptors, the
 * available ring and the used ring written and read in a test's guest RAM
 * (host memory ram, at guest-physical address ram_base), laid out as a
 * driver lays them out. Nothing here checks anything: a test may write
 * whatever a hostile driver would.
 */
#ifndef TESTS_UNIT_VRING_DRIVER_H
#define TESTS_UNIT_VRING_DRIVER_H

#include <stdint.h>
#include <string.h>
#include <glib.h>
#include "hw/virtio/virtqueue.h"

typedef struct TestVring {
    uint8_t *ram;
    uint64_t ram_base;
    uint16_t num;
    uint64_t desc, avail, used;     /* guest-physical */
    uint16_t avail_idx;             /* the driver's next available index */
    uint16_t used_seen;             /* used elements consumed */
} TestVring;

static inline void *tv_ptr(const TestVring *tv, uint64_t gpa)
{
    return tv->ram + (gpa - tv->ram_base);
}

static inline uint16_t *tv_avail(const TestVring *tv)
{
    return tv_ptr(tv, tv->avail);
}

static inline uint16_t *tv_used_hdr(const TestVring *tv)
{
    return tv_ptr(tv, tv->used);
}

static inline VRingUsedElem *tv_used_ring(const TestVring *tv)
{
    return (VRingUsedElem *)(tv_used_hdr(tv) + 2);
}

/* A queue of num entries whose three parts start at gpa, zeroed. */
static inline void tv_init(TestVring *tv, uint8_t *ram, uint64_t ram_base, uint16_t num,
                           uint64_t gpa)
{
    *tv = (TestVring) { .ram = ram, .ram_base = ram_base, .num = num, .desc = gpa };
    tv->avail = tv->desc + vring_desc_size(num);
    tv->used = (tv->avail + vring_avail_size(num) + 3) & ~3ULL;
    memset(tv_ptr(tv, gpa), 0, tv->used + vring_used_size(num) - gpa);
}

static inline void tv_write_desc(VRingDesc *table, unsigned i, uint64_t addr, uint32_t len,
                                 uint16_t flags, uint16_t next)
{
    table[i] = (VRingDesc) { .addr = addr, .len = len, .flags = flags, .next = next };
}

static inline void tv_desc(TestVring *tv, unsigned i, uint64_t addr, uint32_t len,
                           uint16_t flags, uint16_t next)
{
    tv_write_desc(tv_ptr(tv, tv->desc), i, addr, len, flags, next);
}

/* Make head available and publish the new index. */
static inline void tv_publish(TestVring *tv, uint16_t head)
{
    tv_avail(tv)[2 + tv->avail_idx % tv->num] = head;
    tv->avail_idx++;
    __atomic_store_n(&tv_avail(tv)[1], tv->avail_idx, __ATOMIC_RELEASE);
}

/* Set the published available index directly (a hostile driver). */
static inline void tv_set_avail_idx(TestVring *tv, uint16_t idx)
{
    tv->avail_idx = idx;
    __atomic_store_n(&tv_avail(tv)[1], idx, __ATOMIC_RELEASE);
}

static inline uint16_t tv_used_idx(const TestVring *tv)
{
    return __atomic_load_n(&tv_used_hdr(tv)[1], __ATOMIC_ACQUIRE);
}

/* Fields the device reads or writes while the test runs are accessed
 * atomically, as a guest's would be by its CPU (ThreadSanitizer sees the
 * test, unlike a guest). */
static inline uint16_t tv_used_flags(const TestVring *tv)
{
    return __atomic_load_n(&tv_used_hdr(tv)[0], __ATOMIC_RELAXED);
}

/* Take the next used element; false if there is none. */
static inline bool tv_take_used(TestVring *tv, VRingUsedElem *out)
{
    if (tv_used_idx(tv) == tv->used_seen) {
        return false;
    }
    *out = tv_used_ring(tv)[tv->used_seen % tv->num];
    tv->used_seen++;
    return true;
}

static inline void tv_set_avail_flags(TestVring *tv, uint16_t flags)
{
    __atomic_store_n(&tv_avail(tv)[0], flags, __ATOMIC_RELAXED);
}

static inline void tv_set_used_event(TestVring *tv, uint16_t event)
{
    __atomic_store_n(&tv_avail(tv)[2 + tv->num], event, __ATOMIC_SEQ_CST);
}

static inline uint16_t tv_avail_event(const TestVring *tv)
{
    return __atomic_load_n((uint16_t *)&tv_used_ring(tv)[tv->num], __ATOMIC_SEQ_CST);
}

#endif
