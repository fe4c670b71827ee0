/*
 * A device's werror= and rerror= (hw/block-error-properties.h): one enum
 * property kind for every device with a drive, its names those of
 * -drive's werror= (drive_error_action_name) plus "auto".
 */
#include "hw/block-error-properties.h"

static const char *block_error_name(int value)
{
    return value == BLOCK_ERROR_AUTO ? "auto" : drive_error_action_name(value);
}

const DevicePropertyChoices block_error_choices = {
    .type_name = "BlockdevOnError",
    .count = BLOCK_ERROR_AUTO + 1,
    .name = block_error_name,
};

DriveErrorAction block_error_resolve(int device_value, DriveErrorAction drive_value)
{
    return device_value == BLOCK_ERROR_AUTO ? drive_value : (DriveErrorAction)device_value;
}

void block_error_properties_apply(const BlockErrorProperties *props, DriveInfo *drive)
{
    drive->rerror = block_error_resolve(props->rerror, drive->cfg->rerror);
    drive->werror = block_error_resolve(props->werror, drive->cfg->werror);
}
