/*
 * include/qemu/byte-order.h: each load reads its bytes in the order it
 * names, each store writes them so and touches nothing else, at an
 * odd (unaligned) address. The expected values are spelled out byte by
 * byte, not computed with the code under test.
 */
#include <string.h>
#include <glib.h>
#include "qemu/byte-order.h"

/* The buffer holds 0x11 0x22 ... 0x88 from offset 1 (odd on purpose). */
static void fill(uint8_t buf[10])
{
    memset(buf, 0xee, 10);
    for (unsigned i = 0; i < 8; i++) {
        buf[1 + i] = 0x11 * (i + 1);
    }
}

static void test_loads(void)
{
    uint8_t buf[10];
    fill(buf);
    g_assert_cmphex(get_le16(buf + 1), ==, 0x2211);
    g_assert_cmphex(get_le32(buf + 1), ==, 0x44332211);
    g_assert_cmphex(get_le64(buf + 1), ==, 0x8877665544332211ULL);
    g_assert_cmphex(get_be16(buf + 1), ==, 0x1122);
    g_assert_cmphex(get_be32(buf + 1), ==, 0x11223344);
    g_assert_cmphex(get_be64(buf + 1), ==, 0x1122334455667788ULL);
}

/* Store into a buffer of 0xee and compare all ten bytes with want. */
static void check_store(void (*store)(uint8_t *p), const uint8_t want[10])
{
    uint8_t buf[10];
    memset(buf, 0xee, sizeof(buf));
    store(buf + 1);
    g_assert_cmpmem(buf, sizeof(buf), want, 10);
}

static void store_le16(uint8_t *p) { put_le16(p, 0x2211); }
static void store_le32(uint8_t *p) { put_le32(p, 0x44332211); }
static void store_le64(uint8_t *p) { put_le64(p, 0x8877665544332211ULL); }
static void store_be16(uint8_t *p) { put_be16(p, 0x1122); }
static void store_be32(uint8_t *p) { put_be32(p, 0x11223344); }
static void store_be64(uint8_t *p) { put_be64(p, 0x1122334455667788ULL); }

static void test_stores(void)
{
    static const uint8_t e = 0xee;
    check_store(store_le16, (const uint8_t[10]) { e, 0x11, 0x22, e, e, e, e, e, e, e });
    check_store(store_le32, (const uint8_t[10]) { e, 0x11, 0x22, 0x33, 0x44, e, e, e, e, e });
    check_store(store_le64, (const uint8_t[10]) { e, 0x11, 0x22, 0x33, 0x44,
                                                  0x55, 0x66, 0x77, 0x88, e });
    check_store(store_be16, (const uint8_t[10]) { e, 0x11, 0x22, e, e, e, e, e, e, e });
    check_store(store_be32, (const uint8_t[10]) { e, 0x11, 0x22, 0x33, 0x44, e, e, e, e, e });
    check_store(store_be64, (const uint8_t[10]) { e, 0x11, 0x22, 0x33, 0x44,
                                                  0x55, 0x66, 0x77, 0x88, e });
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/byte-order/loads", test_loads);
    g_test_add_func("/byte-order/stores", test_stores);
    return g_test_run();
}
