/*
 * The ATA core of an IDE channel: the command and control block registers,
 * interrupts, soft reset, PIO through the data port, DMA hand-off to the
 * bus master, and the ATA commands of a disk (ATA8-ACS). Packet commands
 * are in ide-atapi.c, IDENTIFY data in ide-identify.c, the bus master in
 * piix.c.
 *
 * Every function here runs under the channel's device lock: register
 * accesses through dispatch, completions through ide_io_complete. A
 * command that needs the disk submits its request and returns with BSY
 * set; the completion carries on. While a unit is BSY a guest's command
 * is ignored (as ATA says), so no two requests of a unit overlap and the
 * unit's buffer is never written by the host while the guest reads it.
 */
#include <errno.h>
#include <string.h>
#include <glib.h>
#include "ide-internal.h"
#include "qemu/log.h"

/* Command block register offsets. */
enum {
    REG_DATA, REG_ERROR_FEATURE, REG_NSECTOR, REG_LBAL, REG_LBAM, REG_LBAH, REG_DEVICE,
    REG_STATUS_COMMAND, CMD_PORTS_SIZE,
};

/* ATA command opcodes (ATA8-ACS). */
enum {
    ATA_DEVICE_RESET = 0x08,
    ATA_READ_SECTORS = 0x20, ATA_READ_SECTORS_NORETRY = 0x21, ATA_READ_SECTORS_EXT = 0x24,
    ATA_READ_DMA_EXT = 0x25, ATA_READ_MULTIPLE_EXT = 0x29,
    ATA_WRITE_SECTORS = 0x30, ATA_WRITE_SECTORS_NORETRY = 0x31, ATA_WRITE_SECTORS_EXT = 0x34,
    ATA_WRITE_DMA_EXT = 0x35, ATA_WRITE_MULTIPLE_EXT = 0x39,
    ATA_READ_VERIFY = 0x40, ATA_READ_VERIFY_NORETRY = 0x41, ATA_READ_VERIFY_EXT = 0x42,
    ATA_EXECUTE_DIAGNOSTIC = 0x90, ATA_INITIALIZE_PARAMETERS = 0x91,
    ATA_PACKET = 0xa0, ATA_IDENTIFY_PACKET = 0xa1,
    ATA_READ_MULTIPLE = 0xc4, ATA_WRITE_MULTIPLE = 0xc5, ATA_SET_MULTIPLE = 0xc6,
    ATA_READ_DMA = 0xc8, ATA_READ_DMA_NORETRY = 0xc9,
    ATA_WRITE_DMA = 0xca, ATA_WRITE_DMA_NORETRY = 0xcb,
    ATA_STANDBY_IMMEDIATE = 0xe0, ATA_IDLE_IMMEDIATE = 0xe1, ATA_STANDBY = 0xe2,
    ATA_IDLE = 0xe3, ATA_CHECK_POWER_MODE = 0xe5, ATA_SLEEP = 0xe6,
    ATA_FLUSH_CACHE = 0xe7, ATA_FLUSH_CACHE_EXT = 0xea, ATA_IDENTIFY = 0xec,
    ATA_SET_FEATURES = 0xef,
};

/* SET FEATURES subcommands. */
enum {
    SETF_WCACHE_ON = 0x02, SETF_XFER_MODE = 0x03, SETF_WCACHE_OFF = 0x82,
    SETF_LOOKAHEAD_OFF = 0x55, SETF_REVERT_OFF = 0x66, SETF_LOOKAHEAD_ON = 0xaa,
    SETF_REVERT_ON = 0xcc,
};
/* SET FEATURES 03h: the mode class in bits 7:3, the mode in 2:0. */
#define XFER_PIO_DEFAULT    0x00
#define XFER_PIO_FLOW       0x08
#define XFER_MWDMA          0x20
#define XFER_UDMA           0x40
#define ATA_POWER_ACTIVE    0xff
#define ATA_DIAGNOSTIC_OK   0x01

static const char *ide_name(const IDEUnit *u)
{
    return u->ch->index ? "ide.1" : "ide.0";
}

static IDEUnit *selected_unit(IDEChannel *ch)
{
    return &ch->units[ch->selected];
}

/* ---- interrupts ---- */

static void ide_update_irq(IDEChannel *ch)
{
    irq_source_set(ch->irq, ch->irq_pending && !(ch->devctl & ATA_DEVCTL_NIEN));
}

void ide_raise_irq(IDEChannel *ch)
{
    ch->irq_pending = true;
    bmdma_set_irq_status(ch);
    ide_update_irq(ch);
}

