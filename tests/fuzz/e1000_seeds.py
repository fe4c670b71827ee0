#!/usr/bin/env python3
"""The e1000 receive seeds of tests/fuzz/corpus, in the harness's input
format (README.md); `python3 tests/fuzz/e1000_seeds.py tests/fuzz/corpus`
writes them. Each places BAR0, turns bus mastering on and sets up an RX
ring of 8 descriptors with checksum checks, sends frames from the wire
(fuzz-e1000.c), and reads the descriptors' write-backs, which
test_fuzz.py checks (SEED_CHECKS).

- `e1000-rx` (the first e1000, on a plain wire; 512-byte buffers, VLAN
  stripping): a TCP/IPv4 frame with right checksums over two buffers, the
  same with a bad TCP checksum, a VLAN-tagged UDP frame, a 10-byte frame
  (padded), a frame over the ring's buffers, and the ring refilled
  through RDT.
- `e1000-gso` (the second, on a wire with virtio-net headers; 2 KiB
  buffers): a GSO TCP/IPv4 packet of 2500 payload bytes cut at 1000 into
  a ring with two free buffers, its third frame stored once RDT gives more
  (the settle runs the bottom half), then a frame whose checksum the host
  left to the NIC (NEEDS_CSUM).
"""

import struct
import sys
from pathlib import Path

from storage_seeds import (OP_MACHINE, MOP_BAR_ACCESS, MOP_DEVICE_OP, kind, le, mem_read8,
                           ram_write, settle, write_seeds)

# The Internet checksum as the e1000 unit test's frame checker computes it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))
from check_tcp_frames import ones_sum  # noqa: E402

# (index in fuzz-devices.c's fuzz_devices[], devfn) of each e1000.
PLAIN = (6, 5 << 3)
VNET = (8, 8 << 3)
OP_PCI_CONFIG_WRITE = 5
BAR0 = 0xE8000000
RING, BUFS = 0x100000, 0x110000
MAC = bytes([0x52, 0x54, 0x00, 0x12, 0x34, 0x56])
VNET_MAC = bytes([0x52, 0x54, 0x00, 0x00, 0x00, 0x08])      # fuzz-devices.c gives it

# Registers (include/hw/net/e1000-regs.h).
CTRL, RCTL, RDBAL, RDBAH, RDLEN, RDH, RDT, RXCSUM, IMS = (
    0x0, 0x100, 0x2800, 0x2804, 0x2808, 0x2810, 0x2818, 0x5000, 0xD0)
CTRL_VME = 1 << 30
RCTL_EN, RCTL_BAM, RCTL_SECRC, RCTL_LPE = 1 << 1, 1 << 15, 1 << 26, 1 << 5
RCTL_BSIZE_512 = 2 << 16
# The virtio-net header's flags and GSO type (include/net/vnet-hdr.h).
NEEDS_CSUM, GSO_TCPV4 = 1, 1


def config_write(offset, value, size_log2, dev=PLAIN):
    return (kind(OP_PCI_CONFIG_WRITE, size_log2) + le(dev[1], 1) + le(offset, 1)
            + le(value, 1 << size_log2))


def reg_write(offset, value, dev=PLAIN):
    return kind(OP_MACHINE, 2, MOP_BAR_ACCESS) + le(dev[1], 1) + le(0x80, 1) + \
        le(offset, 2) + le(value, 4)


def wire(frame, dev=PLAIN):
    return kind(OP_MACHINE, 0, MOP_DEVICE_OP) + le(dev[0], 1) + le(len(frame), 2) + frame


def vnet_hdr(flags=0, gso_type=0, gso_size=0, csum_start=0, csum_offset=0):
    return struct.pack("<BBHHHH", flags, gso_type, 0, gso_size, csum_start, csum_offset)


def ipv4_frame(proto, l4, vlan=None, dst_mac=MAC):
    src, dst = bytes([10, 0, 2, 2]), bytes([10, 0, 2, 15])
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, proto, 0,
                               src, dst))
    struct.pack_into("!H", ip, 10, ~ones_sum(bytes(ip)) & 0xFFFF)
    l4 = bytearray(l4)
    at = 16 if proto == 6 else 6
    pseudo = src + dst + struct.pack("!BBH", 0, proto, len(l4))
    struct.pack_into("!H", l4, at, ~ones_sum(pseudo + bytes(l4)) & 0xFFFF)
    tag = struct.pack("!HH", 0x8100, vlan) if vlan is not None else b""
    return dst_mac + bytes([0x52, 0x54, 0, 0xAA, 0xBB, 0xCC]) + tag + b"\x08\x00" + bytes(ip) + \
        bytes(l4)


