/*
 * Linux's tun/tap driver (net/tap-linux.h). The ioctls are the kernel's
 * (Documentation/networking/tuntap.rst and <linux/if_tun.h>).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>
#include "net/vnet-hdr.h"
#include "tap-linux.h"

#define TUN_DEVICE "/dev/net/tun"

static bool tap_set_nonblocking(int fd, Error **errp)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        error_setg_errno(errp, errno, "cannot make the tap fd %d non-blocking", fd);
        return false;
    }
    return true;
}

/* What this kernel's tun driver can do (0 on a kernel too old to say). */
static unsigned tap_kernel_features(int fd)
{
    unsigned features = 0;
    return ioctl(fd, TUNGETFEATURES, &features) < 0 ? 0 : features;
}

/*
 * A tap with IFF_VNET_HDR must take both header lengths a NIC may ask for
 * (10 bytes, 12 with mergeable buffers or virtio 1.x): a NIC told it has
 * a header would otherwise read frames with a header of the wrong size.
 * Tried here, once, so a NIC is never told so of a tap that cannot.
 * Leaves the tap at 10 bytes and no offloads: the kernel segments and
 * checksums everything it hands us until a NIC says its guest takes more
 * (tap_set_offload). False with errno from TUNSETVNETHDRSZ.
 */
static bool tap_reset_vnet_hdr(int fd)
{
    static const NetOffloads none;
    if (!tap_set_vnet_hdr_len(fd, VIRTIO_NET_HDR_LEN) ||
        !tap_set_vnet_hdr_len(fd, VIRTIO_NET_HDR_LEN_SHORT)) {
        return false;
    }
    tap_set_offload(fd, &none);
    return true;
}

static void tap_vnet_hdr_error(Error **errp, const char *whose)
{
    error_setg_errno(errp, errno, "%s: the tap cannot set its virtio-net header length "
                     "(TUNSETVNETHDRSZ)", whose);
}

int tap_open(char ifname[IFNAMSIZ], TapVnetHdrRequest request, bool multi_queue,
             bool *vnet_hdr, Error **errp)
{
    int fd = open(TUN_DEVICE, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        error_setg_errno(errp, errno, "could not open " TUN_DEVICE);
        return -1;
    }
    unsigned features = tap_kernel_features(fd);
    struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
    *vnet_hdr = false;
    if (request == TAP_VNET_HDR_ON && !(features & IFF_VNET_HDR)) {
        error_setg(errp, "vnet_hdr=1 requested, but no kernel support for IFF_VNET_HDR "
                   "available");
        goto fail;
    }
    if (request != TAP_VNET_HDR_OFF && (features & IFF_VNET_HDR)) {
        ifr.ifr_flags |= IFF_VNET_HDR;
        *vnet_hdr = true;
    }
    if (multi_queue) {
        if (!(features & IFF_MULTI_QUEUE)) {
            error_setg(errp, "multiqueue tap requested, but no kernel support for "
                       "IFF_MULTI_QUEUE available");
            goto fail;
        }
        ifr.ifr_flags |= IFF_MULTI_QUEUE;
    }
    g_strlcpy(ifr.ifr_name, ifname, IFNAMSIZ);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        error_setg_errno(errp, errno, "could not configure " TUN_DEVICE " (%s)",
                         ifname[0] ? ifname : "tap%d");
        goto fail;
    }
    g_strlcpy(ifname, ifr.ifr_name, IFNAMSIZ);
    if (*vnet_hdr && !tap_reset_vnet_hdr(fd)) {
        if (request == TAP_VNET_HDR_ON) {
            tap_vnet_hdr_error(errp, "vnet_hdr=on");
            goto fail;
        }
        /* As QEMU without vnet_hdr=: no header, so no offloads for the
         * NIC. IFF_VNET_HDR cannot be taken off an fd: open it again. */
        close(fd);
        return tap_open(ifname, TAP_VNET_HDR_OFF, multi_queue, vnet_hdr, errp);
    }
    if (!tap_set_nonblocking(fd, errp)) {
        goto fail;
    }
    return fd;

fail:
    close(fd);
    return -1;
}

bool tap_adopt_fd(int fd, char ifname[IFNAMSIZ], bool *vnet_hdr, Error **errp)
{
    struct ifreq ifr = { 0 };
    if (ioctl(fd, TUNGETIFF, &ifr) < 0) {
        error_setg_errno(errp, errno, "file descriptor %d is not a tap device", fd);
        return false;
    }
    if ((ifr.ifr_flags & (IFF_TAP | IFF_TUN)) != IFF_TAP || !(ifr.ifr_flags & IFF_NO_PI)) {
        error_setg(errp, "file descriptor %d is not a tap opened with IFF_NO_PI", fd);
        return false;
    }
    g_strlcpy(ifname, ifr.ifr_name, IFNAMSIZ);
    *vnet_hdr = ifr.ifr_flags & IFF_VNET_HDR;
    if (*vnet_hdr && !tap_reset_vnet_hdr(fd)) {
        /* The caller chose IFF_VNET_HDR, and it cannot be taken off. */
        g_autofree char *whose = g_strdup_printf("file descriptor %d", fd);
        tap_vnet_hdr_error(errp, whose);
        return false;
    }
    return tap_set_nonblocking(fd, errp);
}

bool tap_set_vnet_hdr_len(int fd, unsigned len)
{
    int size = len;
    return ioctl(fd, TUNSETVNETHDRSZ, &size) == 0;
}

bool tap_set_queue_attached(int fd, bool attached)
{
    struct ifreq ifr = { .ifr_flags = attached ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE };
    return ioctl(fd, TUNSETQUEUE, &ifr) == 0;
}

void tap_set_offload(int fd, const NetOffloads *offloads)
{
    unsigned flags = 0;
    if (offloads->csum) {
        /* Segmentation needs checksum offload: the kernel refuses TSO alone. */
        flags = TUN_F_CSUM | (offloads->tso4 ? TUN_F_TSO4 : 0) |
                (offloads->tso6 ? TUN_F_TSO6 : 0) | (offloads->ecn ? TUN_F_TSO_ECN : 0);
    }
    /* Kernels since 4.14 no longer take UFO; the rest still applies. */
    if (!(offloads->csum && offloads->ufo && ioctl(fd, TUNSETOFFLOAD, flags | TUN_F_UFO) == 0)) {
        ioctl(fd, TUNSETOFFLOAD, flags);
    }
}
