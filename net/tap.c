/*
 * -netdev tap: frames between a NIC and a Linux tap interface
 * (include/net/tap.h, docs/network.md "tap").
 *
 *   -netdev tap,id=ID[,ifname=NAME][,script=FILE|no][,downscript=FILE|no]
 *               [,vnet_hdr=on|off][,queues=N][,fd=FD|fds=FD:FD...]
 *               [,vhost=on|off][,vhostforce=on|off][,vhostfd=FD|vhostfds=FD:FD...]
 *               [,poll-us=N]
 *
 * Each queue has its own tap fd (IFF_MULTI_QUEUE for queues > 1), polled
 * on the context of the NIC queue it is attached to:
 *  - reading (that context): frames go to the NIC with net_send; a refused
 *    frame is kept and the fd leaves the poll set until the NIC's
 *    receive_ready brings send_ready, so a full guest ring stops the tap
 *    (the kernel queues, then drops, as for any slow reader);
 *  - writing (the NIC's thread, under its device lock): one writev, never
 *    blocking; on EAGAIN the frame is refused, the fd is polled for POLLOUT
 *    and net_client_receive_ready tells the NIC when to send again.
 * A NIC that lends its guest's buffers (virtio-net, net_send_filled) has
 * frames read straight into them, and the copy in q->buf is left out.
 * A tap with IFF_VNET_HDR puts a virtio-net header ahead of every frame.
 * A NIC that never asked for one (e1000) sees bare frames: the header is
 * stripped on the way in (it says nothing, since the tap's offloads stay
 * off until a NIC turns them on) and a zero one is put ahead on the way out.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include "net/netdev-create.h"
#include "net/tap.h"
#include "net/vnet-hdr.h"
#include "qemu/fd-watch.h"
#include "qemu/iov.h"
#include "prefixed-iov.h"
#include "tap-linux.h"
#include "tap-options.h"

#define TAP_DEFAULT_SCRIPT      "/etc/qemu-ifup"
#define TAP_DEFAULT_DOWNSCRIPT  "/etc/qemu-ifdown"
/* The largest frame a tap hands over: 64 KiB of GSO payload and headers,
 * behind a vnet header. */
#define TAP_BUFSIZE             (65536 + 4096)
/* Frames read per wake-up, so one busy tap does not starve its context. */
#define TAP_READ_BATCH          64

typedef struct Tap Tap;

typedef struct TapQueue {
    Tap *tap;
    NetClientState *nc;
    int fd;
    int vhostfd;                /* vhostfd=/vhostfds=, or -1 */
    FdWatch *watch;
    /* The header the tap puts ahead of frames (0: none) and the one the NIC
     * asked for (0: bare frames). Set by the NIC's thread, read by both. */
    atomic_uint host_hdr_len, nic_hdr_len;
    atomic_bool write_blocked;  /* a write met EAGAIN: poll for POLLOUT */
    /* The NIC asked for a header length the tap refused: no frame may pass
     * with a header of the wrong size, so none passes any more. */
    atomic_bool hdr_refused;
    /* Detached from the interface (the NIC left the queue out): the kernel
     * hands it no more frames, so it is not read. Set before the detach
     * and cleared after the attach. */
    atomic_bool detached;
    atomic_bool vhost_owned;    /* vhost-net has the fd: keep off it */
    /* The context's thread only: a frame the NIC refused, kept in buf;
     * an fd that can no longer be read (its interface was deleted). */
    bool read_blocked, read_broken;
    size_t pending_len;
    uint8_t *buf;
} TapQueue;

struct Tap {
    char ifname[IFNAMSIZ];
    char *downscript;           /* NULL: none (script=no, or fd= given) */
    bool vnet_hdr;
    bool multi_queue;           /* IFF_MULTI_QUEUE: queues attach and detach */
    NetTapVhost vhost;
    uint32_t poll_us;           /* poll-us=, for vhost-net */
    unsigned live_queues;        /* queues not yet cleaned up: the last frees the Tap */
    TapQueue *queues;
};

static const NetClientInfo tap_info;

