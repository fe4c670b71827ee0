/*
 * What the files of the IDE model share (hw/ide/): a channel with its two
 * units, the ATA task file, the PIO and DMA transfer state, and the calls
 * between the ATA core (ide-core.c), IDENTIFY (ide-identify.c), the ATAPI
 * packet commands (ide-atapi.c) and the PIIX function with its bus-master
 * DMA (piix.c). Private to hw/ide/.
 *
 * Locking: everything in an IDEChannel, its units included, is guarded by
 * the channel's device lock. The register callbacks run under it (dispatch
 * takes it), and so do the block layer's completions (ide_*_complete take
 * it themselves). Nothing here waits for the host's disk.
 */
#ifndef HW_IDE_IDE_INTERNAL_H
#define HW_IDE_IDE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "block/block-backend.h"
#include "exec/memory.h"
#include "hw/ide/ide.h"
#include "hw/irq.h"
#include "hw/qdev.h"

#define IDE_SECTOR_SIZE         512
#define ATAPI_SECTOR_SIZE       2048
/* The PIO buffer of a unit: the host transfers this much at once. A
 * multiple of both sector sizes. */
#define IDE_BUFFER_SIZE         (128 * 1024)
/* READ/WRITE MULTIPLE: the largest DRQ block, in sectors (IDENTIFY word 47). */
#define IDE_MAX_MULT_SECTORS    16
/* Scatter-gather pieces of one DMA transfer (preadv's limit). */
#define IDE_MAX_IOV             1024

/* Status register. */
#define ATA_STATUS_ERR          0x01
#define ATA_STATUS_DRQ          0x08
#define ATA_STATUS_DSC          0x10    /* seek complete (obsolete; set as drives do) */
#define ATA_STATUS_DRDY         0x40
#define ATA_STATUS_BSY          0x80
/* Error register. */
#define ATA_ERROR_ABRT          0x04
#define ATA_ERROR_IDNF          0x10
#define ATA_ERROR_UNC           0x40
/* Device control register. */
#define ATA_DEVCTL_NIEN         0x02
#define ATA_DEVCTL_SRST         0x04
#define ATA_DEVCTL_HOB          0x80
/* Device register. */
#define ATA_DEV_LBA             0x40
#define ATA_DEV_DEV             0x10
/* ATAPI interrupt reason (the sector count register). */
#define ATAPI_REASON_COD        0x01
#define ATAPI_REASON_IO         0x02
/* The PACKET command's features register. */
#define ATAPI_FEATURE_DMA       0x01

/* Bus-master IDE registers (Intel 82371SB, 2.7), per channel. */
#define BM_CMD                  0
#define  BM_CMD_START               0x01
#define  BM_CMD_TO_MEMORY           0x08    /* the device reads: data goes to RAM */
#define BM_STATUS               2
#define  BM_STATUS_ACTIVE           0x01
#define  BM_STATUS_ERROR            0x02
#define  BM_STATUS_INTR             0x04
#define  BM_STATUS_DMA_CAPABLE      0x60    /* drive 0 and 1 DMA capable (guest bits) */
#define BM_PRD_ADDR             4
#define BM_PORTS_SIZE           8

typedef struct IDEChannel IDEChannel;
typedef struct IDEUnit IDEUnit;

/* What to do when the guest has moved a whole DRQ block through the data
 * port, or a DMA transfer ended (ret 0 or -errno). */
typedef void IDEBlockDone(IDEUnit *u);
typedef void IDEDMADone(IDEUnit *u, int ret);

/* Why a PRD table could not give the transfer its buffers. */
typedef enum BMDMAResult {
    BMDMA_OK,
    BMDMA_OK_PRD_LONGER,    /* fine; the table had room left (Active stays set) */
    BMDMA_FAULT,            /* refused: the guest's PRD table is unusable */
} BMDMAResult;

struct IDEUnit {
    QEMUDevice qdev;            /* the drive's identity (-device id=); unlocked */
    IDEChannel *ch;
    int index;                  /* 0 master, 1 slave */
    bool present;
    bool is_cd;
    DriveInfo *drive;           /* set once attached (an anonymous one for ide-cd without drive=) */
    BlockBackend *blk;          /* drive->blk, or NULL */
    uint64_t sectors;           /* 512-byte sectors */
    char model[41], serial[21], firmware[9];
    OnOffAuto write_cache;      /* write-cache=: the WCE bit at power-on */
    uint16_t cylinders, heads, sectors_per_track;

    /* The task file. ATA writes command-block registers to both units;
     * each answers reads with its own. */
    uint8_t feature, nsector, lbal, lbam, lbah, device;
    uint8_t hob_feature, hob_nsector, hob_lbal, hob_lbam, hob_lbah;
    uint8_t status, error;
    uint8_t mult_sectors;       /* SET MULTIPLE MODE; 0: off */
    uint8_t xfer_mode;          /* SET FEATURES 03h's value (word 63/88) */

    /* The command in progress. */
    uint8_t command;
    uint64_t lba;               /* next sector (disk) or 2048-byte block (CD) */
    uint32_t remaining;         /* sectors or blocks still to transfer */
    uint32_t chunk;             /* sectors or blocks in the buffer / in flight */
    bool io_in_flight;          /* a block-layer request has not completed */
    bool reset_pending;         /* SRST came while it was in flight */

    /* PIO through the data port. */
    uint8_t *buf;               /* IDE_BUFFER_SIZE bytes */
    uint32_t pos, drq_end, buf_end;
    bool pio_out;               /* the guest writes the data port */
    IDEBlockDone *block_done;   /* NULL: no transfer */

