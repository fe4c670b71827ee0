/* Little-endian fields and byte sums of firmware tables in guest RAM, for
 * the unit tests that parse what the table builders wrote. */
#ifndef TESTS_UNIT_LE_BYTES_H
#define TESTS_UNIT_LE_BYTES_H

#include <stdint.h>
#include "qemu/bytesum.h"

static inline uint16_t get16(const uint8_t *p)
{
    return p[0] | p[1] << 8;
}

static inline uint32_t get32(const uint8_t *p)
{
    return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static inline uint64_t get64(const uint8_t *p)
{
    return get32(p) | (uint64_t)get32(p + 4) << 32;
}

#endif
