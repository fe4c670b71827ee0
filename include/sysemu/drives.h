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

typedef struct DriveInfo {
    const DriveConfig *cfg;
    BlockBackend *blk;          /* NULL for a CD-ROM drive without a file */
    bool in_use;                /* a device has it */
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
/* Close every drive (after the devices are drained). */
void drives_close_all(void);

#endif