def tcp(payload):
    return struct.pack("!HHIIBBHHH", 80, 12345, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + payload


def udp(payload):
    return struct.pack("!HHHH", 53, 5353, 8 + len(payload), 0) + payload


def rx_ring(dev, rdt, ctrl, rctl):
    """BAR0, bus mastering, the ring of 8 at RING, checksum checks."""
    out = config_write(0x10, BAR0, 2, dev) + config_write(0x04, 0x0006, 1, dev)
    ring = b"".join(le(BUFS + i * 0x1000, 8) + bytes(8) for i in range(8))
    out += ram_write(RING, ring)
    for reg, value in ((RDBAL, RING), (RDBAH, 0), (RDLEN, 128), (RDH, 0), (RDT, rdt),
                       (RXCSUM, 0x300), (IMS, 0xFF), (CTRL, ctrl), (RCTL, rctl)):
        out += reg_write(reg, value, dev)
    return out


def e1000_rx():
    out = rx_ring(PLAIN, 7, CTRL_VME, RCTL_EN | RCTL_BAM | RCTL_SECRC | RCTL_BSIZE_512)
    good = ipv4_frame(6, tcp(bytes(range(256)) * 3))
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    out += wire(good) + wire(bytes(bad))
    out += wire(ipv4_frame(17, udp(b"fuzz" * 30), vlan=0x2005))
    out += wire(MAC + bytes(4))
    out += reg_write(RCTL, RCTL_EN | RCTL_LPE | RCTL_BSIZE_512)
    out += wire(MAC + bytes(4000))      # more buffers than the ring has
    out += reg_write(RDT, 3) + wire(good)
    return out + settle() + b"".join(mem_read8(addr) for addr, _ in SEED_CHECKS["e1000-rx"])


def e1000_gso():
    out = rx_ring(VNET, 2, 0, RCTL_EN | RCTL_SECRC)
    packet = bytearray(ipv4_frame(6, tcp(bytes(range(250)) * 10), dst_mac=VNET_MAC))
    struct.pack_into("!H", packet, 14 + 2, 0)       # the host leaves the lengths to the cut
    gso = vnet_hdr(NEEDS_CSUM, GSO_TCPV4, 1000, 34, 16)
    out += wire(gso + bytes(packet), VNET)
    out += reg_write(RDT, 7, VNET) + settle()
    single = bytearray(ipv4_frame(6, tcp(b"csum" * 100), dst_mac=VNET_MAC))
    # The pseudo-header's sum in the field, as the host leaves it for the NIC.
    pseudo = bytes(single[26:34]) + struct.pack("!BBH", 0, 6, len(single) - 34)
    struct.pack_into("!H", single, 34 + 16, ones_sum(pseudo))
    out += wire(vnet_hdr(NEEDS_CSUM, 0, 0, 34, 16) + bytes(single), VNET)
    return out + settle() + b"".join(mem_read8(addr) for addr, _ in SEED_CHECKS["e1000-gso"])


def writeback(length, status, errors=0, special=0):
    """A legacy RX descriptor's upper half: length, checksum, status, errors, special."""
    return length | status << 32 | errors << 40 | special << 48


DD, EOP, VP, TCPCS, IPCS, TCPE = 0x01, 0x02, 0x08, 0x20, 0x40, 0x20
SEED_CHECKS = {
    # The TCP frame (822 bytes) over descriptors 0 and 1, its copy with a
    # bad TCP checksum over 2 and 3, the UDP frame untagged in 4 (162
    # bytes) with its tag in special, the short frame padded in 5, and
    # after RDT the TCP frame again in 6 and 7 with the CRC (SECRC off).
    "e1000-rx": [
        (RING + 16 * 1 + 8, writeback(822 - 512, DD | EOP | IPCS | TCPCS)),
        (RING + 16 * 3 + 8, writeback(822 - 512, DD | EOP | IPCS | TCPCS, TCPE)),
        (RING + 16 * 4 + 8, writeback(162, DD | EOP | VP | IPCS | TCPCS, 0, 0x2005)),
        (RING + 16 * 5 + 8, writeback(60, DD | EOP)),
        (RING + 16 * 7 + 8, writeback(826 - 512, DD | EOP | IPCS | TCPCS)),
    ],
    # The GSO packet's frames of 1054, 1054 and 554 bytes in 0, 1 and (after
    # RDT) 2, both checksums right; the NEEDS_CSUM frame (454 bytes) in 3.
    "e1000-gso": [
        (RING + 16 * 0 + 8, writeback(1054, DD | EOP | IPCS | TCPCS)),
        (RING + 16 * 1 + 8, writeback(1054, DD | EOP | IPCS | TCPCS)),
        (RING + 16 * 2 + 8, writeback(554, DD | EOP | IPCS | TCPCS)),
        (RING + 16 * 3 + 8, writeback(454, DD | EOP | IPCS | TCPCS)),
    ],
}
SEEDS = {"e1000-rx": e1000_rx, "e1000-gso": e1000_gso}


if __name__ == "__main__":
    write_seeds(SEEDS, Path(sys.argv[1]))
