#!/usr/bin/env python3
"""The virtio-net receive seed of tests/fuzz/corpus, in the harness's
input format (README.md); `python3 tests/fuzz/virtio_net_seeds.py
tests/fuzz/corpus` writes it. It drives the virtio-net on a wire with
virtio-net headers (fuzz-wire.c), whose frames are filled in place into
the chains the device lends, as from a tap, or copied when it lends
none, and reads the used ring and a header back, which test_fuzz.py
checks (SEED_CHECKS).

- `virtio-net-rx`: every feature the device offers (MRG_RXBUF among
  them), a receiveq of 32 entries with 17 chains of 4 KiB (enough for the
  largest frame a tap gives, 68 KiB): a 5000-byte frame filled in place
  over two chains (num_buffers 2, which the wire left 0), a 100-byte one
  in the third, then with 14 chains left (too few to lend) a 200-byte
  frame through the copying path in the fourth.
"""

import struct
import sys
from pathlib import Path

from e1000_seeds import ipv4_frame, tcp, vnet_hdr
from storage_seeds import (DESC_WRITE, OP_MACHINE, MOP_DEVICE_OP, chain, kind, le, mem_read8,
                           settle, virtio_setup, write_seeds)

# Its index in fuzz-devices.c's fuzz_devices[], its PCI slot and MAC.
VNET = 9
SLOT = 9
MAC = bytes([0x52, 0x54, 0x00, 0x00, 0x00, 0x09])
RXBUFS = 0x300000
# fuzz-virtio.c's ring layout: per slot, per queue; a 32-entry receiveq's
# used ring follows its descriptors (16 bytes each) and available ring.
RING_AREA, RING_SLOT_STRIDE = 16 << 20, 0x80000
RX_DESC = RING_AREA + SLOT * RING_SLOT_STRIDE
RX_USED = (RX_DESC + 16 * 32 + 6 + 2 * 32 + 3) & ~3
DATA_VALID = 2
WIRE_FRAME = 0x80       # fuzz-wire.c: the operation byte of a frame


def wire(frame):
    return kind(OP_MACHINE, 0, MOP_DEVICE_OP) + le(VNET, 1) + le(WIRE_FRAME, 1) + \
        le(len(frame), 2) + frame


def frame(length, seed):
    """A TCP/IPv4 frame to the device's MAC, length bytes in all."""
    payload = bytes((i * 7 + seed) & 0xFF for i in range(length - 54))
    return ipv4_frame(6, tcp(payload), dst_mac=MAC)


def virtio_net_rx():
    out = virtio_setup(queues=2, size_log2=5, dev=VNET)
    for i in range(17):
        out += chain(0, i, [(RXBUFS + 0x1000 * i, 0x1000, DESC_WRITE, 0)], kick=i == 16, dev=VNET)
    header = vnet_hdr() + bytes(2)      # 12 bytes, num_buffers 0
    header = bytes([DATA_VALID]) + header[1:]
    out += wire(header + frame(5000, 1)) + wire(header + frame(100, 2))
    out += wire(header + frame(200, 3)) + settle()
    return out + b"".join(mem_read8(addr) for addr, _ in SEED_CHECKS["virtio-net-rx"])


def used(head, length):
    return head | length << 32


SEED_CHECKS = {
    # Used elements: the 5012 bytes (header and frame) over chains 0 and 1,
    # 112 in 2, 212 in 3; the first chain's header: csum_start and
    # csum_offset 0, num_buffers 2, then the first bytes of the MAC.
    "virtio-net-rx": [
        (RX_USED + 4, used(0, 4096)),
        (RX_USED + 12, used(1, 5012 - 4096)),
        (RX_USED + 20, used(2, 112)),
        (RX_USED + 28, used(3, 212)),
        (RXBUFS + 8, struct.unpack("<Q", struct.pack("<HH", 0, 2) + MAC[:4])[0]),
    ],
}
SEEDS = {"virtio-net-rx": virtio_net_rx}


def main():
    write_seeds(SEEDS, Path(sys.argv[1]))


if __name__ == "__main__":
    main()
