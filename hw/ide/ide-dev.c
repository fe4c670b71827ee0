/*
 * -device ide-hd and ide-cd: a drive on a channel of the PIIX3 IDE
 * function, with QEMU's properties drive=, rerror=, werror=, unit=,
 * model=, serial=, ver=, bootindex= (stored only), write-cache= (the
 * write cache IDENTIFY reports at power-on), and bus=ide.N, which the
 * registry checks and hands over as DeviceBuses.bus_index.
 */
#include <string.h>
#include <glib.h>
#include "hw/ide/ide.h"

typedef struct IDEDriveOptions {
    DeviceLink drive;
    BlockErrorProperties errors;
    int32_t bootindex;
    OnOffAuto write_cache;
    uint32_t unit;
    char *model;
    char *serial;
    char *ver;
} IDEDriveOptions;

#define IDE_UNIT_ANY UINT32_MAX

static const DeviceProperty ide_drive_properties[] = {
    DEFINE_PROP_LINK("drive", DEVICE_PROP_DRIVE, IDEDriveOptions, drive),
    DEFINE_BLOCK_ERROR_PROPERTIES(IDEDriveOptions, errors),
    DEFINE_PROP_BOOTINDEX(IDEDriveOptions, bootindex),
    DEFINE_PROP_ON_OFF_AUTO("write-cache", IDEDriveOptions, write_cache, ON_OFF_AUTO_AUTO,
                            NULL),
    DEFINE_PROP_UINT32("unit", IDEDriveOptions, unit, IDE_UNIT_ANY, NULL),
    DEFINE_PROP_STRING("model", IDEDriveOptions, model, NULL),
    DEFINE_PROP_STRING("serial", IDEDriveOptions, serial, NULL),
    DEFINE_PROP_STRING("ver", IDEDriveOptions, ver, NULL),
};

static QEMUDevice *ide_drive_realize(const void *options, const DeviceBuses *buses,
                                     IDEDriveKind kind, Error **errp)
{
    const IDEDriveOptions *o = options;
    IDEDriveIdentity identity = {
        .model = o->model, .serial = o->serial, .firmware = o->ver,
        .write_cache = o->write_cache,
    };
    int unit = o->unit == IDE_UNIT_ANY ? -1 : (int)MIN(o->unit, INT32_MAX);
    return ide_drive_attach(buses->ide, buses->bus_index, unit, kind, o->drive.backend, &identity,
                            &o->errors, errp);
}

static QEMUDevice *ide_hd_realize(const void *options, const DeviceBuses *buses, Error **errp)
{
    return ide_drive_realize(options, buses, IDE_DRIVE_HD, errp);
}

static QEMUDevice *ide_cd_realize(const void *options, const DeviceBuses *buses, Error **errp)
{
    return ide_drive_realize(options, buses, IDE_DRIVE_CD, errp);
}

/* serial and ver as IDENTIFY reports them; model stays as given, as QEMU
 * shows it (its default is chosen when IDENTIFY is built). */
static void ide_drive_chosen_options(QEMUDevice *dev, void *options)
{
    IDEDriveOptions *o = options;
    const char *serial, *firmware;
    ide_drive_identity_strings(dev, &serial, &firmware);
    o->serial = (char *)serial;
    o->ver = (char *)firmware;
}

const DeviceTypeInfo ide_hd_type = {
    .name = "ide-hd",
    .bus = DEVICE_BUS_IDE,
    .category = DEVICE_CATEGORY_STORAGE,
    .description = "virtual IDE disk",
    DEVICE_PROPERTIES(ide_drive_properties),
    .options_size = sizeof(IDEDriveOptions),
    .realize = ide_hd_realize,
    .chosen_options = ide_drive_chosen_options,
};

const DeviceTypeInfo ide_cd_type = {
    .name = "ide-cd",
    .bus = DEVICE_BUS_IDE,
    .category = DEVICE_CATEGORY_STORAGE,
    .description = "virtual IDE CD-ROM",
    DEVICE_PROPERTIES(ide_drive_properties),
    .options_size = sizeof(IDEDriveOptions),
    .realize = ide_cd_realize,
    .chosen_options = ide_drive_chosen_options,
};
