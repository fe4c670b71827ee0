/*
 * The memory API: regions, address spaces and dispatch.
 *
 * A MemoryRegion is either RAM (host memory, accessed without any lock),
 * I/O (read/write callbacks of the device that owns it) or a container of
 * other regions at offsets (one BAR holding several structures). Regions
 * are mapped into an AddressSpace (the port I/O space or the physical
 * memory space) at a base address and a priority. Every change of the mapping builds a new
 * immutable FlatView (sorted, non-overlapping ranges) and publishes it with
 * RCU: vCPU threads look addresses up without taking any lock and never see
 * a half-built map, even while a handler of theirs reprograms a BAR.
 *
 * Dispatch of an I/O access: lookup (RCU read side) -> device_lock(owner)
 * -> ops->read/write -> device_unlock (see RegionLocking for the two
 * exceptions). Regions live as long as their owner
 * device, which lives until the VMM exits, so the region may be used after
 * the RCU read section that found it ends.
 */
#ifndef EXEC_MEMORY_H
#define EXEC_MEMORY_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/qdev.h"
#include "qemu/event-notifier.h"

/* What dispatch locks around a region's callbacks. */
typedef enum RegionLocking {
    /* device_lock(owner): the device's own lock, or the global lock with
     * device-lock=off. The default. */
    REGION_LOCK_DEVICE = 0,
    /* The callbacks are lock-free (atomics, or a pure function of the
     * clock such as the ACPI PM timer): with device-lock=on dispatch takes
     * no lock at all; with device-lock=off they run under the global lock
     * like everything else, as under a big lock. */
    REGION_LOCK_FREE,
    /* The callbacks take the device locks they need themselves, one at a
     * time, in either mode (the PCI configuration ports: the host bridge's
     * latch, then the target function). */
    REGION_LOCK_BY_HANDLER,
} RegionLocking;

typedef struct MemoryRegionOps {
    /* offset is relative to the region's start; size is 1, 2, 4 or 8. */
    uint64_t (*read)(void *opaque, uint64_t offset, unsigned size);
    void (*write)(void *opaque, uint64_t offset, uint64_t value, unsigned size);
    /* Wider accesses are split into little-endian pieces of this size
     * (1, 2, 4 or 8; 0 means 8). */
    unsigned max_access_size;
    RegionLocking locking;
} MemoryRegionOps;

typedef struct AddressSpace AddressSpace;

typedef struct MemoryRegion {
    const char *name;
    QEMUDevice *owner;          /* whose lock guards ops; NULL for RAM */
    const MemoryRegionOps *ops; /* NULL for RAM and containers */
    void *opaque;
    uint64_t size;
    uint8_t *ram;               /* host memory of a RAM region, else NULL */
    /* Nothing here is written on dispatch: a region is read by every vCPU
     * that hits it, and a counter would bounce its cache line between them
     * (a lock-free region must write no shared memory). */

    /* The region tree, read only when a flat view is rendered. Written
     * under the writer lock of the address space its root is mapped in,
     * or by the owner alone while the tree is not mapped (see
     * memory_region_add_subregion). */
    bool is_container;
    struct MemoryRegion *subregions;    /* a container's children, newest first */
    struct MemoryRegion *container;     /* the container this region is in, or NULL */
    struct MemoryRegion *next_sibling;
    uint64_t container_offset;
    int container_priority;
    AddressSpace *mapped_in;    /* where this region is mapped as a root */
    /* The fast paths the region declares (below): changed only by
     * memory_region_add/del_eventfd and memory_region_add_coalescing. The
     * eventfd list is replaced whole and read by dispatch under RCU; the
     * coalesced ranges are read by memory listeners under the writer lock. */
    _Atomic(struct MemoryRegionEventfds *) eventfds;
    struct MemoryRegionCoalescing *coalescing;
} MemoryRegion;

void memory_region_init_io(MemoryRegion *mr, QEMUDevice *owner,
                           const MemoryRegionOps *ops, void *opaque,
                           const char *name, uint64_t size);