/* ---- reading: tap -> NIC, on the queue's context ---- */

/* What the tap puts ahead of frames that the NIC must not see: its
 * header, for a NIC that asked for none. */
static size_t tap_strip_len(TapQueue *q)
{
    return atomic_load(&q->nic_hdr_len) ? 0 : atomic_load(&q->host_hdr_len);
}

/* Hand the frame of len bytes in q->buf to the NIC; false if it refused
 * (the frame stays in buf). */
static bool tap_deliver(TapQueue *q, size_t len)
{
    size_t strip = tap_strip_len(q);
    if (len <= strip) {
        return true;            /* a header without a frame: nothing to give */
    }
    if (net_send_buf(q->nc, q->buf + strip, len - strip) == 0) {
        q->pending_len = len;
        q->read_blocked = true;
        return false;
    }
    return true;
}

/* Frames pass between the fd and the NIC: neither vhost-net's nor stopped. */
static bool tap_queue_passes(TapQueue *q)
{
    return !atomic_load(&q->vhost_owned) && !atomic_load(&q->hdr_refused);
}

static bool tap_queue_readable(TapQueue *q)
{
    return !q->read_blocked && !q->read_broken && tap_queue_passes(q) &&
           !atomic_load(&q->detached);
}

/* NetFillFunc: the next frame, read straight into the NIC's buffers. */
static ssize_t tap_fill(void *opaque, const struct iovec *iov, int iovcnt)
{
    TapQueue *q = opaque;
    ssize_t len = readv(q->fd, iov, iovcnt);
    return len < 0 ? -errno : len;
}

/*
 * Read one frame and give it to the NIC: into the guest's buffers if the
 * NIC lends them (the header passes through as it is), else into q->buf
 * and through net_send. Returns false when reading stops for now.
 */
static bool tap_read_frame(TapQueue *q)
{
    ssize_t len = NET_FILL_DECLINED;
    if (tap_strip_len(q) == 0) {
        len = net_send_filled(q->nc, TAP_BUFSIZE, tap_fill, q);
    }
    bool copied = len == NET_FILL_DECLINED;
    if (copied) {
        len = read(q->fd, q->buf, TAP_BUFSIZE);
        len = len < 0 ? -errno : len;
    }
    if (len == -EINTR) {
        return true;
    }
    if (len < 0 && atomic_load(&q->detached)) {
        return false;           /* a read racing the detach: no reason to give up */
    }
    if (len < 0 && len != -EAGAIN && len != -EWOULDBLOCK) {
        /* It would fail the same way on every poll, at once. */
        net_warn("-netdev tap,id=%s: cannot read the tap any more: %s", q->nc->name,
                 g_strerror(-len));
        q->read_broken = true;
        return false;
    }
    if (len <= 0) {
        return false;
    }
    return !copied || tap_deliver(q, len);
}

static void tap_read_frames(TapQueue *q)
{
    for (unsigned i = 0; i < TAP_READ_BATCH && tap_queue_readable(q); i++) {
        if (!tap_read_frame(q)) {
            return;
        }
    }
}

static void tap_send_ready(NetClientState *nc)
{
    TapQueue *q = nc->opaque;
    if (q->read_blocked) {
        q->read_blocked = false;
        /* Kept from before the queue stopped, it has the old header. */
        if (atomic_load(&q->hdr_refused) || tap_deliver(q, q->pending_len)) {
            q->pending_len = 0;
        }
    }
}

static GIOCondition tap_prepare(void *opaque)
{
    TapQueue *q = opaque;
    GIOCondition cond = 0;
    if (tap_queue_readable(q)) {
        cond |= G_IO_IN;
    }
    if (atomic_load(&q->write_blocked)) {
        cond |= G_IO_OUT;
    }
    return cond;
}

static void tap_ready(void *opaque, GIOCondition revents)
{
    TapQueue *q = opaque;
    if ((revents & G_IO_OUT) && atomic_exchange(&q->write_blocked, false)) {
        net_client_receive_ready(q->nc);
    }
    if (revents & (G_IO_IN | G_IO_HUP | G_IO_ERR)) {
        tap_read_frames(q);
    }
}

