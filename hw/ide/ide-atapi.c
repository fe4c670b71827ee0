/*
 * ATAPI: the packet commands (SCSI MMC) of a read-only CD-ROM drive, the
 * ones Linux's sr and cdrom drivers send to detect, size and read a disc:
 * TEST UNIT READY, REQUEST SENSE, INQUIRY, READ CAPACITY, READ(10)/(12),
 * MODE SENSE(10) (error recovery and capabilities pages), READ TOC
 * (formats 0, 1 and 2), GET CONFIGURATION, GET EVENT STATUS NOTIFICATION,
 * START STOP UNIT and PREVENT ALLOW MEDIUM REMOVAL. Anything else fails
 * with ILLEGAL REQUEST / INVALID COMMAND OPERATION CODE in the sense data,
 * writes with DATA PROTECT / WRITE PROTECTED.
 *
 * Data goes to the host by PIO in DRQ blocks no larger than the byte count
 * limit the host put in the LBA mid/high registers, or by DMA when the
 * PACKET command's features say so. The drive may be empty (no medium);
 * its tray and media changes are atapi-media.c's.
 */
#include <errno.h>
#include <string.h>
#include <glib.h>
#include "ide-internal.h"
#include "qemu/byte-order.h"  /* SCSI fields are big-endian */
#include "qemu/log.h"

/* Opcodes. */
enum {
    MMC_TEST_UNIT_READY = 0x00, MMC_REQUEST_SENSE = 0x03, MMC_INQUIRY = 0x12,
    MMC_START_STOP_UNIT = 0x1b, MMC_PREVENT_ALLOW = 0x1e, MMC_READ_CAPACITY = 0x25,
    MMC_READ_10 = 0x28, MMC_WRITE_10 = 0x2a, MMC_WRITE_VERIFY_10 = 0x2e, MMC_READ_TOC = 0x43,
    MMC_GET_CONFIGURATION = 0x46, MMC_GET_EVENT_STATUS = 0x4a, MMC_MODE_SENSE_10 = 0x5a,
    MMC_READ_12 = 0xa8, MMC_WRITE_12 = 0xaa,
};

/* Sense keys and additional sense codes. */
enum {
    SENSE_NOT_READY = 0x02, SENSE_MEDIUM_ERROR = 0x03, SENSE_ILLEGAL_REQUEST = 0x05,
    SENSE_UNIT_ATTENTION = 0x06, SENSE_DATA_PROTECT = 0x07, SENSE_ABORTED_COMMAND = 0x0b,
};
enum {
    ASC_NONE = 0x00, ASC_UNRECOVERED_READ = 0x11, ASC_INVALID_OPCODE = 0x20,
    ASC_LBA_OUT_OF_RANGE = 0x21, ASC_INVALID_FIELD = 0x24, ASC_WRITE_PROTECTED = 0x27,
    ASC_MEDIUM_MAY_HAVE_CHANGED = 0x28, ASC_SAVING_NOT_SUPPORTED = 0x39, ASC_MEDIUM_NOT_PRESENT = 0x3a,
    ASC_REMOVAL_PREVENTED = 0x53,
};

#define ATAPI_SIGNATURE_LBAM    0x14
#define ATAPI_SIGNATURE_LBAH    0xeb
#define ATAPI_MAX_BYTE_LIMIT    0xfffe
#define CD_FRAMES_PER_SECOND    75
#define CD_LEADIN_FRAMES        150     /* LBA 0 is MSF 00:02:00 */
#define CD_LEADOUT_TRACK        0xaa
#define CD_DATA_TRACK_CONTROL   0x14    /* ADR 1, data track */
#define CD_LEADOUT_CONTROL      0x16
#define MMC_PROFILE_CDROM       0x0008
#define MMC_INTERFACE_ATAPI     2
#define MMC_EVENT_CLASS_MEDIA   0x10
#define MMC_EVENT_NEA           0x80
#define MODE_PAGE_ERROR_RECOVERY 0x01
#define MODE_PAGE_CAPABILITIES  0x2a
#define MODE_PAGE_ALL           0x3f
#define MODE_PC_SAVED           3
#define CD_SPEED_KBPS           706     /* 4x */
/* Capabilities byte 6: a tray that ejects and locks. */
#define CAP_MECHANISM_TRAY      (1u << 5)
#define CAP_EJECT               0x08
#define CAP_LOCK                0x01
#define CAP_LOCKED              0x02