void memory_region_init_ram(MemoryRegion *mr, const char *name,
                            uint64_t size, uint8_t *host);

/*
 * Containers: a region made of subregions, so that one PCI BAR can hold
 * several structures (virtio-pci's common, notify, ISR and device config
 * and the MSI-X table and PBA, each with its own callbacks).
 *
 * A container has no callbacks and no memory of its own. It is rendered
 * into the flat view as its children, each at the container's base plus
 * its offset and clipped to the container's size; containers nest. Among
 * overlapping children the higher priority wins, and at equal priority the
 * one added later. Priorities only order siblings: the container as a
 * whole competes with the regions around it by its own priority (its
 * mapping's, or its own as a subregion). It claims its whole range: holes
 * between its children are unassigned, even over a region of lower
 * priority, as a BAR decodes all of its addresses.
 *
 * Every child keeps its owner, ops and locking: an access is dispatched to
 * the child that the flat view shows, under the child's owner's lock (or
 * none, for REGION_LOCK_FREE and REGION_LOCK_BY_HANDLER children), exactly
 * as if the child were mapped on its own. The container's owner is only
 * what pci_register_bar() checks.
 *
 * Mapping a container maps its children; moving it (unmap and map, inside
 * one transaction) moves them all at once. Adding or removing a subregion
 * of a container whose tree is mapped publishes a new flat view right away
 * under the address space's writer lock (or at the outermost commit, inside
 * a transaction), so readers see the child either wholly there or wholly
 * gone. The caller must keep the tree from being mapped or unmapped by
 * another thread meanwhile: device code changes its BAR's tree under its
 * own device lock, the lock its BAR moves happen under.
 */
void memory_region_init_container(MemoryRegion *mr, QEMUDevice *owner,
                                  const char *name, uint64_t size);
/* Put child (not mapped, in no other container) at offset (< container's
 * size) of container; the part beyond the container's end is clipped. */
void memory_region_add_subregion(MemoryRegion *container, uint64_t offset,
                                 MemoryRegion *child, int priority);
void memory_region_del_subregion(MemoryRegion *container, MemoryRegion *child);

AddressSpace *address_space_new(const char *name);
void address_space_free(AddressSpace *as);  /* no reader may remain */

/* The two address spaces of the machine, created by memory_init(). */
extern AddressSpace *address_space_io;
extern AddressSpace *address_space_memory;
void memory_init(void);

/*
 * Map mr at base. Where mappings overlap the higher priority wins; at equal
 * priority the later mapping wins. Changes publish a new FlatView at once,
 * unless made between address_space_begin() and address_space_commit(),
 * which publish them together when the caller's outermost commit returns.
 * Mapping changes are serialized by a writer mutex of the address space,
 * which a transaction holds from begin to commit: another thread's change
 * waits for it. They may be made from any thread, including from inside an
 * I/O handler. A thread that opens transactions on both address spaces
 * opens io before memory (hw/pci/pci.c), so that two such threads cannot
 * wait for each other.
 */
void address_space_map(AddressSpace *as, MemoryRegion *mr, uint64_t base, int priority);
void address_space_unmap(AddressSpace *as, MemoryRegion *mr);
void address_space_begin(AddressSpace *as);
void address_space_commit(AddressSpace *as);

typedef enum {
    MEMTX_OK = 0,
    MEMTX_UNASSIGNED = 1,   /* (part of) the access hit no region */
} MemTxResult;

/*
 * Access len bytes at addr. I/O regions are dispatched under their owner's
 * lock (the caller must hold no device lock); RAM is copied directly.
 * Unassigned reads return all ones; unassigned writes are dropped.
 * Accesses that span several ranges are split at range boundaries.
 */
MemTxResult address_space_read(AddressSpace *as, uint64_t addr, void *buf, uint64_t len);
MemTxResult address_space_write(AddressSpace *as, uint64_t addr, const void *buf, uint64_t len);
/*
 * The same access of size bytes at addr, count times, buf advancing by
 * size each time: a string PIO instruction (rep ins/outs), which arrives as
 * one exit. When the access falls in one device region, the region is
 * looked up once and its device lock taken once for all the elements (an
 * IDE sector by PIO is 256 of them); otherwise each element is dispatched
 * on its own.
 */
