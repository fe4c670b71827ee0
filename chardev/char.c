/*
 * Character backends: the parts every backend shares (chardev/char.h).
 *
 * Output goes through a bounded ring: chardev_write() (often a vCPU holding
 * a device lock) only copies into it and, if the ring was empty, wakes the
 * I/O thread, which writes to the host fd (waiting for POLLOUT whenever
 * the fd takes no more). Input is
 * read on the I/O thread only while the frontend's can_read() has room;
 * when it has none the fd leaves the poll set until chardev_accept_input().
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include "char-internal.h"
#include "qemu/fd-watch.h"
#include "qemu/main-loop.h"

/* How long chardev_flush() waits for a host fd that takes nothing. */
#define CHARDEV_FLUSH_STALL_MS 1000

/* ---- output ---- */

size_t chardev_write(Chardev *chr, const uint8_t *buf, size_t len)
{
    if (!chr->ring) {
        return len;
    }
    pthread_mutex_lock(&chr->ring_lock);
    size_t n = chr->output_broken ? 0 : MIN(len, CHARDEV_RING_SIZE - chr->ring_len);
    bool was_empty = chr->ring_len == 0;
    size_t tail = (chr->ring_head + chr->ring_len) % CHARDEV_RING_SIZE;
    size_t first = MIN(n, CHARDEV_RING_SIZE - tail);
    memcpy(chr->ring + tail, buf, first);
    memcpy(chr->ring, buf + first, n - first);
    chr->ring_len += n;
    chr->dropped += len - n;
    pthread_mutex_unlock(&chr->ring_lock);
    if (was_empty && n) {
        main_loop_wakeup();
    }
    return n;
}

size_t chardev_write_room(Chardev *chr)
{
    if (!chr->ring) {
        return SIZE_MAX;
    }
    pthread_mutex_lock(&chr->ring_lock);
    size_t room = chr->output_broken ? 0 : CHARDEV_RING_SIZE - chr->ring_len;
    pthread_mutex_unlock(&chr->ring_lock);
    return room;
}

void chardev_set_write_ready_handler(Chardev *chr, ChardevWriteReadyFn *fn, void *opaque)
{
    chr->write_ready = fn;
    chr->write_ready_opaque = opaque;
}

uint64_t chardev_dropped_bytes(Chardev *chr)
{
    pthread_mutex_lock(&chr->ring_lock);
    uint64_t dropped = chr->dropped;
    pthread_mutex_unlock(&chr->ring_lock);
    return dropped;
}

static size_t chardev_ring_pending(Chardev *chr)
{
    pthread_mutex_lock(&chr->ring_lock);
    size_t len = chr->ring_len;
    pthread_mutex_unlock(&chr->ring_lock);
    return len;
}

/* The host fd failed for good (reader gone, terminal hung up): what is
 * buffered and all that follows is dropped rather than retried forever. */
static void chardev_output_break(Chardev *chr)
{
    pthread_mutex_lock(&chr->ring_lock);
    chr->output_broken = true;
    chr->dropped += chr->ring_len;
    chr->ring_len = 0;
    pthread_mutex_unlock(&chr->ring_lock);
}

/*
 * One write() of up to max bytes from the ring's oldest contiguous chunk.
 * Only one thread drains at a time (the I/O thread, or the exiting thread
 * in chardev_flush()), and writers never touch the used part of the ring,
 * so the chunk can be written with the lock released.
 */
static ssize_t chardev_write_chunk(Chardev *chr, size_t max)
{
    pthread_mutex_lock(&chr->ring_lock);
    const uint8_t *chunk = chr->ring + chr->ring_head;
    size_t n = MIN(MIN(chr->ring_len, CHARDEV_RING_SIZE - chr->ring_head), max);
    pthread_mutex_unlock(&chr->ring_lock);

    ssize_t written = write(chr->out_fd, chunk, n);
    if (written > 0) {
        pthread_mutex_lock(&chr->ring_lock);
        chr->ring_head = (chr->ring_head + written) % CHARDEV_RING_SIZE;
        chr->ring_len -= written;
        pthread_mutex_unlock(&chr->ring_lock);
    }
    return written;
}

