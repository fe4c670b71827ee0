/*
 * Guest RAM for the unit tests that play a guest's memory (descriptor
 * rings, PRD tables, DMA buffers): zeroed host memory mapped into the
 * system memory address space. Call memory_init() first.
 */
#ifndef TESTS_UNIT_TEST_RAM_H
#define TESTS_UNIT_TEST_RAM_H

#include <glib.h>
#include "exec/memory.h"

/* size bytes of RAM at guest address base; the host's view of it. Once
 * per test program: the region is never unmapped. */
static inline uint8_t *test_ram_map(uint64_t base, size_t size)
{
    static MemoryRegion ram_region;
    uint8_t *ram = g_malloc0(size);
    memory_region_init_ram(&ram_region, "test-ram", size, ram);
    address_space_map(address_space_memory, &ram_region, base, 0);
    return ram;
}

#endif