MemTxResult address_space_rw_repeated(AddressSpace *as, uint64_t addr, void *buf,
                                      unsigned size, uint32_t count, bool is_write);

/* The region at addr and addr's offset in it, or NULL (for tests and for
 * callers that need to know what an address decodes to). Never a
 * container: the subregion that decodes addr, or NULL in a hole. */
MemoryRegion *address_space_lookup(AddressSpace *as, uint64_t addr, uint64_t *offset);
/* The region mapped with address_space_map() (a container, not one of its
 * subregions) that decides what addr decodes to, or NULL: whether a BAR is
 * hidden by another mapping, holes of a container BAR included. Takes the
 * writer lock: not for the dispatch path. */
MemoryRegion *address_space_lookup_mapping(AddressSpace *as, uint64_t addr);

/*
 * ---- Memory listeners ----
 *
 * A listener mirrors an address space's map somewhere else (KVM's memory
 * slots, ioeventfds and coalesced zones; later vhost's memory table). It
 * sees the map as sections: a range of the address space [base, base +
 * size) showing mr from offset on, one per range of the flat view.
 *
 * Each time a map change is published (a map or unmap outside a
 * transaction, or the outermost commit), the listeners of that address
 * space are told the difference between the old view and the new one:
 * first region_del for every section that went away, then region_add for
 * every section that appeared, each in ascending address order; a section
 * that stayed exactly as it was is not mentioned. A moved BAR is a del at
 * the old address and an add at the new one; a region whose declared
 * fast paths change (memory_region_add_eventfd...) is a del and an add of
 * each of its sections.
 *
 * Callbacks run on the thread that made the change, with the address
 * space's writer lock held, after the new view is published (a vCPU that
 * meets the address meanwhile is dispatched as the new view says), and
 * possibly with that thread's device lock held (a BAR moved by a config
 * write). So a listener may make system calls (KVM ioctls), allocate and
 * log, and must not take a device lock, change a map, register listeners,
 * declare fast paths, or drain coalesced writes.
 */
typedef struct MemoryRegionSection {
    MemoryRegion *mr;
    uint64_t base;              /* address in the address space */
    uint64_t size;              /* bytes */
    uint64_t offset;            /* of base within mr */
} MemoryRegionSection;

typedef struct MemoryListener MemoryListener;
struct MemoryListener {
    void (*region_add)(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s);
    void (*region_del)(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s);
    /* After the dels and adds of one change (a publish, a register,
     * unregister or replay, a re-declaration), same rules: a mirror that
     * must be handed over whole (vhost's memory table) never shows the
     * half-done state between a del and its add. May be NULL. */
    void (*commit)(MemoryListener *l, AddressSpace *as);
};

/* Listen to as; region_add is called at once for every current section.
 * One listener may listen to several address spaces. */
void memory_listener_register(MemoryListener *l, AddressSpace *as);
/* Stop listening; region_del is called for every current section. */
void memory_listener_unregister(MemoryListener *l, AddressSpace *as);
/* region_add for every current section again, for a listener whose mirror
 * was lost (the VM fd re-created on reset). */
void memory_listener_replay(MemoryListener *l, AddressSpace *as);

/*
 * ---- Fast paths a region declares ----
 *
 * ioeventfd: a guest write of exactly size bytes at offset (with
 * match_data: whose value is data) signals e instead of calling
 * ops->write; size 0 means a write of any width at offset, without
 * match_data (KVM_CAP_IOEVENTFD_ANY_LENGTH; KVM handles such MMIO writes
 * without decoding the instruction, its fastest exit). Under KVM with KVM_CAP_IOEVENTFD the kernel signals it and
 * the vCPU goes straight back to the guest; the device consumes e on a
 * thread of its choice. Wherever KVM does not (no capability, no KVM, a
 * PIO doorbell of 8 bytes, a section being moved) dispatch signals e
 * itself: the same behaviour, slower. size is 0, 1, 2, 4 or 8; data fits
 * in size bytes. Called at realize or under the owner's device lock, never
 * from a listener nor inside an address-space transaction. del removes
 * exactly what add added; e stays open as long as the device lives.
 */
