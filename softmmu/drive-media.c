/*
 * Media changes of removable drives (sysemu/drives.h): what QMP's eject
 * and blockdev-change-medium do, in QEMU's order. A new image is opened
 * before the tray moves (a file that cannot be opened changes nothing);
 * the tray opens (refused while the guest locks it, unless forced); the
 * old medium leaves, is drained and closed; the new one goes in and the
 * tray closes, which tells the guest its medium may have changed.
 *
 * Threads: the main loop only, with no device lock held. The device takes
 * its own lock inside each DriveMediumOps call, just long enough to move
 * its tray or swap its medium pointer; opening, draining and closing
 * images happen here, outside it.
 */
#include <string.h>
#include "sysemu/drives.h"

static bool drive_is_removable(DriveInfo *drive, Error **errp)
{
    if (!drive->medium_ops) {
        error_setg(errp, "Device '%s' is not removable", drive->cfg->id);
        return false;
    }
    return true;
}

static bool open_tray(DriveInfo *drive, bool force, Error **errp)
{
    const DriveMediumOps *ops = drive->medium_ops;
    void *dev = drive->medium_opaque;
    if (ops->is_tray_open(dev)) {
        return true;
    }
    if (ops->is_locked(dev)) {
        /* As QEMU: the guest hears an eject request either way, so a
         * cooperative guest unlocks and opens the tray itself. */
        ops->eject_request(dev, force);
        if (!force) {
            error_setg(errp, "Device '%s' is locked and force was not specified, "
                       "wait for tray to open and try again", drive->cfg->id);
            return false;
        }
    }
    ops->set_tray(dev, true);
    return true;
}

/* Take the medium out of the device, then finish with it: its requests
 * complete (the device sees they belong to a medium it no longer has)
 * and the image closes. */
static void remove_medium(DriveInfo *drive)
{
    BlockBackend *old = drive->medium_ops->swap_medium(drive->medium_opaque, NULL);
    drive->blk = NULL;
    blk_unref(old);     /* drains first */
}

bool drive_eject(DriveInfo *drive, bool force, Error **errp)
{
    if (!drive_is_removable(drive, errp) || !open_tray(drive, force, errp)) {
        return false;
    }
    remove_medium(drive);
    return true;
}

static BlockBackend *open_medium(DriveInfo *drive, const char *filename, const char *format,
                                 DriveReadOnlyMode ro_mode, Error **errp)
{
    DriveConfig cfg = *drive->cfg;
    cfg.file = (char *)filename;
    if (!format) {
        cfg.format = DRIVE_FORMAT_PROBE;
    } else if (strcmp(format, "raw") == 0) {
        cfg.format = DRIVE_FORMAT_RAW;
    } else {
        error_setg(errp, "format '%s' is not supported: only raw images are", format);
        return NULL;
    }
    if (ro_mode != DRIVE_RO_RETAIN) {
        cfg.read_only = ro_mode == DRIVE_RO_READ_ONLY;
    }
    BlockBackend *blk = blk_new_open(&cfg, errp);
    if (blk) {
        blk_set_acct(blk, drive->acct);
    }
    return blk;
}

bool drive_change_medium(DriveInfo *drive, const char *filename, const char *format,
                         DriveReadOnlyMode ro_mode, bool force, Error **errp)
{
    if (!drive_is_removable(drive, errp)) {
        return false;
    }
    BlockBackend *blk = open_medium(drive, filename, format, ro_mode, errp);
    if (!blk) {
        return false;
    }
    if (!open_tray(drive, force, errp)) {
        blk_unref(blk);
        return false;
    }
    remove_medium(drive);
    drive->medium_ops->swap_medium(drive->medium_opaque, blk);
    drive->blk = blk;
    drive->medium_ops->set_tray(drive->medium_opaque, false);
    return true;
}