static const char *atapi_name(const IDEUnit *u)
{
    return u->ch->index ? "ide.1" : "ide.0";
}

/* 2048-byte blocks on the disc. */
static uint32_t atapi_blocks(const IDEUnit *u)
{
    return MIN(u->sectors / (ATAPI_SECTOR_SIZE / IDE_SECTOR_SIZE), UINT32_MAX);
}

void atapi_reset(IDEUnit *u)
{
    u->lbam = ATAPI_SIGNATURE_LBAM;
    u->lbah = ATAPI_SIGNATURE_LBAH;
    u->status = ATA_STATUS_DRDY | ATA_STATUS_DSC;
    u->sense_key = 0;
    u->asc = ASC_NONE;
    u->ascq = 0;
}

/* ---- status ---- */

static void atapi_ok(IDEUnit *u)
{
    u->sense_key = 0;
    u->asc = ASC_NONE;
    u->ascq = 0;
    u->nsector = ATAPI_REASON_IO | ATAPI_REASON_COD;
    ide_command_ok(u);
}

/* ascq: the qualifier, for the codes that have one here. */
static void atapi_fail_qualified(IDEUnit *u, uint8_t sense_key, uint8_t asc, uint8_t ascq)
{
    u->sense_key = sense_key;
    u->asc = asc;
    u->ascq = ascq;
    u->nsector = ATAPI_REASON_IO | ATAPI_REASON_COD;
    ide_command_error(u, sense_key << 4);
}

static void atapi_fail(IDEUnit *u, uint8_t sense_key, uint8_t asc)
{
    atapi_fail_qualified(u, sense_key, asc, 0);
}

/* MEDIUM NOT PRESENT, qualified (MMC) by the tray: 01h closed, 02h open. */
static void atapi_fail_no_medium(IDEUnit *u)
{
    atapi_fail_qualified(u, SENSE_NOT_READY, ASC_MEDIUM_NOT_PRESENT, u->tray_open ? 0x02 : 0x01);
}

static bool atapi_check_medium(IDEUnit *u)
{
    if (!atapi_has_medium(u)) {
        atapi_fail_no_medium(u);
        return false;
    }
    return true;
}

/* The disc a READ started on left (ejected or changed) while it ran: the
 * rest of the command must not read another one. */
static bool atapi_medium_changed(const IDEUnit *u)
{
    return u->cmd_generation != u->medium_generation;
}

/* ---- data to the host ---- */

static void atapi_read_chunk(IDEUnit *u);

/* The byte count registers say how long the DRQ block is. */
static void atapi_show_drq_block(IDEUnit *u)
{
    uint32_t len = u->drq_end - u->pos;
    u->lbam = len;
    u->lbah = len >> 8;
    u->nsector = ATAPI_REASON_IO;
}

static void atapi_pio_block_done(IDEUnit *u)
{
    if (u->pos < u->buf_end) {
        ide_pio_next_block(u, u->byte_limit);
        atapi_show_drq_block(u);
        return;
    }
    ide_pio_stop(u);
    if (u->remaining) {
        atapi_read_chunk(u);
        return;
    }
    atapi_ok(u);
}

static void atapi_pio_send(IDEUnit *u, uint32_t len)
{
    ide_pio_start(u, len, u->byte_limit, false, atapi_pio_block_done);
    atapi_show_drq_block(u);
    ide_raise_irq(u->ch);
}

static void atapi_dma_done(IDEUnit *u, int ret)
{
    if (ret == -EFAULT) {
        atapi_fail(u, SENSE_ABORTED_COMMAND, ASC_NONE);
    } else if (ret == -ENOMEDIUM) {
        atapi_fail_no_medium(u);
    } else if (ret < 0) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: CD read at block %" G_GUINT64_FORMAT " failed: %s\n",
                      atapi_name(u), u->lba, g_strerror(-ret));
        atapi_fail(u, SENSE_MEDIUM_ERROR, ASC_UNRECOVERED_READ);
    } else {
        atapi_ok(u);
    }
}

/* A reply built in u->buf, by DMA: a copy into the PRD's buffers. */
static void atapi_dma_copy_reply(IDEUnit *u, const struct iovec *iov, int niov)
{
    uint64_t done = 0;
    for (int i = 0; i < niov && done < u->dma_bytes; i++) {
        size_t n = MIN(iov[i].iov_len, u->dma_bytes - done);
        memcpy(iov[i].iov_base, u->buf + done, n);
        done += n;
    }
    ide_dma_finish(u, 0);
}

