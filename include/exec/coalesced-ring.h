/*
 * KVM's coalesced MMIO/PIO ring, as dispatch drains it
 * (softmmu/memory-coalesced.c; exec/memory.h has the region side).
 *
 * The ring is one page, VM-wide: the kernel appends at `last` (under its
 * own lock, entry first, then `last` with a release store), user space
 * consumes at `first`. The kernel reuses a slot only once `first` has moved
 * past it, and refuses to coalesce (the write exits as usual) while the
 * ring is full.
 */
#ifndef EXEC_COALESCED_RING_H
#define EXEC_COALESCED_RING_H

#include <stdint.h>
#include <linux/kvm.h>

typedef void CoalescedReplayFn(const struct kvm_coalesced_mmio *entry, void *opaque);

/*
 * Replay ring's entries in order through fn until the ring is empty, and
 * return how many there were. `last` is read with acquire (the entries
 * before it are complete), `first` advanced with release only after its
 * entry is replayed. The caller must be the only consumer. An entry
 * longer than 8 bytes, which no kernel writes, is skipped.
 */
unsigned coalesced_ring_replay(struct kvm_coalesced_mmio_ring *ring, uint32_t capacity,
                               CoalescedReplayFn *fn, void *opaque);

/* Attach the ring dispatch drains (NULL detaches); capacity is its number
 * of entries. Only while no thread dispatches (before the vCPUs start, or
 * with all of them paused). Its entries are replayed into
 * address_space_memory, or address_space_io for PIO. */
void memory_coalesced_attach(struct kvm_coalesced_mmio_ring *ring, uint32_t capacity);

#endif
