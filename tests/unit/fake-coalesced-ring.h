/*
 * A coalesced MMIO/PIO ring in ordinary memory, filled as KVM fills its
 * own (exec/coalesced-ring.h), for tests that put writes in the ring
 * without a vCPU: attach it with memory_coalesced_attach(ring,
 * FAKE_RING_CAPACITY) and dispatch replays it as it would KVM's.
 */
#ifndef TESTS_UNIT_FAKE_COALESCED_RING_H
#define TESTS_UNIT_FAKE_COALESCED_RING_H

#include <stdbool.h>
#include <string.h>
#include <glib.h>
#include "exec/coalesced-ring.h"

#define FAKE_RING_PAGE 4096
#define FAKE_RING_CAPACITY ((FAKE_RING_PAGE - sizeof(struct kvm_coalesced_mmio_ring)) / \
                            sizeof(struct kvm_coalesced_mmio))

static inline struct kvm_coalesced_mmio_ring *fake_ring_new(void)
{
    return g_malloc0(FAKE_RING_PAGE);
}

static inline bool fake_ring_full(struct kvm_coalesced_mmio_ring *ring)
{
    uint32_t last = __atomic_load_n(&ring->last, __ATOMIC_RELAXED);
    return (last + 1) % FAKE_RING_CAPACITY == __atomic_load_n(&ring->first, __ATOMIC_ACQUIRE);
}

/* What KVM does for a coalesced write of len bytes (at most 8) of value:
 * the entry, then `last`. The caller is the only producer and has checked
 * there is room. */
static inline void fake_ring_push(struct kvm_coalesced_mmio_ring *ring, uint64_t addr,
                                  uint64_t value, unsigned len, bool pio)
{
    uint32_t last = __atomic_load_n(&ring->last, __ATOMIC_RELAXED);
    struct kvm_coalesced_mmio *e = &ring->coalesced_mmio[last];
    e->phys_addr = addr;
    e->len = len;
    e->pio = pio;
    memcpy(e->data, &value, 8);
    __atomic_store_n(&ring->last, (last + 1) % FAKE_RING_CAPACITY, __ATOMIC_RELEASE);
}

#endif
