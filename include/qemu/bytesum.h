/*
 * The 8-bit byte checksums firmware tables carry (MP, ACPI): the table's
 * bytes, checksum field included, sum to 0 modulo 256.
 */
#ifndef QEMU_BYTESUM_H
#define QEMU_BYTESUM_H

#include <stddef.h>
#include <stdint.h>

static inline uint8_t byte_sum(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint8_t sum = 0;
    for (size_t i = 0; i < len; i++) {
        sum += p[i];
    }
    return sum;
}

/* The checksum byte that makes [data, data + len) sum to 0, computed with
 * the checksum field itself still 0. */
static inline uint8_t byte_sum_checksum(const void *data, size_t len)
{
    return -byte_sum(data, len);
}

#endif
