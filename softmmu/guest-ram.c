/*
 * Guest RAM's host mapping: 2 MiB-aligned, advised for transparent huge
 * pages (sysemu/guest-ram.h says why).
 */
#include <errno.h>
#include <sys/mman.h>
#include <glib.h>
#include "sysemu/guest-ram.h"

void *guest_ram_alloc(uint64_t size, bool huge_pages, Error **errp)
{
    /* Reserve one alignment unit more than asked, then give back the
     * unaligned head and the tail beyond size. MAP_NORESERVE: untouched
     * guest RAM costs no host memory. */
    size_t reserved = size + GUEST_RAM_ALIGN;
    uint8_t *base = mmap(NULL, reserved, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        error_setg_errno(errp, errno, "-m: cannot allocate %" G_GUINT64_FORMAT " MiB of guest RAM",
                         size >> 20);
        return NULL;
    }
    uint8_t *host = (uint8_t *)(((uintptr_t)base + GUEST_RAM_ALIGN - 1) &
                                ~(uintptr_t)(GUEST_RAM_ALIGN - 1));
    size_t head = host - base;
    size_t tail = reserved - head - size;
    if (head) {
        munmap(base, head);
    }
    if (tail) {
        munmap(host + size, tail);
    }
    /* A kernel built without THP refuses the advice (EINVAL). Its pages
     * are 4 KiB whatever we ask, so there is nothing to tell the user,
     * as QEMU tells nothing. */
    (void)madvise(host, size, huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    return host;
}
