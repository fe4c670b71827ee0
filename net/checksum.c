/*
 * The Internet checksum (include/net/checksum.h).
 */
#include <stdbool.h>
#include "net/checksum.h"
#include "qemu/byte-order.h"

uint32_t net_checksum_add(uint32_t sum, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t i;
    for (i = 0; i + 1 < len; i += 2) {
        sum += get_be16(p + i);
        /* Fold as we go: a 32-bit sum of 64 KiB of 0xffff words would
         * overflow otherwise. */
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if (i < len) {
        sum += (uint32_t)p[i] << 8;
    }
    return sum;
}

uint16_t net_checksum_finish(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

bool net_checksum_insert(uint8_t *frame, size_t len, size_t start, size_t end, size_t offset)
{
    if (len < 2 || start > end || end > len || offset > len - 2) {
        return false;
    }
    /* The field's old contents are summed with the rest when it lies in
     * the range: that is the seed (a pseudo-header sum, or 0) the sender
     * left there, and it must count once. */
    uint16_t csum = net_checksum_finish(net_checksum_add(0, frame + start, end - start));
    put_be16(frame + offset, csum);
    return true;
}
