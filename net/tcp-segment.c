/*
 * Cutting a large TCP packet into segments (include/net/tcp-segment.h).
 */
#include "net/tcp-segment.h"
#include "net/checksum.h"
#include "qemu/byte-order.h"

#define ETH_HLEN            14
#define ETH_TYPE            12
#define VLAN_TAG_LEN        4
#define ETHERTYPE_IPV4      0x0800
#define ETHERTYPE_IPV6      0x86dd
#define ETHERTYPE_VLAN      0x8100
#define IPPROTO_TCP_NR      6
#define IPV4_MIN_HDR        20
#define IPV4_TOTAL_LEN      2
#define IPV4_ID             4
#define IPV4_FRAG           6
#define IPV4_PROTO          9
#define IPV4_CSUM           10
#define IPV4_ADDRS          12
#define IPV6_HDR            40
#define IPV6_PAYLOAD_LEN    4
#define IPV6_NEXT_HDR       6
#define IPV6_ADDRS          8
#define TCP_MIN_HDR         20
#define TCP_SEQ             4
#define TCP_DATA_OFFSET     12
#define TCP_FLAGS           13
#define TCP_CSUM            16
#define TCP_FLAG_FIN        0x01
#define TCP_FLAG_PSH        0x08

bool net_tcp_find_headers(const uint8_t *frame, size_t len, bool ipv4, NetTcpHeaders *h,
                          const char **why)
{
    size_t l3 = ETH_HLEN;
    if (len >= ETH_HLEN + VLAN_TAG_LEN && get_be16(frame + ETH_TYPE) == ETHERTYPE_VLAN) {
        l3 += VLAN_TAG_LEN;
    }
    if (len < l3 || get_be16(frame + l3 - 2) != (ipv4 ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6)) {
        *why = "not the IP version its type says";
        return false;
    }
    size_t l4;
    const uint8_t *ip = frame + l3;
    if (ipv4) {
        if (len < l3 + IPV4_MIN_HDR || (ip[0] >> 4) != 4 || (ip[0] & 0xf) < 5 ||
            len < l3 + (ip[0] & 0xf) * 4u) {
            *why = "a bad IPv4 header";
            return false;
        }
        if (ip[IPV4_PROTO] != IPPROTO_TCP_NR || (get_be16(ip + IPV4_FRAG) & 0x3fff)) {
            *why = "not TCP, or a fragment";
            return false;
        }
        l4 = l3 + (ip[0] & 0xf) * 4u;
    } else {
        if (len < l3 + IPV6_HDR || (ip[0] >> 4) != 6 || ip[IPV6_NEXT_HDR] != IPPROTO_TCP_NR) {
            *why = "a bad IPv6 header, or not TCP right after it";
            return false;
        }
        l4 = l3 + IPV6_HDR;
    }
    if (len < l4 + TCP_MIN_HDR) {
        *why = "a cut TCP header";
        return false;
    }
    size_t tcp_hdr = (frame[l4 + TCP_DATA_OFFSET] >> 4) * 4u;
    if (tcp_hdr < TCP_MIN_HDR || len < l4 + tcp_hdr) {
        *why = "a bad TCP data offset";
        return false;
    }
    *h = (NetTcpHeaders) { .l3 = l3, .l4 = l4, .hdr_len = l4 + tcp_hdr, .ipv4 = ipv4 };
    return true;
}

void net_ip_segment_fields(uint8_t *seg, size_t seg_len, size_t l3, bool ipv4, unsigned index)
{
    uint8_t *ip = seg + l3;
    if (ipv4) {
        put_be16(ip + IPV4_TOTAL_LEN, seg_len - l3);
        put_be16(ip + IPV4_ID, get_be16(ip + IPV4_ID) + index);
    } else {
        put_be16(ip + IPV6_PAYLOAD_LEN, seg_len - l3 - IPV6_HDR);
    }
}

void net_tcp_segment_fields(uint8_t *seg, size_t seg_len, const NetTcpHeaders *h,
                            unsigned index, uint32_t offset, bool last)
{
    net_ip_segment_fields(seg, seg_len, h->l3, h->ipv4, index);
    uint8_t *tcp = seg + h->l4;
    put_be32(tcp + TCP_SEQ, get_be32(tcp + TCP_SEQ) + offset);
    if (!last) {
        tcp[TCP_FLAGS] &= ~(TCP_FLAG_FIN | TCP_FLAG_PSH);
    }
}

void net_ipv4_fill_header_checksum(uint8_t *ip, size_t ihl)
{
    put_be16(ip + IPV4_CSUM, 0);
    put_be16(ip + IPV4_CSUM, net_checksum_finish(net_checksum_add(0, ip, ihl)));
}

void net_tcp_fill_checksums(uint8_t *seg, size_t seg_len, const NetTcpHeaders *h)
{
    uint8_t *ip = seg + h->l3;
    uint32_t pseudo;
    if (h->ipv4) {
        net_ipv4_fill_header_checksum(ip, h->l4 - h->l3);
        pseudo = net_checksum_add(0, ip + IPV4_ADDRS, 8);
    } else {
        pseudo = net_checksum_add(0, ip + IPV6_ADDRS, 32);
    }
    size_t tcp_len = seg_len - h->l4;
    put_be16(seg + h->l4 + TCP_CSUM, 0);
    uint32_t sum = net_checksum_add(pseudo + IPPROTO_TCP_NR + (uint32_t)tcp_len, seg + h->l4,
                                    tcp_len);
    put_be16(seg + h->l4 + TCP_CSUM, net_checksum_finish(sum));
}
