/*
 * The NICs' wires for the fuzzer: netdevs that touch nothing on the host
 * (what the NIC sends is dropped) and driver operations that hand the NIC
 * a frame as a backend does, from the main loop's side with no lock held.
 * Register accesses and kicks alone never reach the receive path
 * (filters, checksum checks, VLAN stripping, frames over several
 * descriptors, the ring's flow control). The vnet wires carry virtio-net
 * headers as a tap with IFF_VNET_HDR does: an e1000 on one takes the
 * host's offloads (the header, checksums to complete and GSO packets to
 * cut, hw/net/e1000-rx-offload.c, come from the input too), and a
 * virtio-net on one has its frames filled in place into the chains it
 * lends, as from a tap (net_send_filled), or copied when it lends none.
 *
 * e1000 operation: a frame. virtio-net operation: a byte with bit 7 set,
 * then a frame; else one of the generic virtio driver's operations (the
 * byte is that operation's, which leaves bits 5-7 clear). A frame:
 * len:2 (on the plain wire modulo FUZZ_WIRE_MAX_FRAME + 1), then its
 * bytes, the header first on a vnet wire (zeros past the end of the
 * input).
 */
#include <string.h>
#include <glib.h>
#include "fuzz.h"
#include "hw/net/e1000.h"
#include "net/net.h"
#include "qemu/iov.h"

/* Over LPE's 16 KiB: the NIC's length checks get their share. */
#define FUZZ_WIRE_MAX_FRAME     (16384 + 64)
/* A GSO packet may be up to 64 KiB: the whole of len's range. */
#define FUZZ_VNET_WIRE_MAX      0xffff
/* The virtio-net driver's operation byte for a frame. */
#define VIRTIO_NET_WIRE_FRAME   0x80
/* What a tap asks a NIC to lend for one frame (net/tap.c, TAP_BUFSIZE). */
#define FUZZ_WIRE_LOAN          (65536 + 4096)

static ssize_t wire_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    return iov_size(iov, iovcnt);
}

static const NetClientInfo wire_info = {
    .type = "fuzz-wire",
    .receive = wire_receive,
};

static bool wire_has_vnet_hdr(NetClientState *nc)
{
    return true;
}

/* The lengths and offloads the NIC asks for need nothing of a wire that
 * hands over whatever the input says. */
static void wire_set_vnet_hdr_len(NetClientState *nc, unsigned len)
{
}

static void wire_set_offload(NetClientState *nc, const NetOffloads *offloads)
{
}

static const NetClientInfo vnet_wire_info = {
    .type = "fuzz-wire",
    .receive = wire_receive,
    .has_vnet_hdr = wire_has_vnet_hdr,
    .set_vnet_hdr_len = wire_set_vnet_hdr_len,
    .set_offload = wire_set_offload,
};

bool fuzz_wires_create(Error **errp)
{
    return netdev_new("fuzz-wire", FUZZ_E1000_WIRE_ID, 1, &wire_info, errp) &&
           netdev_new("fuzz-wire", FUZZ_E1000_VNET_WIRE_ID, 1, &vnet_wire_info, errp) &&
           netdev_new("fuzz-wire", FUZZ_VIRTIO_NET_WIRE_ID, 1, &vnet_wire_info, errp);
}

/* The next frame of the input for a NIC on wire, in frame; its length. */
static size_t wire_frame_take(NetClientState *wire, FuzzInput *in, uint8_t *frame)
{
    bool vnet = wire->info == &vnet_wire_info;
    size_t len = input_take(in, 2) % ((vnet ? FUZZ_VNET_WIRE_MAX : FUZZ_WIRE_MAX_FRAME) + 1);
    size_t have = MIN(len, in->size);
    memcpy(frame, in->data, have);
    memset(frame + have, 0, len - have);
    in->data += have;
    in->size -= have;
    return len;
}

static void e1000_wire_op(FuzzDevice *dev, FuzzInput *in)
{
    static uint8_t frame[FUZZ_VNET_WIRE_MAX];
    NetClientState *wire = e1000_net_client(dev->qdev)->peer;
    size_t len = wire_frame_take(wire, in, frame);
    if (len) {
        /* A refusal (a full ring) leaves the frame with us: dropped. */
        net_send_buf(wire, frame, len);
    }
}

const FuzzDriver fuzz_e1000_driver = {
    .name = "e1000-wire",
    .op = e1000_wire_op,
};

typedef struct WireFill {
    const uint8_t *frame;
    size_t len;
} WireFill;

/* As a tap's readv: what fits of the frame, and the frame's length. */
static ssize_t wire_fill(void *opaque, const struct iovec *iov, int iovcnt)
{
    WireFill *f = opaque;
    iov_from_buf(iov, iovcnt, 0, f->frame, f->len);
    return f->len;
}

static void virtio_net_wire_op(FuzzDevice *dev, FuzzInput *in)
{
    static uint8_t frame[FUZZ_VNET_WIRE_MAX];
    if (!in->size || !(in->data[0] & VIRTIO_NET_WIRE_FRAME)) {
        fuzz_virtio_driver.op(dev, in);
        return;
    }
    input_take(in, 1);
    NetClientState *wire = netdev_find(FUZZ_VIRTIO_NET_WIRE_ID)->queues[0];
    WireFill f = { frame, wire_frame_take(wire, in, frame) };
    /* A tap's loan: room for the largest frame it can give. */
    if (f.len && net_send_filled(wire, FUZZ_WIRE_LOAN, wire_fill, &f) == NET_FILL_DECLINED) {
        net_send_buf(wire, frame, f.len);
    }
}

/* The rest is the generic virtio driver's. */
static void virtio_net_wire_probe(FuzzDevice *dev)
{
    fuzz_virtio_driver.probe(dev);
}

static void virtio_net_wire_reset(FuzzDevice *dev)
{
    fuzz_virtio_driver.reset(dev);
}

const FuzzDriver fuzz_virtio_net_driver = {
    .name = "virtio-net-wire",
    .probe = virtio_net_wire_probe,
    .reset = virtio_net_wire_reset,
    .op = virtio_net_wire_op,
};