static void tap_start(NetClientState *nc, GMainContext *ctx)
{
    TapQueue *q = nc->opaque;
    fd_watch_free(q->watch);
    q->watch = fd_watch_new(ctx, q->fd, G_IO_IN, tap_prepare, tap_ready, q);
}

/* ---- writing: NIC -> tap, on the NIC's thread ---- */

static ssize_t tap_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    static const uint8_t zero_hdr[VIRTIO_NET_HDR_LEN];
    TapQueue *q = nc->opaque;
    size_t size = iov_size(iov, iovcnt);
    if (!tap_queue_passes(q)) {
        return size;            /* vhost-net moves them, or the queue stopped */
    }
    unsigned prefix = atomic_load(&q->nic_hdr_len) ? 0 : atomic_load(&q->host_hdr_len);
    PrefixedIov p;
    prefixed_iov_init(&p, zero_hdr, prefix, iov, iovcnt);
    /* Without a prefix the zero-length piece ahead costs nothing. */
    ssize_t written;
    do {
        written = writev(q->fd, p.iov, p.iovcnt);
    } while (written < 0 && errno == EINTR);
    prefixed_iov_destroy(&p);
    if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        atomic_store(&q->write_blocked, true);
        g_main_context_wakeup(nc->ctx);
        return 0;
    }
    /* Written, or an error a wire would lose the frame to (the interface
     * is down, the frame is malformed). */
    return size;
}

/* ---- what the NIC asks of its peer ---- */

static bool tap_has_vnet_hdr(NetClientState *nc)
{
    TapQueue *q = nc->opaque;
    return q->tap->vnet_hdr;
}

/* Both lengths a NIC asks for were tried when the tap was opened
 * (tap-linux.c), so a refusal here is the kernel changing its mind: one
 * warning, and the queue stops rather than carry a header of the wrong
 * size in either direction. */
static void tap_set_vnet_hdr_len_op(NetClientState *nc, unsigned len)
{
    TapQueue *q = nc->opaque;
    if (len && len != atomic_load(&q->host_hdr_len)) {
        if (!tap_set_vnet_hdr_len(q->fd, len)) {
            net_warn("-netdev tap,id=%s: the tap refused a %u-byte virtio-net header "
                     "(TUNSETVNETHDRSZ: %s); the queue stops", nc->name, len,
                     g_strerror(errno));
            atomic_store(&q->hdr_refused, true);
            if (nc->ctx) {
                g_main_context_wakeup(nc->ctx);
            }
            return;
        }
        atomic_store(&q->host_hdr_len, len);
    }
    atomic_store(&q->nic_hdr_len, len);
}

static void tap_set_offload_op(NetClientState *nc, const NetOffloads *offloads)
{
    TapQueue *q = nc->opaque;
    tap_set_offload(q->fd, offloads);
}

/* The kernel spreads the host's flows over the attached queues only, and
 * only those are read. Frames the NIC sends still go out (the tap takes
 * them on any queue). A refusal leaves the queue as it was, with one
 * warning. */
static void tap_set_queue_enabled_op(NetClientState *nc, bool enabled)
{
    TapQueue *q = nc->opaque;
    if (!q->tap->multi_queue || atomic_load(&q->detached) == !enabled) {
        return;
    }
    if (!enabled) {
        atomic_store(&q->detached, true);
    }
    if (!tap_set_queue_attached(q->fd, enabled)) {
        net_warn("-netdev tap,id=%s: cannot %s the queue (TUNSETQUEUE: %s)", nc->name,
                 enabled ? "attach" : "detach", g_strerror(errno));
        atomic_store(&q->detached, enabled);    /* as it was */
        return;
    }
    atomic_store(&q->detached, !enabled);
    if (nc->ctx) {
        g_main_context_wakeup(nc->ctx);
    }
}

/* ---- scripts ---- */

