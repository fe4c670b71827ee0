/*
 * Which virtio-net features vhost-net can serve, and what to ack to the
 * kernel (hw/virtio/vhost-net.h). Bits from virtio 1.x ("Reserved Feature
 * Bits", "Network Device: Feature bits") and Linux's vhost uAPI.
 */
#include "hw/virtio/vhost-uapi.h"
#include "hw/virtio/vhost-net.h"
#include "net/vnet-hdr.h"

#define VHOST_NET_BIT_MRG_RXBUF         15  /* virtio-net's VIRTIO_NET_F_MRG_RXBUF */
#define VHOST_NET_BIT_NOTIFY_ON_EMPTY   24
#define VHOST_NET_BIT_ANY_LAYOUT        27
#define VHOST_NET_BIT_ACCESS_PLATFORM   33
#define VHOST_NET_BIT_RING_PACKED       34
#define VHOST_NET_BIT_IN_ORDER          35
#define VHOST_NET_BIT_RING_RESET        40

/* The bits whose work the kernel does once it has the rings: offered only
 * if it says it can. */
static const uint64_t kernel_bits =
    VIRTIO_BIT(VHOST_NET_BIT_MRG_RXBUF) | VIRTIO_BIT(VHOST_NET_BIT_NOTIFY_ON_EMPTY) |
    VIRTIO_BIT(VHOST_NET_BIT_ANY_LAYOUT) | VIRTIO_BIT(VIRTIO_F_RING_INDIRECT_DESC) |
    VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_VERSION_1) |
    VIRTIO_BIT(VHOST_NET_BIT_IN_ORDER) | VIRTIO_BIT(VHOST_NET_BIT_RING_RESET);

/* Never with vhost here: no IOMMU in front of the kernel's accesses (it
 * would wait for IOTLB messages nobody sends) and split rings only. */
static const uint64_t never_bits =
    VIRTIO_BIT(VHOST_NET_BIT_ACCESS_PLATFORM) | VIRTIO_BIT(VHOST_NET_BIT_RING_PACKED);

/* What the kernel is told of the guest's choice: the ring and buffer
 * layout bits it implements, not ANY_LAYOUT (see vhost_net_ack_features). */
static const uint64_t acked_bits =
    VIRTIO_BIT(VHOST_NET_BIT_MRG_RXBUF) | VIRTIO_BIT(VHOST_NET_BIT_NOTIFY_ON_EMPTY) |
    VIRTIO_BIT(VIRTIO_F_RING_INDIRECT_DESC) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) |
    VIRTIO_BIT(VIRTIO_F_VERSION_1);

uint64_t vhost_net_mask_features(uint64_t kernel, uint64_t offered)
{
    return offered & ~never_bits & ~(kernel_bits & ~kernel);
}

uint64_t vhost_net_ack_features(uint64_t kernel, uint64_t guest, bool tap_vnet_hdr)
{
    uint64_t ack = guest & acked_bits & kernel;
    if (!tap_vnet_hdr) {
        ack |= VIRTIO_BIT(VHOST_UAPI_NET_F_VIRTIO_NET_HDR);
    }
    return ack;
}

unsigned vhost_net_hdr_len(uint64_t guest)
{
    bool long_hdr = guest & (VIRTIO_BIT(VHOST_NET_BIT_MRG_RXBUF) | VIRTIO_BIT(VIRTIO_F_VERSION_1));
    return long_hdr ? VIRTIO_NET_HDR_LEN : VIRTIO_NET_HDR_LEN_SHORT;
}
