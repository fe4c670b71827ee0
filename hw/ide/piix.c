/*
 * The PIIX3 IDE function (Intel 82371SB, 8086:7010) at 00:01.1 as on
 * QEMU's pc machine: both channels in compatibility mode (programming
 * interface 0x80: legacy ports and ISA IRQs 14/15, bus-master capable),
 * the bus-master IDE registers in BAR4 (16 bytes of I/O, 8 per channel),
 * and the PRD tables they point at. It is always there, with or without
 * drives, as on QEMU.
 *
 * Locks: the function's config space is under its own device lock; each
 * channel's half of BAR4 is a subregion owned by that channel, so the
 * bus-master registers and the DMA they start run under the channel's
 * lock, as the ATA registers do. The channels learn whether the guest
 * allowed bus mastering from an atomic copy of COMMAND.MASTER, which the
 * config-write hook keeps, instead of reading another device's config
 * space under their own lock.
 */
#include <stdatomic.h>
#include <glib.h>
#include "exec/memory.h"
#include "ide-internal.h"
#include "qemu/log.h"
#include "sysemu/dma.h"

#define PCI_VENDOR_ID_INTEL         0x8086
#define PIIX3_IDE_DEVICE_ID         0x7010
#define PCI_CLASS_IDE_LEGACY_BM     0x010180
#define PIIX_BMDMA_BAR              4
#define PIIX_BMDMA_SIZE             16
/* IDE timing registers (primary 40h, secondary 42h): bit 15 enables the
 * channel's decode. Firmware (SeaBIOS on QEMU) sets it, and Linux's
 * ata_piix ignores a channel without it. */
#define PIIX_IDETIM_PRIMARY         0x40
#define PIIX_IDETIM_SECONDARY       0x42
#define PIIX_IDETIM_DECODE_ENABLE   0x8000
#define PIIX_SIDETIM                0x44
/* A PRD entry: address, byte count (0: 64 KiB), end of table in bit 31. */
#define PRD_ENTRY_SIZE              8
#define PRD_EOT                     0x80000000u
#define PRD_TABLE_WINDOW            0x10000     /* a table may not cross 64 KiB */
#define PRD_MAX_BYTES               0x10000

struct PIIXIDEState {
    PCIDevice pci;
    MemoryRegion bmdma_bar;     /* container: one 8-byte region per channel */
    atomic_bool bus_master;     /* COMMAND.MASTER, for the channels */
    IDEChannel channels[IDE_CHANNELS];
};

/* ---- PRD tables ---- */

static const char *bm_name(const IDEChannel *ch)
{
    return ch->index ? "piix3-ide bmdma 1" : "piix3-ide bmdma 0";
}