/* Run script with the interface name, as QEMU's ifup/ifdown scripts expect. */
static bool tap_run_script(const char *script, const char *ifname, Error **errp)
{
    char *argv[] = { (char *)script, (char *)ifname, NULL };
    GError *gerr = NULL;
    int status;
    if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL, &status,
                      &gerr)) {
        error_setg(errp, "network script %s: %s", script, gerr->message);
        g_error_free(gerr);
        return false;
    }
    if (!g_spawn_check_wait_status(status, NULL)) {
        error_setg(errp, "network script %s failed with status %d", script, status);
        return false;
    }
    return true;
}

/* "no" (or empty) turns a script off; NULL: the default. */
static const char *tap_script_path(const char *given, const char *dflt)
{
    if (!given) {
        return dflt;
    }
    return given[0] && strcmp(given, "no") != 0 ? given : NULL;
}

/* ---- teardown ---- */

/* The taps whose downscript runs at exit (main thread only): -sandbox on
 * refuses to confine a VMM that would spawn one (sysemu/sandbox.h). */
static GList *taps_with_downscript;

const char *net_tap_pending_downscript(void)
{
    return taps_with_downscript ? ((Tap *)taps_with_downscript->data)->downscript : NULL;
}

static void tap_cleanup(NetClientState *nc)
{
    TapQueue *q = nc->opaque;
    Tap *tap = q->tap;
    fd_watch_free(q->watch);
    if (q == &tap->queues[0] && tap->downscript) {
        /* The interface still exists while this queue's fd is open. */
        Error *err = NULL;
        if (!tap_run_script(tap->downscript, tap->ifname, &err)) {
            net_warn("%s", err->msg);
            error_free(err);
        }
    }
    close(q->fd);
    if (q->vhostfd >= 0) {
        close(q->vhostfd);
    }
    g_free(q->buf);
    if (--tap->live_queues == 0) {
        taps_with_downscript = g_list_remove(taps_with_downscript, tap);
        g_free(tap->downscript);
        g_free(tap->queues);
        g_free(tap);
    }
}

static const NetClientInfo tap_info = {
    .type = "tap",
    .receive = tap_receive,
    .send_ready = tap_send_ready,
    .start = tap_start,
    .has_vnet_hdr = tap_has_vnet_hdr,
    .set_vnet_hdr_len = tap_set_vnet_hdr_len_op,
    .set_offload = tap_set_offload_op,
    .set_queue_enabled = tap_set_queue_enabled_op,
    .cleanup = tap_cleanup,
};

/* ---- include/net/tap.h ---- */

bool net_is_tap(const NetClientState *nc)
{
    return nc && nc->info == &tap_info;
}

int net_tap_fd(const NetClientState *nc)
{
    return ((TapQueue *)nc->opaque)->fd;
}

NetTapVhost net_tap_vhost(const NetClientState *nc)
{
    return ((TapQueue *)nc->opaque)->tap->vhost;
}

int net_tap_vhostfd(const NetClientState *nc)
{
    return ((TapQueue *)nc->opaque)->vhostfd;
}

uint32_t net_tap_poll_us(const NetClientState *nc)
{
    return ((TapQueue *)nc->opaque)->tap->poll_us;
}

void net_tap_set_vhost_owned(NetClientState *nc, bool owned)
{
    TapQueue *q = nc->opaque;
    atomic_store(&q->vhost_owned, owned);
    if (nc->ctx) {
        g_main_context_wakeup(nc->ctx);
    }
}

/* Close the fds the backend opened itself (never the user's). */
static void tap_close_opened(const TapOptions *o, const int *fds, unsigned count)
{
    for (unsigned i = 0; i < count && !o->fds_given; i++) {
        close(fds[i]);
    }
}

/* Open (or adopt) every queue's fd into fds; the tap's name and header
 * into tap. On failure nothing stays open. */
