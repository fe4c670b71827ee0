/*
 * IDENTIFY DEVICE (ATA disks) and IDENTIFY PACKET DEVICE (ATAPI), the
 * words ATA8-ACS defines and Linux's libata reads: the drive's strings as
 * QEMU's drives show them, capacity (LBA28 and LBA48), geometry, transfer
 * modes (PIO 3-4, multiword DMA 0-2, UDMA 0-5 with the selected mode),
 * READ/WRITE MULTIPLE, the write cache and FLUSH CACHE (EXT).
 */
#include <stdio.h>
#include <string.h>
#include <glib.h>
#include "ide-internal.h"

#define MAX_CHS_CYLINDERS   16383
#define CHS_HEADS           16
#define CHS_SECTORS         63
#define LBA28_MAX_SECTORS   0x0fffffffu

/* QEMU's drive strings. */
#define DEFAULT_DISK_MODEL  "QEMU HARDDISK"
#define DEFAULT_CD_MODEL    "QEMU DVD-ROM"
#define DEFAULT_FIRMWARE    "2.5+"

/* Word 0. */
#define ID_ATA_DEVICE           0x0040      /* fixed device, not removable */
#define ID_ATAPI_CDROM          (2u << 14 | 5u << 8 | 1u << 7 | 2u << 5)
                                            /* ATAPI, CD-ROM, removable, 50 us DRQ, 12-byte packets */
/* Word 49: capabilities. */
#define ID_CAP_IORDY            (1u << 11)
#define ID_CAP_LBA              (1u << 9)
#define ID_CAP_DMA              (1u << 8)
#define ID_VALID_BIT            (1u << 14)  /* words 83, 84, 87: "this word is valid" */
/* Words 82-87: command sets. */
#define ID_CMDSET_NOP           (1u << 14)
#define ID_CMDSET_LOOKAHEAD     (1u << 6)
#define ID_CMDSET_WCACHE        (1u << 5)
#define ID_CMDSET_PACKET        (1u << 4)
#define ID_CMDSET_FLUSH_EXT     (1u << 13)
#define ID_CMDSET_FLUSH         (1u << 12)
#define ID_CMDSET_LBA48         (1u << 10)

static void id_string(uint16_t *words, const char *s, size_t chars)
{
    size_t len = strlen(s);
    for (size_t i = 0; i < chars; i += 2) {
        uint8_t hi = i < len ? s[i] : ' ';
        uint8_t lo = i + 1 < len ? s[i + 1] : ' ';
        words[i / 2] = (uint16_t)(hi << 8 | lo);
    }
}

static void id_u32(uint16_t *words, uint32_t value)
{
    words[0] = value;
    words[1] = value >> 16;
}

/* Words 62-64 and 88: transfer modes, with the one SET FEATURES chose. */
static void id_transfer_modes(const IDEUnit *u, uint16_t *w)
{
    unsigned mode = u->xfer_mode & 7;
    w[62] = 0x07;                                       /* single-word DMA 0-2 */
    w[63] = 0x07 | ((u->xfer_mode & 0xf8) == 0x20 ? 1u << (8 + mode) : 0);
    w[64] = 0x03;                                       /* PIO 3 and 4 */
    w[65] = w[66] = w[67] = w[68] = 120;                /* cycle times, ns */
    w[88] = 0x3f | ((u->xfer_mode & 0xf8) == 0x40 ? 1u << (8 + mode) : 0);
}

static void id_common(const IDEUnit *u, uint16_t *w)
{
    id_string(&w[10], u->serial, 20);
    id_string(&w[23], u->firmware, 8);
    id_string(&w[27], u->model, 40);
    w[53] = 0x0007;                                     /* words 54-58, 64-70, 88 valid */
    id_transfer_modes(u, w);
    /* Hardware reset result: device 0 passed, 80-conductor cable. */
    w[93] = 1u << 14 | 1u << 13 | 1u;
}

