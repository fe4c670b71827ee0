/* A frame's iovec with a piece ahead of it (net/prefixed-iov.h). */
#include <string.h>
#include <glib.h>
#include "prefixed-iov.h"

void prefixed_iov_init(PrefixedIov *p, const void *prefix, size_t prefix_len,
                       const struct iovec *iov, int iovcnt)
{
    p->iovcnt = iovcnt + 1;
    p->iov = p->iovcnt <= PREFIXED_IOV_INLINE ? p->inline_iov
                                               : g_new(struct iovec, p->iovcnt);
    p->iov[0] = (struct iovec){ .iov_base = (void *)prefix, .iov_len = prefix_len };
    memcpy(&p->iov[1], iov, iovcnt * sizeof(*iov));
}

void prefixed_iov_destroy(PrefixedIov *p)
{
    if (p->iov != p->inline_iov) {
        g_free(p->iov);
    }
}