BMDMAResult bmdma_map(IDEChannel *ch, uint64_t bytes, bool to_memory, struct iovec *iov,
                      int *niov)
{
    if (!atomic_load(&ch->piix->bus_master)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: DMA without bus mastering enabled\n", bm_name(ch));
        return BMDMA_FAULT;
    }
    if (!!(ch->bm_cmd & BM_CMD_TO_MEMORY) != to_memory) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: bus master direction does not match the "
                      "command's\n", bm_name(ch));
        return BMDMA_FAULT;
    }
    static __thread DMASegment seg[IDE_MAX_IOV];
    uint64_t entry = ch->bm_prd_addr;
    uint64_t window_end = (entry & ~(uint64_t)(PRD_TABLE_WINDOW - 1)) + PRD_TABLE_WINDOW;
    uint64_t covered = 0;
    size_t n = 0;
    bool eot = false, longer = false;
    while (covered < bytes) {
        uint32_t prd[2];
        if (eot || entry + PRD_ENTRY_SIZE > window_end || n == IDE_MAX_IOV) {
            qemu_log_mask(LOG_GUEST_ERROR, "%s: PRD table at 0x%x ends after %" G_GUINT64_FORMAT
                          " of %" G_GUINT64_FORMAT " bytes\n", bm_name(ch), ch->bm_prd_addr,
                          covered, bytes);
            return BMDMA_FAULT;
        }
        if (!dma_memory_read(entry, prd, sizeof(prd))) {
            qemu_log_mask(LOG_GUEST_ERROR, "%s: PRD entry at 0x%" G_GINT64_MODIFIER "x is not in "
                          "RAM\n", bm_name(ch), entry);
            return BMDMA_FAULT;
        }
        uint32_t base = GUINT32_FROM_LE(prd[0]) & ~1u;
        uint32_t count_field = GUINT32_FROM_LE(prd[1]) & 0xffff;
        uint64_t count = count_field ? (count_field & ~1u) : PRD_MAX_BYTES;
        uint64_t take = MIN(count, bytes - covered);
        eot = GUINT32_FROM_LE(prd[1]) & PRD_EOT;
        seg[n++] = (DMASegment) { .addr = base, .len = take };
        covered += take;
        entry += PRD_ENTRY_SIZE;
        /* The table had more room than the transfer needed: per the
         * bus-master specification Active then stays set. */
        longer = take < count || !eot;
    }
    size_t mapped;
    if (!dma_memory_map_sg(seg, n, iov, IDE_MAX_IOV, &mapped)) {
        return BMDMA_FAULT;     /* logged by the helper */
    }
    *niov = mapped;
    return longer ? BMDMA_OK_PRD_LONGER : BMDMA_OK;
}

bool bmdma_started(const IDEChannel *ch)
{
    return ch->bm_cmd & BM_CMD_START;
}

void bmdma_end(IDEChannel *ch, bool prd_longer, bool fault)
{
    if (!prd_longer) {
        ch->bm_status &= ~BM_STATUS_ACTIVE;
    }
    if (fault) {
        ch->bm_status |= BM_STATUS_ERROR;
    }
}

void bmdma_set_irq_status(IDEChannel *ch)
{
    ch->bm_status |= BM_STATUS_INTR;
}

/* ---- the bus-master registers ---- */

static uint8_t bmdma_read_byte(IDEChannel *ch, unsigned offset)
{
    switch (offset) {
    case BM_CMD:
        return ch->bm_cmd;
    case BM_STATUS:
        return ch->bm_status;
    case BM_PRD_ADDR ... BM_PRD_ADDR + 3:
        return ch->bm_prd_addr >> (8 * (offset - BM_PRD_ADDR));
    default:
        return 0;
    }
}

static void bmdma_write_command(IDEChannel *ch, uint8_t value)
{
    bool was_started = ch->bm_cmd & BM_CMD_START;
    bool start = value & BM_CMD_START;
    if (!was_started) {
        /* The direction may change only while the engine is stopped. */
        ch->bm_cmd = value & (BM_CMD_START | BM_CMD_TO_MEMORY);
    } else {
        ch->bm_cmd = (ch->bm_cmd & BM_CMD_TO_MEMORY) | (value & BM_CMD_START);
    }
    if (start && !was_started) {
        ch->bm_status |= BM_STATUS_ACTIVE;
        ide_dma_kick(ch);
    } else if (!start && was_started) {
        /* A request already with the host completes; its data may or may
         * not have arrived, as when a real engine is stopped mid-way. */
        ch->bm_status &= ~BM_STATUS_ACTIVE;
    }
}

static void bmdma_write_byte(IDEChannel *ch, unsigned offset, uint8_t value)
{
    switch (offset) {
    case BM_CMD:
        bmdma_write_command(ch, value);
        break;
    case BM_STATUS:
        ch->bm_status &= ~(value & (BM_STATUS_ERROR | BM_STATUS_INTR));
        ch->bm_status = (ch->bm_status & ~BM_STATUS_DMA_CAPABLE) |
                        (value & BM_STATUS_DMA_CAPABLE);
        break;
    case BM_PRD_ADDR ... BM_PRD_ADDR + 3: {
        unsigned shift = 8 * (offset - BM_PRD_ADDR);
        ch->bm_prd_addr = (ch->bm_prd_addr & ~(0xffu << shift)) | (uint32_t)value << shift;
        ch->bm_prd_addr &= ~3u;     /* dword aligned */
        break;
    }
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "%s: write to reserved register %u\n", bm_name(ch),
                      offset);
    }
}

