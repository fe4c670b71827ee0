/*
 * Character backends (-serial stdio|mon:stdio|file:PATH|null|none|chardev:ID,
 * -chardev null|stdio|file|socket,id=ID, -qmp/-serial unix:PATH|tcp:HOST:PORT
 * with server=on,wait=off).
 *
 * Writes never block the caller (a vCPU holding the serial port's lock):
 * bytes go into a bounded buffer that the I/O thread drains to the host fd.
 * When the buffer is full, further bytes are dropped and counted rather
 * than stalling the guest. Input is read on the I/O thread and handed to the
 * frontend's callback only while it says it has room.
 */
#ifndef CHARDEV_CHAR_H
#define CHARDEV_CHAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "qemu/error.h"

typedef struct Chardev Chardev;

/* How much the frontend can take now (0 pauses reading). I/O thread. */
typedef size_t ChardevCanReadFn(void *opaque);
/* Bytes for the frontend (at most what can_read said). I/O thread. */
typedef void ChardevReadFn(void *opaque, const uint8_t *buf, size_t len);

/* A frontend's view of the connection: a socket backend opens on each
 * accepted client and closes when it goes; the others open once, when the
 * event handler is set. Delivered on the I/O thread. Monitors greet on
 * OPENED (QMP's greeting, the human monitor's banner). */
typedef enum ChardevEvent {
    CHR_EVENT_OPENED,
    CHR_EVENT_CLOSED,
} ChardevEvent;
typedef void ChardevEventFn(void *opaque, ChardevEvent event);

/*
 * mon:stdio is a multiplexer, as in QEMU: up to CHARDEV_MUX_MAX frontends
 * (the serial port, then the human monitor) share the backend. Output of
 * every frontend goes out, whichever has the focus, as QEMU keeps the
 * guest's console flowing while the monitor is used; input goes to the
 * frontend in focus (the first, at start), and Ctrl-a c passes the focus
 * to the next. Each chardev_set_handlers() with a new opaque adds a
 * frontend; chardev_claim() takes as many claims as there are places.
 */
#define CHARDEV_MUX_MAX 4
/* The frontend gained or lost the focus. I/O thread. */
typedef void ChardevFocusFn(void *opaque, bool focused);
bool chardev_is_mux(Chardev *chr);
/* For the frontend whose handlers were set with opaque. */
void chardev_mux_set_focus_handler(Chardev *chr, ChardevFocusFn *focus, void *opaque);

/* Parse a -serial argument; NULL and *errp on a bad one. "none" gives NULL
 * without an error (no device). */
Chardev *chardev_new(const char *spec, Error **errp);
void chardev_free(Chardev *chr);

size_t chardev_write(Chardev *chr, const uint8_t *buf, size_t len);
/* How many bytes chardev_write() would take now without dropping any (0
 * while a socket has no client). A frontend that must not cut a message
 * (QMP) writes no more than this and waits for the write-ready handler,
 * called on the I/O thread whenever the backend has written some out. */
size_t chardev_write_room(Chardev *chr);
typedef void ChardevWriteReadyFn(void *opaque);
void chardev_set_write_ready_handler(Chardev *chr, ChardevWriteReadyFn *fn, void *opaque);
void chardev_set_handlers(Chardev *chr, ChardevCanReadFn *can_read,
                          ChardevReadFn *read, void *opaque);
void chardev_set_event_handler(Chardev *chr, ChardevEventFn *event, void *opaque);
/* The frontend has room again (e.g. the guest read the RX FIFO): resume
 * reading input. Any thread. */
void chardev_accept_input(Chardev *chr);
/* Write out everything buffered (at exit). */
void chardev_flush(Chardev *chr);
uint64_t chardev_dropped_bytes(Chardev *chr);

/* Backends by id, made while the machine is built: -chardev's, and
 * -serial's as "serial0".."serial3" (the names QEMU gives them). */
Chardev *chardev_add(const char *id, const char *spec, Error **errp);
Chardev *chardev_find(const char *id);
/* A frontend takes the backend named id (which exists); a second one is
 * refused, as QEMU refuses it. */
bool chardev_claim(const char *id, Error **errp);
/* chardev_flush of every backend with an id (at exit). */
void chardev_flush_all(void);
/* Close every backend with an id (last thing at exit: a unix socket's
 * path is removed). Their frontends must be gone or stopped. */
void chardev_free_all(void);

/* Restore the terminal of every stdio backend (exit, signals). */
void chardev_restore_terminals(void);

#endif