static bool tap_open_queues(const TapOptions *o, Tap *tap, int *fds, Error **errp)
{
    g_strlcpy(tap->ifname, o->ifname ? o->ifname : "", IFNAMSIZ);
    for (unsigned i = 0; i < o->queues; i++) {
        bool vnet_hdr;
        if (o->fds_given) {
            fds[i] = o->fds[i];
            if (!tap_adopt_fd(fds[i], tap->ifname, &vnet_hdr, errp)) {
                return false;
            }
        } else {
            /* Queues after the first follow it if it went without a header. */
            TapVnetHdrRequest request = i && !tap->vnet_hdr ? TAP_VNET_HDR_OFF : o->vnet_hdr;
            fds[i] = tap_open(tap->ifname, request, o->queues > 1, &vnet_hdr, errp);
            if (fds[i] < 0) {
                tap_close_opened(o, fds, i);
                return false;
            }
        }
        if (i > 0 && vnet_hdr != tap->vnet_hdr) {
            error_setg(errp, "the tap's queues disagree on IFF_VNET_HDR");
            tap_close_opened(o, fds, i + 1);
            return false;
        }
        tap->vnet_hdr = vnet_hdr;
    }
    return true;
}

static void tap_attach_queues(Tap *tap, NetDev *nd, const int *fds, const TapOptions *o)
{
    tap->live_queues = nd->num_queues;
    tap->queues = g_new0(TapQueue, nd->num_queues);
    for (unsigned i = 0; i < nd->num_queues; i++) {
        TapQueue *q = &tap->queues[i];
        q->tap = tap;
        q->nc = nd->queues[i];
        q->fd = fds[i];
        q->vhostfd = o->vhostfds_given ? o->vhostfds[i] : -1;
        atomic_init(&q->host_hdr_len, tap->vnet_hdr ? VIRTIO_NET_HDR_LEN_SHORT : 0);
        q->buf = g_malloc(TAP_BUFSIZE);
        nd->queues[i]->opaque = q;
    }
}

/* `info network`'s text for each queue, as QEMU 7.2 sets it: the fd when
 * given one, else the interface and scripts; QEMU runs the scripts for the
 * first queue only and says "no" for the others. */
static void tap_describe_queues(Tap *tap, NetDev *nd, const int *fds, const TapOptions *o)
{
    const char *script = tap_script_path(o->script, TAP_DEFAULT_SCRIPT);
    for (unsigned i = 0; i < nd->num_queues; i++) {
        if (o->fds_given) {
            net_client_set_info(nd->queues[i], "fd=%d", fds[i]);
        } else {
            net_client_set_info(nd->queues[i], "ifname=%s,script=%s,downscript=%s",
                                tap->ifname, i == 0 && script ? script : "no",
                                i == 0 && tap->downscript ? tap->downscript : "no");
        }
    }
}

bool net_tap_init(const NetdevConfig *cfg, Error **errp)
{
    g_autofree TapOptions *o = g_new(TapOptions, 1);
    if (!tap_parse_options(cfg, o, errp) || !tap_probe_vhost(o, errp)) {
        return false;
    }
    Tap *tap = g_new0(Tap, 1);
    tap->vhost = o->vhost;
    tap->poll_us = o->poll_us;
    tap->multi_queue = o->queues > 1;
    g_autofree int *fds = g_new(int, o->queues);
    if (!tap_open_queues(o, tap, fds, errp)) {
        g_free(tap);
        return false;
    }
    bool ok = true;
    if (!o->fds_given) {
        const char *script = tap_script_path(o->script, TAP_DEFAULT_SCRIPT);
        ok = !script || tap_run_script(script, tap->ifname, errp);
        tap->downscript = g_strdup(tap_script_path(o->downscript, TAP_DEFAULT_DOWNSCRIPT));
    }
    NetDev *nd = ok ? netdev_new("tap", cfg->id, o->queues, &tap_info, errp) : NULL;
    if (!nd) {
        tap_close_opened(o, fds, o->queues);
        g_free(tap->downscript);
        g_free(tap);
        return false;
    }
    tap_attach_queues(tap, nd, fds, o);
    if (tap->downscript) {
        taps_with_downscript = g_list_append(taps_with_downscript, tap);
    }
    tap_describe_queues(tap, nd, fds, o);
    return true;
}