static void chardev_drain(Chardev *chr)
{
    size_t max = chr->out_nonblocking ? CHARDEV_RING_SIZE : PIPE_BUF;
    while (chardev_ring_pending(chr)) {
        ssize_t written = chardev_write_chunk(chr, max);
        if (written < 0 && errno == EINTR) {
            continue;
        }
        if (written < 0 && errno != EAGAIN) {
            chardev_output_break(chr);
        }
        if (written <= 0 || !chr->out_nonblocking) {
            return;
        }
    }
}

static void chardev_output_ready(void *opaque, GIOCondition revents)
{
    Chardev *chr = opaque;
    size_t before = chardev_ring_pending(chr);
    chardev_drain(chr);
    /* A frontend that had more to say than fitted can go on now. */
    if (chr->write_ready && chardev_ring_pending(chr) < before) {
        chr->write_ready(chr->write_ready_opaque);
    }
}

/* A non-blocking fd is written at once, without a poll first: the fd only
 * joins the poll set when it cannot take everything. */
static GIOCondition chardev_output_prepare(void *opaque)
{
    Chardev *chr = opaque;
    if (chr->out_nonblocking) {
        chardev_output_ready(chr, 0);
    }
    return chardev_ring_pending(chr) ? G_IO_OUT : 0;
}

void chardev_attach_output(Chardev *chr, int fd, bool owned, bool nonblocking)
{
    pthread_mutex_lock(&chr->ring_lock);
    if (!chr->ring) {
        chr->ring = g_malloc(CHARDEV_RING_SIZE);
    }
    chr->ring_head = chr->ring_len = 0;
    chr->output_broken = false;
    pthread_mutex_unlock(&chr->ring_lock);
    chr->out_fd = fd;
    chr->out_fd_owned = owned;
    chr->out_nonblocking = nonblocking;
    chr->out_watch = fd_watch_new(main_loop_context(), fd, 0, chardev_output_prepare,
                                  chardev_output_ready, chr);
}

void chardev_flush(Chardev *chr)
{
    if (!chr->ring) {
        return;
    }
    while (chardev_ring_pending(chr)) {
        ssize_t written = chardev_write_chunk(chr, CHARDEV_RING_SIZE);
        if (written > 0 || (written < 0 && errno == EINTR)) {
            continue;
        }
        if (written < 0 && errno != EAGAIN) {
            chardev_output_break(chr);
            return;
        }
        struct pollfd pfd = { .fd = chr->out_fd, .events = POLLOUT };
        if (poll(&pfd, 1, CHARDEV_FLUSH_STALL_MS) == 0) {
            return;     /* a stuck reader must not hang the exit */
        }
    }
}

/* ---- input ---- */

void chardev_set_handlers(Chardev *chr, ChardevCanReadFn *can_read,
                          ChardevReadFn *read, void *opaque)
{
    if (chr->mux) {
        chardev_mux_set_handlers(chr, can_read, read, opaque);
    } else {
        chr->can_read = can_read;
        chr->read = read;
        chr->opaque = opaque;
    }
    main_loop_wakeup();
}

/*
 * Minimal for the backends of this branch, which all open once: OPENED at
 * once. The qmp-server branch has the full version (socket backends open
 * per client); the merge keeps that one.
 */
void chardev_accept_input(Chardev *chr)
{
    if (chr && chr->has_input) {
        atomic_fetch_add(&chr->input_epoch, 1);
        main_loop_wakeup();
    }
}

void chardev_deliver_input(Chardev *chr, const uint8_t *buf, size_t len)
{
    if (len) {
        chr->read(chr->opaque, buf, len);
    }
}

static GIOCondition chardev_input_prepare(void *opaque)
{
    Chardev *chr = opaque;
    bool paused = chr->input_paused &&
                  chr->input_paused_epoch == atomic_load(&chr->input_epoch);
    return chr->read && !chr->input_closed && !paused ? G_IO_IN : 0;
}

static void chardev_input_ready(void *opaque, GIOCondition revents)
{
    Chardev *chr = opaque;
    unsigned epoch = atomic_load(&chr->input_epoch);
    uint8_t buf[256];
    size_t room = chr->can_read(chr->opaque);

    chr->input_paused = room == 0;
    chr->input_paused_epoch = epoch;
    if (!room) {
        return;
    }
    ssize_t n = read(chr->in_fd, buf, MIN(room, sizeof(buf)));
    if (n > 0) {
        if (chr->input_filter) {
            chr->input_filter(chr, buf, n);
        } else {
            chardev_deliver_input(chr, buf, n);
        }
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        /* EOF (stdin from /dev/null, a closed pipe) or a dead terminal:
         * stop watching instead of polling a readable-forever fd. */
        chr->input_closed = true;
    }
}