static void ide_lower_irq(IDEChannel *ch)
{
    ch->irq_pending = false;
    ide_update_irq(ch);
}

/* ---- command completion ---- */

void ide_command_ok(IDEUnit *u)
{
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC;
    u->error = 0;
    ide_raise_irq(u->ch);
}

void ide_command_error(IDEUnit *u, uint8_t error)
{
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC | ATA_STATUS_ERR;
    u->error = error;
    ide_raise_irq(u->ch);
}

static void ide_command_abort(IDEUnit *u)
{
    ide_command_error(u, ATA_ERROR_ABRT);
}

/* ---- PIO ---- */

void ide_pio_start(IDEUnit *u, uint32_t len, uint32_t block_size, bool out,
                   IDEBlockDone *done)
{
    g_assert(len <= IDE_BUFFER_SIZE && block_size > 0);
    u->pos = 0;
    u->buf_end = len;
    u->drq_end = MIN(block_size, len);
    u->pio_out = out;
    u->block_done = done;
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC | ATA_STATUS_DRQ;
}

void ide_pio_next_block(IDEUnit *u, uint32_t block_size)
{
    u->drq_end = MIN(u->pos + block_size, u->buf_end);
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC | ATA_STATUS_DRQ;
    ide_raise_irq(u->ch);
}

void ide_pio_stop(IDEUnit *u)
{
    u->block_done = NULL;
    u->pos = u->drq_end = u->buf_end = 0;
    u->status &= ~ATA_STATUS_DRQ;
}

/* The unit is ready for data-port accesses of size bytes. */
static bool ide_data_ready(IDEUnit *u, bool write, unsigned size)
{
    if (!u->present || !u->block_done || u->pio_out != write ||
        !(u->status & ATA_STATUS_DRQ)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: data port %s without a transfer: ignored\n",
                      ide_name(u), write ? "write" : "read");
        return false;
    }
    if (size != 2 && size != 4) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: %u-byte data port access: ignored\n",
                      ide_name(u), size);
        return false;
    }
    return true;
}

/* One access moved pos on: at the end of a DRQ block, hand over. */
static void ide_data_advance(IDEUnit *u, unsigned size)
{
    u->pos = MIN(u->pos + size, u->drq_end);
    if (u->pos == u->drq_end) {
        u->status &= ~ATA_STATUS_DRQ;
        u->block_done(u);
    }
}

static uint32_t ide_data_read(IDEUnit *u, unsigned size)
{
    uint32_t value = 0;
    if (!ide_data_ready(u, false, size)) {
        return size == 4 ? UINT32_MAX : 0xffff;
    }
    memcpy(&value, u->buf + u->pos, MIN(size, u->drq_end - u->pos));
    ide_data_advance(u, size);
    return GUINT32_FROM_LE(value);
}

static void ide_data_write(IDEUnit *u, uint32_t value, unsigned size)
{
    if (!ide_data_ready(u, true, size)) {
        return;
    }
    value = GUINT32_TO_LE(value);
    memcpy(u->buf + u->pos, &value, MIN(size, u->drq_end - u->pos));
    ide_data_advance(u, size);
}

/* ---- DMA ---- */

void ide_dma_request(IDEUnit *u, uint64_t bytes, bool to_memory,
                     void (*start)(IDEUnit *u, const struct iovec *iov, int niov),
                     IDEDMADone *done)
{
    u->dma_pending = true;
    u->dma_to_memory = to_memory;
    u->dma_bytes = bytes;
    u->dma_start = start;
    u->dma_done = done;
    /* Waiting for the bus master: DRQ, as a drive asserting DMARQ shows. */
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC | ATA_STATUS_DRQ;
    ide_dma_kick(u->ch);
}

/* -EFAULT: the bus master refused the PRD table (its Error bit). */
void ide_dma_finish(IDEUnit *u, int ret)
{
    bmdma_end(u->ch, u->dma_prd_longer && ret == 0, ret == -EFAULT);
    u->dma_running = false;
    u->dma_done(u, ret);
}

static void ide_dma_run(IDEUnit *u)
{
    u->dma_pending = false;
    u->dma_prd_longer = false;
    u->dma_running = true;
    switch (bmdma_map(u->ch, u->dma_bytes, u->dma_to_memory, u->iov, &u->niov)) {
    case BMDMA_FAULT:
        ide_dma_finish(u, -EFAULT);
        return;
    case BMDMA_OK_PRD_LONGER:
        u->dma_prd_longer = true;
        break;
    case BMDMA_OK:
        break;
    }
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC | ATA_STATUS_BSY;
    u->dma_start(u, u->iov, u->niov);
}