static void id_disk(const IDEUnit *u, uint16_t *w)
{
    bool wce = blk_enable_write_cache(u->blk);
    uint32_t lba28 = MIN(u->sectors, LBA28_MAX_SECTORS);
    uint32_t chs = (uint32_t)u->cylinders * u->heads * u->sectors_per_track;

    w[0] = ID_ATA_DEVICE;
    w[1] = u->cylinders;
    w[3] = u->heads;
    w[6] = u->sectors_per_track;
    w[47] = 0x8000 | IDE_MAX_MULT_SECTORS;
    w[49] = ID_CAP_IORDY | ID_CAP_LBA | ID_CAP_DMA;
    w[50] = ID_VALID_BIT;
    w[51] = w[52] = 0x200;                              /* PIO/DMA timing modes (obsolete) */
    w[54] = u->cylinders;
    w[55] = u->heads;
    w[56] = u->sectors_per_track;
    id_u32(&w[57], chs);
    w[59] = u->mult_sectors ? 0x100 | u->mult_sectors : 0;
    id_u32(&w[60], lba28);
    w[80] = 0x00f0;                                     /* ATA-4 to ATA-7 */
    w[81] = 0x0016;
    w[82] = ID_CMDSET_NOP | ID_CMDSET_LOOKAHEAD | ID_CMDSET_WCACHE;
    w[83] = ID_VALID_BIT | ID_CMDSET_FLUSH_EXT | ID_CMDSET_FLUSH | ID_CMDSET_LBA48;
    w[84] = ID_VALID_BIT;
    w[85] = ID_CMDSET_NOP | ID_CMDSET_LOOKAHEAD | (wce ? ID_CMDSET_WCACHE : 0);
    w[86] = ID_CMDSET_FLUSH_EXT | ID_CMDSET_FLUSH | ID_CMDSET_LBA48;
    w[87] = ID_VALID_BIT;
    id_u32(&w[100], u->sectors);
    id_u32(&w[102], u->sectors >> 32);
}

static void id_cdrom(const IDEUnit *u, uint16_t *w)
{
    w[0] = ID_ATAPI_CDROM;
    w[49] = ID_CAP_LBA | ID_CAP_DMA;
    w[71] = w[72] = 30;                                 /* release and service times */
    w[80] = 0x001e;                                     /* ATAPI-4 to ATAPI-7 */
    w[82] = ID_CMDSET_NOP | ID_CMDSET_PACKET;
    w[83] = ID_VALID_BIT;
    w[84] = ID_VALID_BIT;
    w[85] = ID_CMDSET_NOP | ID_CMDSET_PACKET;
    w[87] = ID_VALID_BIT;
}

void ide_identify(const IDEUnit *u, uint16_t words[256])
{
    memset(words, 0, 256 * sizeof(words[0]));
    id_common(u, words);
    if (u->is_cd) {
        id_cdrom(u, words);
    } else {
        id_disk(u, words);
    }
}

static void copy_identity(char *dst, size_t size, const char *given, const char *fallback)
{
    g_strlcpy(dst, given ? given : fallback, size);
}

void ide_unit_set_identity(IDEUnit *u, const IDEDriveIdentity *identity, unsigned number)
{
    char serial[sizeof(u->serial)];
    snprintf(serial, sizeof(serial), "QM%05u", number);
    copy_identity(u->model, sizeof(u->model), identity ? identity->model : NULL,
                  u->is_cd ? DEFAULT_CD_MODEL : DEFAULT_DISK_MODEL);
    copy_identity(u->serial, sizeof(u->serial), identity ? identity->serial : NULL, serial);
    copy_identity(u->firmware, sizeof(u->firmware), identity ? identity->firmware : NULL,
                  DEFAULT_FIRMWARE);
    u->write_cache = identity ? identity->write_cache : ON_OFF_AUTO_AUTO;
    /* A translated geometry as BIOSes report it: 16 heads, 63 sectors. */
    uint64_t cylinders = u->sectors / (CHS_HEADS * CHS_SECTORS);
    u->cylinders = CLAMP(cylinders, 1, MAX_CHS_CYLINDERS);
    u->heads = CHS_HEADS;
    u->sectors_per_track = CHS_SECTORS;
}
