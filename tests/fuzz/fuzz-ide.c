/*
 * A hostile ATA/ATAPI driver for the fuzzer, on the PIIX3 IDE function
 * (00:01.1): each IDE drive of the device table gets these operations on
 * its channel and unit, in the order Linux's libata issues them (task
 * file, command; for DMA the PRD table and the bus master around it, as
 * ata_bmdma_setup and ata_bmdma_start do). Every value comes from the
 * input, PRD entries included; the legacy ports and the bus-master BAR
 * stay reachable through the plain access operations too.
 *
 * Operation (one byte, then operands; README.md, "IDE"):
 *   bits 0-1  0 ATA command, 1 ATA command with DMA, 2 ATAPI packet,
 *             3 PIO data transfer
 *   bit 2     LBA48 (the HOB registers first) / packet by DMA / write
 *   bit 3     the bus master moves data to memory (DMA operations)
 *   bit 4     DMA operations leave the function's COMMAND register alone
 *             (else they turn on I/O decoding and bus mastering first)
 */
#include <glib.h>
#include "fuzz.h"
#include "hw/ide/ide.h"

#define IDE_CMD_BASE(bus)       ((bus) ? 0x170 : 0x1f0)
#define PRD_TABLE(bus)          (0x10000 + (bus) * 0x1000)  /* in one 64 KiB window */
#define MAX_PRD                 8
#define MAX_PIO_WORDS           4096    /* 8 KiB, sixteen sectors, per op */

/* Command block registers. */
enum { REG_DATA, REG_FEATURE, REG_NSECTOR, REG_LBAL, REG_LBAM, REG_LBAH, REG_DEVICE,
       REG_COMMAND };
#define ATA_DEVICE_OBS          0xa0
#define ATA_DEVICE_LBA          0x40
#define ATA_PACKET              0xa0
#define ATAPI_FEATURE_DMA       0x01
#define ATAPI_PACKET_WORDS      6

/* Bus-master registers, per channel. */
#define BM_CMD                  0
#define BM_STATUS               2
#define BM_PRD_ADDR             4
#define BM_CMD_START            0x01
#define BM_CMD_TO_MEMORY        0x08
#define BM_STATUS_ERROR_INTR    0x06

enum { IOP_ATA, IOP_ATA_DMA, IOP_PACKET, IOP_PIO };
#define IOP_FLAG_A              0x04
#define IOP_FLAG_TO_MEMORY      0x08
#define IOP_FLAG_KEEP_COMMAND   0x10

static void reg_write(FuzzDevice *dev, unsigned reg, uint8_t value)
{
    guest_write(address_space_io, IDE_CMD_BASE(dev->ide_bus) + reg, value, 1);
}

static void select_unit(FuzzDevice *dev, uint8_t lba_high)
{
    reg_write(dev, REG_DEVICE, ATA_DEVICE_OBS | ATA_DEVICE_LBA | dev->ide_unit << 4 |
              (lba_high & 0x0f));
}

/* Operands: command:1 feature:1 count:2 lba:6. LBA48 writes each
 * register's high byte first, as the HOB protocol wants. */
static void task_file(FuzzDevice *dev, FuzzInput *in, bool lba48)
{
    uint8_t command = input_take(in, 1);
    uint8_t feature = input_take(in, 1);
    uint16_t count = input_take(in, 2);
    uint64_t lba = input_take(in, 6);
    select_unit(dev, lba48 ? 0 : lba >> 24);
    if (lba48) {
        reg_write(dev, REG_NSECTOR, count >> 8);
        reg_write(dev, REG_LBAL, lba >> 24);
        reg_write(dev, REG_LBAM, lba >> 32);
        reg_write(dev, REG_LBAH, lba >> 40);
    }
    reg_write(dev, REG_FEATURE, feature);
    reg_write(dev, REG_NSECTOR, count);
    reg_write(dev, REG_LBAL, lba);
    reg_write(dev, REG_LBAM, lba >> 8);
    reg_write(dev, REG_LBAH, lba >> 16);
    reg_write(dev, REG_COMMAND, command);
}

static uint64_t bm_base(FuzzDevice *dev)
{
    return pci_bar(PIIX3_IDE_DEVFN, 4).addr + dev->ide_bus * 8;
}

/*
 * The PRD table and the stopped bus master, before the command. Operands:
 * entries:1 (1..8) then per entry address:4 count_and_eot:4, as written
 * to memory.
 */
