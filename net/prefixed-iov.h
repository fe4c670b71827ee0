/*
 * A frame's scatter-gather list with one piece put ahead of it (the socket
 * backend's length prefix, the zero vnet header a tap expects), for one
 * writev without copying the frame. Private to net/.
 */
#ifndef NET_PREFIXED_IOV_H
#define NET_PREFIXED_IOV_H

#include <sys/uio.h>

#define PREFIXED_IOV_INLINE 16

typedef struct PrefixedIov {
    struct iovec inline_iov[PREFIXED_IOV_INLINE];
    struct iovec *iov;          /* inline_iov, or allocated for long lists */
    int iovcnt;
} PrefixedIov;

void prefixed_iov_init(PrefixedIov *p, const void *prefix, size_t prefix_len,
                       const struct iovec *iov, int iovcnt);
void prefixed_iov_destroy(PrefixedIov *p);

#endif
