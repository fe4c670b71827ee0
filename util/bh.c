/* Bottom halves as GLib sources with an atomic "scheduled" flag (qemu/bh.h). */
#include <stdatomic.h>
#include <stdbool.h>
#include "qemu/bh.h"

struct QEMUBH {
    GSource source;
    GMainContext *ctx;
    atomic_bool scheduled;
    QEMUBHFunc *cb;
    void *opaque;
};

static gboolean bh_prepare(GSource *source, gint *timeout)
{
    QEMUBH *bh = (QEMUBH *)source;
    *timeout = -1;
    return atomic_load(&bh->scheduled);
}

static gboolean bh_check(GSource *source)
{
    return atomic_load(&((QEMUBH *)source)->scheduled);
}

static gboolean bh_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
    QEMUBH *bh = (QEMUBH *)source;
    /* Cleared before the call: a schedule during the callback runs it again. */
    if (atomic_exchange(&bh->scheduled, false)) {
        bh->cb(bh->opaque);
    }
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs bh_funcs = {
    .prepare = bh_prepare,
    .check = bh_check,
    .dispatch = bh_dispatch,
};

QEMUBH *qemu_bh_new(GMainContext *ctx, QEMUBHFunc *cb, void *opaque)
{
    QEMUBH *bh = (QEMUBH *)g_source_new(&bh_funcs, sizeof(QEMUBH));
    bh->ctx = ctx;
    /* A store, not atomic_init: a BH made on another thread than ctx's is
     * published by g_source_attach under GLib's own lock, which
     * ThreadSanitizer cannot see; the context's first atomic load then
     * reads from this store, which orders the allocation before it. */
    atomic_store(&bh->scheduled, false);
    bh->cb = cb;
    bh->opaque = opaque;
    g_source_attach(&bh->source, ctx);
    return bh;
}

/*
 * The wake-up is skipped when the caller is the thread iterating ctx (it
 * owns ctx from prepare to dispatch): its next prepare sees the flag and
 * polls without blocking. That is the common case, a kick's handler that
 * leaves the work to a bottom half of its own context, and the skip saves
 * it an eventfd write and the read that acknowledges it.
 */
void qemu_bh_schedule(QEMUBH *bh)
{
    if (!atomic_exchange(&bh->scheduled, true) && !g_main_context_is_owner(bh->ctx)) {
        g_main_context_wakeup(bh->ctx);
    }
}

void qemu_bh_delete(QEMUBH *bh)
{
    g_source_destroy(&bh->source);
    g_source_unref(&bh->source);
}
