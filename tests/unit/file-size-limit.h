/*
 * A host that refuses writes without root, for the unit tests of write
 * errors (test-block-error, test-qmp-block, test-virtio-blk): with
 * RLIMIT_FSIZE lowered, a write past the limit fails with EFBIG. SIGXFSZ
 * is ignored so that the write returns the error instead of ending the
 * test.
 */
#ifndef TESTS_UNIT_FILE_SIZE_LIMIT_H
#define TESTS_UNIT_FILE_SIZE_LIMIT_H

#include <signal.h>
#include <sys/resource.h>
#include <glib.h>

/* Writes past bytes fail from now on, in every file the process writes. */
static inline void file_size_limit_set(rlim_t bytes)
{
    struct rlimit lim;
    g_assert_cmpint(getrlimit(RLIMIT_FSIZE, &lim), ==, 0);
    lim.rlim_cur = bytes;
    signal(SIGXFSZ, SIG_IGN);
    g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &lim), ==, 0);
}

/* Back to the largest size the process may write. */
static inline void file_size_limit_lift(void)
{
    struct rlimit lim;
    g_assert_cmpint(getrlimit(RLIMIT_FSIZE, &lim), ==, 0);
    lim.rlim_cur = lim.rlim_max;
    g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &lim), ==, 0);
}

#endif
