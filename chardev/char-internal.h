/*
 * What the character backends share (private to chardev/).
 *
 * char.c owns the Chardev: the output ring drained by the I/O thread, the
 * input watch with its pause/resume protocol and the spec parser. A backend
 * file only opens its host file descriptors and, for mon:stdio, filters
 * input for the escape key.
 */
#ifndef CHARDEV_CHAR_INTERNAL_H
#define CHARDEV_CHAR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "chardev/char.h"
#include "qemu/fd-watch.h"

#define CHARDEV_RING_SIZE (64 * 1024)


typedef struct ChardevMux ChardevMux;

struct Chardev {
    /* Output: any thread appends under ring_lock; the I/O thread drains. */
    pthread_mutex_t ring_lock;  /* pthread: visible to ThreadSanitizer */
    uint8_t *ring;              /* NULL: output is discarded (null backend) */
    size_t ring_head;
    size_t ring_len;
    uint64_t dropped;
    bool output_broken;         /* the host fd failed: discard from now on */
    int out_fd;
    bool out_fd_owned;          /* close out_fd in chardev_free() */
    /* O_NONBLOCK description: drain until EAGAIN. Otherwise each wake-up
     * writes at most PIPE_BUF bytes, what a POLLOUT promises to take. */
    bool out_nonblocking;
    FdWatch *out_watch;

    /* Input: read on the I/O thread while the frontend has room. */
    bool has_input;             /* set once, before other threads look */
    int in_fd;
    bool input_closed;          /* EOF or error: never watched again */
    FdWatch *in_watch;
    ChardevCanReadFn *can_read;
    ChardevReadFn *read;
    void *opaque;
    /* Pausing races with chardev_accept_input() from other threads: the
     * pause only holds while no accept happened since can_read said 0. */
    atomic_uint input_epoch;
    bool input_paused;
    unsigned input_paused_epoch;
    /* Backend's view of input before the frontend (mon:stdio escapes). */
    void (*input_filter)(Chardev *chr, const uint8_t *buf, size_t len);
    bool escape_pending;        /* mon:stdio: the last byte was Ctrl-a */

    /* Output room again (chardev_set_write_ready_handler). I/O thread. */
    ChardevWriteReadyFn *write_ready;
    void *write_ready_opaque;

    /* Connection events: a socket waits for its peer, the others are
     * open from the start. */
    ChardevEventFn *event;
    void *event_opaque;
    bool waits_for_peer;
    bool peer_connected;

    void *backend_state;        /* a backend's own (the socket's listener) */
    void (*backend_close)(Chardev *chr);

    /* What query-chardev calls the backend, in QEMU's words ("null",
     * "stdio", "file"; a socket's address, "disconnected:" before it while
     * no client is there). Set with chardev_set_filename on the I/O
     * thread, where the monitor reads it. */
    char *filename;
    ChardevMux *mux;            /* mon:stdio: the frontends sharing it */
};

void chardev_set_filename(Chardev *chr, const char *filename);

/* Start draining output to fd / reading input from fd on the I/O thread. */
void chardev_attach_output(Chardev *chr, int fd, bool owned, bool nonblocking);
void chardev_attach_input(Chardev *chr, int fd);
/* Stop the I/O on the attached fds (a socket's client left); a socket
 * calls it at open too, before its first client. */
void chardev_detach_io(Chardev *chr);
/* Tell the frontend, if it asked (chardev_set_event_handler). */
void chardev_send_event(Chardev *chr, ChardevEvent event);
/* Hand input bytes to the frontend (after the backend's filter). */
void chardev_deliver_input(Chardev *chr, const uint8_t *buf, size_t len);

/* char-mux.c: make chr a multiplexer; its frontends; Ctrl-a c. */
void chardev_mux_init(Chardev *chr);
void chardev_mux_free(Chardev *chr);
void chardev_mux_set_handlers(Chardev *chr, ChardevCanReadFn *can_read, ChardevReadFn *read,
                              void *opaque);
void chardev_mux_switch_focus(Chardev *chr);

bool chardev_stdio_open(Chardev *chr, bool mux_monitor, Error **errp);
bool chardev_file_open(Chardev *chr, const char *path, Error **errp);
/* "unix:PATH,server=on,wait=off" or "tcp:HOST:PORT,server=on,wait=off". */
bool chardev_socket_open(Chardev *chr, const char *spec, Error **errp);

#endif
