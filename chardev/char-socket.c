/*
 * The socket backend, server side only: "unix:PATH,server=on,wait=off" and
 * "tcp:HOST:PORT,server=on,wait=off" (QEMU's older "server,nowait" too).
 *
 * As QEMU's socket chardev, it serves one client at a time: while a client
 * is connected the listening socket is not watched, so a second client
 * waits in the listen backlog until the first one leaves. Each accepted
 * client is the backend's input and output fd; the frontend hears OPENED
 * when one arrives and CLOSED when it goes. Output written while nobody is
 * connected is dropped (and counted), as QEMU drops it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "char-internal.h"
#include "qemu/main-loop.h"

typedef struct SocketServer {
    int listen_fd;
    int client_fd;          /* -1: nobody connected */
    char *unix_path;        /* removed at exit */
    FdWatch *accept_watch;
} SocketServer;

static SocketServer *socket_server_of(Chardev *chr)
{
    return chr->backend_state;
}

static void socket_drop_client(Chardev *chr, SocketServer *s)
{
    chardev_detach_io(chr);
    close(s->client_fd);
    s->client_fd = -1;
    chr->peer_connected = false;
    chardev_send_event(chr, CHR_EVENT_CLOSED);
}

/*
 * Before each poll: a client whose input ended (EOF, reset) is dropped
 * here rather than inside the input callback, which must not free its own
 * watch. The listener is only watched while nobody is connected.
 */
static GIOCondition socket_accept_prepare(void *opaque)
{
    Chardev *chr = opaque;
    SocketServer *s = socket_server_of(chr);
    if (s->client_fd >= 0 && chr->input_closed) {
        socket_drop_client(chr, s);
    }
    return s->client_fd < 0 ? G_IO_IN : 0;
}

static void socket_accept_ready(void *opaque, GIOCondition revents)
{
    Chardev *chr = opaque;
    SocketServer *s = socket_server_of(chr);
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        return;     /* EAGAIN, or a client that already left */
    }
    s->client_fd = fd;
    chr->peer_connected = true;
    chardev_attach_output(chr, fd, false, true);
    chardev_attach_input(chr, fd);
    chardev_send_event(chr, CHR_EVENT_OPENED);
}

static void socket_close(Chardev *chr)
{
    SocketServer *s = socket_server_of(chr);
    fd_watch_free(s->accept_watch);
    if (s->client_fd >= 0) {
        close(s->client_fd);
    }
    close(s->listen_fd);
    if (s->unix_path) {
        unlink(s->unix_path);
        g_free(s->unix_path);
    }
    chr->backend_state = NULL;
    g_free(s);
}

/* ---- the spec ---- */

typedef struct SocketSpec {
    bool server, wait;
} SocketSpec;

static bool parse_on_off(const char *key, const char *value, bool *out, Error **errp)
{
    if (!value || !strcmp(value, "on")) {
        *out = true;
    } else if (!strcmp(value, "off")) {
        *out = false;
    } else {
        error_setg(errp, "Parameter '%s' expects 'on' or 'off'", key);
        return false;
    }
    return true;
}

/* The options after the address: server[=on|off], wait[=on|off], nowait. */
static bool parse_socket_options(char **opts, SocketSpec *spec, Error **errp)
{
    *spec = (SocketSpec) { .server = false, .wait = true };
    for (char **o = opts; *o; o++) {
        char *eq = strchr(*o, '=');
        g_autofree char *key = eq ? g_strndup(*o, eq - *o) : g_strdup(*o);
        const char *value = eq ? eq + 1 : NULL;
        bool ok;
        if (!strcmp(key, "server")) {
            ok = parse_on_off(key, value, &spec->server, errp);
        } else if (!strcmp(key, "wait")) {
            ok = parse_on_off(key, value, &spec->wait, errp);
        } else if (!strcmp(key, "nowait") && !value) {
            spec->wait = false;
            ok = true;
        } else {
            error_setg(errp, "Invalid parameter '%s' for a socket backend", key);
            ok = false;
        }
        if (!ok) {
            return false;
        }
    }
    if (!spec->server) {
        error_setg(errp, "socket client mode is not supported: only server=on,wait=off");
        return false;
    }
    if (spec->wait) {
        error_setg(errp, "waiting for a client at start-up is not supported: add wait=off");
        return false;
    }
    return true;
}

static int unix_listen(const char *path, Error **errp)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (!*path || strlen(path) >= sizeof(addr.sun_path)) {
        error_setg(errp, "unix socket path '%s' is empty or too long", path);
        return -1;
    }
    strcpy(addr.sun_path, path);
    /* A socket left by a previous run that did not exit cleanly; anything
     * else at the path is the user's and is not touched. */
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        unlink(path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, 1) < 0) {
        error_setg_errno(errp, errno, "Failed to bind socket to %s", path);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

static int tcp_listen(const char *host, const char *port, Error **errp)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE,
    }, *res;
    int rc = getaddrinfo(*host ? host : NULL, port, &hints, &res);
    if (rc) {
        error_setg(errp, "address resolution failed for %s:%s: %s", host, port,
                   gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
                        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1) < 0)) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        error_setg_errno(errp, err, "Failed to bind socket to %s:%s", host, port);
    }
    return fd;
}

/* "tcp:HOST:PORT" (HOST may be empty or [v6]) into a listening socket. */
static int tcp_listen_addr(const char *addr, Error **errp)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1]) {
        error_setg(errp, "'tcp:%s': expected tcp:HOST:PORT", addr);
        return -1;
    }
    g_autofree char *host = g_strndup(addr, colon - addr);
    size_t len = strlen(host);
    if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
        host[len - 1] = '\0';
        memmove(host, host + 1, len - 1);
    }
    return tcp_listen(host, colon + 1, errp);
}

bool chardev_socket_open(Chardev *chr, const char *spec, Error **errp)
{
    bool is_unix = g_str_has_prefix(spec, "unix:");
    g_auto(GStrv) parts = g_strsplit(strchr(spec, ':') + 1, ",", -1);
    SocketSpec opts;
    if (!parts[0] || !parse_socket_options(parts + 1, &opts, errp)) {
        error_prepend(errp, "'%s': ", spec);
        return false;
    }
    int fd = is_unix ? unix_listen(parts[0], errp) : tcp_listen_addr(parts[0], errp);
    if (fd < 0) {
        return false;
    }
    SocketServer *s = g_new0(SocketServer, 1);
    s->listen_fd = fd;
    s->client_fd = -1;
    s->unix_path = is_unix ? g_strdup(parts[0]) : NULL;
    chr->backend_state = s;
    chr->waits_for_peer = true;
    chr->has_input = true;
    chardev_detach_io(chr);     /* output dropped until a client comes */
    chr->backend_close = socket_close;
    s->accept_watch = fd_watch_new(main_loop_context(), fd, 0, socket_accept_prepare,
                                   socket_accept_ready, chr);
    return true;
}
