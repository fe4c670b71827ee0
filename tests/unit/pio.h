/* Port I/O and MMIO for unit tests: a test thread acting as a vCPU, through
 * the same dispatch path (address_space_io / address_space_memory) as a
 * KVM I/O or MMIO exit. Values are little-endian, size 1, 2 or 4. */
#ifndef TESTS_UNIT_PIO_H
#define TESTS_UNIT_PIO_H

#include <glib.h>
#include "exec/memory.h"

static inline uint32_t space_read(AddressSpace *as, uint64_t addr, unsigned size)
{
    uint32_t value = 0;
    g_assert_cmpuint(size, <=, sizeof(value));
    g_assert_cmpint(address_space_read(as, addr, &value, size), ==, MEMTX_OK);
    return value;
}

static inline void space_write(AddressSpace *as, uint64_t addr, uint32_t value, unsigned size)
{
    g_assert_cmpuint(size, <=, sizeof(value));
    g_assert_cmpint(address_space_write(as, addr, &value, size), ==, MEMTX_OK);
}

static inline uint32_t io_read(uint64_t port, unsigned size)
{
    return space_read(address_space_io, port, size);
}

static inline void io_write(uint64_t port, uint32_t value, unsigned size)
{
    space_write(address_space_io, port, value, size);
}

static inline uint32_t mem_read(uint64_t addr, unsigned size)
{
    return space_read(address_space_memory, addr, size);
}

static inline void mem_write(uint64_t addr, uint32_t value, unsigned size)
{
    space_write(address_space_memory, addr, value, size);
}

static inline uint8_t inb(uint16_t port) { return io_read(port, 1); }
static inline uint16_t inw(uint16_t port) { return io_read(port, 2); }
static inline uint32_t inl(uint16_t port) { return io_read(port, 4); }
static inline void outb(uint16_t port, uint8_t value) { io_write(port, value, 1); }
static inline void outw(uint16_t port, uint16_t value) { io_write(port, value, 2); }
static inline void outl(uint16_t port, uint32_t value) { io_write(port, value, 4); }

#endif
