/*
 * -netdev user: a guest network in user space through libslirp (NAT to the
 * host's sockets, a DHCP server, a DNS forwarder, hostfwd= listeners), so a
 * guest gets an address with no root on the host. docs/network.md, "User
 * networking".
 *
 * Threads. libslirp is not thread-safe, so every slirp_* call after
 * net_user_init happens on one thread: the thread of the context the NIC
 * gives in start() (the main loop's or an I/O thread's). Three things run
 * there:
 *  - UserNetSource, a GSource of our own: its prepare asks slirp which
 *    sockets to poll (slirp_pollfds_fill) and when it next needs to run
 *    (TCP timers, the IPv6 router advertisement timer); its dispatch hands
 *    the poll results back (slirp_pollfds_poll) and fires slirp's timers.
 *    One source rather than an FdWatch per socket, because slirp's set of
 *    sockets and what it wants from each change on every call (a socket
 *    with a full window stops reading), and slirp numbers them per round:
 *    rebuilding the set in prepare is what slirp's API is shaped for.
 *  - input_bh: frames the NIC sent, queued by receive() on the NIC's
 *    thread under its device lock, go into slirp_input here.
 *  - send_ready: the NIC takes frames again; the queue towards it drains.
 * slirp_new() and the hostfwd listeners are made in net_user_init on the
 * main thread before any of that runs. start() attaches the source and the
 * bottom half; like every source of a running I/O thread (iothread.h) it
 * runs on that thread (net_nic_new inside iothread_run_sync) or before the
 * context runs, which orders net_user_init's writes before the context's
 * thread touches slirp.
 *
 * Teardown (cleanup) runs once the context no longer runs: after the main
 * loop returned and the I/O threads were stopped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <slirp/libslirp.h>
#include "net/net.h"
#include "net/netdev-config.h"
#include "net/slirp-options.h"
#include "qemu/bh.h"
#include "qemu/iov.h"
#include "qemu/log.h"
#include "qemu/timer.h"

/* Guest frames waiting for slirp: a NIC that sends faster than the context
 * runs is refused (receive returns 0) and told when to resume. */
#define USER_NET_INPUT_MAX 256
/*
 * Frames from slirp waiting for the guest's RX ring. slirp's send_packet
 * cannot refuse, so while the NIC refuses, slirp's sockets are not polled
 * (the host's data stays in the kernel's socket buffers, flow control all
 * the way to the host peer); what slirp still produces meanwhile (ACKs to
 * guest frames, timer retransmits) is queued up to this bound and dropped
 * beyond it, counted, as an overloaded link drops: TCP retransmits.
 */
#define USER_NET_OUTPUT_MAX 1024
/* slirp_input takes an int length; no NIC sends more than this in one
 * frame (e1000 and virtio-net segment in the device for this backend). */
#define USER_NET_FRAME_MAX 65536

typedef struct UserNet UserNet;

/* slirp's timer (timer_new_opaque): only the IPv6 router advertisements in
 * libslirp 4.7. Kept in the source's deadline, see UserNetSource. */
typedef struct UserNetTimer {
    SlirpTimerId id;
    void *cb_opaque;
    int64_t expire_ns;
    bool armed;
} UserNetTimer;

typedef struct UserNetSource {
    GSource source;
    UserNet *un;
    /* This round's g_source_add_unix_fd tags, at slirp's indices. */
    GPtrArray *polled;
    int64_t deadline_ns;        /* slirp wants to run by then; INT64_MAX: no */
} UserNetSource;

struct UserNet {
    NetClientState *nc;         /* the netdev's queue, peer of the NIC */
    Slirp *slirp;
    GMainContext *ctx;          /* the NIC's, from start() */
    UserNetSource *source;
    QEMUBH *input_bh;
    GPtrArray *timers;          /* UserNetTimer * */

    /* NIC -> slirp. pthread rather than GMutex: ThreadSanitizer sees it. */
    pthread_mutex_t input_lock;
    GQueue input;               /* GBytes *, under input_lock */
    bool input_refused;         /* under input_lock: the NIC waits for ready */

    /* slirp -> NIC, on ctx. Non-empty: the NIC refused, slirp is paused. */
    GQueue output;              /* GBytes * */
    uint64_t output_dropped;
};

/* ---- slirp -> NIC ---- */

static void user_net_output_drop(UserNet *un)
{
    un->output_dropped++;
    /* Powers of two: the log shows an overload without flooding. */
    if (!(un->output_dropped & (un->output_dropped - 1))) {
        qemu_log_mask(LOG_GUEST_ERROR, "netdev %s: guest not taking frames, %" PRIu64
                      " dropped so far\n", un->nc->name, un->output_dropped);
    }
}