void ide_dma_kick(IDEChannel *ch)
{
    if (!bmdma_started(ch)) {
        return;
    }
    for (int i = 0; i < IDE_UNITS_PER_CHANNEL; i++) {
        if (ch->units[i].dma_pending) {
            ide_dma_run(&ch->units[i]);
            return;
        }
    }
}

/* ---- reset ---- */

/* A unit after SRST or power-on: the signature in the task file, idle. */
static void ide_unit_reset(IDEUnit *u)
{
    ide_pio_stop(u);
    u->dma_pending = false;
    u->reset_pending = false;
    u->feature = u->hob_feature = 0;
    u->hob_nsector = u->hob_lbal = u->hob_lbam = u->hob_lbah = 0;
    u->nsector = 1;
    u->lbal = 1;
    u->lbam = u->lbah = 0;
    u->device = 0;
    u->error = ATA_DIAGNOSTIC_OK;
    if (u->is_cd) {
        atapi_reset(u);
    } else {
        u->status = u->present ? ATA_STATUS_DRDY | ATA_STATUS_DSC : 0;
    }
}

void ide_io_complete(IDEUnit *u, int ret, void (*handle)(IDEUnit *u, int ret))
{
    IDEChannel *ch = u->ch;
    device_lock(&ch->qdev);
    u->io_in_flight = false;
    if (u->reset_pending) {
        /* SRST came while the host worked: the result is dropped. */
        if (u->dma_running) {
            u->dma_running = false;
            bmdma_end(ch, false, false);
        }
        u->reset_pending = false;
        if (!(ch->devctl & ATA_DEVCTL_SRST)) {
            ide_unit_reset(u);
        }
    } else {
        handle(u, ret);
    }
    device_unlock(&ch->qdev);
}

static void ide_write_devctl(IDEChannel *ch, uint8_t value)
{
    bool was_reset = ch->devctl & ATA_DEVCTL_SRST;
    ch->devctl = value;
    for (int i = 0; i < IDE_UNITS_PER_CHANNEL; i++) {
        IDEUnit *u = &ch->units[i];
        if (!was_reset && (value & ATA_DEVCTL_SRST)) {
            ide_pio_stop(u);
            u->dma_pending = false;
            u->status = ATA_STATUS_BSY;
            u->reset_pending = u->io_in_flight;
        } else if (was_reset && !(value & ATA_DEVCTL_SRST) && !u->io_in_flight) {
            ide_unit_reset(u);
        }
    }
    if (!was_reset && (value & ATA_DEVCTL_SRST)) {
        ch->selected = 0;
        ch->irq_pending = false;
    }
    ide_update_irq(ch);
}

void ide_channel_reset(IDEChannel *ch)
{
    ch->devctl = 0;
    ch->selected = 0;
    ch->irq_pending = false;
    ch->bm_cmd = 0;
    ch->bm_status = 0;
    ch->bm_prd_addr = 0;
    for (int i = 0; i < IDE_UNITS_PER_CHANNEL; i++) {
        IDEUnit *u = &ch->units[i];
        ide_unit_reset(u);
        u->dma_running = false;
        u->mult_sectors = 0;
        u->xfer_mode = XFER_PIO_DEFAULT;
        if (u->blk) {
            /* Power-on restores the write cache the drive was configured
             * with: write-cache=, or with auto the drive's cache= mode. */
            bool wce = u->write_cache == ON_OFF_AUTO_AUTO ?
                       drive_cache_flags(u->drive->cfg->cache).writeback :
                       u->write_cache == ON_OFF_AUTO_ON;
            blk_set_enable_write_cache(u->blk, wce);
        }
    }
    ide_update_irq(ch);
}

/* ---- the task file ---- */

static bool command_is_lba48(uint8_t command)
{
    switch (command) {
    case ATA_READ_SECTORS_EXT: case ATA_READ_DMA_EXT: case ATA_READ_MULTIPLE_EXT:
    case ATA_WRITE_SECTORS_EXT: case ATA_WRITE_DMA_EXT: case ATA_WRITE_MULTIPLE_EXT:
    case ATA_READ_VERIFY_EXT:
        return true;
    default:
        return false;
    }
}

