/*
 * -drive, -hda..-hdd and -cdrom (softmmu/cmdline-internal.h): each becomes
 * a DriveConfig through the block layer's option model
 * (block/drive-config.h), which places and names it as QEMU does. A bare
 * word on the command line is a disk image, as QEMU's -hda. Nothing is
 * opened here: the machine opens the drives (sysemu/drives.h).
 */
#include <string.h>
#include "block/drive-config.h"
#include "cmdline-internal.h"

/* The drive just added remembers how the user wrote it, for the errors
 * of opening and attaching it. */
static void set_last_origin(GPtrArray *drives, const char *spelled, const char *arg)
{
    DriveConfig *cfg = g_ptr_array_index(drives, drives->len - 1);
    cfg->origin = spelled ? g_strdup_printf("%s %s", spelled, arg) : g_strdup(arg);
}

CmdlineResult handle_drive(ParseState *ps, const OptionUse *use, Error **errp)
{
    if (!drive_add(ps->cfg->drives, use->arg, errp)) {
        return CMDLINE_ERROR;
    }
    set_last_origin(ps->cfg->drives, use->spelled, use->arg);
    return CMDLINE_RUN;
}

CmdlineResult handle_drive_shorthand(ParseState *ps, const OptionUse *use, Error **errp)
{
    const char *name = use->spelled + (use->spelled[1] == '-' ? 2 : 1);
    if (!drive_add_shorthand(ps->cfg->drives, name, use->arg, errp)) {
        return CMDLINE_ERROR;
    }
    set_last_origin(ps->cfg->drives, use->spelled, use->arg);
    return CMDLINE_RUN;
}

bool cmdline_add_disk_image(ParseState *ps, const char *file, Error **errp)
{
    if (!drive_add_shorthand(ps->cfg->drives, "hda", file, errp)) {
        error_prepend(errp, "%s: ", file);
        return false;
    }
    set_last_origin(ps->cfg->drives, NULL, file);
    return true;
}
