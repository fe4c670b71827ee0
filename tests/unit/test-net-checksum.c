/*
 * The Internet checksum (net/checksum.c) against the plain definition
 * (RFC 1071: 16-bit big-endian words, end-around carry) over every length
 * and alignment, and the TCP packet parser (net/tcp-segment.c) that reads
 * the host's GSO headers, on packets that lie about themselves.
 */
#include <string.h>
#include <glib.h>
#include "net/checksum.h"
#include "net/tcp-segment.h"

/* RFC 1071's definition, word by word. */
static uint16_t reference_sum(uint32_t seed, const uint8_t *p, size_t len)
{
    uint64_t sum = seed;
    for (size_t i = 0; i < len; i += 2) {
        sum += (uint32_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

static void test_checksum_matches_definition(void)
{
    /* RFC 1071, 3: the words 0001 f203 f4f5 f6f7 sum to ddf2. */
    static const uint8_t rfc[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
    g_assert_cmphex(net_checksum_finish(net_checksum_add(0, rfc, sizeof(rfc))), ==,
                    (uint16_t)~0xddf2);
    GRand *rand = g_rand_new_with_seed(1071);
    uint8_t buf[4096 + 8];
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = g_rand_int(rand);
    }
    for (size_t len = 0; len <= 300; len++) {
        for (size_t align = 0; align < 4; align++) {
            uint32_t seed = g_rand_int(rand);
            g_assert_cmphex(net_checksum_finish(net_checksum_add(seed, buf + align, len)), ==,
                            reference_sum(seed, buf + align, len));
        }
    }
    /* All ones: the 64-bit sum must not lose a carry. */
    memset(buf, 0xff, sizeof(buf));
    g_assert_cmphex(net_checksum_finish(net_checksum_add(0xffffffff, buf, 4096)), ==,
                    reference_sum(0xffffffff, buf, 4096));
    /* Sums chain: two halves (the first even) make the whole. */
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = g_rand_int(rand);
    }
    uint32_t half = net_checksum_add(0, buf, 1000);
    g_assert_cmphex(net_checksum_finish(net_checksum_add(half, buf + 1000, 3001)), ==,
                    reference_sum(0, buf, 4001));
    g_rand_free(rand);
}

/* Ethernet, IPv4 (ihl 5) or IPv6, TCP (20 bytes), no payload. */
static size_t tcp_packet(uint8_t *p, bool ipv4)
{
    memset(p, 0, 128);
    if (ipv4) {
        p[12] = 0x08, p[13] = 0x00, p[14] = 0x45, p[23] = 6;
        p[34 + 12] = 5 << 4;
        return 54;
    }
    p[12] = 0x86, p[13] = 0xdd, p[14] = 0x60, p[20] = 6;
    p[54 + 12] = 5 << 4;
    return 74;
}

static void test_tcp_find_headers(void)
{
    uint8_t p[128];
    NetTcpHeaders h;
    const char *why;
    size_t len = tcp_packet(p, true);
    g_assert_true(net_tcp_find_headers(p, len, true, &h, &why));
    g_assert_cmpuint(h.l3, ==, 14);
    g_assert_cmpuint(h.l4, ==, 34);
    g_assert_cmpuint(h.hdr_len, ==, 54);
    g_assert_false(net_tcp_find_headers(p, len, false, &h, &why));     /* not IPv6 */
    g_assert_false(net_tcp_find_headers(p, len - 1, true, &h, &why));  /* TCP cut */
    p[14] = 0x4f;                                       /* 60 bytes of IPv4 header */
    g_assert_false(net_tcp_find_headers(p, len, true, &h, &why));
    p[14] = 0x44;                                       /* fewer than 20 */
    g_assert_false(net_tcp_find_headers(p, len, true, &h, &why));
    p[14] = 0x45, p[20] = 0x20;                         /* more fragments */
    g_assert_false(net_tcp_find_headers(p, len, true, &h, &why));
    p[20] = 0, p[23] = 17;                              /* UDP */
    g_assert_false(net_tcp_find_headers(p, len, true, &h, &why));
    p[23] = 6, p[34 + 12] = 4 << 4;                     /* data offset under 5 */
    g_assert_false(net_tcp_find_headers(p, len, true, &h, &why));
    p[34 + 12] = 6 << 4;                                /* options beyond the packet */
    g_assert_false(net_tcp_find_headers(p, len, true, &h, &why));
    g_assert_true(net_tcp_find_headers(p, len + 4, true, &h, &why));
    g_assert_cmpuint(h.hdr_len, ==, 58);

    len = tcp_packet(p, false);
    g_assert_true(net_tcp_find_headers(p, len, false, &h, &why));
    g_assert_cmpuint(h.l4, ==, 54);
    g_assert_cmpuint(h.hdr_len, ==, 74);
    p[20] = 0;                                          /* an extension header */
    g_assert_false(net_tcp_find_headers(p, len, false, &h, &why));
    p[20] = 6, p[14] = 0x40;                            /* version 4 in an IPv6 frame */
    g_assert_false(net_tcp_find_headers(p, len, false, &h, &why));

    /* A VLAN tag ahead of the IP type; nothing at all. */
    uint8_t v[132];
    len = tcp_packet(v + 4, true);
    memset(v, 0, 12);
    v[12] = 0x81, v[13] = 0x00, v[14] = 0x00, v[15] = 0x05, v[16] = 0x08, v[17] = 0x00;
    g_assert_true(net_tcp_find_headers(v, len + 4, true, &h, &why));
    g_assert_cmpuint(h.l3, ==, 18);
    g_assert_false(net_tcp_find_headers(v, 0, true, &h, &why));
    g_assert_nonnull(why);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net/checksum-matches-definition", test_checksum_matches_definition);
    g_test_add_func("/net/tcp-find-headers", test_tcp_find_headers);
    return g_test_run();
}