static uint64_t task_file_lba(const IDEUnit *u, bool lba48)
{
    if (lba48) {
        return (uint64_t)u->hob_lbah << 40 | (uint64_t)u->hob_lbam << 32 |
               (uint64_t)u->hob_lbal << 24 | (uint64_t)u->lbah << 16 |
               (uint64_t)u->lbam << 8 | u->lbal;
    }
    if (u->device & ATA_DEV_LBA) {
        return (uint64_t)(u->device & 0x0f) << 24 | (uint64_t)u->lbah << 16 |
               (uint64_t)u->lbam << 8 | u->lbal;
    }
    /* CHS, with the geometry IDENTIFY reports. A sector number of 0 does
     * not exist: it maps past the end and fails the range check. */
    uint64_t cylinder = (uint64_t)u->lbah << 8 | u->lbam;
    uint64_t head = u->device & 0x0f;
    if (u->lbal == 0) {
        return UINT64_MAX;
    }
    return (cylinder * u->heads + head) * u->sectors_per_track + u->lbal - 1;
}

static uint32_t task_file_count(const IDEUnit *u, bool lba48)
{
    uint32_t count = lba48 ? (uint32_t)u->hob_nsector << 8 | u->nsector : u->nsector;
    if (count == 0) {
        count = lba48 ? 65536 : 256;
    }
    return count;
}

/* The last sector transferred, as drives leave it in the task file. */
static void task_file_set_lba(IDEUnit *u, uint64_t lba, bool lba48)
{
    u->lbal = lba;
    u->lbam = lba >> 8;
    u->lbah = lba >> 16;
    if (lba48) {
        u->hob_lbal = lba >> 24;
        u->hob_lbam = lba >> 32;
        u->hob_lbah = lba >> 40;
    } else if (u->device & ATA_DEV_LBA) {
        u->device = (u->device & 0xf0) | ((lba >> 24) & 0x0f);
    }
}

/* Load the command's range into u->lba and u->remaining; IDNF past the end. */
static bool ide_load_range(IDEUnit *u)
{
    bool lba48 = command_is_lba48(u->command);
    uint64_t lba = task_file_lba(u, lba48);
    uint32_t count = task_file_count(u, lba48);
    if (lba > u->sectors || count > u->sectors - lba) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: command 0x%02x for sectors %" G_GUINT64_FORMAT
                      "+%u past the end (%" G_GUINT64_FORMAT " sectors)\n", ide_name(u),
                      u->command, lba == UINT64_MAX ? 0 : lba, count, u->sectors);
        ide_command_error(u, ATA_ERROR_IDNF);
        return false;
    }
    u->lba = lba;
    u->remaining = count;
    return true;
}

static void ide_command_done_at(IDEUnit *u, uint64_t last_lba)
{
    task_file_set_lba(u, last_lba, command_is_lba48(u->command));
    ide_command_ok(u);
}

/* ---- disk reads and writes by PIO ---- */

static uint32_t drq_block_bytes(const IDEUnit *u)
{
    bool multiple = u->command == ATA_READ_MULTIPLE || u->command == ATA_WRITE_MULTIPLE ||
                    u->command == ATA_READ_MULTIPLE_EXT || u->command == ATA_WRITE_MULTIPLE_EXT;
    return (multiple ? u->mult_sectors : 1) * IDE_SECTOR_SIZE;
}

static int ide_io_error(IDEUnit *u, int ret, const char *what)
{
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s of sector %" G_GUINT64_FORMAT " failed: %s\n",
                  ide_name(u), what, u->lba, g_strerror(-ret));
    return ret == -EIO ? ATA_ERROR_UNC : ATA_ERROR_ABRT;
}

static void disk_pio_read_chunk(IDEUnit *u);

static void disk_pio_read_block_done(IDEUnit *u)
{
    if (u->pos < u->buf_end) {
        ide_pio_next_block(u, drq_block_bytes(u));
        return;
    }
    u->lba += u->chunk;
    u->remaining -= u->chunk;
    if (u->remaining) {
        disk_pio_read_chunk(u);
        return;
    }
    /* PIO data-in: no interrupt after the last block. */
    ide_pio_stop(u);
    task_file_set_lba(u, u->lba - 1, command_is_lba48(u->command));
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC;
}

static void disk_pio_read_done(IDEUnit *u, int ret)
{
    if (ret < 0) {
        ide_command_error(u, ide_io_error(u, ret, "read"));
        return;
    }
    ide_pio_start(u, u->chunk * IDE_SECTOR_SIZE, drq_block_bytes(u), false,
                  disk_pio_read_block_done);
    ide_raise_irq(u->ch);
}