/* Send the reply in u->buf: len bytes, cut to the host's allocation length. */
static void atapi_reply(IDEUnit *u, uint32_t len, uint32_t alloc_len)
{
    len = MIN(len, alloc_len);
    u->remaining = 0;
    if (len == 0) {
        atapi_ok(u);
    } else if (u->feature & ATAPI_FEATURE_DMA) {
        ide_dma_request(u, len, true, atapi_dma_copy_reply, atapi_dma_done);
    } else {
        atapi_pio_send(u, len);
    }
}

/* ---- READ(10) / READ(12) ---- */

static void atapi_read_done(IDEUnit *u, int ret)
{
    if (ret < 0) {
        atapi_dma_done(u, ret);
        return;
    }
    if (atapi_medium_changed(u)) {
        atapi_fail_no_medium(u);
        return;
    }
    u->lba += u->chunk;
    u->remaining -= u->chunk;
    atapi_pio_send(u, u->chunk * ATAPI_SECTOR_SIZE);
}

static void atapi_read_cb(void *opaque, int ret)
{
    ide_io_complete(opaque, ret, atapi_read_done);
}

static void atapi_read_chunk(IDEUnit *u)
{
    if (atapi_medium_changed(u)) {
        atapi_fail_no_medium(u);
        return;
    }
    u->chunk = MIN(u->remaining, IDE_BUFFER_SIZE / ATAPI_SECTOR_SIZE);
    u->status = ATA_STATUS_DRDY | ATA_STATUS_BSY;
    u->io_in_flight = true;
    struct iovec iov = { u->buf, u->chunk * ATAPI_SECTOR_SIZE };
    blk_aio_preadv(u->blk, u->lba * ATAPI_SECTOR_SIZE, &iov, 1, atapi_read_cb, u);
}

static void atapi_dma_read_cb(void *opaque, int ret)
{
    ide_io_complete(opaque, ret, ide_dma_finish);
}

static void atapi_dma_read_start(IDEUnit *u, const struct iovec *iov, int niov)
{
    if (atapi_medium_changed(u)) {
        ide_dma_finish(u, -ENOMEDIUM);
        return;
    }
    u->io_in_flight = true;
    blk_aio_preadv(u->blk, u->lba * ATAPI_SECTOR_SIZE, iov, niov, atapi_dma_read_cb, u);
}

static void atapi_read(IDEUnit *u, uint32_t lba, uint32_t blocks)
{
    if (!atapi_check_medium(u)) {
        return;
    }
    if (lba > atapi_blocks(u) || blocks > atapi_blocks(u) - lba) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: READ of blocks %u+%u past the end (%u blocks)\n",
                      atapi_name(u), lba, blocks, atapi_blocks(u));
        atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
        return;
    }
    if (blocks == 0) {
        atapi_ok(u);
        return;
    }
    u->lba = lba;
    u->remaining = blocks;
    u->cmd_generation = u->medium_generation;
    if (u->feature & ATAPI_FEATURE_DMA) {
        ide_dma_request(u, (uint64_t)blocks * ATAPI_SECTOR_SIZE, true, atapi_dma_read_start,
                        atapi_dma_done);
    } else {
        atapi_read_chunk(u);
    }
}

/* ---- the replies ---- */

static uint32_t atapi_request_sense(IDEUnit *u, uint8_t *buf)
{
    if (u->unit_attention && u->sense_key == 0) {
        /* REQUEST SENSE reports a pending unit attention and clears it,
         * after the sense of a command that failed before it. */
        u->unit_attention = false;
        u->sense_key = SENSE_UNIT_ATTENTION;
        u->asc = ASC_MEDIUM_MAY_HAVE_CHANGED;
        u->ascq = 0;
    }
    memset(buf, 0, 18);
    buf[0] = 0x70;          /* current error, fixed format */
    buf[2] = u->sense_key;
    buf[7] = 10;            /* additional length */
    buf[12] = u->asc;
    buf[13] = u->ascq;
    return 18;
}

static void pad_string(uint8_t *dst, const char *src, size_t len)
{
    size_t n = MIN(strlen(src), len);
    memset(dst, ' ', len);
    memcpy(dst, src, n);
}

static uint32_t atapi_inquiry(IDEUnit *u, uint8_t *buf)
{
    memset(buf, 0, 36);
    buf[0] = 0x05;          /* CD/DVD device */
    buf[1] = 0x80;          /* removable */
    buf[2] = 0x05;          /* SPC-3 */
    buf[3] = 0x21;          /* ATAPI, response data format 2 */
    buf[4] = 36 - 5;
    pad_string(buf + 8, "QEMU", 8);
    pad_string(buf + 16, u->model, 16);
    pad_string(buf + 32, u->firmware, 4);
    return 36;
}

