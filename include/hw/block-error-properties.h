/*
 * werror= and rerror= on a device with a drive (ide-hd, ide-cd,
 * virtio-blk-pci), as QEMU 7.2's BlockdevOnError properties: report,
 * ignore, enospc, stop, or auto (the default), which keeps the action its
 * -drive gave (block/drive-config.h). A value given on the device wins
 * over the drive's. Unlike -drive, a device takes enospc for rerror too
 * (QEMU does: a read that fails with ENOSPC stops, any other is reported).
 */
#ifndef HW_BLOCK_ERROR_PROPERTIES_H
#define HW_BLOCK_ERROR_PROPERTIES_H

#include "hw/qdev-properties.h"
#include "sysemu/drives.h"

/* A DriveErrorAction, or this: take the drive's. */
#define BLOCK_ERROR_AUTO (DRIVE_ERROR_ENOSPC + 1)

typedef struct BlockErrorProperties {
    int rerror, werror;         /* DriveErrorAction or BLOCK_ERROR_AUTO */
} BlockErrorProperties;

extern const DevicePropertyChoices block_error_choices;

/* The two properties, in QEMU's order, on BlockErrorProperties field of State. */
#define DEFINE_BLOCK_ERROR_PROPERTIES(State, field) \
    DEFINE_PROP_ENUM("rerror", State, field.rerror, &block_error_choices, BLOCK_ERROR_AUTO, \
                     "Error handling policy, report/ignore/enospc/stop/auto"), \
    DEFINE_PROP_ENUM("werror", State, field.werror, &block_error_choices, BLOCK_ERROR_AUTO, \
                     "Error handling policy, report/ignore/enospc/stop/auto")

/* The action in effect: the device's value unless auto, else the drive's. */
DriveErrorAction block_error_resolve(int device_value, DriveErrorAction drive_value);
/*
 * Record on drive the actions in effect for the device that claimed it
 * (drive->rerror and drive->werror: what the device gives blk_set_on_error
 * and what query-block's io-status follows). Main thread, machine build.
 */
void block_error_properties_apply(const BlockErrorProperties *props, DriveInfo *drive);

#endif