void memory_region_add_eventfd(MemoryRegion *mr, uint64_t offset, unsigned size,
                               bool match_data, uint64_t data, EventNotifier *e);
void memory_region_del_eventfd(MemoryRegion *mr, uint64_t offset, unsigned size,
                               bool match_data, uint64_t data, EventNotifier *e);
/*
 * Writes the calling thread dispatched that an ioeventfd matched, so that
 * dispatch signalled it in user space. On a vCPU thread each is an exit
 * to user space that KVM should have kept in the kernel; 0 for every
 * thread that only ever met ioeventfds KVM handles. Thread-local: no
 * thread writes another's count.
 */
uint64_t memory_eventfd_user_signals(void);

/*
 * Coalesced writes: writes to [offset, offset + size) of mr need no
 * immediate answer, so KVM may queue them in its coalesced MMIO/PIO ring
 * (KVM_CAP_COALESCED_MMIO / _PIO) and let the vCPU run on. They reach
 * ops->write later, in the order the guest made them, under the device
 * lock as usual: dispatch replays the ring before every I/O access it
 * dispatches and after every exit, so no other access to the device can
 * overtake them. Reads of the range are dispatched as usual. Same calling
 * rules as memory_region_add_eventfd.
 */
void memory_region_add_coalescing(MemoryRegion *mr, uint64_t offset, uint64_t size);

/*
 * For listeners (with the writer lock held, as in their callbacks): the
 * ioeventfds of s->mr that lie wholly in s, and the parts of its coalesced
 * ranges that s shows, at their addresses in the address space.
 */
typedef struct SectionEventfd {
    uint64_t addr;
    unsigned size;              /* 0: any width */
    bool match_data;
    uint64_t data;
    EventNotifier *notifier;
} SectionEventfd;
typedef void SectionEventfdFn(const SectionEventfd *e, void *opaque);
typedef void SectionRangeFn(uint64_t addr, uint64_t size, void *opaque);
void memory_section_for_each_eventfd(const MemoryRegionSection *s, SectionEventfdFn *fn,
                                     void *opaque);
void memory_section_for_each_coalesced(const MemoryRegionSection *s, SectionRangeFn *fn,
                                       void *opaque);

/*
 * Replay the coalesced writes held back so far (softmmu/memory-coalesced.c).
 * Dispatch calls it before each I/O access; a device's own thread (an
 * ioeventfd consumer, say) calls it before taking its device lock when it
 * reads state that coalesced writes change. Call it with no device lock
 * held: it takes the targets' locks. Cheap when nothing is held back.
 */
void memory_coalesced_drain(void);

/*
 * DMA from devices: guest RAM only, no lock needed. A transfer that is not
 * entirely RAM is refused (returns false), logged as a guest error and
 * counted: dispatching it to MMIO from inside a device's lock could
 * deadlock two devices (docs/locking.md).
 */
bool dma_memory_read(uint64_t addr, void *buf, uint64_t len);
bool dma_memory_write(uint64_t addr, const void *buf, uint64_t len);
/* Host pointer to [addr, addr + len) if it is all in one RAM range. */
void *dma_memory_map(uint64_t addr, uint64_t len);
/* Host pointer to the guest RAM at addr, or NULL if addr is not RAM, with
 * *len cut to the bytes (at most *len) that continue in the same RAM range:
 * the step that scatter-gather helpers (sysemu/dma.h) repeat. Counts
 * nothing: the helper decides whether the transfer is refused. */
void *dma_memory_translate(uint64_t addr, uint64_t *len);
/* Count a refused transfer; the helper that refuses it logs why. */
void dma_count_refused(void);
uint64_t dma_refused_count(void);

#endif
