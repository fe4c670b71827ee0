/*
 * The PIIX3 IDE function (8086:7010 at 00:01.1, as on QEMU's pc machine)
 * and the drives on its two channels: ide-hd (ATA disks) and ide-cd
 * (ATAPI CD-ROMs). docs/storage.md, "IDE", describes the model.
 *
 * Each channel (ide.0 at 0x1f0/0x3f6 on IRQ 14, ide.1 at 0x170/0x376 on
 * IRQ 15, and its half of the bus-master registers in BAR4) is a
 * QEMUDevice with its own lock: two vCPUs on two channels never wait for
 * each other. Host I/O is submitted under the channel's lock and
 * completes on the drive's context, which takes that lock again.
 */
#ifndef HW_IDE_IDE_H
#define HW_IDE_IDE_H

#include <stdbool.h>
#include "hw/block-error-properties.h"
#include "hw/pci/pci.h"
#include "hw/qdev-registry.h"
#include "qemu/error.h"
#include "sysemu/drives.h"

#define PIIX3_IDE_DEVFN         PCI_DEVFN(1, 1)
#define IDE_CHANNELS            2
#define IDE_UNITS_PER_CHANNEL   2

typedef struct PIIXIDEState PIIXIDEState;

/* The IDE function of the PIIX3 at 00:01.1, with its legacy ports and
 * IRQs claimed and no drive attached yet. */
PIIXIDEState *piix3_ide_new(PCIBus *bus, Error **errp);

typedef enum IDEDriveKind {
    IDE_DRIVE_HD,       /* ATA disk */
    IDE_DRIVE_CD,       /* ATAPI CD-ROM; drive may be NULL (empty) or read-only */
} IDEDriveKind;

/* What the drive reports about itself (IDENTIFY, INQUIRY); NULL: QEMU's
 * defaults ("QEMU HARDDISK" / "QEMU DVD-ROM", serial QM000NN, "2.5+"). */
typedef struct IDEDriveIdentity {
    const char *model;
    const char *serial;
    const char *firmware;
    /* The write cache IDENTIFY reports enabled at power-on: on, off, or
     * auto (from the drive's cache= mode), as QEMU's write-cache=. */
    OnOffAuto write_cache;
} IDEDriveIdentity;

/*
 * Put a drive on channel bus (-1: the first with a free unit) at unit
 * (-1: the first free one), as -device ide-hd/ide-cd does, with the
 * device's werror=/rerror= (an ATA disk acts on them; ATAPI, as QEMU's,
 * reports every error, though query-block shows the io-status they give).
 * Errors as QEMU words them ("IDE unit 0 is in use", "Block node is
 * read-only").
 * Returns the drive's QEMUDevice, which carries its id (its lock is
 * unused: the channel's guards the drive).
 */
QEMUDevice *ide_drive_attach(PIIXIDEState *s, int bus, int unit, IDEDriveKind kind,
                             DriveInfo *drive, const IDEDriveIdentity *identity,
                             const BlockErrorProperties *errors, Error **errp);

/* Where a drive ide_drive_attach returned sits: its channel and unit
 * (`info qtree`). Fixed once attached, so no lock is needed. */
void ide_drive_position(const QEMUDevice *drive, unsigned *bus, unsigned *unit);
/* Its IDENTIFY serial number and firmware revision as chosen when it was
 * attached (serial= or QEMU's "QM0000N", ver= or "2.5+"): strings that
 * live as long as the drive. Fixed once attached, so no lock is needed. */
void ide_drive_identity_strings(const QEMUDevice *drive, const char **serial,
                                const char **firmware);

/* -device ide-hd and ide-cd. */
extern const DeviceTypeInfo ide_hd_type;
extern const DeviceTypeInfo ide_cd_type;

#endif
