/*
 * The Internet checksum (RFC 1071) as NICs compute it for offloads: e1000's
 * TX context descriptors (CSS/CSO/CSE) and virtio-net's NEEDS_CSUM
 * (csum_start/csum_offset) both ask "sum these bytes, store the folded
 * complement there".
 */
#ifndef NET_CHECKSUM_H
#define NET_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Add len bytes at data, as big-endian 16-bit words (an odd last byte is
 * the high half of a word), to the 32-bit running sum. */
uint32_t net_checksum_add(uint32_t sum, const void *data, size_t len);
/* Fold sum to 16 bits and complement it: the value to store, in host order
 * (store it big-endian). */
uint16_t net_checksum_finish(uint32_t sum);
/*
 * Sum frame[start, end), the 16 bits at frame[offset] included as they are
 * when they lie inside (the seed the sender left there: a pseudo-header
 * sum, or 0), and store the checksum at frame[offset], big-endian. False,
 * with nothing written, unless start <= end <= len and offset + 2 <= len:
 * the values come from the guest.
 */
bool net_checksum_insert(uint8_t *frame, size_t len, size_t start, size_t end, size_t offset);

#endif
