/* Readiness of one host fd in a GLib main context (qemu/fd-watch.h). */
#include "qemu/fd-watch.h"

struct FdWatch {
    GSource source;
    int fd;
    GIOCondition cond;          /* what to wait for when there is no prepare */
    gpointer tag;               /* NULL while the fd is not polled */
    GIOCondition polled;        /* what the fd is polled for (with tag) */
    FdWatchPrepareFn *prepare;
    FdWatchReadyFn *ready;
    void *opaque;
};

static gboolean fd_watch_prepare(GSource *source, gint *timeout)
{
    FdWatch *w = (FdWatch *)source;
    GIOCondition want = w->prepare ? w->prepare(w->opaque) : w->cond;

    *timeout = -1;
    if (!want && w->tag) {
        g_source_remove_unix_fd(source, w->tag);
        w->tag = NULL;
    } else if (want && !w->tag) {
        w->tag = g_source_add_unix_fd(source, w->fd, want);
    } else if (want && want != w->polled) {
        g_source_modify_unix_fd(source, w->tag, want);
    }
    w->polled = want;
    return FALSE;
}

static gboolean fd_watch_check(GSource *source)
{
    FdWatch *w = (FdWatch *)source;
    return w->tag && g_source_query_unix_fd(source, w->tag) != 0;
}

static gboolean fd_watch_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
    FdWatch *w = (FdWatch *)source;
    w->ready(w->opaque, g_source_query_unix_fd(source, w->tag));
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs fd_watch_funcs = {
    .prepare = fd_watch_prepare,
    .check = fd_watch_check,
    .dispatch = fd_watch_dispatch,
};

FdWatch *fd_watch_new(GMainContext *ctx, int fd, GIOCondition cond,
                      FdWatchPrepareFn *prepare, FdWatchReadyFn *ready, void *opaque)
{
    FdWatch *w = (FdWatch *)g_source_new(&fd_watch_funcs, sizeof(FdWatch));
    w->fd = fd;
    w->cond = cond;
    w->prepare = prepare;
    w->ready = ready;
    w->opaque = opaque;
    g_source_attach(&w->source, ctx);
    return w;
}

void fd_watch_free(FdWatch *w)
{
    if (w) {
        g_source_destroy(&w->source);
        g_source_unref(&w->source);
    }
}
