#!/usr/bin/env python3
"""The e1000 receive seed of tests/fuzz/corpus (`e1000-rx`), in the
harness's input format (README.md): BAR0 placed and bus mastering on, an
RX ring of 8 descriptors with 512-byte buffers, receive with checksum
checks and VLAN stripping, then frames from the wire (fuzz-e1000.c): a
TCP/IPv4 frame with right checksums over two buffers, the same with a bad
TCP checksum, a VLAN-tagged UDP frame, a 10-byte frame (padded), a frame
over the ring's buffers, and the ring refilled through RDT; then it reads
the descriptors' write-backs, which test_fuzz.py checks (SEED_CHECKS).
`python3 tests/fuzz/e1000_seeds.py tests/fuzz/corpus` writes it."""

import struct
import sys
from pathlib import Path

from storage_seeds import (OP_MACHINE, MOP_BAR_ACCESS, MOP_DEVICE_OP, kind, le, mem_read8,
                           ram_write, settle, write_seeds)

# The Internet checksum as the e1000 unit test's frame checker computes it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))
from check_tcp_frames import ones_sum  # noqa: E402

E1000 = 6                       # its index in fuzz-devices.c's fuzz_devices[]
E1000_DEVFN = 5 << 3
OP_PCI_CONFIG_WRITE = 5
BAR0 = 0xE8000000
RING, BUFS = 0x100000, 0x110000
MAC = bytes([0x52, 0x54, 0x00, 0x12, 0x34, 0x56])

# Registers (include/hw/net/e1000-regs.h).
CTRL, RCTL, RDBAL, RDBAH, RDLEN, RDH, RDT, RXCSUM, IMS = (
    0x0, 0x100, 0x2800, 0x2804, 0x2808, 0x2810, 0x2818, 0x5000, 0xD0)
CTRL_VME = 1 << 30
RCTL_EN, RCTL_BAM, RCTL_SECRC, RCTL_LPE = 1 << 1, 1 << 15, 1 << 26, 1 << 5
RCTL_BSIZE_512 = 2 << 16


def config_write(offset, value, size_log2):
    return (kind(OP_PCI_CONFIG_WRITE, size_log2) + le(E1000_DEVFN, 1) + le(offset, 1)
            + le(value, 1 << size_log2))


def reg_write(offset, value):
    return kind(OP_MACHINE, 2, MOP_BAR_ACCESS) + le(E1000_DEVFN, 1) + le(0x80, 1) + \
        le(offset, 2) + le(value, 4)


def wire(frame):
    return kind(OP_MACHINE, 0, MOP_DEVICE_OP) + le(E1000, 1) + le(len(frame), 2) + frame


def ipv4_frame(proto, l4, vlan=None):
    src, dst = bytes([10, 0, 2, 2]), bytes([10, 0, 2, 15])
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, proto, 0,
                               src, dst))
    struct.pack_into("!H", ip, 10, ~ones_sum(bytes(ip)) & 0xFFFF)
    l4 = bytearray(l4)
    at = 16 if proto == 6 else 6
    pseudo = src + dst + struct.pack("!BBH", 0, proto, len(l4))
    struct.pack_into("!H", l4, at, ~ones_sum(pseudo + bytes(l4)) & 0xFFFF)
    tag = struct.pack("!HH", 0x8100, vlan) if vlan is not None else b""
    return MAC + bytes([0x52, 0x54, 0, 0xAA, 0xBB, 0xCC]) + tag + b"\x08\x00" + bytes(ip) + \
        bytes(l4)


def tcp(payload):
    return struct.pack("!HHIIBBHHH", 80, 12345, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + payload


def udp(payload):
    return struct.pack("!HHHH", 53, 5353, 8 + len(payload), 0) + payload


def e1000_rx():
    out = config_write(0x10, BAR0, 2) + config_write(0x04, 0x0006, 1)
    ring = b"".join(le(BUFS + i * 0x1000, 8) + bytes(8) for i in range(8))
    out += ram_write(RING, ring)
    for reg, value in ((RDBAL, RING), (RDBAH, 0), (RDLEN, 128), (RDH, 0), (RDT, 7),
                       (RXCSUM, 0x300), (IMS, 0xFF), (CTRL, CTRL_VME),
                       (RCTL, RCTL_EN | RCTL_BAM | RCTL_SECRC | RCTL_BSIZE_512)):
        out += reg_write(reg, value)
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
}
SEEDS = {"e1000-rx": e1000_rx}


if __name__ == "__main__":
    write_seeds(SEEDS, Path(sys.argv[1]))
