/* Scatter-gather list helpers (qemu/iov.h). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <glib.h>
#include "qemu/iov.h"

size_t iov_size(const struct iovec *iov, unsigned niov)
{
    size_t total = 0;
    for (unsigned i = 0; i < niov; i++) {
        total += iov[i].iov_len;
    }
    return total;
}

/* Copy between the bytes [offset, offset + len) of the list and buf: into
 * buf if to_buf, else out of it. Returns the bytes copied. */
static size_t iov_copy(const struct iovec *iov, unsigned niov, size_t offset, void *buf,
                       size_t len, bool to_buf)
{
    size_t done = 0;
    for (unsigned i = 0; i < niov && done < len; i++) {
        if (offset >= iov[i].iov_len) {
            offset -= iov[i].iov_len;
            continue;
        }
        size_t n = MIN(iov[i].iov_len - offset, len - done);
        uint8_t *piece = (uint8_t *)iov[i].iov_base + offset;
        if (to_buf) {
            memcpy((uint8_t *)buf + done, piece, n);
        } else {
            memcpy(piece, (const uint8_t *)buf + done, n);
        }
        done += n;
        offset = 0;
    }
    return done;
}

size_t iov_to_buf(const struct iovec *iov, unsigned niov, size_t offset, void *buf, size_t len)
{
    return iov_copy(iov, niov, offset, buf, len, true);
}

size_t iov_from_buf(const struct iovec *iov, unsigned niov, size_t offset, const void *buf,
                    size_t len)
{
    return iov_copy(iov, niov, offset, (void *)buf, len, false);
}

unsigned iov_slice(const struct iovec *iov, unsigned niov, size_t offset, size_t len,
                   struct iovec *out, unsigned max_out)
{
    unsigned n = 0;
    for (unsigned i = 0; i < niov && len > 0; i++) {
        if (offset >= iov[i].iov_len) {
            offset -= iov[i].iov_len;
            continue;
        }
        g_assert(n < max_out);
        size_t piece = MIN(iov[i].iov_len - offset, len);
        out[n].iov_base = (uint8_t *)iov[i].iov_base + offset;
        out[n].iov_len = piece;
        n++;
        len -= piece;
        offset = 0;
    }
    g_assert(len == 0);
    return n;
}