static void disk_pio_read_cb(void *opaque, int ret)
{
    ide_io_complete(opaque, ret, disk_pio_read_done);
}

static void disk_pio_read_chunk(IDEUnit *u)
{
    u->chunk = MIN(u->remaining, IDE_BUFFER_SIZE / IDE_SECTOR_SIZE);
    u->status = ATA_STATUS_DRDY | ATA_STATUS_BSY;
    u->io_in_flight = true;
    struct iovec iov = { u->buf, u->chunk * IDE_SECTOR_SIZE };
    blk_aio_preadv(u->blk, u->lba * IDE_SECTOR_SIZE, &iov, 1, disk_pio_read_cb, u);
}

static void disk_pio_write_block_done(IDEUnit *u);

static void disk_pio_write_chunk_start(IDEUnit *u)
{
    u->chunk = MIN(u->remaining, IDE_BUFFER_SIZE / IDE_SECTOR_SIZE);
    ide_pio_start(u, u->chunk * IDE_SECTOR_SIZE, drq_block_bytes(u), true,
                  disk_pio_write_block_done);
}

static void disk_pio_write_done(IDEUnit *u, int ret)
{
    if (ret < 0) {
        ide_command_error(u, ide_io_error(u, ret, "write"));
        return;
    }
    u->lba += u->chunk;
    u->remaining -= u->chunk;
    if (u->remaining) {
        disk_pio_write_chunk_start(u);
        ide_raise_irq(u->ch);
        return;
    }
    ide_command_done_at(u, u->lba - 1);
}

static void disk_pio_write_cb(void *opaque, int ret)
{
    ide_io_complete(opaque, ret, disk_pio_write_done);
}

/* A DRQ block arrived: take the next one into the buffer, or write the
 * buffer out when it is full or the command's data is complete. */
static void disk_pio_write_block_done(IDEUnit *u)
{
    if (u->pos < u->buf_end) {
        ide_pio_next_block(u, drq_block_bytes(u));
        return;
    }
    ide_pio_stop(u);
    u->status = ATA_STATUS_DRDY | ATA_STATUS_BSY;
    u->io_in_flight = true;
    struct iovec iov = { u->buf, u->chunk * IDE_SECTOR_SIZE };
    blk_aio_pwritev(u->blk, u->lba * IDE_SECTOR_SIZE, &iov, 1, 0, disk_pio_write_cb, u);
}

/* ---- disk reads and writes by DMA ---- */

static void disk_dma_done(IDEUnit *u, int ret)
{
    if (ret == -EFAULT) {
        ide_command_abort(u);
    } else if (ret < 0) {
        ide_command_error(u, ide_io_error(u, ret, u->dma_to_memory ? "DMA read" : "DMA write"));
    } else {
        ide_command_done_at(u, u->lba + u->remaining - 1);
    }
}

static void disk_dma_cb(void *opaque, int ret)
{
    ide_io_complete(opaque, ret, ide_dma_finish);
}

static void disk_dma_start(IDEUnit *u, const struct iovec *iov, int niov)
{
    u->io_in_flight = true;
    if (u->dma_to_memory) {
        blk_aio_preadv(u->blk, u->lba * IDE_SECTOR_SIZE, iov, niov, disk_dma_cb, u);
    } else {
        blk_aio_pwritev(u->blk, u->lba * IDE_SECTOR_SIZE, iov, niov, 0, disk_dma_cb, u);
    }
}

/* ---- the other commands ---- */

static void identify_block_done(IDEUnit *u)
{
    ide_pio_stop(u);
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC;
}

static void ide_identify_command(IDEUnit *u)
{
    uint16_t words[256];
    ide_identify(u, words);
    for (int i = 0; i < 256; i++) {
        words[i] = GUINT16_TO_LE(words[i]);
    }
    memcpy(u->buf, words, sizeof(words));
    ide_pio_start(u, sizeof(words), sizeof(words), false, identify_block_done);
    ide_raise_irq(u->ch);
}

static void flush_done(IDEUnit *u, int ret)
{
    if (ret < 0) {
        ide_command_error(u, ide_io_error(u, ret, "flush"));
    } else {
        ide_command_ok(u);
    }
}

static void flush_cb(void *opaque, int ret)
{
    ide_io_complete(opaque, ret, flush_done);
}

