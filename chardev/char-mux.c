/*
 * The multiplexer behind mon:stdio (chardev/char.h): frontends sharing one
 * backend, input to the one in focus.
 *
 * The backend's own input callbacks are pointed at the multiplexer, which
 * asks and feeds the frontend in focus. A focus switch in the middle of a
 * read hands the rest of the bytes to the new frontend; what it has no room
 * for is dropped (a UART overruns the same way when fed too fast).
 */
#include "char-internal.h"

typedef struct MuxFrontend {
    ChardevCanReadFn *can_read;
    ChardevReadFn *read;
    ChardevFocusFn *focus;
    void *opaque;
} MuxFrontend;

struct ChardevMux {
    MuxFrontend fe[CHARDEV_MUX_MAX];
    unsigned count;
    unsigned focus;
};

static MuxFrontend *mux_focused(ChardevMux *mux)
{
    return mux->focus < mux->count ? &mux->fe[mux->focus] : NULL;
}

static size_t mux_can_read(void *opaque)
{
    MuxFrontend *fe = mux_focused(opaque);
    return fe ? fe->can_read(fe->opaque) : 0;
}

static void mux_read(void *opaque, const uint8_t *buf, size_t len)
{
    MuxFrontend *fe = mux_focused(opaque);
    size_t room = fe ? fe->can_read(fe->opaque) : 0;
    if (room) {
        fe->read(fe->opaque, buf, MIN(len, room));
    }
}

void chardev_mux_init(Chardev *chr)
{
    chr->mux = g_new0(ChardevMux, 1);
    chr->can_read = mux_can_read;
    chr->read = mux_read;
    chr->opaque = chr->mux;
}

void chardev_mux_free(Chardev *chr)
{
    g_clear_pointer(&chr->mux, g_free);
}

bool chardev_is_mux(Chardev *chr)
{
    return chr->mux != NULL;
}

static MuxFrontend *mux_find(ChardevMux *mux, void *opaque)
{
    for (unsigned i = 0; i < mux->count; i++) {
        if (mux->fe[i].opaque == opaque) {
            return &mux->fe[i];
        }
    }
    return NULL;
}

void chardev_mux_set_handlers(Chardev *chr, ChardevCanReadFn *can_read, ChardevReadFn *read,
                              void *opaque)
{
    ChardevMux *mux = chr->mux;
    MuxFrontend *fe = mux_find(mux, opaque);
    if (!fe) {
        /* chardev_claim() let at most CHARDEV_MUX_MAX frontends in. */
        g_assert(mux->count < CHARDEV_MUX_MAX);
        fe = &mux->fe[mux->count++];
        fe->opaque = opaque;
    }
    fe->can_read = can_read;
    fe->read = read;
}

void chardev_mux_set_focus_handler(Chardev *chr, ChardevFocusFn *focus, void *opaque)
{
    MuxFrontend *fe = chr->mux ? mux_find(chr->mux, opaque) : NULL;
    g_assert(fe);
    fe->focus = focus;
}

void chardev_mux_switch_focus(Chardev *chr)
{
    ChardevMux *mux = chr->mux;
    if (mux->count < 2) {
        return;
    }
    MuxFrontend *old = &mux->fe[mux->focus];
    mux->focus = (mux->focus + 1) % mux->count;
    MuxFrontend *new = &mux->fe[mux->focus];
    if (old->focus) {
        old->focus(old->opaque, false);
    }
    if (new->focus) {
        new->focus(new->opaque, true);
    }
    /* The new frontend may have room where the old one had none. */
    chardev_accept_input(chr);
}
