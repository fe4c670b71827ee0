/* -drive ... as BlockBackends that drive=ID finds (sysemu/drives.h). */
#include <string.h>
#include "block/block-backend.h"
#include "hw/qdev-registry.h"
#include "sysemu/drives.h"

static GPtrArray *open_drives;      /* of BlockBackend *, on the main thread */

static void *drive_backend_find(const char *id)
{
    for (guint i = 0; open_drives && i < open_drives->len; i++) {
        BlockBackend *blk = g_ptr_array_index(open_drives, i);
        if (strcmp(blk_name(blk), id) == 0) {
            return blk;
        }
    }
    return NULL;
}

bool drives_open(GPtrArray *drives, Error **errp)
{
    open_drives = g_ptr_array_new();
    device_backend_set_finder(DEVICE_PROP_DRIVE, drive_backend_find);
    for (guint i = 0; i < drives->len; i++) {
        const DriveConfig *cfg = g_ptr_array_index(drives, i);
        if (cfg->interface != DRIVE_IF_NONE) {
            error_setg(errp, "drive '%s': if=%s is not wired to a device yet: use if=none and "
                       "-device ...,drive=%s", cfg->id, drive_interface_name(cfg->interface),
                       cfg->id);
            return false;
        }
        BlockBackend *blk = blk_new_open(cfg, errp);
        if (!blk) {
            return false;
        }
        g_ptr_array_add(open_drives, blk);
    }
    return true;
}

void drives_close_all(void)
{
    for (guint i = 0; open_drives && i < open_drives->len; i++) {
        blk_unref(g_ptr_array_index(open_drives, i));
    }
    g_clear_pointer(&open_drives, g_ptr_array_unref);
}