static bool xfer_mode_is_valid(uint8_t mode)
{
    switch (mode & 0xf8) {
    case XFER_PIO_DEFAULT:
        return (mode & 7) <= 1;
    case XFER_PIO_FLOW:
        return (mode & 7) <= 4;
    case XFER_MWDMA:
        return (mode & 7) <= 2;
    case XFER_UDMA:
        return (mode & 7) <= 5;
    default:
        return false;
    }
}

static void ide_set_features(IDEUnit *u)
{
    switch (u->feature) {
    case SETF_WCACHE_ON:
    case SETF_WCACHE_OFF:
        if (u->is_cd) {
            break;
        }
        blk_set_enable_write_cache(u->blk, u->feature == SETF_WCACHE_ON);
        ide_command_ok(u);
        return;
    case SETF_XFER_MODE:
        if (!xfer_mode_is_valid(u->nsector)) {
            break;
        }
        u->xfer_mode = u->nsector;
        ide_command_ok(u);
        return;
    case SETF_LOOKAHEAD_ON: case SETF_LOOKAHEAD_OFF:
    case SETF_REVERT_ON: case SETF_REVERT_OFF:
        ide_command_ok(u);
        return;
    }
    qemu_log_mask(LOG_UNIMP, "%s: SET FEATURES 0x%02x not supported: aborted\n", ide_name(u),
                  u->feature);
    ide_command_abort(u);
}

static void ide_set_multiple(IDEUnit *u)
{
    uint8_t count = u->nsector;
    if (count > IDE_MAX_MULT_SECTORS || (count & (count - 1))) {
        ide_command_abort(u);
        return;
    }
    u->mult_sectors = count;
    ide_command_ok(u);
}

/* Commands both disks and CD-ROMs take. */
static bool ide_execute_common(IDEUnit *u)
{
    switch (u->command) {
    case ATA_SET_FEATURES:
        ide_set_features(u);
        return true;
    case ATA_CHECK_POWER_MODE:
        u->nsector = ATA_POWER_ACTIVE;
        ide_command_ok(u);
        return true;
    case ATA_STANDBY_IMMEDIATE: case ATA_IDLE_IMMEDIATE: case ATA_STANDBY: case ATA_IDLE:
    case ATA_SLEEP:
        /* Power states change nothing here; the drive answers at once. */
        ide_command_ok(u);
        return true;
    case ATA_EXECUTE_DIAGNOSTIC:
        ide_unit_reset(u);
        ide_raise_irq(u->ch);
        return true;
    default:
        return false;
    }
}

static void ide_execute_atapi(IDEUnit *u)
{
    switch (u->command) {
    case ATA_PACKET:
        atapi_packet_command(u);
        return;
    case ATA_IDENTIFY_PACKET:
        ide_identify_command(u);
        return;
    case ATA_DEVICE_RESET:
        ide_unit_reset(u);
        return;
    case ATA_IDENTIFY:
        /* A packet device aborts IDENTIFY DEVICE and shows its signature:
         * that is how hosts tell it from a disk. */
        ide_unit_reset(u);
        ide_command_abort(u);
        u->status &= ~ATA_STATUS_DRDY;
        return;
    }
    if (!ide_execute_common(u)) {
        qemu_log_mask(LOG_UNIMP, "%s: ATA command 0x%02x for a packet device: aborted\n",
                      ide_name(u), u->command);
        ide_command_abort(u);
    }
}

static void ide_start_read(IDEUnit *u, bool dma)
{
    if (!ide_load_range(u)) {
        return;
    }
    if (dma) {
        ide_dma_request(u, (uint64_t)u->remaining * IDE_SECTOR_SIZE, true, disk_dma_start,
                        disk_dma_done);
    } else {
        disk_pio_read_chunk(u);
    }
}

static void ide_start_write(IDEUnit *u, bool dma)
{
    if (!ide_load_range(u)) {
        return;
    }
    if (dma) {
        ide_dma_request(u, (uint64_t)u->remaining * IDE_SECTOR_SIZE, false, disk_dma_start,
                        disk_dma_done);
    } else {
        disk_pio_write_chunk_start(u);
    }
}

static bool multiple_mode_set(IDEUnit *u)
{
    if (!u->mult_sectors) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: READ/WRITE MULTIPLE without SET MULTIPLE MODE\n",
                      ide_name(u));
        ide_command_abort(u);
        return false;
    }
    return true;
}

