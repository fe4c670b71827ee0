/*
 * The drives of the command line (-drive, parsed into MachineConfig.drives
 * by block/drive-config.c) as open BlockBackends that -device finds by
 * id (drive=ID).
 *
 * Minimal on purpose: only if=none drives, which a -device names. The
 * interfaces that create their own device (if=ide, if=virtio) are wired
 * by the machine's storage code, not here.
 */
#ifndef SYSEMU_DRIVES_H
#define SYSEMU_DRIVES_H

#include <stdbool.h>
#include <glib.h>
#include "qemu/error.h"

/* Open every drive of drives (a list of DriveConfig *) and let device
 * properties of the drive kind find them by id. Main thread, before the
 * machine realizes its devices. */
bool drives_open(GPtrArray *drives, Error **errp);
/* Close them all (after every device was drained). */
void drives_close_all(void);

#endif
