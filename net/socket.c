/*
 * -netdev socket: frames over a TCP stream to another VMM (ours or QEMU),
 * each preceded by its length as a 32-bit big-endian integer, as QEMU's
 * socket netdev frames them (docs/network.md "socket").
 *
 *   -netdev socket,id=ID,listen=[HOST]:PORT   wait for one peer
 *   -netdev socket,id=ID,connect=HOST:PORT     connect at start-up
 *   -netdev socket,id=ID,fd=FD                 a connected stream socket
 *
 * Threads: the stream is read on the context of the NIC attached to the
 * netdev (frames go on with net_send; a refused frame is kept and the
 * socket leaves the poll set until send_ready). The NIC's receive writes
 * from the NIC's thread: straight to the non-blocking socket while nothing
 * waits, else into the backend's send buffer, which the context drains
 * when the socket is writable. The buffer and the connection's fd are
 * under the backend's own mutex, a leaf lock held for one non-blocking
 * send or a copy. A full buffer refuses the frame (0) and
 * net_client_receive_ready follows once it has drained.
 *
 * A peer that goes away closes the connection; a listener then waits for
 * the next one (a connection that arrives while one is served waits in
 * the backlog, as under QEMU). Frames the NIC sends meanwhile are lost, as
 * on an unplugged wire.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "net/net.h"
#include "net/netdev-create.h"
#include "qemu/byte-order.h"
#include "qemu/fd-watch.h"
#include "qemu/iov.h"
#include "prefixed-iov.h"

/* The largest frame either side sends (QEMU's limit is the same order:
 * 64 KiB of frame and some slack). */
#define SOCKET_MAX_FRAME        (65536 + 4096)
#define SOCKET_LEN_SIZE         4
/* Room for a few of the largest frames waiting on a slow peer. */
#define SOCKET_SEND_BUFSIZE     (4 * (SOCKET_MAX_FRAME + SOCKET_LEN_SIZE))

typedef struct SocketBackend {
    NetClientState *nc;
    GMainContext *ctx;          /* NULL until a NIC attaches */
    int listen_fd;              /* -1 unless listen= */
    FdWatch *listen_watch, *conn_watch;

    /* The connection (-1: none) and what waits to be sent on it. Written
     * on the context's thread, read by the NIC's, both under lock. */
    pthread_mutex_t lock;       /* not GMutex: ThreadSanitizer sees pthreads */
    int fd;
    uint8_t *send_buf;
    size_t send_head, send_len;
    bool send_refused;          /* the NIC was told 0: wake it once drained */

    /* Receiving, on the context's thread only: the length prefix, then the
     * frame; a complete frame the NIC refused stays until send_ready. */
    uint8_t len_buf[SOCKET_LEN_SIZE];
    size_t len_got;
    uint32_t frame_len;
    size_t frame_got;
    bool frame_refused;
    uint8_t *frame;
} SocketBackend;

static const NetClientInfo socket_info;

static void socket_watch_connection(SocketBackend *s);

/* ---- the connection ---- */

static void socket_reset_receive(SocketBackend *s)
{
    s->len_got = s->frame_got = 0;
    s->frame_len = 0;
    s->frame_refused = false;
}

static bool socket_set_nonblocking(int fd, Error **errp)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        error_setg_errno(errp, errno, "cannot make socket %d non-blocking", fd);
        return false;
    }
    return true;
}

/* The peer went away (or broke the framing): drop the connection and what
 * waits for it; a listener takes the next peer. Context's thread. */
static void socket_disconnect(SocketBackend *s)
{
    fd_watch_free(s->conn_watch);
    s->conn_watch = NULL;
    pthread_mutex_lock(&s->lock);
    int fd = s->fd;
    bool wake_nic = s->send_refused;
    s->fd = -1;
    s->send_head = s->send_len = 0;
    s->send_refused = false;
    pthread_mutex_unlock(&s->lock);
    close(fd);
    socket_reset_receive(s);
    if (wake_nic) {
        net_client_receive_ready(s->nc);
    }
    if (s->listen_fd >= 0) {
        fd_watch_free(s->listen_watch);
        s->listen_watch = NULL;
        socket_watch_connection(s);
    }
}

/* ---- receiving: socket -> NIC, on the context ---- */