static ssize_t user_net_send_packet(const void *buf, size_t len, void *opaque)
{
    UserNet *un = opaque;
    /* Frames already waiting go first: order is what TCP relies on. */
    if (g_queue_is_empty(&un->output) && net_send_buf(un->nc, buf, len) > 0) {
        return len;
    }
    if (g_queue_get_length(&un->output) >= USER_NET_OUTPUT_MAX) {
        user_net_output_drop(un);
    } else {
        g_queue_push_tail(&un->output, g_bytes_new(buf, len));
    }
    return len;
}

/* The NIC takes frames again (on ctx): drain, then slirp polls again. */
static void user_net_send_ready(NetClientState *nc)
{
    UserNet *un = nc->opaque;
    GBytes *frame;
    while ((frame = g_queue_peek_head(&un->output))) {
        gsize len;
        const void *data = g_bytes_get_data(frame, &len);
        if (net_send_buf(un->nc, data, len) == 0) {
            return;
        }
        g_bytes_unref(g_queue_pop_head(&un->output));
    }
}

/* ---- NIC -> slirp ---- */

/* The NIC's thread, its device lock held: queue, never call slirp. */
static ssize_t user_net_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    UserNet *un = nc->opaque;
    size_t len = iov_size(iov, iovcnt);
    if (len > USER_NET_FRAME_MAX) {
        qemu_log_mask(LOG_GUEST_ERROR, "netdev %s: %zu-byte frame dropped\n", nc->name, len);
        return len;
    }
    pthread_mutex_lock(&un->input_lock);
    bool full = g_queue_get_length(&un->input) >= USER_NET_INPUT_MAX;
    if (full) {
        un->input_refused = true;
    } else {
        void *frame = g_malloc(len);
        iov_to_buf(iov, iovcnt, 0, frame, len);
        g_queue_push_tail(&un->input, g_bytes_new_take(frame, len));
    }
    pthread_mutex_unlock(&un->input_lock);
    if (full) {
        return 0;
    }
    qemu_bh_schedule(un->input_bh);
    return len;
}

static void user_net_input(void *opaque)
{
    UserNet *un = opaque;
    for (;;) {
        pthread_mutex_lock(&un->input_lock);
        GBytes *frame = g_queue_pop_head(&un->input);
        bool refused = !frame && un->input_refused;
        if (refused) {
            un->input_refused = false;
        }
        pthread_mutex_unlock(&un->input_lock);
        if (!frame) {
            if (refused) {
                net_client_receive_ready(un->nc);
            }
            return;
        }
        gsize len;
        const uint8_t *data = g_bytes_get_data(frame, &len);
        slirp_input(un->slirp, data, len);
        g_bytes_unref(frame);
    }
}

/* ---- slirp's timers ---- */

static void *user_net_timer_new(SlirpTimerId id, void *cb_opaque, void *opaque)
{
    UserNet *un = opaque;
    UserNetTimer *t = g_new0(UserNetTimer, 1);
    t->id = id;
    t->cb_opaque = cb_opaque;
    g_ptr_array_add(un->timers, t);
    return t;
}

static void user_net_timer_free(void *timer, void *opaque)
{
    UserNet *un = opaque;
    g_ptr_array_remove_fast(un->timers, timer);
    g_free(timer);
}

/* On ctx (from slirp), or during slirp_new: the next prepare sees it. */
static void user_net_timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
    UserNetTimer *t = timer;
    t->expire_ns = expire_ms * (NANOSECONDS_PER_SECOND / 1000);
    t->armed = true;
}

static void user_net_timers_run_due(UserNet *un, int64_t now)
{
    /* By index: a handler re-arms its timer but creates or frees none. */
    for (guint i = 0; i < un->timers->len; i++) {
        UserNetTimer *t = g_ptr_array_index(un->timers, i);
        if (t->armed && t->expire_ns <= now) {
            t->armed = false;
            slirp_handle_timer(un->slirp, t->id, t->cb_opaque);
        }
    }
}

/* ---- the other callbacks ---- */

static int64_t user_net_clock_get_ns(void *opaque)
{
    return clock_get_ns();
}

static void user_net_guest_error(const char *msg, void *opaque)
{
    UserNet *un = opaque;
    qemu_log_mask(LOG_GUEST_ERROR, "netdev %s: %s\n", un->nc ? un->nc->name : "user", msg);
}

/* slirp announces each socket it opens and closes; we need not know, since
 * slirp_pollfds_fill names every socket to poll before each poll. */
static void user_net_poll_fd_changed(int fd, void *opaque)
{
}