static uint32_t mode_page_error_recovery(uint8_t *p)
{
    memset(p, 0, 8);
    p[0] = MODE_PAGE_ERROR_RECOVERY;
    p[1] = 6;
    p[3] = 5;               /* read retry count */
    return 8;
}

static uint32_t mode_page_capabilities(const IDEUnit *u, uint8_t *p)
{
    memset(p, 0, 20);
    p[0] = MODE_PAGE_CAPABILITIES;
    p[1] = 18;
    p[4] = 0x71;            /* audio play, mode 2 form 1 and 2, multi-session */
    p[5] = 0x03;            /* CD-DA commands, accurate stream */
    p[6] = CAP_MECHANISM_TRAY | CAP_EJECT | CAP_LOCK | (u->locked ? CAP_LOCKED : 0);
    put_be16(p + 8, CD_SPEED_KBPS);
    put_be16(p + 10, 2);    /* volume levels */
    put_be16(p + 12, 512);  /* buffer, KiB */
    put_be16(p + 14, CD_SPEED_KBPS);
    return 20;
}

/* MODE SENSE(10): returns false after failing the command. */
static bool atapi_mode_sense(IDEUnit *u, uint8_t *buf, uint32_t *len)
{
    uint8_t pc = u->packet[2] >> 6, page = u->packet[2] & 0x3f;
    uint32_t n = 8;
    if (pc == MODE_PC_SAVED) {
        atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_SAVING_NOT_SUPPORTED);
        return false;
    }
    memset(buf, 0, 8);
    if (page == MODE_PAGE_ERROR_RECOVERY || page == MODE_PAGE_ALL) {
        n += mode_page_error_recovery(buf + n);
    }
    if (page == MODE_PAGE_CAPABILITIES || page == MODE_PAGE_ALL) {
        n += mode_page_capabilities(u, buf + n);
    }
    if (n == 8) {
        atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_INVALID_FIELD);
        return false;
    }
    put_be16(buf, n - 2);
    *len = n;
    return true;
}

/* A TOC address: LBA, or MSF (binary minutes, seconds, frames) with msf. */
static void toc_address(uint8_t *p, uint32_t lba, bool msf)
{
    if (!msf) {
        put_be32(p, lba);
        return;
    }
    uint32_t frames = lba + CD_LEADIN_FRAMES;
    p[0] = 0;
    p[1] = frames / (60 * CD_FRAMES_PER_SECOND);
    p[2] = frames / CD_FRAMES_PER_SECOND % 60;
    p[3] = frames % CD_FRAMES_PER_SECOND;
}

static uint32_t toc_track_descriptor(uint8_t *p, uint8_t control, uint8_t track, uint32_t lba,
                                     bool msf)
{
    p[0] = 0;
    p[1] = control;
    p[2] = track;
    p[3] = 0;
    toc_address(p + 4, lba, msf);
    return 8;
}

/* Raw TOC (format 2) entry: session 1, POINT and its PMIN/PSEC/PFRAME. */
static uint32_t toc_raw_entry(uint8_t *p, uint8_t point, const uint8_t pmsf[3])
{
    memset(p, 0, 11);
    p[0] = 1;
    p[1] = CD_DATA_TRACK_CONTROL;
    p[3] = point;
    memcpy(p + 8, pmsf, 3);
    return 11;
}

