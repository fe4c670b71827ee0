/*
 * The part of Linux's vhost uAPI this VMM uses (Documentation/virt and
 * include/uapi/linux/vhost.h, vhost_types.h: the kernel's ABI), under
 * names of our own: <linux/vhost.h> pulls <linux/virtio_config.h>, whose
 * VIRTIO_* macros clash with hw/virtio/virtio.h's. hw/virtio/vhost.c checks
 * every value and layout here against <linux/vhost.h> at compile time.
 */
#ifndef HW_VIRTIO_VHOST_UAPI_H
#define HW_VIRTIO_VHOST_UAPI_H

#include <stdint.h>
#include <sys/ioctl.h>

typedef struct VhostUapiVringState {
    uint32_t index;
    uint32_t num;
} VhostUapiVringState;

typedef struct VhostUapiVringFile {
    uint32_t index;
    int32_t fd;                 /* VHOST_UAPI_FILE_UNBIND: none */
} VhostUapiVringFile;

/* Ring addresses are this process's (user) addresses. */
typedef struct VhostUapiVringAddr {
    uint32_t index;
    uint32_t flags;             /* bit 0: log used ring writes (not used) */
    uint64_t desc_user_addr;
    uint64_t used_user_addr;
    uint64_t avail_user_addr;
    uint64_t log_guest_addr;
} VhostUapiVringAddr;

typedef struct VhostUapiMemoryRegion {
    uint64_t guest_phys_addr;
    uint64_t memory_size;
    uint64_t userspace_addr;
    uint64_t flags_padding;
} VhostUapiMemoryRegion;

typedef struct VhostUapiMemory {
    uint32_t nregions;
    uint32_t padding;
    VhostUapiMemoryRegion regions[];
} VhostUapiMemory;

#define VHOST_UAPI_TYPE                 0xAF
#define VHOST_UAPI_GET_FEATURES         _IOR(VHOST_UAPI_TYPE, 0x00, uint64_t)
#define VHOST_UAPI_SET_FEATURES         _IOW(VHOST_UAPI_TYPE, 0x00, uint64_t)
#define VHOST_UAPI_SET_OWNER            _IO(VHOST_UAPI_TYPE, 0x01)
#define VHOST_UAPI_SET_MEM_TABLE        _IOW(VHOST_UAPI_TYPE, 0x03, VhostUapiMemory)
#define VHOST_UAPI_SET_VRING_NUM        _IOW(VHOST_UAPI_TYPE, 0x10, VhostUapiVringState)
#define VHOST_UAPI_SET_VRING_ADDR       _IOW(VHOST_UAPI_TYPE, 0x11, VhostUapiVringAddr)
#define VHOST_UAPI_SET_VRING_BASE       _IOW(VHOST_UAPI_TYPE, 0x12, VhostUapiVringState)
#define VHOST_UAPI_GET_VRING_BASE       _IOWR(VHOST_UAPI_TYPE, 0x12, VhostUapiVringState)
#define VHOST_UAPI_SET_VRING_KICK       _IOW(VHOST_UAPI_TYPE, 0x20, VhostUapiVringFile)
#define VHOST_UAPI_SET_VRING_CALL       _IOW(VHOST_UAPI_TYPE, 0x21, VhostUapiVringFile)
#define VHOST_UAPI_SET_VRING_ERR        _IOW(VHOST_UAPI_TYPE, 0x22, VhostUapiVringFile)
/* How long (microseconds) the kernel's worker polls the ring and its
 * backend before it waits for a kick (Linux 4.6+). */
#define VHOST_UAPI_SET_VRING_BUSYLOOP_TIMEOUT _IOW(VHOST_UAPI_TYPE, 0x23, VhostUapiVringState)
#define VHOST_UAPI_GET_VRING_BUSYLOOP_TIMEOUT _IOW(VHOST_UAPI_TYPE, 0x24, VhostUapiVringState)
#define VHOST_UAPI_NET_SET_BACKEND      _IOW(VHOST_UAPI_TYPE, 0x30, VhostUapiVringFile)

#define VHOST_UAPI_FILE_UNBIND          (-1)
/* vhost-net adds the virtio_net_hdr on receive and strips it on transmit
 * (the socket has none). The same bit is virtio's ANY_LAYOUT. */
#define VHOST_UAPI_NET_F_VIRTIO_NET_HDR 27

#endif
