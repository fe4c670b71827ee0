/*
 * A NIC stand-in for the network tests: it keeps the frames it receives,
 * refuses them while told to (counting the refusals), lends buffers for
 * frames filled in place when told to (counting the fills), and counts the
 * send_ready calls its backend's receive_ready brings. Everything runs on
 * one test GMainContext, iterated by the test's thread.
 */
#ifndef TESTS_UNIT_NET_STUB_H
#define TESTS_UNIT_NET_STUB_H

#include <string.h>
#include <glib.h>
#include "net/net.h"
#include "net/netdev-create.h"
#include "qemu/iov.h"
#include "qemu/keyval.h"

typedef struct NicStub {
    NetClientState *nc;
    GPtrArray *frames;          /* GBytes *, in arrival order */
    bool refuse;
    size_t lend;                /* receive_filled lends this much (0: declines) */
    unsigned refusals, send_ready_calls, fills;
} NicStub;

static ssize_t nic_stub_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    NicStub *nic = nc->opaque;
    size_t size = iov_size(iov, iovcnt);
    if (nic->refuse) {
        nic->refusals++;
        return 0;
    }
    uint8_t *copy = g_malloc(size);
    iov_to_buf(iov, iovcnt, 0, copy, size);
    g_ptr_array_add(nic->frames, g_bytes_new_take(copy, size));
    return size;
}

/* Lends nic->lend bytes in 4 KiB pieces, as guest buffers come. */
static ssize_t nic_stub_receive_filled(NetClientState *nc, size_t max, NetFillFunc fill,
                                       void *opaque)
{
    NicStub *nic = nc->opaque;
    if (nic->lend < max || nic->refuse) {
        return NET_FILL_DECLINED;
    }
    uint8_t *buf = g_malloc(nic->lend);
    unsigned n = 0;
    struct iovec *iov = g_new(struct iovec, nic->lend / 4096 + 1);
    for (size_t off = 0; off < nic->lend; off += 4096) {
        iov[n++] = (struct iovec) { buf + off, MIN(4096, nic->lend - off) };
    }
    ssize_t len = fill(opaque, iov, n);
    g_free(iov);
    if (len > 0 && (size_t)len <= nic->lend) {
        nic->fills++;
        g_ptr_array_add(nic->frames, g_bytes_new_take(g_realloc(buf, len), len));
    } else {
        g_free(buf);
    }
    return len;
}

static void nic_stub_send_ready(NetClientState *nc)
{
    ((NicStub *)nc->opaque)->send_ready_calls++;
}

static const NetClientInfo nic_stub_info = {
    .type = "nic",
    .receive = nic_stub_receive,
    .receive_filled = nic_stub_receive_filled,
    .send_ready = nic_stub_send_ready,
};

/* A stub on queue `queue` of netdev (NULL: none), polled on ctx. */
static inline void nic_stub_attach_queue(NicStub *nic, const char *name, NetDev *netdev,
                                         unsigned queue, GMainContext *ctx)
{
    memset(nic, 0, sizeof(*nic));
    nic->frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    Error *err = NULL;
    nic->nc = net_nic_new(&nic_stub_info, name, netdev, queue, name, ctx, nic, &err);
    g_assert_null(err);
}

static inline void nic_stub_attach(NicStub *nic, const char *name, NetDev *netdev,
                                   GMainContext *ctx)
{
    nic_stub_attach_queue(nic, name, netdev, 0, ctx);
}

static inline void nic_stub_free(NicStub *nic)
{
    net_client_free(nic->nc);
    g_ptr_array_unref(nic->frames);
}

/* Iterate ctx until cond holds, or fail after timeout_ms. */
#define RUN_UNTIL(ctx, cond, timeout_ms) do { \
        gint64 deadline_ = g_get_monotonic_time() + (timeout_ms) * 1000; \
        while (!(cond)) { \
            g_assert_cmpint(g_get_monotonic_time(), <, deadline_); \
            g_main_context_iteration((ctx), FALSE); \
            g_usleep(100); \
        } \
    } while (0)

/* Iterate ctx without blocking until nothing is ready. */
static inline void run_pending(GMainContext *ctx)
{
    while (g_main_context_iteration(ctx, FALSE)) {
    }
}

/* Let ctx run for a while, then check nothing is ready any more: a
 * backend held back by a refusal must not keep its fd in the poll set
 * (it would spin). */
static inline void assert_settles_quiet(GMainContext *ctx)
{
    for (int i = 0; i < 50; i++) {
        g_main_context_iteration(ctx, FALSE);
        g_usleep(1000);
    }
    g_assert_false(g_main_context_iteration(ctx, FALSE));
}

/* A recognisable frame: byte i of frame `seed` is (seed * 31 + i * 7) & 0xff. */
static inline GBytes *test_frame(size_t size, unsigned seed)
{
    uint8_t *data = g_malloc(size);
    for (size_t i = 0; i < size; i++) {
        data[i] = (seed * 31 + i * 7) & 0xff;
    }
    return g_bytes_new_take(data, size);
}

static inline void assert_frame_equal(GBytes *got, GBytes *want)
{
    gsize got_len, want_len;
    const uint8_t *g = g_bytes_get_data(got, &got_len), *w = g_bytes_get_data(want, &want_len);
    g_assert_cmpuint(got_len, ==, want_len);
    g_assert_cmpmem(g, got_len, w, want_len);
}

/* Create a netdev from its -netdev text ("socket,id=s0,listen=..."). */
static inline bool netdev_create_from(const char *spec, Error **errp)
{
    GPtrArray *items = keyval_parse(spec, "type", errp);
    if (!items) {
        return false;
    }
    const char *type = NULL, *id = NULL;
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(items, i);
        if (!strcmp(item->key, "type")) {
            type = item->value;
        } else if (!strcmp(item->key, "id")) {
            id = item->value;
        }
    }
    NetdevConfig *cfg = netdev_config_new(type, id, spec);
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(items, i);
        if (strcmp(item->key, "type") && strcmp(item->key, "id")) {
            KeyvalItem *copy = g_new(KeyvalItem, 1);
            *copy = (KeyvalItem){ g_strdup(item->key), g_strdup(item->value) };
            g_ptr_array_add(cfg->items, copy);
        }
    }
    bool ok = netdev_create(cfg, errp);
    netdev_config_free(cfg);
    g_ptr_array_unref(items);
    return ok;
}

static inline void netdev_create_or_fail(const char *spec)
{
    Error *err = NULL;
    if (!netdev_create_from(spec, &err)) {
        g_error("%s", err->msg);
    }
}

#endif
