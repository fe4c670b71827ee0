/*
 * Loads and stores of little- and big-endian 16/32/64-bit fields in byte
 * buffers (descriptors, packet headers, SCSI CDBs, boot headers, firmware
 * tables):
 *
 *   uint16_t get_le16(const void *p)    void put_le16(void *p, uint16_t v)
 *   uint32_t get_le32(const void *p)    void put_le32(void *p, uint32_t v)
 *   uint64_t get_le64(const void *p)    void put_le64(void *p, uint64_t v)
 *   uint16_t get_be16(const void *p)    void put_be16(void *p, uint16_t v)
 *   uint32_t get_be32(const void *p)    void put_be32(void *p, uint32_t v)
 *   uint64_t get_be64(const void *p)    void put_be64(void *p, uint64_t v)
 *
 * The pointer need not be aligned: memcpy lets the compiler pick the
 * access, and GLib swaps only when the host's order differs. One macro
 * writes all twelve so that they cannot drift apart.
 */
#ifndef QEMU_BYTE_ORDER_H
#define QEMU_BYTE_ORDER_H

#include <stdint.h>
#include <string.h>
#include <glib.h>

#define QEMU_BYTE_ORDER_ACCESSORS(order, ORDER, bits)                       \
    static inline uint##bits##_t get_##order##bits(const void *p)          \
    {                                                                       \
        uint##bits##_t v;                                                   \
        memcpy(&v, p, sizeof(v));                                           \
        return GUINT##bits##_FROM_##ORDER(v);                               \
    }                                                                       \
    static inline void put_##order##bits(void *p, uint##bits##_t v)         \
    {                                                                       \
        v = GUINT##bits##_TO_##ORDER(v);                                    \
        memcpy(p, &v, sizeof(v));                                           \
    }

QEMU_BYTE_ORDER_ACCESSORS(le, LE, 16)
QEMU_BYTE_ORDER_ACCESSORS(le, LE, 32)
QEMU_BYTE_ORDER_ACCESSORS(le, LE, 64)
QEMU_BYTE_ORDER_ACCESSORS(be, BE, 16)
QEMU_BYTE_ORDER_ACCESSORS(be, BE, 32)
QEMU_BYTE_ORDER_ACCESSORS(be, BE, 64)

#undef QEMU_BYTE_ORDER_ACCESSORS

#endif