/* Read toward want bytes at buf + *got; false when the peer is gone. */
static bool socket_read_some(SocketBackend *s, uint8_t *buf, size_t want, size_t *got)
{
    ssize_t n = recv(s->fd, buf + *got, want - *got, 0);
    if (n > 0) {
        *got += n;
        return true;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

/* Offer the complete frame; false if the NIC refused it (kept). */
static bool socket_deliver(SocketBackend *s)
{
    /* An empty frame carries nothing (and a NIC's 0 would read as "not now"). */
    if (s->frame_len && net_send_buf(s->nc, s->frame, s->frame_len) == 0) {
        s->frame_refused = true;
        return false;
    }
    s->len_got = s->frame_got = 0;
    return true;
}

/* Read what the socket has, frame by frame, until it would block, the NIC
 * refuses a frame, or the peer goes. */
static void socket_receive_frames(SocketBackend *s)
{
    while (!s->frame_refused) {
        size_t len_before = s->len_got, frame_before = s->frame_got;
        if (s->len_got < SOCKET_LEN_SIZE) {
            if (!socket_read_some(s, s->len_buf, SOCKET_LEN_SIZE, &s->len_got)) {
                socket_disconnect(s);
                return;
            }
            if (s->len_got < SOCKET_LEN_SIZE) {
                return;
            }
            s->frame_len = get_be32(s->len_buf);
            if (s->frame_len > SOCKET_MAX_FRAME) {
                net_warn("-netdev socket,id=%s: the peer sent a frame of %u bytes; "
                         "closing the connection", s->nc->name, s->frame_len);
                socket_disconnect(s);
                return;
            }
        }
        if (s->frame_got < s->frame_len &&
            !socket_read_some(s, s->frame, s->frame_len, &s->frame_got)) {
            socket_disconnect(s);
            return;
        }
        if (s->frame_got == s->frame_len) {
            socket_deliver(s);
        } else if (s->len_got == len_before && s->frame_got == frame_before) {
            return;             /* nothing more to read now */
        }
    }
}

static void socket_send_ready(NetClientState *nc)
{
    SocketBackend *s = nc->opaque;
    if (s->frame_refused && s->fd >= 0) {
        s->frame_refused = false;
        socket_deliver(s);
    }
}

/* ---- sending: NIC -> socket ---- */

/* Send what the buffer holds, with lock held; false if the connection
 * is broken. */
static bool socket_flush_locked(SocketBackend *s)
{
    while (s->send_len) {
        ssize_t n = send(s->fd, s->send_buf + s->send_head, s->send_len,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        }
        s->send_head += n;
        s->send_len -= n;
    }
    s->send_head = 0;
    return true;
}

static void socket_buffer_locked(SocketBackend *s, const struct iovec *iov, int iovcnt,
                                 size_t skip)
{
    size_t total = iov_size(iov, iovcnt);
    if (s->send_head + s->send_len + total - skip > SOCKET_SEND_BUFSIZE) {
        memmove(s->send_buf, s->send_buf + s->send_head, s->send_len);
        s->send_head = 0;
    }
    iov_to_buf(iov, iovcnt, skip, s->send_buf + s->send_head + s->send_len, total - skip);
    s->send_len += total - skip;
}

static ssize_t socket_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    SocketBackend *s = nc->opaque;
    size_t size = iov_size(iov, iovcnt);
    uint32_t be_len = htonl(size);
    if (size > SOCKET_MAX_FRAME) {
        return size;            /* no peer would take it: lost, as on a wire */
    }
    PrefixedIov p;
    prefixed_iov_init(&p, &be_len, SOCKET_LEN_SIZE, iov, iovcnt);
    ssize_t taken = size;
    pthread_mutex_lock(&s->lock);
    if (s->fd < 0) {
        /* No peer: the frame is lost, as on an unplugged wire. */
    } else if (s->send_len) {
        /* Frames already wait: keep the order, or refuse until drained. */
        if (s->send_len + SOCKET_LEN_SIZE + size > SOCKET_SEND_BUFSIZE) {
            s->send_refused = true;
            taken = 0;
        } else {
            socket_buffer_locked(s, p.iov, p.iovcnt, 0);
        }
    } else {
        struct msghdr msg = { .msg_iov = p.iov, .msg_iovlen = p.iovcnt };
        ssize_t n = sendmsg(s->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        size_t sent = n < 0 ? 0 : n;
        if (sent < SOCKET_LEN_SIZE + size && (n >= 0 || errno == EAGAIN ||
                                               errno == EWOULDBLOCK)) {
            /* The rest of the frame goes when the socket drains. */
            socket_buffer_locked(s, p.iov, p.iovcnt, sent);
        }
    }
    bool wake = s->send_len > 0;
    pthread_mutex_unlock(&s->lock);
    prefixed_iov_destroy(&p);
    if (wake) {
        g_main_context_wakeup(s->ctx);
    }
    return taken;
}

/* ---- the context's watches ---- */

static GIOCondition socket_conn_prepare(void *opaque)
{
    SocketBackend *s = opaque;
    GIOCondition cond = s->frame_refused ? 0 : G_IO_IN;
    pthread_mutex_lock(&s->lock);
    if (s->send_len) {
        cond |= G_IO_OUT;
    }
    pthread_mutex_unlock(&s->lock);
    return cond;
}

static void socket_conn_ready(void *opaque, GIOCondition revents)
{
    SocketBackend *s = opaque;
    bool broken = false;
    if (revents & G_IO_OUT) {
        pthread_mutex_lock(&s->lock);
        broken = !socket_flush_locked(s);
        bool wake_nic = s->send_len == 0 && s->send_refused;
        if (wake_nic) {
            s->send_refused = false;
        }
        pthread_mutex_unlock(&s->lock);
        if (wake_nic) {
            net_client_receive_ready(s->nc);
        }
    }
    /* A dead connection the reader cannot see (it waits for send_ready)
     * would make every poll return at once: end it now. */
    if (broken || ((revents & (G_IO_HUP | G_IO_ERR)) && s->frame_refused)) {
        socket_disconnect(s);
    } else if (revents & (G_IO_IN | G_IO_HUP | G_IO_ERR)) {
        socket_receive_frames(s);
    }
}

/* `info network`'s text for a connection: QEMU's "socket: WHAT HOST:PORT"
 * (QEMU's socket netdev speaks IPv4; an IPv6 peer shows its address too). */
static void socket_describe(SocketBackend *s, const char *what, const struct sockaddr *sa)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    net_client_set_info(s->nc, "socket: %s %s:%u", what, host, port);
}

static void socket_accept(void *opaque, GIOCondition revents)
{
    SocketBackend *s = opaque;
    struct sockaddr_storage peer = { 0 };
    socklen_t peer_len = sizeof(peer);
    int fd = accept4(s->listen_fd, (struct sockaddr *)&peer, &peer_len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        return;                 /* the peer gave up already; keep listening */
    }
    socket_describe(s, "connection from", (struct sockaddr *)&peer);
    fd_watch_free(s->listen_watch);
    s->listen_watch = NULL;
    pthread_mutex_lock(&s->lock);
    s->fd = fd;
    pthread_mutex_unlock(&s->lock);
    socket_watch_connection(s);
}

/* Watch the connection if there is one, else (a listener) the next peer. */
static void socket_watch_connection(SocketBackend *s)
{
    if (s->fd >= 0) {
        s->conn_watch = fd_watch_new(s->ctx, s->fd, G_IO_IN, socket_conn_prepare,
                                     socket_conn_ready, s);
    } else if (s->listen_fd >= 0) {
        s->listen_watch = fd_watch_new(s->ctx, s->listen_fd, G_IO_IN, NULL, socket_accept, s);
    }
}

static void socket_start(NetClientState *nc, GMainContext *ctx)
{
    SocketBackend *s = nc->opaque;
    fd_watch_free(s->conn_watch);
    fd_watch_free(s->listen_watch);
    s->conn_watch = s->listen_watch = NULL;
    s->ctx = ctx;
    socket_watch_connection(s);
}

static void socket_cleanup(NetClientState *nc)
{
    SocketBackend *s = nc->opaque;
    fd_watch_free(s->conn_watch);
    fd_watch_free(s->listen_watch);
    if (s->fd >= 0) {
        close(s->fd);
    }
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
    }
    pthread_mutex_destroy(&s->lock);
    g_free(s->send_buf);
    g_free(s->frame);
    g_free(s);
}

