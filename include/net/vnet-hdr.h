/*
 * The header that rides ahead of a frame between virtio-net, a tap opened
 * with IFF_VNET_HDR and vhost-net (virtio 1.x "Device Operation" of the
 * network device; Linux's struct virtio_net_hdr_v1): which checksum is
 * left to do and how a large frame is to be segmented. All fields are
 * little-endian (virtio 1.x, and a tap set to TUNSETVNETLE or on x86).
 */
#ifndef NET_VNET_HDR_H
#define NET_VNET_HDR_H

#include <stdint.h>

#define VIRTIO_NET_HDR_F_NEEDS_CSUM     1   /* sum from csum_start, store at +csum_offset */
#define VIRTIO_NET_HDR_F_DATA_VALID     2   /* checksum already checked */

#define VIRTIO_NET_HDR_GSO_NONE         0
#define VIRTIO_NET_HDR_GSO_TCPV4        1
#define VIRTIO_NET_HDR_GSO_UDP          3
#define VIRTIO_NET_HDR_GSO_TCPV6        4
#define VIRTIO_NET_HDR_GSO_ECN          0x80

typedef struct VirtIONetHdr {
    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;           /* Ethernet + IP + TCP/UDP headers */
    uint16_t gso_size;          /* MSS */
    uint16_t csum_start;
    uint16_t csum_offset;
    uint16_t num_buffers;       /* with VERSION_1 or MRG_RXBUF; else absent */
} __attribute__((packed)) VirtIONetHdr;

/* The header without num_buffers (a legacy driver without MRG_RXBUF). */
#define VIRTIO_NET_HDR_LEN_SHORT        10
#define VIRTIO_NET_HDR_LEN              12

#endif
