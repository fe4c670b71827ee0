/*
 * Guest RAM's host mapping (softmmu/guest-ram.c).
 *
 * KVM can map guest RAM with 2 MiB pages in its nested/extended page
 * tables only where a guest-physical 2 MiB frame lies on a host 2 MiB
 * frame: the host address must be congruent to the guest-physical one
 * modulo 2 MiB, and the host must back it with a huge page. A plain
 * mmap gives neither (Linux before 6.7 places anonymous mappings on any
 * 4 KiB boundary), so every guest access would be translated through
 * 4 KiB leaves, at the cost of a deeper walk on each TLB miss. QEMU
 * aligns its RAM blocks to 2 MiB and asks for transparent huge pages;
 * so do we.
 */
#ifndef SYSEMU_GUEST_RAM_H
#define SYSEMU_GUEST_RAM_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/error.h"

#define GUEST_RAM_ALIGN (2u << 20)

/*
 * An anonymous, lazily reserved mapping of size bytes whose start is
 * GUEST_RAM_ALIGN-aligned. huge_pages advises the kernel to back it with
 * transparent huge pages (MADV_HUGEPAGE, which also works where the
 * host's THP mode is "madvise"); false forbids them (MADV_NOHUGEPAGE), so
 * that a benchmark can measure what they buy. A kernel without THP
 * refuses the advice: that is not an error, the RAM is then 4 KiB pages.
 * NULL with errp set when the mapping fails.
 */
void *guest_ram_alloc(uint64_t size, bool huge_pages, Error **errp);

#endif