/* Sent when slirp can take more data for a guestfwd= (not offered): wake
 * the context so that the next prepare sees what changed. */
static void user_net_notify(void *opaque)
{
    UserNet *un = opaque;
    if (un->ctx) {
        g_main_context_wakeup(un->ctx);
    }
}

static const SlirpCb user_net_callbacks = {
    .send_packet = user_net_send_packet,
    .guest_error = user_net_guest_error,
    .clock_get_ns = user_net_clock_get_ns,
    .timer_free = user_net_timer_free,
    .timer_mod = user_net_timer_mod,
    .register_poll_fd = user_net_poll_fd_changed,
    .unregister_poll_fd = user_net_poll_fd_changed,
    .notify = user_net_notify,
    .timer_new_opaque = user_net_timer_new,
};

/* ---- UserNetSource: slirp's sockets and deadlines in the context ---- */

static GIOCondition poll_to_gio(int events)
{
    return (events & SLIRP_POLL_IN ? G_IO_IN : 0) | (events & SLIRP_POLL_OUT ? G_IO_OUT : 0) |
           (events & SLIRP_POLL_PRI ? G_IO_PRI : 0) | (events & SLIRP_POLL_ERR ? G_IO_ERR : 0) |
           (events & SLIRP_POLL_HUP ? G_IO_HUP : 0);
}

static int gio_to_poll(GIOCondition cond)
{
    return (cond & G_IO_IN ? SLIRP_POLL_IN : 0) | (cond & G_IO_OUT ? SLIRP_POLL_OUT : 0) |
           (cond & G_IO_PRI ? SLIRP_POLL_PRI : 0) | (cond & G_IO_ERR ? SLIRP_POLL_ERR : 0) |
           (cond & G_IO_HUP ? SLIRP_POLL_HUP : 0);
}

static int user_net_add_poll(int fd, int events, void *opaque)
{
    UserNetSource *s = opaque;
    g_ptr_array_add(s->polled, g_source_add_unix_fd(&s->source, fd, poll_to_gio(events)));
    return s->polled->len - 1;
}

static int user_net_get_revents(int idx, void *opaque)
{
    UserNetSource *s = opaque;
    if (idx < 0 || (guint)idx >= s->polled->len) {
        return 0;
    }
    return gio_to_poll(g_source_query_unix_fd(&s->source, g_ptr_array_index(s->polled, idx)));
}

static void user_net_source_unpoll(UserNetSource *s)
{
    for (guint i = 0; i < s->polled->len; i++) {
        g_source_remove_unix_fd(&s->source, g_ptr_array_index(s->polled, i));
    }
    g_ptr_array_set_size(s->polled, 0);
}

static gboolean user_net_source_prepare(GSource *source, gint *timeout)
{
    UserNetSource *s = (UserNetSource *)source;
    UserNet *un = s->un;
    /* Only the sockets slirp names this round are polled: one it does not
     * want now (a closed peer it has not read to the end) would still
     * report POLLHUP and make every poll return at once. */
    user_net_source_unpoll(s);
    s->deadline_ns = INT64_MAX;
    *timeout = -1;
    if (!g_queue_is_empty(&un->output)) {
        return FALSE;       /* paused until the NIC's send_ready */
    }
    uint32_t slirp_ms = UINT32_MAX;
    slirp_pollfds_fill(un->slirp, &slirp_ms, user_net_add_poll, s);
    int64_t now = clock_get_ns();
    if (slirp_ms != UINT32_MAX) {
        s->deadline_ns = now + slirp_ms * (NANOSECONDS_PER_SECOND / 1000);
    }
    for (guint i = 0; i < un->timers->len; i++) {
        UserNetTimer *t = g_ptr_array_index(un->timers, i);
        if (t->armed) {
            s->deadline_ns = MIN(s->deadline_ns, t->expire_ns);
        }
    }
    if (s->deadline_ns != INT64_MAX) {
        /* Rounded up: waking a little early would only poll again. */
        int64_t ms = (MAX(s->deadline_ns - now, 0) + 999999) / 1000000;
        *timeout = MIN(ms, G_MAXINT);
    }
    return FALSE;
}

static gboolean user_net_source_check(GSource *source)
{
    UserNetSource *s = (UserNetSource *)source;
    for (guint i = 0; i < s->polled->len; i++) {
        if (g_source_query_unix_fd(source, g_ptr_array_index(s->polled, i))) {
            return TRUE;
        }
    }
    return clock_get_ns() >= s->deadline_ns;
}

