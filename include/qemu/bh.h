/*
 * Bottom halves: a callback that any thread schedules and that runs soon
 * after on the thread of the context it belongs to (the main loop's or an
 * I/O thread's). Scheduling twice before it runs runs it once. Used to
 * hand work from a vCPU (holding a device lock) or a worker thread to the
 * thread that owns the work, without waiting for it.
 */
#ifndef QEMU_BH_H
#define QEMU_BH_H

#include <glib.h>

typedef struct QEMUBH QEMUBH;
typedef void QEMUBHFunc(void *opaque);

QEMUBH *qemu_bh_new(GMainContext *ctx, QEMUBHFunc *cb, void *opaque);
/* Any thread, no lock, never blocks. */
void qemu_bh_schedule(QEMUBH *bh);
/* On the context's thread (or before it runs): unschedule and free. */
void qemu_bh_delete(QEMUBH *bh);

#endif