static const NetClientInfo socket_info = {
    .type = "socket",
    .receive = socket_receive,
    .send_ready = socket_send_ready,
    .start = socket_start,
    .cleanup = socket_cleanup,
};

/* ---- -netdev socket ---- */

static const char *const socket_keys[] = { "listen", "connect", "fd", NULL };
/* QEMU's datagram modes, which this backend does not have. */
static const char *const socket_dgram_keys[] = { "udp", "mcast", "localaddr", NULL };

/* HOST:PORT (an empty HOST: every address, for listen=) into an IPv4 or
 * IPv6 address. */
static struct addrinfo *socket_resolve(const char *key, const char *text, bool passive,
                                       Error **errp)
{
    const char *colon = strrchr(text, ':');
    if (!colon || !colon[1]) {
        error_setg(errp, "Parameter '%s' expects HOST:PORT", key);
        return NULL;
    }
    g_autofree char *host = g_strndup(text, colon - text);
    size_t host_len = strlen(host);
    if (host_len >= 2 && host[0] == '[' && host[host_len - 1] == ']') {
        /* [::1]:PORT, as QEMU writes IPv6 addresses */
        memmove(host, host + 1, host_len - 2);
        host[host_len - 2] = '\0';
    }
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
        .ai_flags = passive ? AI_PASSIVE : 0,
    };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
    if (rc != 0) {
        error_setg(errp, "%s=%s: address resolution failed: %s", key, text, gai_strerror(rc));
        return NULL;
    }
    return res;
}