static gboolean user_net_source_dispatch(GSource *source, GSourceFunc cb, gpointer data)
{
    UserNetSource *s = (UserNetSource *)source;
    /* Also when only time passed: slirp runs its TCP timers in here. */
    slirp_pollfds_poll(s->un->slirp, 0, user_net_get_revents, s);
    user_net_timers_run_due(s->un, clock_get_ns());
    return G_SOURCE_CONTINUE;
}

static void user_net_source_finalize(GSource *source)
{
    g_ptr_array_free(((UserNetSource *)source)->polled, TRUE);
}

static GSourceFuncs user_net_source_funcs = {
    .prepare = user_net_source_prepare,
    .check = user_net_source_check,
    .dispatch = user_net_source_dispatch,
    .finalize = user_net_source_finalize,
};

/* ---- the netdev ---- */

/* A NIC attached: from now on slirp lives on ctx's thread. */
static void user_net_start(NetClientState *nc, GMainContext *ctx)
{
    UserNet *un = nc->opaque;
    g_assert(!un->ctx);
    un->ctx = ctx;
    un->input_bh = qemu_bh_new(ctx, user_net_input, un);
    un->source = (UserNetSource *)g_source_new(&user_net_source_funcs, sizeof(UserNetSource));
    un->source->un = un;
    un->source->polled = g_ptr_array_new();
    un->source->deadline_ns = INT64_MAX;
    g_source_attach(&un->source->source, ctx);
}

static void user_net_free(UserNet *un)
{
    if (un->source) {
        g_source_destroy(&un->source->source);
        g_source_unref(&un->source->source);
    }
    if (un->input_bh) {
        qemu_bh_delete(un->input_bh);
    }
    if (un->slirp) {
        slirp_cleanup(un->slirp);   /* frees its timers through timer_free */
    }
    g_ptr_array_free(un->timers, TRUE);
    g_queue_clear_full(&un->input, (GDestroyNotify)g_bytes_unref);
    g_queue_clear_full(&un->output, (GDestroyNotify)g_bytes_unref);
    pthread_mutex_destroy(&un->input_lock);
    g_free(un);
}

static void user_net_cleanup(NetClientState *nc)
{
    user_net_free(nc->opaque);
}

static const NetClientInfo user_net_info = {
    .type = "user",
    .receive = user_net_receive,
    .send_ready = user_net_send_ready,
    .start = user_net_start,
    .cleanup = user_net_cleanup,
};

static bool user_net_add_hostfwds(UserNet *un, GArray *hostfwds, Error **errp)
{
    for (guint i = 0; i < hostfwds->len; i++) {
        const UserNetHostFwd *fwd = &g_array_index(hostfwds, UserNetHostFwd, i);
        errno = 0;
        if (slirp_add_hostxfwd(un->slirp, (const struct sockaddr *)&fwd->host,
                               sizeof(fwd->host), (const struct sockaddr *)&fwd->guest,
                               sizeof(fwd->guest), fwd->udp ? SLIRP_HOSTFWD_UDP : 0) < 0) {
            if (errno) {
                error_setg_errno(errp, errno, "Could not set up host forwarding rule '%s'",
                                 fwd->rule);
            } else {
                error_setg(errp, "Could not set up host forwarding rule '%s'", fwd->rule);
            }
            return false;
        }
    }
    return true;
}

bool net_user_init(const NetdevConfig *cfg, Error **errp)
{
    UserNetOptions opts;
    if (!user_net_options_parse(cfg->items, &opts, errp)) {
        user_net_options_free(&opts);
        return false;
    }
    UserNet *un = g_new0(UserNet, 1);
    pthread_mutex_init(&un->input_lock, NULL);
    g_queue_init(&un->input);
    g_queue_init(&un->output);
    un->timers = g_ptr_array_new();
    un->slirp = slirp_new(&opts.cfg, &user_net_callbacks, un);
    /* The listeners are bound now, so a port in use is the user's error at
     * start-up; the netdev is registered last, as nothing can undo it. */
    bool ok = un->slirp && user_net_add_hostfwds(un, opts.hostfwds, errp);
    /* `info network`'s text, as QEMU's: the IPv4 network and restrict=. */
    char net[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &opts.cfg.vnetwork, net, sizeof(net));
    g_autofree char *info = g_strdup_printf("net=%s,restrict=%s", net,
                                            opts.cfg.restricted ? "on" : "off");
    user_net_options_free(&opts);
    if (!un->slirp) {
        error_setg(errp, "libslirp refused the configuration");
    }
    NetDev *nd = ok ? netdev_new("user", cfg->id, 1, &user_net_info, errp) : NULL;
    if (!nd) {
        user_net_free(un);
        return false;
    }
    un->nc = nd->queues[0];
    un->nc->opaque = un;
    net_client_set_info(un->nc, "%s", info);
    return true;
}