static void ide_execute_disk(IDEUnit *u)
{
    switch (u->command) {
    case ATA_IDENTIFY:
        ide_identify_command(u);
        return;
    case ATA_READ_SECTORS: case ATA_READ_SECTORS_NORETRY: case ATA_READ_SECTORS_EXT:
        ide_start_read(u, false);
        return;
    case ATA_READ_MULTIPLE: case ATA_READ_MULTIPLE_EXT:
        if (multiple_mode_set(u)) {
            ide_start_read(u, false);
        }
        return;
    case ATA_READ_DMA: case ATA_READ_DMA_NORETRY: case ATA_READ_DMA_EXT:
        ide_start_read(u, true);
        return;
    case ATA_WRITE_SECTORS: case ATA_WRITE_SECTORS_NORETRY: case ATA_WRITE_SECTORS_EXT:
        ide_start_write(u, false);
        return;
    case ATA_WRITE_MULTIPLE: case ATA_WRITE_MULTIPLE_EXT:
        if (multiple_mode_set(u)) {
            ide_start_write(u, false);
        }
        return;
    case ATA_WRITE_DMA: case ATA_WRITE_DMA_NORETRY: case ATA_WRITE_DMA_EXT:
        ide_start_write(u, true);
        return;
    case ATA_READ_VERIFY: case ATA_READ_VERIFY_NORETRY: case ATA_READ_VERIFY_EXT:
        /* The image has no media errors to find: checking the range is all. */
        if (ide_load_range(u)) {
            ide_command_done_at(u, u->lba + u->remaining - 1);
        }
        return;
    case ATA_SET_MULTIPLE:
        ide_set_multiple(u);
        return;
    case ATA_FLUSH_CACHE: case ATA_FLUSH_CACHE_EXT:
        u->status = ATA_STATUS_DRDY | ATA_STATUS_BSY;
        u->io_in_flight = true;
        blk_aio_flush(u->blk, flush_cb, u);
        return;
    case ATA_INITIALIZE_PARAMETERS:
        /* The geometry stays the one IDENTIFY reports; LBA ignores it. */
        ide_command_ok(u);
        return;
    }
    if ((u->command & 0xf0) == 0x10 || (u->command & 0xf0) == 0x70) {
        /* RECALIBRATE and SEEK: nothing moves. */
        ide_command_ok(u);
        return;
    }
    if (!ide_execute_common(u)) {
        qemu_log_mask(LOG_UNIMP, "%s: ATA command 0x%02x not supported: aborted\n",
                      ide_name(u), u->command);
        ide_command_abort(u);
    }
}

static void ide_write_command(IDEChannel *ch, uint8_t command)
{
    IDEUnit *u = selected_unit(ch);
    if (!u->present) {
        return;     /* nobody answers: the command goes nowhere */
    }
    bool device_reset = u->is_cd && command == ATA_DEVICE_RESET;
    if ((u->status & ATA_STATUS_BSY) && !device_reset) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: command 0x%02x while busy: ignored\n",
                      ide_name(u), command);
        return;
    }
    if (u->io_in_flight) {
        /* DEVICE RESET of a packet device while the host works: as SRST. */
        u->reset_pending = true;
        return;
    }
    ide_pio_stop(u);
    u->dma_pending = false;
    ide_lower_irq(ch);
    u->command = command;
    if (u->is_cd) {
        ide_execute_atapi(u);
    } else {
        ide_execute_disk(u);
    }
}

/* ---- the register callbacks ---- */

static uint8_t ide_read_register(IDEChannel *ch, unsigned reg)
{
    IDEUnit *u = selected_unit(ch);
    bool hob = ch->devctl & ATA_DEVCTL_HOB;
    if (!u->present) {
        return 0;   /* no device: the bus reads 0, which hosts take as "none" */
    }
    switch (reg) {
    case REG_ERROR_FEATURE:
        return u->error;
    case REG_NSECTOR:
        return hob ? u->hob_nsector : u->nsector;
    case REG_LBAL:
        return hob ? u->hob_lbal : u->lbal;
    case REG_LBAM:
        return hob ? u->hob_lbam : u->lbam;
    case REG_LBAH:
        return hob ? u->hob_lbah : u->lbah;
    case REG_DEVICE:
        return u->device;
    default:
        ide_lower_irq(ch);
        return u->status;
    }
}

/* Command block writes reach both units; each keeps the previous value as
 * the high-order byte of an LBA48 command. */
