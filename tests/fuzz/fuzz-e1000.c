/*
 * The e1000's wire for the fuzzer: a netdev that touches nothing on the
 * host (what the NIC sends is dropped) and a driver operation that hands
 * the NIC a frame as a backend does, from the main loop's side with no
 * lock held. Register accesses alone never reach the receive path
 * (filters, checksum checks, VLAN stripping, frames over several
 * descriptors, the ring's flow control).
 *
 * Operation: len:2 (modulo FUZZ_WIRE_MAX_FRAME + 1), then the frame's
 * bytes (zeros past the end of the input).
 */
#include <string.h>
#include <glib.h>
#include "fuzz.h"
#include "net/net.h"
#include "qemu/iov.h"

/* Over LPE's 16 KiB: the NIC's length checks get their share. */
#define FUZZ_WIRE_MAX_FRAME     (16384 + 64)

static NetClientState *wire;

static ssize_t wire_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    return iov_size(iov, iovcnt);
}

static const NetClientInfo wire_info = {
    .type = "fuzz-wire",
    .receive = wire_receive,
};

bool fuzz_e1000_wire_create(Error **errp)
{
    NetDev *nd = netdev_new("fuzz-wire", FUZZ_E1000_WIRE_ID, 1, &wire_info, errp);
    wire = nd ? nd->queues[0] : NULL;
    return nd != NULL;
}

static void e1000_wire_op(FuzzDevice *dev, FuzzInput *in)
{
    static uint8_t frame[FUZZ_WIRE_MAX_FRAME];
    size_t len = input_take(in, 2) % (FUZZ_WIRE_MAX_FRAME + 1);
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
