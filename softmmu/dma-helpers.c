/*
 * Scatter-gather DMA into guest RAM (sysemu/dma.h), built on
 * dma_memory_translate(): each step finds the RAM range an address is in,
 * so a piece is split exactly where guest RAM stops being one host block.
 */
#include <inttypes.h>
#include "exec/memory.h"
#include "qemu/log.h"
#include "sysemu/dma.h"

/* Append host memory to the list, extending the last iovec when it
 * continues it. False if that needs more than max_iov iovecs. */
static bool iov_append(struct iovec *iov, size_t max_iov, size_t *nr_iov, uint8_t *host,
                       uint64_t len)
{
    if (*nr_iov > 0) {
        struct iovec *last = &iov[*nr_iov - 1];
        if ((uint8_t *)last->iov_base + last->iov_len == host) {
            last->iov_len += len;
            return true;
        }
    }
    if (*nr_iov == max_iov) {
        return false;
    }
    iov[(*nr_iov)++] = (struct iovec) { .iov_base = host, .iov_len = len };
    return true;
}

/* Why seg cannot be mapped, or NULL once it is appended. */
static const char *map_segment(const DMASegment *seg, struct iovec *iov, size_t max_iov,
                               size_t *nr_iov)
{
    if (seg->len - 1 > UINT64_MAX - seg->addr) {
        return "wraps past the end of the address space";
    }
    uint64_t addr = seg->addr, left = seg->len;
    while (left > 0) {
        uint64_t len = left;
        uint8_t *host = dma_memory_translate(addr, &len);
        if (!host) {
            return "not all guest RAM";
        }
        if (!iov_append(iov, max_iov, nr_iov, host, len)) {
            return "needs more host buffers than the limit";
        }
        addr += len;
        left -= len;
    }
    return NULL;
}

bool dma_memory_map_sg(const DMASegment *seg, size_t nr_seg, struct iovec *iov,
                       size_t max_iov, size_t *nr_iov)
{
    *nr_iov = 0;
    for (size_t i = 0; i < nr_seg; i++) {
        const char *why = seg[i].len ? map_segment(&seg[i], iov, max_iov, nr_iov) : NULL;
        if (why) {
            dma_count_refused();
            qemu_log_mask(LOG_GUEST_ERROR, "DMA list of %zu pieces (limit %zu host buffers) "
                          "refused: piece %zu (0x%" PRIx64 " bytes at 0x%" PRIx64 ") %s\n",
                          nr_seg, max_iov, i, seg[i].len, seg[i].addr, why);
            return false;
        }
    }
    return true;
}
