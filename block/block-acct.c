/*
 * Per-drive I/O accounting (block/block-acct.h). Every counter is a
 * relaxed atomic: completions of one drive run on one context, but the
 * monitor reads them from the main loop meanwhile, and a lock here would
 * sit on every request's path.
 */
#include <stdatomic.h>
#include <time.h>
#include <glib.h>
#include "block/block-acct.h"

typedef struct BlockAcctKind {
    atomic_uint_fast64_t bytes, ops, failed_ops, invalid_ops, total_time_ns;
} BlockAcctKind;

struct BlockAcct {
    atomic_int refs;
    BlockAcctKind kind[BLOCK_ACCT_TYPES];
    atomic_uint_fast64_t wr_highest_offset;
    atomic_int_fast64_t last_access_ns;     /* 0: never */
};

#define RELAXED memory_order_relaxed

BlockAcct *block_acct_new(void)
{
    BlockAcct *acct = g_new0(BlockAcct, 1);
    atomic_init(&acct->refs, 1);
    return acct;
}

BlockAcct *block_acct_ref(BlockAcct *acct)
{
    atomic_fetch_add(&acct->refs, 1);
    return acct;
}

void block_acct_unref(BlockAcct *acct)
{
    if (acct && atomic_fetch_sub(&acct->refs, 1) == 1) {
        g_free(acct);
    }
}

int64_t block_acct_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void raise_to(atomic_uint_fast64_t *max, uint64_t value)
{
    uint_fast64_t cur = atomic_load_explicit(max, RELAXED);
    while (cur < value &&
           !atomic_compare_exchange_weak_explicit(max, &cur, value, RELAXED, RELAXED)) {
    }
}

void block_acct_done(BlockAcct *acct, BlockAcctType type, BlockAcctOutcome outcome,
                     uint64_t offset, uint64_t bytes, int64_t start_ns)
{
    BlockAcctKind *k = &acct->kind[type];
    int64_t now = block_acct_now_ns();
    switch (outcome) {
    case BLOCK_ACCT_INVALID:
        /* Never reached the host: no time spent there, but an access
         * (QEMU's account_invalid=on). */
        atomic_fetch_add_explicit(&k->invalid_ops, 1, RELAXED);
        break;
    case BLOCK_ACCT_FAILED:
        atomic_fetch_add_explicit(&k->failed_ops, 1, RELAXED);
        atomic_fetch_add_explicit(&k->total_time_ns, now - start_ns, RELAXED);
        break;
    case BLOCK_ACCT_DONE:
        atomic_fetch_add_explicit(&k->ops, 1, RELAXED);
        atomic_fetch_add_explicit(&k->bytes, bytes, RELAXED);
        atomic_fetch_add_explicit(&k->total_time_ns, now - start_ns, RELAXED);
        if (type == BLOCK_ACCT_WRITE) {
            raise_to(&acct->wr_highest_offset, offset + bytes);
        }
        break;
    }
    atomic_store_explicit(&acct->last_access_ns, now, RELAXED);
}

void block_acct_snapshot(const BlockAcct *acct, BlockAcctSnapshot *out)
{
    BlockAcct *a = (BlockAcct *)acct;   /* atomic loads take non-const pointers */
    for (int t = 0; t < BLOCK_ACCT_TYPES; t++) {
        BlockAcctKind *k = &a->kind[t];
        out->kind[t] = (BlockAcctKindStats) {
            .bytes = atomic_load_explicit(&k->bytes, RELAXED),
            .ops = atomic_load_explicit(&k->ops, RELAXED),
            .failed_ops = atomic_load_explicit(&k->failed_ops, RELAXED),
            .invalid_ops = atomic_load_explicit(&k->invalid_ops, RELAXED),
            .total_time_ns = atomic_load_explicit(&k->total_time_ns, RELAXED),
        };
    }
    out->wr_highest_offset = atomic_load_explicit(&a->wr_highest_offset, RELAXED);
    int64_t last = atomic_load_explicit(&a->last_access_ns, RELAXED);
    out->accessed = last != 0;
    out->idle_time_ns = last ? block_acct_now_ns() - last : 0;
}
