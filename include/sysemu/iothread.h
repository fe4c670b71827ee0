/*
 * I/O threads (-object iothread,id=ID, as in QEMU): a thread running its
 * own GLib main context, where devices that name it (iothread=ID) run
 * their backend work, so that one busy device's host I/O does not queue
 * behind another's on the main loop. Created and freed on the main
 * thread; the registry finds them by id.
 */
#ifndef SYSEMU_IOTHREAD_H
#define SYSEMU_IOTHREAD_H

#include <glib.h>
#include "qemu/timer.h"
#include "qemu/error.h"

typedef struct IOThread IOThread;

/* Start a thread named "IO <id>"; an id already taken is an error. Sources
 * of its context (fd watches, bottom halves) are attached before it starts
 * or from the thread itself (iothread_run_sync). */
IOThread *iothread_new(const char *id, Error **errp);
IOThread *iothread_find(const char *id);
const char *iothread_id(const IOThread *t);
GMainContext *iothread_context(IOThread *t);
/* Timers whose callbacks run on the thread (timer_new_on). */
TimerList *iothread_timers(IOThread *t);
/* Run fn(opaque) on the thread and wait until it has returned. */
void iothread_run_sync(IOThread *t, void (*fn)(void *opaque), void *opaque);
/* Stop the thread (after the work in its context that is due) and free it. */
void iothread_free(IOThread *t);
/* Start one I/O thread per -object iothread,id=ID. */
bool iothreads_create(GPtrArray *ids, Error **errp);
/* Stop and free every I/O thread (at exit, once devices are drained). */
void iothreads_free_all(void);

#endif
