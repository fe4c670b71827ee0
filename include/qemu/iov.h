/*
 * Small helpers over struct iovec arrays: copying between a flat buffer
 * and a scatter-gather list, and cutting a list's head or tail off. A
 * virtio request keeps its header and status byte in the same list as
 * its data, in whatever pieces the guest chose.
 */
#ifndef QEMU_IOV_H
#define QEMU_IOV_H

#include <stddef.h>
#include <sys/uio.h>

/* Total bytes of iov[0 .. niov). */
size_t iov_size(const struct iovec *iov, unsigned niov);
/* Copy up to len bytes from offset of the list into buf; returns the bytes
 * copied (fewer if the list ends first). */
size_t iov_to_buf(const struct iovec *iov, unsigned niov, size_t offset, void *buf, size_t len);
/* Copy up to len bytes from buf into the list at offset; returns the bytes
 * copied. */
size_t iov_from_buf(const struct iovec *iov, unsigned niov, size_t offset, const void *buf,
                    size_t len);
/*
 * Fill out[] (room for max_out entries) with the bytes [offset, offset +
 * len) of the list, and return how many entries that took; 0 when the
 * range is empty. The range must lie inside the list and fit in max_out
 * entries (the caller sized out[] as the source list: a slice never needs
 * more).
 */
unsigned iov_slice(const struct iovec *iov, unsigned niov, size_t offset, size_t len,
                   struct iovec *out, unsigned max_out);

#endif
