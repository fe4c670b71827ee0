/*
 * The machine's drives (sysemu/drives.h): each -drive opened once the
 * machine is built, the finder of -device drive= references, and the
 * devices QEMU creates by itself for if=ide and if=virtio drives. Those go
 * through the device registry by type name, exactly as if the user had
 * written -device ide-hd,drive=ID,bus=ide.B,unit=U: one path for both.
 */
#include <string.h>
#include <glib.h>
#include "hw/qdev-registry.h"
#include "sysemu/drives.h"

static GPtrArray *drives;   /* of DriveInfo *, in command-line order */
/* The drive whose if=ide/virtio device is being realized: the one device
 * that may claim a drive that is not if=none. */
static DriveInfo *creating_default_for;

static void *drive_finder(const char *id)
{
    return drive_info_find(id);
}

DriveInfo *drive_info_find(const char *id)
{
    for (guint i = 0; drives && i < drives->len; i++) {
        DriveInfo *drive = g_ptr_array_index(drives, i);
        if (!drive->anonymous && strcmp(drive->cfg->id, id) == 0) {
            return drive;
        }
    }
    return NULL;
}

bool drives_open(GPtrArray *cfgs, Error **errp)
{
    drives = g_ptr_array_new();
    device_backend_set_finder(DEVICE_PROP_DRIVE, drive_finder);
    for (guint i = 0; i < cfgs->len; i++) {
        DriveInfo *drive = g_new0(DriveInfo, 1);
        drive->cfg = g_ptr_array_index(cfgs, i);
        drive->rerror = drive->cfg->rerror;
        drive->werror = drive->cfg->werror;
        drive->acct = block_acct_new();
        g_ptr_array_add(drives, drive);
        if (drive->cfg->file && !(drive->blk = blk_new_open(drive->cfg, errp))) {
            error_prepend(errp, "%s: ", drive->cfg->origin);
            return false;
        }
        if (drive->blk) {
            blk_set_acct(drive->blk, drive->acct);
        }
    }
    return true;
}

bool drive_info_claim(DriveInfo *drive, Error **errp)
{
    if (drive->cfg->interface != DRIVE_IF_NONE && drive != creating_default_for) {
        error_setg(errp, "Drive '%s' is already in use because it has been automatically "
                   "connected to another device (did you need 'if=none' in the drive "
                   "options?)", drive->cfg->id);
        return false;
    }
    if (drive->in_use) {
        error_setg(errp, "Drive '%s' is already in use by another device", drive->cfg->id);
        return false;
    }
    drive->in_use = true;
    return true;
}

/* The -device a drive of interface if stands for, or NULL with *errp set. */
static DeviceConfig *default_device_config(const DriveConfig *cfg, Error **errp)
{
    const char *type_name = cfg->interface == DRIVE_IF_VIRTIO ? "virtio-blk-pci"
                            : cfg->media == DRIVE_MEDIA_CDROM ? "ide-cd" : "ide-hd";
    const DeviceTypeInfo *type = device_type_find(type_name);
    if (!type) {
        error_setg(errp, "%s: %s is not available in this build", cfg->origin, type_name);
        return NULL;
    }
    DeviceConfig *dev = device_config_new(type, cfg->origin);
    bool ok = device_config_set(dev, "drive", cfg->id, errp);
    if (ok && cfg->interface == DRIVE_IF_IDE) {
        g_autofree char *bus = g_strdup_printf("ide.%d", cfg->bus);
        g_autofree char *unit = g_strdup_printf("%d", cfg->unit);
        ok = device_config_set(dev, "bus", bus, errp) && device_config_set(dev, "unit", unit, errp);
    }
    if (!ok) {
        error_prepend(errp, "%s: ", cfg->origin);
        device_config_free(dev);
        return NULL;
    }
    return dev;
}

bool drives_create_devices(DriveInterface interface, const DeviceBuses *buses, Error **errp)
{
    for (guint i = 0; i < drives->len; i++) {
        DriveInfo *drive = g_ptr_array_index(drives, i);
        if (drive->cfg->interface != interface || interface == DRIVE_IF_NONE) {
            continue;
        }
        DeviceConfig *dev = default_device_config(drive->cfg, errp);
        if (!dev) {
            return false;
        }
        creating_default_for = drive;
        QEMUDevice *qdev = device_config_realize(dev, buses, errp);
        creating_default_for = NULL;
        device_config_free(dev);
        if (!qdev) {
            return false;
        }
    }
    return true;
}

DriveInfo *drive_info_new_anonymous(DriveMedia media)
{
    /* Zero is each option's default (cache=writeback, aio=threads, probed
     * format, discard=ignore, rerror=report) but werror's (enospc). */
    DriveConfig *cfg = g_new0(DriveConfig, 1);
    cfg->werror = DRIVE_ERROR_ENOSPC;
    cfg->id = g_strdup("");
    cfg->interface = DRIVE_IF_NONE;
    cfg->media = media;
    cfg->read_only = media == DRIVE_MEDIA_CDROM;
    cfg->origin = g_strdup("-device");
    DriveInfo *drive = g_new0(DriveInfo, 1);
    drive->cfg = cfg;
    drive->rerror = cfg->rerror;
    drive->werror = cfg->werror;
    drive->anonymous = true;
    drive->in_use = true;
    drive->acct = block_acct_new();
    if (!drives) {
        drives = g_ptr_array_new();
    }
    g_ptr_array_add(drives, drive);
    return drive;
}

void drive_info_attach(DriveInfo *drive, QEMUDevice *dev, const DriveMediumOps *ops,
                       void *opaque)
{
    drive->dev = dev;
    drive->medium_ops = ops;
    drive->medium_opaque = opaque;
}

void drives_foreach(void (*fn)(DriveInfo *drive, void *opaque), void *opaque)
{
    for (guint i = 0; drives && i < drives->len; i++) {
        fn(g_ptr_array_index(drives, i), opaque);
    }
}

void drives_close_all(void)
{
    for (guint i = 0; drives && i < drives->len; i++) {
        DriveInfo *drive = g_ptr_array_index(drives, i);
        blk_unref(drive->blk);
        block_acct_unref(drive->acct);
        if (drive->anonymous) {
            DriveConfig *cfg = (DriveConfig *)drive->cfg;
            g_free(cfg->id);
            g_free(cfg->origin);
            g_free(cfg);
        }
        g_free(drive);
    }
    g_clear_pointer(&drives, g_ptr_array_unref);
}
