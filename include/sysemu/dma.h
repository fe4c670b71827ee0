/*
 * Scatter-gather DMA: a device's guest-physical buffer list (a virtio
 * descriptor chain, an IDE PRD table) turned into host iovecs that point
 * straight into guest RAM, for preadv/pwritev, io_uring or a tap's
 * readv/writev, with no copy and no lock.
 *
 * Like dma_memory_read/write (exec/memory.h), it is guest RAM only: a list
 * that touches anything else is refused as a whole. The pointers stay valid
 * for the VM's life (guest RAM is never unmapped from the host), but a map
 * change after the call does not redirect them, as with a DMA engine that
 * has already translated its addresses.
 */
#ifndef SYSEMU_DMA_H
#define SYSEMU_DMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* One guest-physical piece of a buffer. A piece of length 0 is empty: it
 * yields no iovec and its address is not looked at. (IDE's PRD byte count
 * of 0 means 64 KiB; the IDE model translates that before it gets here.) */
typedef struct DMASegment {
    uint64_t addr;
    uint64_t len;
} DMASegment;

/*
 * Fill iov[0 .. *nr_iov) with the host memory of seg[0 .. nr_seg), in
 * order, and return true. A piece that crosses from one RAM range into
 * another (two RAM regions that meet, or RAM split by a region mapped over
 * it) becomes one iovec per range; consecutive pieces that are contiguous in
 * host memory share one iovec, so *nr_iov may be smaller than nr_seg.
 *
 * Refused (false, *nr_iov unspecified, logged under -d guest_errors and
 * counted in dma_refused_count()) when a piece wraps past the top of the
 * address space, when any of its bytes is not guest RAM (MMIO, unassigned),
 * or when the list needs more than max_iov iovecs: a guest must not make
 * the VMM allocate or loop without bound. preadv and io_uring take at most
 * IOV_MAX (1024) iovecs per call.
 */
bool dma_memory_map_sg(const DMASegment *seg, size_t nr_seg, struct iovec *iov,
                       size_t max_iov, size_t *nr_iov);

#endif
