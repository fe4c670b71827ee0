/*
 * The Internet checksum (include/net/checksum.h).
 */
#include <stdbool.h>
#include <string.h>
#include "net/checksum.h"
#include "qemu/byte-order.h"

/*
 * The sum of the 16-bit words in [p, p + len), len a multiple of 4, folded
 * to 16 bits, as big-endian words. It runs over every received and
 * segmented frame, so it adds 32 bits at a time into 64 in the host's byte
 * order: the ones' complement sum does not care where the carries of the
 * halves go (2^16 is 1 modulo 0xffff), and summing byte-swapped words gives
 * the byte-swapped sum (RFC 1071, 2.(B)).
 */
static uint32_t net_checksum_words(const uint8_t *p, size_t len)
{
    uint64_t acc = 0;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t w;
        memcpy(&w, p + i, sizeof(w));
        acc += w;
    }
    while (acc >> 16) {
        acc = (acc & 0xffff) + (acc >> 16);
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    acc = ((acc & 0xff) << 8) | (acc >> 8);
#endif
    return acc;
}

uint32_t net_checksum_add(uint32_t sum, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t words = len & ~(size_t)3;
    /* Fold what came in: the caller's sum may be any 32-bit value. */
    sum = (sum & 0xffff) + (sum >> 16) + net_checksum_words(p, words);
    for (size_t i = words; i + 1 < len; i += 2) {
        sum += get_be16(p + i);
    }
    if (len & 1) {
        sum += (uint32_t)p[len - 1] << 8;
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
