/*
 * -pidfile FILE: the VMM's process id in FILE, with the file locked for as
 * long as the process lives, so a second VMM started with the same FILE is
 * refused instead of overwriting it (QEMU's behaviour and messages).
 */
#ifndef QEMU_PIDFILE_H
#define QEMU_PIDFILE_H

#include <stdbool.h>
#include "qemu/error.h"

/*
 * Create or open path, take a write lock on it (fcntl: released only when
 * the process ends, never inherited by children), and write getpid() and a
 * newline. One pid file per process. Errors as QEMU words them:
 * "Cannot lock pid file: Resource temporarily unavailable" while another
 * process holds it; main prefixes "cannot create PID file: ".
 */
bool pidfile_create(const char *path, Error **errp);

/* At exit (normal or not): remove the file pidfile_create made, by its
 * absolute path (a daemon has changed to / since). No-op without one. */
void pidfile_remove(void);

#endif
