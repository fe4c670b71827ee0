/* Port I/O for unit tests: a test thread acting as a vCPU, through the
 * same dispatch path (address_space_io) as a KVM I/O exit. */
#ifndef TESTS_UNIT_PIO_H
#define TESTS_UNIT_PIO_H

#include <glib.h>
#include "exec/memory.h"

static inline void outb(uint16_t port, uint8_t value)
{
    g_assert_cmpint(address_space_write(address_space_io, port, &value, 1), ==, MEMTX_OK);
}

static inline uint8_t inb(uint16_t port)
{
    uint8_t value;
    g_assert_cmpint(address_space_read(address_space_io, port, &value, 1), ==, MEMTX_OK);
    return value;
}

#endif
