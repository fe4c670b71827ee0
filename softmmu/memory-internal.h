/*
 * What the files of the memory API share (memory.c: views and dispatch,
 * memory-listener.c: listeners, memory-fastpath.c: ioeventfds and coalesced
 * ranges a region declares); not for use outside softmmu/.
 */
#ifndef SOFTMMU_MEMORY_INTERNAL_H
#define SOFTMMU_MEMORY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <urcu/urcu-memb.h>
#include <glib.h>
#include "exec/memory.h"

typedef struct FlatRange {
    uint64_t start, last;       /* inclusive: a range may end at 2^64 - 1 */
    MemoryRegion *mr;
    uint64_t offset;            /* offset of start within mr */
} FlatRange;

typedef struct FlatView {
    struct rcu_head rcu;
    size_t nr;
    FlatRange ranges[];
} FlatView;

struct AddressSpace {
    const char *name;
    /*
     * Held by a map or unmap, and from address_space_begin() to the
     * matching commit: a transaction belongs to the thread that opened it,
     * and every other writer waits for its commit. (A shared depth counter
     * let two vCPUs' transactions overlap, and the first commit then
     * published nothing: that vCPU went back to its guest with its BAR
     * still unmapped.)
     */
    pthread_mutex_t writer_lock;
    _Atomic(const char *) transaction_owner;    /* &this_thread of the owner, or NULL */
    unsigned transaction_depth;                 /* the owner's nesting */
    GArray *mappings;           /* of Mapping, guarded by writer_lock */
    uint64_t next_seq;
    GPtrArray *listeners;       /* of MemoryListener, guarded by writer_lock */
    /* RCU-protected. Published with a release store and read with an
     * acquire load (plain moves on x86) rather than liburcu's
     * rcu_assign_pointer/rcu_dereference, whose barriers ThreadSanitizer
     * cannot see; liburcu still provides the grace periods. */
    _Atomic(FlatView *) view;
};

/* The ioeventfds of a region: an immutable array, replaced whole. */
typedef struct MemoryRegionEventfds {
    struct rcu_head rcu;
    unsigned nr;
    struct MemoryRegionEventfd {
        uint64_t offset;
        unsigned size;
        bool match_data;
        uint64_t data;
        EventNotifier *notifier;
    } entries[];
} MemoryRegionEventfds;

/* The coalesced ranges of a region, guarded by every writer lock. */
typedef struct MemoryRegionCoalescing {
    unsigned nr;
    struct MemoryRegionCoalescedRange {
        uint64_t offset, size;
    } ranges[];
} MemoryRegionCoalescing;

/* RCU (memory.c). The read side registers the calling thread on first
 * use. memory_call_rcu queues fn for after the grace period; fn starts
 * with memory_rcu_reclaim(), which tells ThreadSanitizer that every reader
 * of the object is done. */
void memory_rcu_read_lock(void);
void memory_rcu_read_unlock(void);
void memory_call_rcu(struct rcu_head *head, void (*fn)(struct rcu_head *head));
void memory_rcu_reclaim(void);

/* The writer lock, unless this thread holds it for its transaction. */
void address_space_writer_enter(AddressSpace *as);
void address_space_writer_leave(AddressSpace *as);
/* Every address space, in creation order (io before memory). Held, the
 * lock keeps the set from changing; it is taken before any writer lock. */
GPtrArray *address_spaces_lock(void);
void address_spaces_unlock(void);

/* memory-listener.c: tell as's listeners how old became new (writer lock
 * held; old may be NULL for an empty view). */
void memory_listeners_publish(AddressSpace *as, const FlatView *old, const FlatView *new);
/* Change what mr declares: with every writer lock held, its sections are
 * deleted for the listeners, change(mr, opaque) runs, and they are added
 * again. */
void memory_region_redeclare(MemoryRegion *mr, void (*change)(MemoryRegion *mr, void *opaque),
                             void *opaque);

/* memory-fastpath.c: signal the ioeventfd a write of len bytes at offset
 * matches, if any; true if it did (dispatch then skips ops->write). Call
 * outside any RCU read section. */
bool memory_region_eventfd_signal(MemoryRegion *mr, uint64_t offset, const uint8_t *buf,
                                  unsigned len);

#endif