static uint64_t bmdma_read(void *opaque, uint64_t offset, unsigned size)
{
    uint64_t value = 0;
    for (unsigned i = 0; i < size && offset + i < BM_PORTS_SIZE; i++) {
        value |= (uint64_t)bmdma_read_byte(opaque, offset + i) << (8 * i);
    }
    return value;
}

static void bmdma_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    for (unsigned i = 0; i < size && offset + i < BM_PORTS_SIZE; i++) {
        bmdma_write_byte(opaque, offset + i, value >> (8 * i));
    }
}

static const MemoryRegionOps bmdma_ops = {
    .read = bmdma_read,
    .write = bmdma_write,
    .max_access_size = 4,
};

/* ---- the PCI function ---- */

static void piix_ide_update_bus_master(PIIXIDEState *s)
{
    atomic_store(&s->bus_master, pci_bus_master_enabled(&s->pci));
}

static void piix_ide_config_written(PCIDevice *dev, uint32_t offset, uint32_t value,
                                    unsigned len)
{
    piix_ide_update_bus_master((PIIXIDEState *)dev);
}

static void piix_ide_reset(QEMUDevice *dev)
{
    PIIXIDEState *s = (PIIXIDEState *)dev;
    pci_device_reset(&s->pci);
    piix_ide_update_bus_master(s);
}

PIIXIDEState *piix3_ide_new(PCIBus *bus, Error **errp)
{
    PIIXIDEState *s = g_new0(PIIXIDEState, 1);
    if (!pci_device_init(&s->pci, bus, PIIX3_IDE_DEVFN, "piix3-ide", "piix3-ide",
                         PCI_VENDOR_ID_INTEL, PIIX3_IDE_DEVICE_ID, 0, PCI_CLASS_IDE_LEGACY_BM,
                         0, errp)) {
        g_free(s);
        return NULL;
    }
    s->pci.qdev.reset = piix_ide_reset;
    s->pci.config_written = piix_ide_config_written;
    pci_set_word(&s->pci, PIIX_IDETIM_PRIMARY, PIIX_IDETIM_DECODE_ENABLE);
    pci_set_word(&s->pci, PIIX_IDETIM_SECONDARY, PIIX_IDETIM_DECODE_ENABLE);
    pci_set_wmask(&s->pci, PIIX_IDETIM_PRIMARY, 0xffff, 2);
    pci_set_wmask(&s->pci, PIIX_IDETIM_SECONDARY, 0xffff, 2);
    pci_set_wmask(&s->pci, PIIX_SIDETIM, 0xff, 1);
    memory_region_init_container(&s->bmdma_bar, &s->pci.qdev, "piix3-ide-bmdma",
                                 PIIX_BMDMA_SIZE);
    for (int i = 0; i < IDE_CHANNELS; i++) {
        IDEChannel *ch = &s->channels[i];
        ide_channel_init(ch, s, i);
        memory_region_init_io(&ch->bm_ports, &ch->qdev, &bmdma_ops, ch,
                              i ? "piix3-ide-bmdma1" : "piix3-ide-bmdma0", BM_PORTS_SIZE);
        memory_region_add_subregion(&s->bmdma_bar, i * BM_PORTS_SIZE, &ch->bm_ports, 0);
    }
    pci_register_bar(&s->pci, PIIX_BMDMA_BAR, PCI_BASE_ADDRESS_SPACE_IO, &s->bmdma_bar);
    return s;
}

/* ---- drives ---- */

static IDEUnit *piix_ide_unit(PIIXIDEState *s, int bus, int unit)
{
    return &s->channels[bus].units[unit];
}