static bool atapi_read_toc(IDEUnit *u, uint8_t *buf, uint32_t *len)
{
    bool msf = u->packet[1] & 0x02;
    uint8_t format = u->packet[2] & 0x0f;
    uint8_t start_track = u->packet[6];
    uint32_t blocks = atapi_blocks(u);
    uint32_t n = 4;
    if (format == 0) {
        format = u->packet[9] >> 6;     /* the old place of the format */
    }
    switch (format) {
    case 0:
        if (start_track > 1 && start_track != CD_LEADOUT_TRACK) {
            atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_INVALID_FIELD);
            return false;
        }
        if (start_track <= 1) {
            n += toc_track_descriptor(buf + n, CD_DATA_TRACK_CONTROL, 1, 0, msf);
        }
        n += toc_track_descriptor(buf + n, CD_LEADOUT_CONTROL, CD_LEADOUT_TRACK, blocks, msf);
        break;
    case 1:     /* the first track of the last session */
        n += toc_track_descriptor(buf + n, CD_DATA_TRACK_CONTROL, 1, 0, msf);
        break;
    case 2: {
        uint8_t leadout[4], track1[4];
        toc_address(leadout, blocks, true);
        toc_address(track1, 0, true);
        n += toc_raw_entry(buf + n, 0xa0, (const uint8_t[3]) { 1, 0, 0 });
        n += toc_raw_entry(buf + n, 0xa1, (const uint8_t[3]) { 1, 0, 0 });
        n += toc_raw_entry(buf + n, 0xa2, leadout + 1);
        n += toc_raw_entry(buf + n, 1, track1 + 1);
        break;
    }
    default:
        atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_INVALID_FIELD);
        return false;
    }
    put_be16(buf, n - 2);
    buf[2] = buf[3] = 1;    /* first and last track (or session) */
    *len = n;
    return true;
}

/* GET CONFIGURATION's features: profile list, core, morphing, removable medium. */
static uint32_t mmc_feature(const IDEUnit *u, uint16_t number, uint8_t *p)
{
    memset(p, 0, 12);
    put_be16(p, number);
    switch (number) {
    case 0x0000:
        p[2] = 0x03;                        /* persistent, current */
        p[3] = 4;
        put_be16(p + 4, MMC_PROFILE_CDROM);
        p[6] = atapi_has_medium(u);         /* the current profile */
        return 8;
    case 0x0001:
        p[2] = 2 << 2 | 0x03;
        p[3] = 8;
        put_be32(p + 4, MMC_INTERFACE_ATAPI);
        return 12;
    case 0x0002:
        p[2] = 1 << 2 | 0x03;
        p[3] = 4;
        p[4] = 0x02;                        /* operational change events */
        return 8;
    default:
        p[2] = 0x03;
        p[3] = 4;
        p[4] = CAP_MECHANISM_TRAY | CAP_EJECT | CAP_LOCK;
        return 8;
    }
}

#define MMC_FEATURES 4

static bool atapi_get_configuration(IDEUnit *u, uint8_t *buf, uint32_t *len)
{
    uint8_t rt = u->packet[1] & 0x03;
    uint16_t start = get_be16(u->packet + 2);
    uint32_t n = 8;
    if (rt == 3) {
        atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_INVALID_FIELD);
        return false;
    }
    memset(buf, 0, 8);
    for (uint16_t f = 0; f < MMC_FEATURES; f++) {
        /* rt 0 and 1: every (current) feature from start on; rt 2: start only. */
        if (rt == 2 ? f == start : f >= start) {
            n += mmc_feature(u, f, buf + n);
        }
    }
    put_be32(buf, n - 4);
    put_be16(buf + 6, atapi_has_medium(u) ? MMC_PROFILE_CDROM : 0);
    *len = n;
    return true;
}

static bool atapi_get_event_status(IDEUnit *u, uint8_t *buf, uint32_t *len)
{
    if (!(u->packet[1] & 0x01)) {
        /* Asynchronous notification is not offered: only polling. */
        atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_INVALID_FIELD);
        return false;
    }
    memset(buf, 0, 8);
    buf[3] = MMC_EVENT_CLASS_MEDIA;         /* the classes we report */
    if (u->packet[4] & MMC_EVENT_CLASS_MEDIA) {
        put_be16(buf, 6);
        buf[2] = 0x04;                      /* media class */
        buf[4] = u->media_event;            /* reported once */
        buf[5] = (u->tray_open ? 0x01 : 0) | (atapi_has_medium(u) ? 0x02 : 0);
        u->media_event = MEDIA_EVENT_NONE;
        *len = 8;
    } else {
        put_be16(buf, 2);
        buf[2] = MMC_EVENT_NEA;
        *len = 4;
    }
    return true;
}

static void atapi_start_stop(IDEUnit *u)
{
    bool load_eject = u->packet[4] & 0x02, start = u->packet[4] & 0x01;
    if (load_eject && !start && u->locked && !u->tray_open) {
        /* MEDIUM REMOVAL PREVENTED: ASC 53h, ASCQ 02h. */
        atapi_fail_qualified(u, SENSE_ILLEGAL_REQUEST, ASC_REMOVAL_PREVENTED, 0x02);
        return;
    }
    if (load_eject) {
        atapi_move_tray(u, !start);
    }
    atapi_ok(u);
}

/* What a pending unit attention lets through (SPC/MMC): commands that
 * report state without touching the medium. */
