/*
 * The e1000s' wires for the fuzzer: netdevs that touch nothing on the
 * host (what the NIC sends is dropped) and a driver operation that hands
 * the NIC a frame as a backend does, from the main loop's side with no
 * lock held. Register accesses alone never reach the receive path
 * (filters, checksum checks, VLAN stripping, frames over several
 * descriptors, the ring's flow control). The second wire carries
 * virtio-net headers as a tap with IFF_VNET_HDR does, so its e1000 takes
 * the host's offloads: the header, checksums to complete and GSO packets
 * to cut (hw/net/e1000-rx-offload.c) come from the input too.
 *
 * Operation: len:2 (on the plain wire modulo FUZZ_WIRE_MAX_FRAME + 1),
 * then the frame's bytes, its header first on the vnet wire (zeros past
 * the end of the input).
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

bool fuzz_e1000_wire_create(Error **errp)
{
    return netdev_new("fuzz-wire", FUZZ_E1000_WIRE_ID, 1, &wire_info, errp) &&
           netdev_new("fuzz-wire", FUZZ_E1000_VNET_WIRE_ID, 1, &vnet_wire_info, errp);
}

static void e1000_wire_op(FuzzDevice *dev, FuzzInput *in)
{
    static uint8_t frame[FUZZ_VNET_WIRE_MAX];
    NetClientState *wire = e1000_net_client(dev->qdev)->peer;
    bool vnet = wire->info == &vnet_wire_info;
    size_t len = input_take(in, 2) % ((vnet ? FUZZ_VNET_WIRE_MAX : FUZZ_WIRE_MAX_FRAME) + 1);
    size_t have = MIN(len, in->size);
    memcpy(frame, in->data, have);
    memset(frame + have, 0, len - have);
    in->data += have;
    in->size -= have;
    if (len) {
        /* A refusal (a full ring) leaves the frame with us: dropped. */
        net_send_buf(wire, frame, len);
    }
}

const FuzzDriver fuzz_e1000_driver = {
    .name = "e1000-wire",
    .op = e1000_wire_op,
};