/* unit -1: the first free one. bus -1: ide.1, always, as QEMU 7.2 places a
 * -device ide-hd/ide-cd without bus= (its bus search meets the secondary
 * channel first and does not move on when that channel is full: a third
 * such device is refused with "IDE unit 1 is in use"). */
static bool piix_ide_place(PIIXIDEState *s, int *bus, int *unit, Error **errp)
{
    if (*unit >= IDE_UNITS_PER_CHANNEL) {
        error_setg(errp, "Can't create IDE unit %d, bus supports only %d units", *unit,
                   IDE_UNITS_PER_CHANNEL);
        return false;
    }
    if (*bus < 0) {
        *bus = IDE_CHANNELS - 1;
    }
    for (int u = *unit < 0 ? 0 : *unit; u < (*unit < 0 ? IDE_UNITS_PER_CHANNEL : *unit + 1);
         u++) {
        if (!piix_ide_unit(s, *bus, u)->present) {
            *unit = u;
            return true;
        }
    }
    error_setg(errp, "IDE unit %d is in use", *unit < 0 ? IDE_UNITS_PER_CHANNEL - 1 : *unit);
    return false;
}

void ide_drive_position(const QEMUDevice *drive, unsigned *bus, unsigned *unit)
{
    const IDEUnit *u = (const IDEUnit *)((const char *)drive - offsetof(IDEUnit, qdev));
    *bus = u->ch->index;
    *unit = u->index;
}

void ide_drive_identity_strings(const QEMUDevice *drive, const char **serial,
                                const char **firmware)
{
    const IDEUnit *u = (const IDEUnit *)((const char *)drive - offsetof(IDEUnit, qdev));
    *serial = u->serial;
    *firmware = u->firmware;
}

QEMUDevice *ide_drive_attach(PIIXIDEState *s, int bus, int unit, IDEDriveKind kind,
                             DriveInfo *drive, const IDEDriveIdentity *identity,
                             const BlockErrorProperties *errors, Error **errp)
{
    if (kind == IDE_DRIVE_HD && !drive) {
        error_setg(errp, "No drive specified");
        return NULL;
    }
    if (kind == IDE_DRIVE_HD && drive->cfg->read_only) {
        /* As QEMU: an ATA disk has no way to tell the guest it is read-only. */
        error_setg(errp, "Block node is read-only");
        return NULL;
    }
    if (!piix_ide_place(s, &bus, &unit, errp) || (drive && !drive_info_claim(drive, errp))) {
        return NULL;
    }
    if (!drive) {
        /* An empty CD-ROM: a drive of its own, whose disc the monitor
         * may change (named by the device's id). */
        drive = drive_info_new_anonymous(DRIVE_MEDIA_CDROM);
    }
    block_error_properties_apply(errors, drive);
    IDEUnit *u = piix_ide_unit(s, bus, unit);
    IDEChannel *ch = &s->channels[bus];
    device_lock(&ch->qdev);
    u->present = true;
    u->is_cd = kind == IDE_DRIVE_CD;
    u->drive = drive;
    u->blk = drive ? drive->blk : NULL;
    if (!u->is_cd && u->blk) {
        /* As QEMU's: an ATA disk honours werror/rerror, ATAPI reports. */
        blk_set_on_error(u->blk, drive->rerror, drive->werror);
    }
    u->sectors = u->blk ? blk_getlength(u->blk) / IDE_SECTOR_SIZE : 0;
    u->buf = g_malloc0(IDE_BUFFER_SIZE);
    ide_unit_set_identity(u, identity, bus * IDE_UNITS_PER_CHANNEL + unit + 1);
    ide_channel_reset(ch);
    device_unlock(&ch->qdev);
    if (u->is_cd) {
        device_init(&u->qdev, "ide-cd", "ide-cd");
    } else {
        device_init(&u->qdev, "ide-hd", "ide-hd");
    }
    /* A CD-ROM's medium is the monitor's to change (atapi-media.c). */
    drive_info_attach(drive, &u->qdev, u->is_cd ? &atapi_medium_ops : NULL, u);
    return &u->qdev;
}
