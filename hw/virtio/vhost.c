/*
 * A vhost device's common part (hw/virtio/vhost.h): the vhost uAPI calls
 * every kind of vhost device makes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "hw/virtio/vhost.h"
#include "hw/virtio/virtqueue.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/thread-sched.h"

/* hw/virtio/vhost-uapi.h spells the kernel's ABI under names of its own;
 * here, where <linux/vhost.h> clashes with nothing, it is checked. */
#include <linux/vhost.h>
#define SAME_LAYOUT(ours, theirs, field) \
    _Static_assert(offsetof(ours, field) == offsetof(theirs, field), #field)
_Static_assert(VHOST_UAPI_GET_FEATURES == VHOST_GET_FEATURES, "ioctl");
_Static_assert(VHOST_UAPI_SET_FEATURES == VHOST_SET_FEATURES, "ioctl");
_Static_assert(VHOST_UAPI_SET_OWNER == VHOST_SET_OWNER, "ioctl");
_Static_assert(VHOST_UAPI_SET_MEM_TABLE == VHOST_SET_MEM_TABLE, "ioctl");
_Static_assert(VHOST_UAPI_SET_VRING_NUM == VHOST_SET_VRING_NUM, "ioctl");
_Static_assert(VHOST_UAPI_SET_VRING_ADDR == VHOST_SET_VRING_ADDR, "ioctl");
_Static_assert(VHOST_UAPI_SET_VRING_BASE == VHOST_SET_VRING_BASE, "ioctl");
_Static_assert(VHOST_UAPI_GET_VRING_BASE == VHOST_GET_VRING_BASE, "ioctl");
_Static_assert(VHOST_UAPI_SET_VRING_KICK == VHOST_SET_VRING_KICK, "ioctl");
_Static_assert(VHOST_UAPI_SET_VRING_CALL == VHOST_SET_VRING_CALL, "ioctl");
_Static_assert(VHOST_UAPI_SET_VRING_ERR == VHOST_SET_VRING_ERR, "ioctl");
_Static_assert(VHOST_UAPI_SET_VRING_BUSYLOOP_TIMEOUT == VHOST_SET_VRING_BUSYLOOP_TIMEOUT, "ioctl");
_Static_assert(VHOST_UAPI_GET_VRING_BUSYLOOP_TIMEOUT == VHOST_GET_VRING_BUSYLOOP_TIMEOUT, "ioctl");
_Static_assert(VHOST_UAPI_NET_SET_BACKEND == VHOST_NET_SET_BACKEND, "ioctl");
_Static_assert(VHOST_UAPI_FILE_UNBIND == VHOST_FILE_UNBIND, "unbind");
_Static_assert(VHOST_UAPI_NET_F_VIRTIO_NET_HDR == VHOST_NET_F_VIRTIO_NET_HDR, "feature");
_Static_assert(sizeof(VhostUapiVringAddr) == sizeof(struct vhost_vring_addr), "size");
SAME_LAYOUT(VhostUapiVringAddr, struct vhost_vring_addr, desc_user_addr);
SAME_LAYOUT(VhostUapiVringAddr, struct vhost_vring_addr, used_user_addr);
SAME_LAYOUT(VhostUapiVringAddr, struct vhost_vring_addr, avail_user_addr);
SAME_LAYOUT(VhostUapiVringAddr, struct vhost_vring_addr, log_guest_addr);
_Static_assert(sizeof(VhostUapiVringFile) == sizeof(struct vhost_vring_file), "size");
SAME_LAYOUT(VhostUapiVringFile, struct vhost_vring_file, fd);
_Static_assert(sizeof(VhostUapiVringState) == sizeof(struct vhost_vring_state), "size");
SAME_LAYOUT(VhostUapiVringState, struct vhost_vring_state, num);
_Static_assert(sizeof(VhostUapiMemory) == sizeof(struct vhost_memory), "size");
SAME_LAYOUT(VhostUapiMemory, struct vhost_memory, regions);
_Static_assert(sizeof(VhostUapiMemoryRegion) == sizeof(struct vhost_memory_region), "size");
SAME_LAYOUT(VhostUapiMemoryRegion, struct vhost_memory_region, memory_size);
SAME_LAYOUT(VhostUapiMemoryRegion, struct vhost_memory_region, userspace_addr);

static void vhost_memory_changed(void *opaque, const VhostUapiMemory *table)
{
    VhostDev *d = opaque;
    bool failed = ioctl(d->fd, VHOST_UAPI_SET_MEM_TABLE, table) < 0;
    if (failed) {
        /* Too many regions (the kernel's max_mem_regions), most likely:
         * the rings cannot start, and vhost_dev_start says so. */
        error_report("%s: VHOST_SET_MEM_TABLE with %" PRIu32 " regions: %s", d->name,
                     table->nregions, g_strerror(errno));
    }
    atomic_store(&d->mem_failed, failed);
}

/* The kernel met a guest error on a ring (a descriptor outside RAM, a
 * looping chain...): it stops serving it until the next kick. */
static void vhost_ring_error(EventNotifier *e)
{
    if (event_notifier_test_and_clear(e)) {
        qemu_log_mask(LOG_GUEST_ERROR, "vhost: the kernel refused a ring's contents "
                      "(notifier fd %d)\n", e->fd);
    }
}

static void vhost_rings_free(VhostDev *d)
{
    for (unsigned i = 0; i < d->nrings; i++) {
        event_notifier_cleanup(&d->rings[i].kick);
        event_notifier_cleanup(&d->rings[i].err);
    }
    g_free(d->rings);
    d->rings = NULL;
}

static bool vhost_rings_new(VhostDev *d, Error **errp)
{
    d->rings = g_new0(VhostRing, d->nrings);
    bool ok = true;
    /* Each one is tried, so that every fd is valid or -1 for the cleanup. */
    for (unsigned i = 0; i < d->nrings; i++) {
        ok = event_notifier_init(&d->rings[i].kick, ok ? errp : NULL) && ok;
        ok = event_notifier_init(&d->rings[i].err, ok ? errp : NULL) && ok;
    }
    if (!ok) {
        vhost_rings_free(d);
        return false;
    }
    for (unsigned i = 0; i < d->nrings; i++) {
        event_notifier_set_handler(&d->rings[i].err, main_loop_context(), vhost_ring_error);
    }
    return true;
}

bool vhost_dev_init(VhostDev *d, int fd, unsigned nrings, const char *name, Error **errp)
{
    *d = (VhostDev) { .fd = fd, .name = g_strdup(name), .nrings = nrings };
    if (ioctl(fd, VHOST_UAPI_SET_OWNER) < 0) {
        error_setg_errno(errp, errno, "%s: VHOST_SET_OWNER", name);
        goto fail;
    }
    /* Its worker exists now: kicks wake it as they wake our main loop. */
    thread_sched_vhost_workers();
    if (ioctl(fd, VHOST_UAPI_GET_FEATURES, &d->features) < 0) {
        error_setg_errno(errp, errno, "%s: VHOST_GET_FEATURES", name);
        goto fail;
    }
    if (!vhost_rings_new(d, errp)) {
        goto fail;
    }
    vhost_memory_init(&d->mem, vhost_memory_changed, d);
    vhost_memory_listen(&d->mem, address_space_memory);
    return true;

fail:
    close(fd);
    g_free(d->name);
    d->fd = -1;
    return false;
}

void vhost_dev_cleanup(VhostDev *d)
{
    vhost_memory_destroy(&d->mem);
    vhost_rings_free(d);
    close(d->fd);
    d->fd = -1;
    g_free(d->name);
    d->name = NULL;
}

static bool ring_part_addr(VhostMemory *mem, const char *what, unsigned index, uint64_t gpa,
                           uint64_t len, uint64_t *hva, Error **errp)
{
    if (!vhost_memory_translate(mem, gpa, len, hva)) {
        error_setg(errp, "ring %u: %s at 0x%" PRIx64 " (0x%" PRIx64 " bytes) is not in RAM",
                   index, what, gpa, len);
        return false;
    }
    return true;
}

bool vhost_ring_addr(VhostMemory *mem, unsigned index, const VhostRingSetup *setup,
                     VhostUapiVringAddr *addr, Error **errp)
{
    uint64_t desc, avail, used;
    if (!ring_part_addr(mem, "descriptor table", index, setup->desc,
                        vring_desc_size(setup->num), &desc, errp) ||
        !ring_part_addr(mem, "available ring", index, setup->avail,
                        vring_avail_size(setup->num), &avail, errp) ||
        !ring_part_addr(mem, "used ring", index, setup->used,
                        vring_used_size(setup->num), &used, errp)) {
        return false;
    }
    *addr = (VhostUapiVringAddr) {
        .index = index,
        .desc_user_addr = desc,
        .avail_user_addr = avail,
        .used_user_addr = used,
    };
    return true;
}

static bool vhost_ioctl(VhostDev *d, unsigned long request, const char *what, void *arg,
                        Error **errp)
{
    if (ioctl(d->fd, request, arg) < 0) {
        error_setg_errno(errp, errno, "%s: %s", d->name, what);
        return false;
    }
    return true;
}

static bool vhost_ring_start(VhostDev *d, unsigned i, const VhostRingSetup *setup,
                             Error **errp)
{
    VhostUapiVringAddr addr;
    if (!vhost_ring_addr(&d->mem, i, setup, &addr, errp)) {
        error_prepend(errp, "%s: ", d->name);
        return false;
    }
    VhostUapiVringState num = { .index = i, .num = setup->num };
    VhostUapiVringState base = { .index = i, .num = setup->last_avail_idx };
    VhostUapiVringFile kick = { .index = i, .fd = d->rings[i].kick.fd };
    VhostUapiVringFile call = { .index = i, .fd = setup->call->fd };
    VhostUapiVringFile err = { .index = i, .fd = d->rings[i].err.fd };
    /* Only when asked for, as QEMU: a new vhost fd's rings poll for 0 us,
     * and kernels before 4.6 lack the call. */
    VhostUapiVringState busyloop = { .index = i, .num = setup->busyloop_us };
    return vhost_ioctl(d, VHOST_UAPI_SET_VRING_NUM, "VHOST_SET_VRING_NUM", &num, errp) &&
           vhost_ioctl(d, VHOST_UAPI_SET_VRING_BASE, "VHOST_SET_VRING_BASE", &base, errp) &&
           vhost_ioctl(d, VHOST_UAPI_SET_VRING_ADDR, "VHOST_SET_VRING_ADDR", &addr, errp) &&
           vhost_ioctl(d, VHOST_UAPI_SET_VRING_KICK, "VHOST_SET_VRING_KICK", &kick, errp) &&
           vhost_ioctl(d, VHOST_UAPI_SET_VRING_CALL, "VHOST_SET_VRING_CALL", &call, errp) &&
           vhost_ioctl(d, VHOST_UAPI_SET_VRING_ERR, "VHOST_SET_VRING_ERR", &err, errp) &&
           (!setup->busyloop_us ||
            vhost_ioctl(d, VHOST_UAPI_SET_VRING_BUSYLOOP_TIMEOUT,
                        "VHOST_SET_VRING_BUSYLOOP_TIMEOUT", &busyloop, errp));
}

bool vhost_dev_start(VhostDev *d, uint64_t features, const VhostRingSetup *setup,
                     Error **errp)
{
    if (atomic_load(&d->mem_failed)) {
        error_setg(errp, "%s: the kernel refused the memory table", d->name);
        return false;
    }
    if (!vhost_ioctl(d, VHOST_UAPI_SET_FEATURES, "VHOST_SET_FEATURES", &features, errp)) {
        return false;
    }
    for (unsigned i = 0; i < d->nrings; i++) {
        if (!vhost_ring_start(d, i, &setup[i], errp)) {
            return false;
        }
    }
    return true;
}

void vhost_dev_stop(VhostDev *d, uint16_t *last_avail)
{
    for (unsigned i = 0; i < d->nrings; i++) {
        VhostUapiVringState state = { .index = i };
        Error *err = NULL;
        if (vhost_ioctl(d, VHOST_UAPI_GET_VRING_BASE, "VHOST_GET_VRING_BASE", &state, &err)) {
            last_avail[i] = state.num;
        } else {
            /* Only with a broken fd; the ring's index stays as it was. */
            error_report_err(err);
        }
    }
}
