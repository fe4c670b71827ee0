/*
 * Draining KVM's coalesced ring before dispatch (exec/coalesced-ring.h).
 *
 * Why the order holds (docs/locking.md has the whole argument):
 * - One consumer at a time: drain_lock. A thread that finds the ring
 *   empty without the lock may go on: `first` moves only after an entry
 *   has been replayed, so an entry still being replayed keeps the ring
 *   non-empty and makes the thread wait for the lock.
 * - Entries are replayed through ordinary dispatch, so each takes its
 *   device's lock. drain_lock comes before any device lock: dispatch
 *   drains before it takes the target's lock, and a replay does not drain
 *   again (the thread is marked as draining).
 * - Never twice: under drain_lock an entry is replayed, then `first` moves
 *   past it; the next consumer starts from there.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <glib.h>
#include "exec/coalesced-ring.h"
#include "exec/memory.h"

#define COALESCED_ENTRY_MAX_LEN 8   /* sizeof(kvm_coalesced_mmio.data) */

static _Atomic(struct kvm_coalesced_mmio_ring *) attached_ring;
static uint32_t attached_capacity;
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local bool draining;

unsigned coalesced_ring_replay(struct kvm_coalesced_mmio_ring *ring, uint32_t capacity,
                               CoalescedReplayFn *fn, void *opaque)
{
    unsigned replayed = 0;
    uint32_t first = __atomic_load_n(&ring->first, __ATOMIC_RELAXED);  /* ours alone */
    uint32_t last;
    while ((last = __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE)) != first) {
        while (first != last) {
            const struct kvm_coalesced_mmio *entry = &ring->coalesced_mmio[first];
            if (entry->len <= COALESCED_ENTRY_MAX_LEN) {
                fn(entry, opaque);
                replayed++;
            }
            first = (first + 1) % capacity;
            __atomic_store_n(&ring->first, first, __ATOMIC_RELEASE);
        }
    }
    return replayed;
}

static void replay_through_dispatch(const struct kvm_coalesced_mmio *entry, void *opaque)
{
    address_space_write(entry->pio ? address_space_io : address_space_memory,
                        entry->phys_addr, entry->data, entry->len);
}

void memory_coalesced_attach(struct kvm_coalesced_mmio_ring *ring, uint32_t capacity)
{
    attached_capacity = capacity;
    atomic_store_explicit(&attached_ring, ring, memory_order_release);
}

void memory_coalesced_drain(void)
{
    /* drain_lock comes before every device lock, and a replay takes its
     * target's: under a device lock this could deadlock two threads. The
     * replaying thread itself calls in from dispatch, before the lock. */
    g_assert(device_locks_held() == 0);
    struct kvm_coalesced_mmio_ring *ring =
        atomic_load_explicit(&attached_ring, memory_order_acquire);
    if (!ring || draining ||
        __atomic_load_n(&ring->first, __ATOMIC_ACQUIRE) ==
        __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE)) {
        return;
    }
    pthread_mutex_lock(&drain_lock);
    draining = true;
    coalesced_ring_replay(ring, attached_capacity, replay_through_dispatch, NULL);
    draining = false;
    pthread_mutex_unlock(&drain_lock);
}