    /* DMA: wanted by the command, carried out once the guest starts the
     * bus master. */
    bool dma_pending;
    bool dma_running;           /* the bus master has it */
    bool dma_prd_longer;        /* the PRD table had room left */
    bool dma_to_memory;
    uint64_t dma_bytes;
    void (*dma_start)(IDEUnit *u, const struct iovec *iov, int niov);
    IDEDMADone *dma_done;
    struct iovec iov[IDE_MAX_IOV];
    int niov;

    /* ATAPI */
    uint8_t packet[12];
    uint32_t byte_limit;        /* the host's byte count limit per DRQ block */
    uint8_t sense_key, asc, ascq;
    bool locked;                /* PREVENT ALLOW MEDIUM REMOVAL */
    /* The tray and the medium (atapi-media.c). The guest sees a medium
     * when blk is set and the tray is closed. */
    bool tray_open;
    unsigned medium_generation; /* bumped whenever the guest's medium goes */
    unsigned cmd_generation;    /* the medium a READ started on */
    bool unit_attention;        /* "medium may have changed", for the next command */
    uint8_t media_event;        /* GET EVENT STATUS NOTIFICATION's pending event */
};

struct IDEChannel {
    QEMUDevice qdev;            /* the channel's lock */
    PIIXIDEState *piix;
    int index;                  /* 0: ide.0, 1: ide.1 */
    IDEUnit units[IDE_UNITS_PER_CHANNEL];
    int selected;               /* the DEV bit last written */
    uint8_t devctl;
    bool irq_pending;           /* INTRQ wanted (cleared by a status read) */
    IrqSource irq;
    MemoryRegion cmd_ports, ctl_port, bm_ports;

    /* Bus master. */
    uint8_t bm_cmd, bm_status;
    uint32_t bm_prd_addr;
};

/* ---- ide-core.c ---- */

void ide_channel_init(IDEChannel *ch, PIIXIDEState *piix, int index);
/* Raise INTRQ (and the bus master's interrupt bit). */
void ide_raise_irq(IDEChannel *ch);
/* Finish a command: status DRDY (and DSC), error 0, INTRQ. */
void ide_command_ok(IDEUnit *u);
/* Fail a command: status DRDY|ERR, error, INTRQ. */
void ide_command_error(IDEUnit *u, uint8_t error);
/* Serve u->buf[0, len) to the guest through the data port, DRQ blocks
 * of block_size bytes; done is called after each one. */
void ide_pio_start(IDEUnit *u, uint32_t len, uint32_t block_size, bool out,
                   IDEBlockDone *done);
/* Offer the next DRQ block of the buffer (pos onwards) with INTRQ. */
void ide_pio_next_block(IDEUnit *u, uint32_t block_size);
/* Stop the data transfer (no DRQ). */
void ide_pio_stop(IDEUnit *u);
/* Ask for a DMA transfer of bytes; it starts when the bus master does. */
void ide_dma_request(IDEUnit *u, uint64_t bytes, bool to_memory,
                     void (*start)(IDEUnit *u, const struct iovec *iov, int niov),
                     IDEDMADone *done);
/* The bus master was started: run the selected unit's pending DMA. */
void ide_dma_kick(IDEChannel *ch);
/* A block-layer request of u completed: take the channel lock, finish a
 * pending reset or call handle. */
void ide_io_complete(IDEUnit *u, int ret, void (*handle)(IDEUnit *u, int ret));
/* The DMA transfer of u ended (ret 0 or -errno): bus master and command status. */
void ide_dma_finish(IDEUnit *u, int ret);
/* SRST / power-on: both units to their signature, no command. */
void ide_channel_reset(IDEChannel *ch);

/* ---- ide-identify.c ---- */

/* IDENTIFY DEVICE (ATA) or IDENTIFY PACKET DEVICE (ATAPI) into buf. */
void ide_identify(const IDEUnit *u, uint16_t words[256]);
/* Fill model, serial, firmware and geometry. */
void ide_unit_set_identity(IDEUnit *u, const IDEDriveIdentity *identity, unsigned number);

/* ---- ide-atapi.c ---- */

/* The PACKET command: take the 12-byte command packet, then run it. */
void atapi_packet_command(IDEUnit *u);
/* The ATAPI signature and idle state after a reset. */
void atapi_reset(IDEUnit *u);

/* ---- atapi-media.c ---- */

/* MMC media event codes (GET EVENT STATUS NOTIFICATION, media class). */
#define MEDIA_EVENT_NONE            0
#define MEDIA_EVENT_EJECT_REQUEST   1
#define MEDIA_EVENT_NEW_MEDIA       2
#define MEDIA_EVENT_MEDIA_REMOVAL   3

/* The medium the guest can read: there is one and the tray is closed. */
bool atapi_has_medium(const IDEUnit *u);
/* Move the tray, under the channel lock (the guest's START STOP UNIT or
 * the monitor): DEVICE_TRAY_MOVED when it moves, a media event, and on
 * closing over a medium a UNIT ATTENTION for the next command. */
void atapi_move_tray(IDEUnit *u, bool open);
/* A CD-ROM unit's medium ops for the monitor (sysemu/drives.h). */
extern const DriveMediumOps atapi_medium_ops;

/* ---- piix.c ---- */

/* Walk the PRD table and map bytes of guest RAM into u->iov. */
BMDMAResult bmdma_map(IDEChannel *ch, uint64_t bytes, bool to_memory, struct iovec *iov,
                      int *niov);
/* The transfer ended: clear Active (unless the PRD table was longer),
 * set Error if it failed in the bus master. */
void bmdma_end(IDEChannel *ch, bool prd_longer, bool fault);
bool bmdma_started(const IDEChannel *ch);
void bmdma_set_irq_status(IDEChannel *ch);

#endif
