#!/usr/bin/env python3
"""The storage seeds of tests/fuzz/corpus, written in the harness's input
format (README.md) by what a driver does: IDE by PIO, bus-master DMA and
ATAPI packets, virtio-blk requests on its queues, and the hostile variants
of each. `python3 tests/fuzz/storage_seeds.py tests/fuzz/corpus` writes
them; test_fuzz.py checks that the files match this script and that each
seed reaches what it is for: every seed ends with reads whose traced values
(FUZZ_TRACE=1) show data that went through the disk (SEED_CHECKS)."""

import struct
import sys
from pathlib import Path

# Indexes in fuzz-devices.c's fuzz_devices[].
HD, CD, CD_EMPTY, VBLK = 2, 3, 4, 5
VBLK_DEVFN = 6 << 3
PIIX_IDE_DEVFN = (1 << 3) | 1
CD_BLOCK = 2048
ATA_SECTOR = 512

# The kind byte: operation, log2 of the size, operand.
OP_IO_READ, OP_MEM_READ, OP_MACHINE = 0, 2, 7
MOP_SETTLE, MOP_RAM_WRITE, MOP_BAR_ACCESS, MOP_DEVICE_OP = 1, 2, 3, 4
RAW_WINDOW = 7

# fuzz-ide.c
IOP_ATA, IOP_ATA_DMA, IOP_PACKET, IOP_PIO = 0, 1, 2, 3
IOP_FLAG_A, IOP_TO_MEMORY, IOP_KEEP_COMMAND = 0x04, 0x08, 0x10
PRD_EOT = 0x80000000

# fuzz-virtio.c
(VOP_INIT, VOP_QUEUE, VOP_DRIVER_OK, VOP_CHAIN, VOP_KICK, VOP_STATUS, VOP_AVAIL_IDX,
 VOP_RESET) = range(8)
VOP_FLAG_A, VOP_FLAG_B = 0x08, 0x10
DESC_NEXT, DESC_WRITE = 1, 2
BLK_IN, BLK_OUT, BLK_FLUSH, BLK_GET_ID, BLK_DISCARD, BLK_WRITE_ZEROES = 0, 1, 4, 8, 11, 13


def kind(op, size_log2=0, operand=0):
    return bytes([op | size_log2 << 3 | operand << 5])


def le(value, n):
    return value.to_bytes(n, "little")


def settle():
    return kind(OP_MACHINE, 0, MOP_SETTLE)


def ram_write(addr, data):
    out = b""
    for i in range(0, len(data), 255):
        piece = data[i:i + 255]
        out += kind(OP_MACHINE, 0, MOP_RAM_WRITE) + le(addr + i, 3) + le(len(piece), 1) + piece
    return out


def mem_read8(addr):
    return kind(OP_MEM_READ, 3, RAW_WINDOW) + le(addr, 8)


def port_read(port, size_log2=0):
    return kind(OP_IO_READ, size_log2) + le(port, 2)


def bar_read(devfn, bar, offset, size_log2=0):
    return kind(OP_MACHINE, size_log2, MOP_BAR_ACCESS) + le(devfn, 1) + le(bar, 1) + le(offset, 2)


def device_op(index, payload):
    return kind(OP_MACHINE, 0, MOP_DEVICE_OP) + le(index, 1) + payload


def pattern(n, seed):
    return bytes((i * 7 + seed) & 0xff for i in range(n))


# ---- IDE ----

def prd_table(entries):
    """entries: (address, byte count, end of table)."""
    out = le(len(entries) - 1, 1)
    for addr, count, eot in entries:
        out += le(addr, 4) + le((count & 0xffff) | (PRD_EOT if eot else 0), 4)
    return out


def task_file(command, count=0, lba=0, feature=0):
    return le(command, 1) + le(feature, 1) + le(count, 2) + le(lba, 6)


def ata(dev, command, count=0, lba=0, feature=0, lba48=False):
    return device_op(dev, le(IOP_ATA | (IOP_FLAG_A if lba48 else 0), 1) +
                     task_file(command, count, lba, feature))


def ata_dma(dev, command, prds, to_memory, count, lba, lba48=False, keep_command=False):
    op = (IOP_ATA_DMA | (IOP_FLAG_A if lba48 else 0) | (IOP_TO_MEMORY if to_memory else 0) |
          (IOP_KEEP_COMMAND if keep_command else 0))
    return device_op(dev, le(op, 1) + prd_table(prds) + task_file(command, count, lba))