static void bm_setup(FuzzDevice *dev, FuzzInput *in, bool to_memory, bool keep_command)
{
    unsigned entries = input_take(in, 1) % MAX_PRD + 1;
    uint32_t prd[2 * MAX_PRD];
    for (unsigned i = 0; i < 2 * entries; i++) {
        prd[i] = GUINT32_TO_LE(input_take(in, 4));
    }
    guest_write_block(PRD_TABLE(dev->ide_bus), prd, entries * 8);
    if (!keep_command) {
        pci_enable(PIIX3_IDE_DEVFN, PCI_COMMAND_IO | PCI_COMMAND_MASTER);
    }
    uint64_t bm = bm_base(dev);
    guest_write(address_space_io, bm + BM_PRD_ADDR, PRD_TABLE(dev->ide_bus), 4);
    guest_write(address_space_io, bm + BM_CMD, to_memory ? BM_CMD_TO_MEMORY : 0, 1);
    guest_write(address_space_io, bm + BM_STATUS, BM_STATUS_ERROR_INTR, 1);
}

static void bm_start(FuzzDevice *dev, bool to_memory)
{
    guest_write(address_space_io, bm_base(dev) + BM_CMD,
                (to_memory ? BM_CMD_TO_MEMORY : 0) | BM_CMD_START, 1);
}

/* Operands: feature:1 byte_limit:2 packet:12, then the PRD operands if
 * by DMA (the feature's DMA bit is set for it). */
static void atapi_packet(FuzzDevice *dev, FuzzInput *in, bool dma, bool to_memory,
                         bool keep_command)
{
    uint8_t feature = input_take(in, 1);
    uint16_t byte_limit = input_take(in, 2);
    uint16_t packet[ATAPI_PACKET_WORDS];
    for (unsigned i = 0; i < ATAPI_PACKET_WORDS; i++) {
        packet[i] = input_take(in, 2);
    }
    if (dma) {
        bm_setup(dev, in, to_memory, keep_command);
        feature |= ATAPI_FEATURE_DMA;
    }
    select_unit(dev, 0);
    reg_write(dev, REG_FEATURE, feature);
    reg_write(dev, REG_LBAM, byte_limit);
    reg_write(dev, REG_LBAH, byte_limit >> 8);
    reg_write(dev, REG_COMMAND, ATA_PACKET);
    for (unsigned i = 0; i < ATAPI_PACKET_WORDS; i++) {
        guest_write(address_space_io, IDE_CMD_BASE(dev->ide_bus) + REG_DATA, packet[i], 2);
    }
    if (dma) {
        bm_start(dev, to_memory);
    }
}

/* Operand: words:2 (up to 4096) through the data port, then the status
 * read that acknowledges the interrupt. */
static void pio_transfer(FuzzDevice *dev, FuzzInput *in, bool write)
{
    unsigned words = input_take(in, 2) % (MAX_PIO_WORDS + 1);
    uint64_t data = IDE_CMD_BASE(dev->ide_bus) + REG_DATA;
    for (unsigned i = 0; i < words; i++) {
        if (write) {
            guest_write(address_space_io, data, i * 0x0101, 2);
        } else {
            guest_read(address_space_io, data, 2);
        }
    }
    guest_read(address_space_io, IDE_CMD_BASE(dev->ide_bus) + REG_COMMAND, 1);
}

static void ide_op(FuzzDevice *dev, FuzzInput *in)
{
    uint8_t op = input_take(in, 1);
    bool flag_a = op & IOP_FLAG_A;
    bool to_memory = op & IOP_FLAG_TO_MEMORY;
    bool keep_command = op & IOP_FLAG_KEEP_COMMAND;
    switch (op & 3) {
    case IOP_ATA:
        task_file(dev, in, flag_a);
        break;
    case IOP_ATA_DMA:
        bm_setup(dev, in, to_memory, keep_command);
        task_file(dev, in, flag_a);
        bm_start(dev, to_memory);
        break;
    case IOP_PACKET:
        atapi_packet(dev, in, flag_a, to_memory, keep_command);
        break;
    case IOP_PIO:
        pio_transfer(dev, in, flag_a);
        break;
    }
}

const FuzzDriver fuzz_ide_driver = {
    .name = "ide",
    .op = ide_op,
};
