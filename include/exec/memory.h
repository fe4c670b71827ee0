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
