/*
 * vhost's view of guest RAM: which guest-physical ranges are RAM and where
 * each lives in this process, kept by a memory listener and handed to the
 * kernel whole (VHOST_SET_MEM_TABLE) after each change of the map. The
 * kernel translates every descriptor's buffer address through it; user
 * space translates the ring addresses (VHOST_SET_VRING_ADDR takes this
 * process's addresses) through the same table, so a ring the kernel could
 * not reach is refused before the kernel is asked.
 *
 * Only RAM: MMIO and holes are left out, so a descriptor pointing at them
 * fails in the kernel (which reports it on the ring's error notifier)
 * instead of reaching a device. Ranges that meet both in guest-physical and
 * in host memory are merged, so RAM split by nothing, or cut and glued back
 * by map changes, stays one region (the kernel allows 64 by default).
 */
#ifndef HW_VIRTIO_VHOST_MEMORY_H
#define HW_VIRTIO_VHOST_MEMORY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "hw/virtio/vhost-uapi.h"
#include "exec/memory.h"

typedef struct VhostMemory VhostMemory;

/* A new table, pushed to the kernel by whoever owns the VhostMemory. Runs
 * in the listener's commit (memory listener rules: a system call is fine,
 * no device lock, no map change). table is freed after the call. */
typedef void VhostMemoryChangedFn(void *opaque, const VhostUapiMemory *table);

struct VhostMemory {
    MemoryListener listener;
    AddressSpace *as;           /* listened to, or NULL */
    /* A leaf lock: the listener (under the address space's writer lock)
     * and vhost_memory_translate (under a device lock) meet here. */
    pthread_mutex_t lock;
    GArray *sections;           /* VhostMemoryRange, as told, sorted by gpa */
    bool dirty;                 /* RAM came or went since the last commit */
    VhostMemoryChangedFn *changed;
    void *opaque;
};

typedef struct VhostMemoryRange {
    uint64_t gpa, size, hva;
} VhostMemoryRange;

void vhost_memory_init(VhostMemory *m, VhostMemoryChangedFn *changed, void *opaque);
/* Follow as's RAM; changed runs at once with the current table. */
void vhost_memory_listen(VhostMemory *m, AddressSpace *as);
/* Stop listening (if listening) and free what m holds. */
void vhost_memory_destroy(VhostMemory *m);

/* The table as the kernel takes it: merged ranges in gpa order. g_free. */
VhostUapiMemory *vhost_memory_table(VhostMemory *m);
/*
 * The host address of [gpa, gpa + len) if it lies wholly in one region of
 * the table (len > 0), else false: a ring outside RAM, across a hole, or
 * wrapping past the top of the address space.
 */
bool vhost_memory_translate(VhostMemory *m, uint64_t gpa, uint64_t len, uint64_t *hva);

#endif