static void ide_write_register(IDEChannel *ch, unsigned reg, uint8_t value)
{
    if (reg == REG_STATUS_COMMAND) {
        ide_write_command(ch, value);
        return;
    }
    for (int i = 0; i < IDE_UNITS_PER_CHANNEL; i++) {
        IDEUnit *u = &ch->units[i];
        switch (reg) {
        case REG_ERROR_FEATURE:
            u->hob_feature = u->feature;
            u->feature = value;
            break;
        case REG_NSECTOR:
            u->hob_nsector = u->nsector;
            u->nsector = value;
            break;
        case REG_LBAL:
            u->hob_lbal = u->lbal;
            u->lbal = value;
            break;
        case REG_LBAM:
            u->hob_lbam = u->lbam;
            u->lbam = value;
            break;
        case REG_LBAH:
            u->hob_lbah = u->lbah;
            u->lbah = value;
            break;
        case REG_DEVICE:
            u->device = value;
            break;
        }
    }
    if (reg == REG_DEVICE) {
        ch->selected = (value & ATA_DEV_DEV) ? 1 : 0;
    }
    ch->devctl &= ~ATA_DEVCTL_HOB;
}

static uint64_t ide_cmd_ports_read(void *opaque, uint64_t offset, unsigned size)
{
    IDEChannel *ch = opaque;
    if (offset == REG_DATA) {
        return ide_data_read(selected_unit(ch), size);
    }
    uint64_t value = 0;
    for (unsigned i = 0; i < size && offset + i < CMD_PORTS_SIZE; i++) {
        value |= (uint64_t)ide_read_register(ch, offset + i) << (8 * i);
    }
    return value;
}

static void ide_cmd_ports_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    IDEChannel *ch = opaque;
    if (offset == REG_DATA) {
        ide_data_write(selected_unit(ch), value, size);
        return;
    }
    for (unsigned i = 0; i < size && offset + i < CMD_PORTS_SIZE; i++) {
        ide_write_register(ch, offset + i, value >> (8 * i));
    }
}

static const MemoryRegionOps ide_cmd_ports_ops = {
    .read = ide_cmd_ports_read,
    .write = ide_cmd_ports_write,
    .max_access_size = 4,
};

/* Alternate status (no interrupt acknowledge) / device control. */
static uint64_t ide_ctl_port_read(void *opaque, uint64_t offset, unsigned size)
{
    IDEChannel *ch = opaque;
    IDEUnit *u = selected_unit(ch);
    return u->present ? u->status : 0;
}

static void ide_ctl_port_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    ide_write_devctl(opaque, value);
}

static const MemoryRegionOps ide_ctl_port_ops = {
    .read = ide_ctl_port_read,
    .write = ide_ctl_port_write,
    .max_access_size = 1,
};

/* ---- the channel as a device ---- */

static void ide_channel_reset_cb(QEMUDevice *dev)
{
    ide_channel_reset((IDEChannel *)dev);
}

/* Without the lock: every completion needs it. */
static void ide_channel_drain(QEMUDevice *dev)
{
    IDEChannel *ch = (IDEChannel *)dev;
    for (int i = 0; i < IDE_UNITS_PER_CHANNEL; i++) {
        if (ch->units[i].blk) {
            blk_drain(ch->units[i].blk);
        }
    }
}

static const struct {
    uint16_t cmd_base, ctl_port;
    unsigned gsi;
} ide_legacy[IDE_CHANNELS] = {
    { 0x1f0, 0x3f6, 14 },
    { 0x170, 0x376, 15 },
};

void ide_channel_init(IDEChannel *ch, PIIXIDEState *piix, int index)
{
    ch->piix = piix;
    ch->index = index;
    device_init(&ch->qdev, "piix3-ide-channel", "ide-channel");
    ch->qdev.reset = ide_channel_reset_cb;
    ch->qdev.drain = ide_channel_drain;
    ch->irq = irq_source_claim(ide_legacy[index].gsi);
    for (int i = 0; i < IDE_UNITS_PER_CHANNEL; i++) {
        ch->units[i].ch = ch;
        ch->units[i].index = i;
    }
    memory_region_init_io(&ch->cmd_ports, &ch->qdev, &ide_cmd_ports_ops, ch,
                          index ? "ide1-cmd" : "ide0-cmd", CMD_PORTS_SIZE);
    memory_region_init_io(&ch->ctl_port, &ch->qdev, &ide_ctl_port_ops, ch,
                          index ? "ide1-ctl" : "ide0-ctl", 1);
    address_space_map(address_space_io, &ch->cmd_ports, ide_legacy[index].cmd_base, 0);
    address_space_map(address_space_io, &ch->ctl_port, ide_legacy[index].ctl_port, 0);
    ide_channel_reset(ch);
}
