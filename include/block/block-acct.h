/*
 * I/O accounting of a drive, as query-blockstats reports it: bytes,
 * operations and time per kind of request, failed and invalid requests,
 * the highest offset written and the time of the last access.
 *
 * Threads: the block layer records each request once, when it completes,
 * on the drive's completion context, with relaxed atomic adds (no lock on
 * the I/O path). block_acct_snapshot may run on any thread at any time;
 * each counter it reads is exact, the set of them is not one instant.
 *
 * The counters belong to the drive, not to one medium: a CD-ROM's stats
 * survive a media change (blk_set_acct shares one BlockAcct between the
 * BlockBackends a drive has over time), as QEMU keeps them per drive.
 */
#ifndef BLOCK_BLOCK_ACCT_H
#define BLOCK_BLOCK_ACCT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum BlockAcctType {
    BLOCK_ACCT_READ,
    BLOCK_ACCT_WRITE,       /* writes and write-zeroes */
    BLOCK_ACCT_FLUSH,
    BLOCK_ACCT_UNMAP,       /* discards */
    BLOCK_ACCT_TYPES,
} BlockAcctType;

typedef enum BlockAcctOutcome {
    BLOCK_ACCT_DONE,        /* the host did it */
    BLOCK_ACCT_FAILED,      /* the host refused it (EIO, ENOSPC...) */
    BLOCK_ACCT_INVALID,     /* refused before the host saw it (out of range, read-only) */
} BlockAcctOutcome;

typedef struct BlockAcct BlockAcct;

/* One kind's counters; failed requests count in failed_ops and (as QEMU's
 * account_failed=on) in total_time_ns, never in ops or bytes. */
typedef struct BlockAcctKindStats {
    uint64_t bytes, ops, failed_ops, invalid_ops, total_time_ns;
} BlockAcctKindStats;

typedef struct BlockAcctSnapshot {
    BlockAcctKindStats kind[BLOCK_ACCT_TYPES];
    uint64_t wr_highest_offset;     /* the end of the furthest write, in bytes */
    bool accessed;                  /* any request has completed */
    int64_t idle_time_ns;           /* since the last one (when accessed) */
} BlockAcctSnapshot;

BlockAcct *block_acct_new(void);
BlockAcct *block_acct_ref(BlockAcct *acct);
void block_acct_unref(BlockAcct *acct);     /* NULL is allowed */

/* CLOCK_MONOTONIC in ns: a request's start, for block_acct_done. */
int64_t block_acct_now_ns(void);
/* One request of type, of bytes at offset, started at start_ns. Any thread. */
void block_acct_done(BlockAcct *acct, BlockAcctType type, BlockAcctOutcome outcome,
                     uint64_t offset, uint64_t bytes, int64_t start_ns);
void block_acct_snapshot(const BlockAcct *acct, BlockAcctSnapshot *out);

#endif