static bool atapi_allowed_during_unit_attention(uint8_t opcode)
{
    return opcode == MMC_INQUIRY || opcode == MMC_REQUEST_SENSE ||
           opcode == MMC_GET_CONFIGURATION || opcode == MMC_GET_EVENT_STATUS;
}

/* Commands whose reply is built in u->buf. */
static void atapi_execute_reply(IDEUnit *u)
{
    uint8_t *buf = u->buf;
    const uint8_t *cdb = u->packet;
    uint32_t len = 0, alloc_len = get_be16(cdb + 7);
    bool ok = true;
    switch (cdb[0]) {
    case MMC_REQUEST_SENSE:
        len = atapi_request_sense(u, buf);
        alloc_len = cdb[4];
        break;
    case MMC_INQUIRY:
        if (cdb[1] & 0x01) {
            atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_INVALID_FIELD);     /* no VPD pages */
            return;
        }
        len = atapi_inquiry(u, buf);
        alloc_len = get_be16(cdb + 3);
        break;
    case MMC_READ_CAPACITY:
        if (!atapi_check_medium(u)) {
            return;
        }
        put_be32(buf, atapi_blocks(u) - 1);
        put_be32(buf + 4, ATAPI_SECTOR_SIZE);
        len = alloc_len = 8;
        break;
    case MMC_MODE_SENSE_10:
        ok = atapi_mode_sense(u, buf, &len);
        break;
    case MMC_READ_TOC:
        ok = atapi_check_medium(u) && atapi_read_toc(u, buf, &len);
        break;
    case MMC_GET_CONFIGURATION:
        ok = atapi_get_configuration(u, buf, &len);
        break;
    case MMC_GET_EVENT_STATUS:
        ok = atapi_get_event_status(u, buf, &len);
        break;
    default:
        g_assert_not_reached();
    }
    if (ok) {
        atapi_reply(u, len, alloc_len);
    }
}

static void atapi_execute(IDEUnit *u)
{
    const uint8_t *cdb = u->packet;
    if (u->unit_attention && !atapi_allowed_during_unit_attention(cdb[0])) {
        u->unit_attention = false;
        atapi_fail(u, SENSE_UNIT_ATTENTION, ASC_MEDIUM_MAY_HAVE_CHANGED);
        return;
    }
    switch (cdb[0]) {
    case MMC_TEST_UNIT_READY:
        if (atapi_check_medium(u)) {
            atapi_ok(u);
        }
        return;
    case MMC_REQUEST_SENSE: case MMC_INQUIRY: case MMC_READ_CAPACITY: case MMC_MODE_SENSE_10:
    case MMC_READ_TOC: case MMC_GET_CONFIGURATION: case MMC_GET_EVENT_STATUS:
        atapi_execute_reply(u);
        return;
    case MMC_READ_10:
        atapi_read(u, get_be32(cdb + 2), get_be16(cdb + 7));
        return;
    case MMC_READ_12:
        atapi_read(u, get_be32(cdb + 2), get_be32(cdb + 6));
        return;
    case MMC_START_STOP_UNIT:
        atapi_start_stop(u);
        return;
    case MMC_PREVENT_ALLOW:
        u->locked = cdb[4] & 0x01;
        atapi_ok(u);
        return;
    case MMC_WRITE_10: case MMC_WRITE_12: case MMC_WRITE_VERIFY_10:
        atapi_fail(u, SENSE_DATA_PROTECT, ASC_WRITE_PROTECTED);
        return;
    }
    qemu_log_mask(LOG_UNIMP, "%s: packet command 0x%02x not supported\n", atapi_name(u), cdb[0]);
    atapi_fail(u, SENSE_ILLEGAL_REQUEST, ASC_INVALID_OPCODE);
}

static void atapi_packet_block_done(IDEUnit *u)
{
    memcpy(u->packet, u->buf, sizeof(u->packet));
    ide_pio_stop(u);
    atapi_execute(u);
}

void atapi_packet_command(IDEUnit *u)
{
    /* An odd or zero limit cannot describe a transfer of words. */
    u->byte_limit = (uint32_t)(u->lbah << 8 | u->lbam) & ~1u;
    if (u->byte_limit == 0) {
        u->byte_limit = ATAPI_MAX_BYTE_LIMIT;
    }
    ide_pio_start(u, sizeof(u->packet), sizeof(u->packet), true, atapi_packet_block_done);
    u->nsector = ATAPI_REASON_COD;
}
