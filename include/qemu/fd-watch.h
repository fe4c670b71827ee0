/*
 * Readiness of one host file descriptor in a GLib main context (the main
 * loop's, or an I/O thread's), for any backend: chardevs, event notifiers,
 * tap, AIO completions.
 *
 * A watch keeps its fd in the poll set only while it has something to wait
 * for: an fd left in the set with no interest would still report POLLHUP
 * (a closed pipe, a hung-up terminal) and make every poll return at once.
 * So before each poll the watch asks prepare() what to wait for now; with
 * no prepare() it always waits for the condition it was created with.
 *
 * Threads: a watch is created, changed and freed on its context's thread
 * (or before that context runs); its callbacks run there.
 */
#ifndef QEMU_FD_WATCH_H
#define QEMU_FD_WATCH_H

#include <glib.h>

typedef struct FdWatch FdWatch;

/* Before each poll: do what needs no waiting, then say what to wait for
 * (G_IO_IN, G_IO_OUT, both, or 0 for nothing). */
typedef GIOCondition FdWatchPrepareFn(void *opaque);
/* The fd is ready: revents holds what poll reported (G_IO_HUP and G_IO_ERR
 * included, which come whatever was asked). */
typedef void FdWatchReadyFn(void *opaque, GIOCondition revents);

FdWatch *fd_watch_new(GMainContext *ctx, int fd, GIOCondition cond,
                      FdWatchPrepareFn *prepare, FdWatchReadyFn *ready, void *opaque);
/* Stop watching (the fd stays open); NULL is allowed. */
void fd_watch_free(FdWatch *w);

#endif