def packet(dev, cdb, byte_limit=0xfffe, dma_prds=None):
    cdb = cdb.ljust(12, b"\0")
    op = IOP_PACKET | (IOP_FLAG_A | IOP_TO_MEMORY if dma_prds else 0)
    out = le(op, 1) + le(0, 1) + le(byte_limit, 2) + cdb
    if dma_prds:
        out += prd_table(dma_prds)
    return device_op(dev, out)


def pio(dev, words, write=False):
    return device_op(dev, le(IOP_PIO | (IOP_FLAG_A if write else 0), 1) + le(words, 2))


def bm_status(channel):
    return bar_read(PIIX_IDE_DEVFN, 4, channel * 8 + 2)


DMA_OUT, DMA_IN, DMA_IN2 = 0x100000, 0x110000, 0x120000


def ide_dma():
    """WRITE DMA of two sectors from RAM, READ DMA of them back elsewhere
    through a two-entry PRD table, the LBA48 forms, FLUSH CACHE."""
    data = pattern(2 * ATA_SECTOR, 3)
    return (ram_write(DMA_OUT, data) +
            ata_dma(HD, 0xca, [(DMA_OUT, 2 * ATA_SECTOR, True)], False, 2, 8) + settle() +
            bm_status(0) + port_read(0x1f7) +
            ata_dma(HD, 0xc8, [(DMA_IN, ATA_SECTOR, False), (DMA_IN + ATA_SECTOR, ATA_SECTOR, True)],
                    True, 2, 8) + settle() + bm_status(0) + port_read(0x1f7) +
            ata_dma(HD, 0x35, [(DMA_OUT, ATA_SECTOR, True)], False, 1, 0x10, lba48=True) + settle() +
            ata_dma(HD, 0x25, [(DMA_IN2, ATA_SECTOR, True)], True, 1, 0x10, lba48=True) + settle() +
            ata(HD, 0xe7) + settle() + port_read(0x1f7) +
            mem_read8(DMA_IN) + mem_read8(DMA_IN + ATA_SECTOR + 8) + mem_read8(DMA_IN2))


def ide_pio():
    """IDENTIFY, WRITE SECTORS and READ SECTORS through the data port,
    SET MULTIPLE and READ MULTIPLE, the write cache off, a soft reset."""
    return (ata(HD, 0xec) + pio(HD, 256) +
            ata(HD, 0x30, count=1, lba=5) + pio(HD, 256, write=True) + settle() + port_read(0x1f7) +
            ata(HD, 0x20, count=1, lba=5) + settle() + pio(HD, 256) +
            ata(HD, 0xc6, count=4) + ata(HD, 0xc4, count=8, lba=0) + settle() + pio(HD, 1024) +
            ata(HD, 0xef, feature=0x82) + ata(HD, 0x40, count=4, lba=2) + settle() +
            kind(1) + le(0x3f6, 2) + le(4, 1) + kind(1) + le(0x3f6, 2) + le(0, 1) +
            port_read(0x1f7) +
            # The sector written above, once more: its fourth word is 0x0303.
            ata(HD, 0x24, count=1, lba=5, lba48=True) + settle() + pio(HD, 4))


