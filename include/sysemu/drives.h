/*
 * The machine's drives: every -drive/-hda/-cdrom opened through the block
 * layer once the machine is built, found by id for -device ...,drive=ID,
 * and the devices QEMU creates for drives with if=ide and if=virtio.
 * Main thread only (machine build and exit).
 */
#ifndef SYSEMU_DRIVES_H
#define SYSEMU_DRIVES_H

#include <stdbool.h>
#include <glib.h>
#include "block/block-backend.h"
#include "block/drive-config.h"
#include "qemu/error.h"

typedef struct DeviceBuses DeviceBuses;
typedef struct QEMUDevice QEMUDevice;

/*
 * What a device with a removable medium (ide-cd) lets the monitor do.
 * Called on the main thread with no lock held; each takes the device's
 * lock itself, only around its own state, and never does host I/O.
 */
typedef struct DriveMediumOps {
    bool (*is_tray_open)(void *opaque);
    bool (*is_locked)(void *opaque);        /* the guest prevents removal */
    /* Ask the guest to let the medium go (its eject request event);
     * force: unlock the tray first. */
    void (*eject_request)(void *opaque, bool force);
    /* Move the tray (DEVICE_TRAY_MOVED if it moves). Closing it on a
     * medium tells the guest the medium may have changed. */
    void (*set_tray)(void *opaque, bool open);
    /* Put blk (NULL: nothing) in the tray; returns what was there, for
     * the caller to drain and close without the device's lock. */
    BlockBackend *(*swap_medium)(void *opaque, BlockBackend *blk);
} DriveMediumOps;

typedef struct DriveInfo {
    const DriveConfig *cfg;
    /* The medium: NULL for a CD-ROM drive without one. Changed only on
     * the main thread (drive_eject, drive_change_medium), so the main
     * thread reads it without a lock. */
    BlockBackend *blk;
    bool in_use;                /* a device has it */
    BlockAcct *acct;            /* the drive's I/O counters, across media */
    QEMUDevice *dev;            /* the device that has it (drive_info_attach) */
    /* The error actions in effect: the -drive's, or its device's
     * werror=/rerror= (hw/block-error-properties.h). */
    DriveErrorAction rerror, werror;
    bool anonymous;             /* made for a device without drive= (owns cfg) */
    const DriveMediumOps *medium_ops;   /* NULL: not removable */
    void *medium_opaque;
} DriveInfo;

/*
 * Open every drive of cfgs (DriveConfig *, which must outlive the drives)
 * and make them the finder of -device drive= references. Errors start
 * with the -drive option as written.
 */
bool drives_open(GPtrArray *cfgs, Error **errp);
DriveInfo *drive_info_find(const char *id);
/*
 * Give the drive to a device: false, with QEMU's message, if another
 * device has it already.
 */
bool drive_info_claim(DriveInfo *drive, Error **errp);
/*
 * Create the devices of the drives of one interface through the device
 * registry, in command-line order, as if given with -device: if=ide gives
 * ide-hd or ide-cd on bus ide.BUS, unit UNIT (the machine does these
 * before the -device options, at their fixed places), if=virtio gives
 * virtio-blk-pci (after them, as QEMU orders its PCI slots). Errors start
 * with the -drive option as written.
 */
bool drives_create_devices(DriveInterface interface, const DeviceBuses *buses, Error **errp);
/*
 * A drive for a device given without drive= that still has a medium slot
 * (an empty ide-cd), as QEMU gives it an anonymous backend: id "" (never
 * found by name: the monitor names it by its device's id), default
 * options, listed after the command line's. Main thread, machine build.
 */
DriveInfo *drive_info_new_anonymous(DriveMedia media);
/* The device that took the drive, and its medium ops (NULL: a fixed
 * disk). Main thread, while the machine is built. */
void drive_info_attach(DriveInfo *drive, QEMUDevice *dev, const DriveMediumOps *ops,
                       void *opaque);
/* Every drive, in command-line order (query-block's order). */
void drives_foreach(void (*fn)(DriveInfo *drive, void *opaque), void *opaque);
/* Close every drive (after the devices are drained). */
void drives_close_all(void);

/*
 * Media changes (softmmu/drive-media.c), as QEMU's eject and
 * blockdev-change-medium do them, on the main thread. A new image is
 * opened and an old one drained and closed here, never under a device
 * lock; the device's lock is held only to swap the medium pointer.
 * Errors are QEMU's texts ("Device 'ide1-cd0' is not removable", "...is
 * locked and force was not specified...").
 */
bool drive_eject(DriveInfo *drive, bool force, Error **errp);
typedef enum DriveReadOnlyMode {
    DRIVE_RO_RETAIN,            /* as the drive was configured */
    DRIVE_RO_READ_ONLY,
    DRIVE_RO_READ_WRITE,
} DriveReadOnlyMode;
/* format: NULL (probe, with QEMU's warning for raw) or "raw"; force:
 * open a locked tray, as eject's force. */
bool drive_change_medium(DriveInfo *drive, const char *filename, const char *format,
                         DriveReadOnlyMode ro_mode, bool force, Error **errp);

#endif