static int socket_listen_on(const char *text, Error **errp)
{
    struct addrinfo *ai = socket_resolve("listen", text, true, errp);
    if (!ai) {
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1) < 0) {
        error_setg_errno(errp, errno, "can't bind to %s", text);
        if (fd >= 0) {
            close(fd);
        }
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static int socket_connect_to(const char *text, Error **errp)
{
    struct addrinfo *ai = socket_resolve("connect", text, false, errp);
    if (!ai) {
        return -1;
    }
    /* Blocking, at start-up as under QEMU: the peer listens already. */
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        error_setg_errno(errp, errno, "can't connect socket to %s", text);
        if (fd >= 0) {
            close(fd);
        }
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd >= 0 && !socket_set_nonblocking(fd, errp)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* fd=: a connected stream socket the process inherited. */
static int socket_adopt_fd(const char *text, Error **errp)
{
    uint64_t n;
    int type;
    socklen_t len = sizeof(type);
    if (!parse_uint(text, INT_MAX, &n)) {
        error_setg(errp, "Parameter 'fd' expects a file descriptor number");
        return -1;
    }
    if (getsockopt((int)n, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM) {
        error_setg(errp, "fd=%s is not a stream socket (datagram sockets are not supported)",
                   text);
        return -1;
    }
    return socket_set_nonblocking((int)n, errp) ? (int)n : -1;
}

static bool socket_check_options(const NetdevConfig *cfg, Error **errp)
{
    for (const char *const *key = socket_dgram_keys; *key; key++) {
        if (netdev_config_get(cfg, *key)) {
            error_setg(errp, "Parameter '%s' is not supported: this socket netdev has "
                       "listen=, connect= and fd= (TCP)", *key);
            return false;
        }
    }
    if (!netdev_config_check_keys(cfg, socket_keys, errp)) {
        return false;
    }
    int modes = !!netdev_config_get(cfg, "listen") + !!netdev_config_get(cfg, "connect") +
                !!netdev_config_get(cfg, "fd");
    if (modes != 1) {
        error_setg(errp, "exactly one of listen=, connect= and fd= is required");
        return false;
    }
    return true;
}

bool net_socket_init(const NetdevConfig *cfg, Error **errp)
{
    if (!socket_check_options(cfg, errp)) {
        return false;
    }
    const char *listen_at = netdev_config_get(cfg, "listen");
    const char *connect_to = netdev_config_get(cfg, "connect");
    int listen_fd = -1, fd = -1;
    if (listen_at) {
        listen_fd = socket_listen_on(listen_at, errp);
    } else if (connect_to) {
        fd = socket_connect_to(connect_to, errp);
    } else {
        fd = socket_adopt_fd(netdev_config_get(cfg, "fd"), errp);
    }
    if (listen_fd < 0 && fd < 0) {
        return false;
    }
    NetDev *nd = netdev_new("socket", cfg->id, 1, &socket_info, errp);
    if (!nd) {
        close(listen_fd >= 0 ? listen_fd : fd);
        return false;
    }
    SocketBackend *s = g_new0(SocketBackend, 1);
    s->nc = nd->queues[0];
    s->listen_fd = listen_fd;
    s->fd = fd;
    pthread_mutex_init(&s->lock, NULL);
    s->send_buf = g_malloc(SOCKET_SEND_BUFSIZE);
    s->frame = g_malloc(SOCKET_MAX_FRAME);
    nd->queues[0]->opaque = s;
    struct sockaddr_storage peer = { 0 };
    socklen_t peer_len = sizeof(peer);
    if (connect_to && getpeername(fd, (struct sockaddr *)&peer, &peer_len) == 0) {
        socket_describe(s, "connect to", (struct sockaddr *)&peer);
    } else if (!listen_at) {
        net_client_set_info(s->nc, "socket: fd=%d", fd);
    }
    return true;
}