def ide_atapi():
    """The sr driver's probe (INQUIRY, TEST UNIT READY, READ CAPACITY,
    MODE SENSE, READ TOC, GET CONFIGURATION, GET EVENT STATUS, REQUEST
    SENSE), READ(10) by PIO and by DMA, and the empty tray."""
    return (packet(CD, b"\x12\0\0\0\x24") + pio(CD, 18) +
            packet(CD, b"\x00") + packet(CD, b"\x25") + pio(CD, 4) +
            packet(CD, b"\x5a\0\x2a\0\0\0\0\0\x80") + pio(CD, 64) +
            packet(CD, b"\x43\0\0\0\0\0\0\x03\x24") + pio(CD, 18) +
            packet(CD, b"\x46\0\0\0\0\0\0\0\x20") + pio(CD, 16) +
            packet(CD, b"\x4a\x01\0\0\x10\0\0\0\x08") + pio(CD, 4) +
            packet(CD, b"\x28\0\0\0\0\x02\0\0\x01") + settle() + pio(CD, CD_BLOCK // 2) +
            packet(CD, b"\x28\0\0\0\0\x01\0\0\x01", dma_prds=[(DMA_IN, CD_BLOCK, True)]) + settle() +
            bm_status(1) + port_read(0x177) +
            packet(CD_EMPTY, b"\x00") + packet(CD_EMPTY, b"\x03\0\0\0\x12") + pio(CD_EMPTY, 9) +
            mem_read8(DMA_IN))


def ide_hostile():
    """PRD tables without an end mark, outside RAM, shorter than the
    transfer; the bus master's direction against the command's; sectors
    past the end; a command while busy; DMA with bus mastering off."""
    return (ata_dma(HD, 0xc8, [(DMA_IN, ATA_SECTOR, False)], True, 2, 0) + settle() + bm_status(0) +
            ata_dma(HD, 0xc8, [(0xfff00000, ATA_SECTOR, True)], True, 1, 0) + settle() +
            ata_dma(HD, 0xc8, [(DMA_IN, 0, True)], False, 1, 0) + settle() +
            ata_dma(HD, 0xca, [(DMA_OUT, ATA_SECTOR, True)], False, 1, 0xfffffff) + settle() +
            ata_dma(HD, 0x25, [(DMA_IN, 0, True)] * 8, True, 0, 0x7ff, lba48=True) +
            ata(HD, 0x20, count=1) + settle() + port_read(0x1f7) +
            ata(HD, 0x77) + ata(HD, 0xef, feature=0x03, count=0x46) +
            kind(5, 2) + le(PIIX_IDE_DEVFN, 1) + le(4, 1) + le(0, 4) +
            ata_dma(HD, 0xc8, [(DMA_IN, ATA_SECTOR, True)], True, 1, 0, keep_command=True) +
            settle() + bm_status(0))


# ---- virtio-blk ----

REQ = 0x200000          # headers, 16 bytes each
STATUS = 0x200200       # status bytes
DATA_OUT, DATA_IN, DATA_IN2 = 0x201000, 0x210000, 0x211000


def vop(op, flags=0):
    return le(op | flags, 1)


def virtio_setup(msix=True, queues=2, size_log2=4, dev=VBLK):
    """Every feature the device offers, queues 0.. of 2**size_log2 entries
    (vector q + 1), DRIVER_OK; dev: the device's index in fuzz_devices[]."""
    out = device_op(dev, vop(VOP_INIT, VOP_FLAG_B if msix else 0) + le(2**64 - 1, 8))
    for q in range(queues):
        out += device_op(dev, vop(VOP_QUEUE) + le(q, 1) + le(size_log2, 1) + le(q + 1, 2))
    return out + device_op(dev, vop(VOP_DRIVER_OK))


def blk_header(slot, type_, sector):
    return ram_write(REQ + 16 * slot, struct.pack("<IIQ", type_, 0, sector))


def chain(queue, head, descs, indirect=False, kick=True, dev=VBLK):
    flags = (VOP_FLAG_A if indirect else 0) | (VOP_FLAG_B if kick else 0)
    out = vop(VOP_CHAIN, flags) + le(queue, 1) + le(head, 2) + le(len(descs) - 1, 1)
    for addr, length, dflags, nxt in descs:
        out += le(addr, 4) + le(length, 4) + le(dflags, 2) + le(nxt, 2)
    return device_op(dev, out)


def request(queue, head, slot, data=None, data_len=0, writable=False, indirect=False):
    """header, one data piece (if any), status; next links from head on."""
    base = 0 if indirect else head
    descs = [(REQ + 16 * slot, 16, DESC_NEXT, base + 1)]
    if data is not None:
        descs.append((data, data_len, DESC_NEXT | (DESC_WRITE if writable else 0), base + 2))
    descs.append((STATUS + slot, 1, DESC_WRITE, 0))
    return chain(queue, head, descs, indirect)


def virtio_blk():
    """A write, a read of it back on the other queue through an indirect
    table, FLUSH, GET_ID, DISCARD and WRITE_ZEROES, MSI-X on."""
    data = pattern(ATA_SECTOR, 5)
    dwz = struct.pack("<QII", 4, 2, 0)
    return (virtio_setup() + ram_write(DATA_OUT, data) + ram_write(STATUS, b"\xff" * 8) +
            blk_header(0, BLK_OUT, 2) + request(0, 0, 0, DATA_OUT, ATA_SECTOR) + settle() +
            blk_header(1, BLK_IN, 2) +
            request(1, 0, 1, DATA_IN, ATA_SECTOR, writable=True, indirect=True) + settle() +
            blk_header(2, BLK_FLUSH, 0) + request(0, 3, 2) +
            blk_header(3, BLK_GET_ID, 0) + request(0, 5, 3, DATA_IN2, 20, writable=True) +
            ram_write(DATA_IN2 + 0x100, dwz) +
            blk_header(4, BLK_DISCARD, 0) + request(0, 8, 4, DATA_IN2 + 0x100, 16) +
            blk_header(5, BLK_WRITE_ZEROES, 0) + request(1, 1, 5, DATA_IN2 + 0x100, 16) +
            settle() + bar_read(VBLK_DEVFN, 4, 0x1000) +
            mem_read8(DATA_IN) + mem_read8(STATUS))


def virtio_blk_hostile():
    """Chains that loop, leave RAM, lack the status byte or the header,
    exceed the queue; a jump of the available index; a queue outside RAM;
    requests past the end; a reset with requests in flight; INTx (no MSI-X)."""
    return (virtio_setup(msix=False, queues=1, size_log2=3) +
            blk_header(0, BLK_IN, 0) +
            chain(0, 0, [(REQ, 16, DESC_NEXT, 1), (DATA_IN, 512, DESC_NEXT | DESC_WRITE, 0)]) +
            settle() + virtio_setup(msix=False, queues=1, size_log2=3) +
            chain(0, 0, [(0xfff00000, 16, DESC_NEXT, 1), (STATUS, 1, DESC_WRITE, 0)]) + settle() +
            virtio_setup(msix=False, queues=1, size_log2=3) +
            chain(0, 0, [(REQ, 8, 0, 0)]) + settle() +
            virtio_setup(msix=False, queues=1, size_log2=3) +
            blk_header(1, BLK_IN, 0x7ffffff) + request(0, 2, 1, DATA_IN, 512, writable=True) +
            blk_header(2, BLK_OUT, 0) + request(0, 5, 2, DATA_OUT, 100) + settle() +
            bar_read(VBLK_DEVFN, 4, 0x1000) +
            device_op(VBLK, vop(VOP_AVAIL_IDX) + le(0, 1) + le(0x8000, 2) + vop(VOP_KICK) +
                      le(0, 2)) + settle() +
            virtio_setup(msix=False, queues=1, size_log2=3) +
            blk_header(3, BLK_IN, 0) + request(0, 0, 3, DATA_IN, 4096, writable=True) +
            device_op(VBLK, vop(VOP_RESET)) + settle() +
            device_op(VBLK, vop(VOP_INIT) + le(2**64 - 1, 8)) +
            device_op(VBLK, vop(VOP_QUEUE, VOP_FLAG_A) + le(0, 1) + le(3, 1) + le(0xffff, 2) +
                      le(0xfe000000, 8) + le(0xfe001000, 8) + le(0xfe002000, 8)) +
            device_op(VBLK, vop(VOP_DRIVER_OK)) + device_op(VBLK, vop(VOP_KICK) + le(0, 2)) +
            settle() + bar_read(VBLK_DEVFN, 4, 0x14))


SEEDS = {
    "ide-dma": ide_dma,
    "ide-pio": ide_pio,
    "ide-atapi": ide_atapi,
    "ide-hostile": ide_hostile,
    "virtio-blk": virtio_blk,
    "virtio-blk-hostile": virtio_blk_hostile,
}


def le8(data):
    return int.from_bytes(data[:8], "little")


def cd_image(offset, n):
    """What fuzz-devices.c writes into the CD-ROM image."""
    return bytes((i * 7 + (i >> 11)) & 0xff for i in range(offset, offset + n))


# The last reads of a seed, as FUZZ_TRACE prints them ("mem read  0xADDR/8 = 0xVALUE"):
# data that went to the disk and back, and request status bytes.
SEED_CHECKS = {
    "ide-dma": [(DMA_IN, le8(pattern(1024, 3))), (DMA_IN + ATA_SECTOR + 8, le8(pattern(1024, 3)[520:])),
                (DMA_IN2, le8(pattern(1024, 3)))],
    "ide-atapi": [(DMA_IN, le8(cd_image(CD_BLOCK, 8)))],
    # Status bytes: the write, the read, flush, GET_ID, discard and write
    # zeroes all OK (0); the next two untouched (0xff, as the seed wrote them).
    "virtio-blk": [(DATA_IN, le8(pattern(ATA_SECTOR, 5))), (STATUS, 0xffff << 48)],
}


def write_seeds(seeds, out):
    """Each seed of seeds (name: maker) into the folder out."""
    for name, make in seeds.items():
        (out / name).write_bytes(make())


def main():
    write_seeds(SEEDS, Path(sys.argv[1]))


if __name__ == "__main__":
    main()