void chardev_attach_input(Chardev *chr, int fd)
{
    if (!chr->has_input) {
        chr->has_input = true;  /* before any thread can ask (socket: at open) */
    }
    chr->in_fd = fd;
    chr->input_closed = false;
    chr->input_paused = false;
    chr->in_watch = fd_watch_new(main_loop_context(), fd, 0, chardev_input_prepare,
                                 chardev_input_ready, chr);
}

/* A socket backend's client left (or has not come yet): stop watching its
 * fd and drop output (counted) until the next client is attached. The fd
 * is the backend's. The ring is allocated here at the latest, so writers
 * on other threads never see the pointer change. */
void chardev_detach_io(Chardev *chr)
{
    if (!chr->ring) {
        chr->ring = g_malloc(CHARDEV_RING_SIZE);
    }
    g_clear_pointer(&chr->out_watch, fd_watch_free);
    g_clear_pointer(&chr->in_watch, fd_watch_free);
    chardev_output_break(chr);
    chr->out_fd = chr->in_fd = -1;
}

/* ---- events ---- */

void chardev_set_event_handler(Chardev *chr, ChardevEventFn *event, void *opaque)
{
    chr->event = event;
    chr->event_opaque = opaque;
    /* Only a socket waits for its peer; for it, a client already there
     * counts as opened now. */
    if (event && (!chr->waits_for_peer || chr->peer_connected)) {
        event(opaque, CHR_EVENT_OPENED);
    }
}

void chardev_send_event(Chardev *chr, ChardevEvent event)
{
    if (chr->event) {
        chr->event(chr->event_opaque, event);
    }
}

/* ---- creation ---- */

static Chardev *chardev_alloc(void)
{
    Chardev *chr = g_new0(Chardev, 1);
    pthread_mutex_init(&chr->ring_lock, NULL);
    chr->out_fd = -1;
    chr->in_fd = -1;
    return chr;
}

Chardev *chardev_new(const char *spec, Error **errp)
{
    if (strcmp(spec, "none") == 0) {
        return NULL;
    }
    Chardev *chr = chardev_alloc();
    bool ok = true;
    if (strcmp(spec, "null") == 0) {
        /* no host fd: output is discarded, there is never input */
        chardev_set_filename(chr, "null");
    } else if (strcmp(spec, "stdio") == 0) {
        ok = chardev_stdio_open(chr, false, errp);
        chardev_set_filename(chr, "stdio");
    } else if (strcmp(spec, "mon:stdio") == 0) {
        ok = chardev_stdio_open(chr, true, errp);
        chardev_set_filename(chr, "mux");
    } else if (g_str_has_prefix(spec, "unix:") || g_str_has_prefix(spec, "tcp:")) {
        ok = chardev_socket_open(chr, spec, errp);
    } else if (g_str_has_prefix(spec, "file:")) {
        ok = chardev_file_open(chr, spec + strlen("file:"), errp);
        chardev_set_filename(chr, "file");
    } else if (g_str_has_prefix(spec, "mon:")) {
        error_setg(errp, "'%s': the monitor can only be multiplexed on stdio "
                   "(mon:stdio)", spec);
        ok = false;
    } else {
        error_setg(errp, "character backend '%s' is not supported "
                   "(use null, none, stdio, mon:stdio, file:PATH, "
                   "unix:PATH,server=on,wait=off or tcp:HOST:PORT,server=on,wait=off)", spec);
        ok = false;
    }
    if (!ok) {
        chardev_free(chr);
        return NULL;
    }
    return chr;
}

void chardev_set_filename(Chardev *chr, const char *filename)
{
    g_free(chr->filename);
    chr->filename = g_strdup(filename);
}

void chardev_free(Chardev *chr)
{
    if (!chr) {
        return;
    }
    fd_watch_free(chr->out_watch);
    fd_watch_free(chr->in_watch);
    if (chr->backend_close) {
        chr->backend_close(chr);
    }
    chardev_mux_free(chr);
    if (chr->out_fd_owned) {
        close(chr->out_fd);
    }
    g_free(chr->ring);
    g_free(chr->filename);
    pthread_mutex_destroy(&chr->ring_lock);
    g_free(chr);
}
