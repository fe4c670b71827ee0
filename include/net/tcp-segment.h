/*
 * Cutting a large TCP packet (TSO, GSO) into segments: finding its headers,
 * the fields that differ from one segment to the next, and the checksums
 * of a segment built from scratch. The e1000 uses it both ways: the
 * guest's TSO sends (hw/net/e1000-tx.c) and the host's GSO packets a tap
 * hands over (hw/net/e1000-rx-offload.c).
 */
#ifndef NET_TCP_SEGMENT_H
#define NET_TCP_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the headers of a TCP/IP packet are. */
typedef struct NetTcpHeaders {
    size_t l3;                  /* the IP header */
    size_t l4;                  /* the TCP header */
    size_t hdr_len;             /* every header: where the payload starts */
    bool ipv4;                  /* else IPv6 */
} NetTcpHeaders;

/*
 * Find the headers of an Ethernet frame (one VLAN tag allowed) carrying
 * TCP over IPv4 (ipv4) or IPv6 with no extension header, checked as
 * untrusted input: versions, IPv4 header length, protocol, TCP data offset,
 * every header inside the len bytes, no IPv4 fragment. False: not such a
 * packet, *why says what is wrong.
 */
bool net_tcp_find_headers(const uint8_t *frame, size_t len, bool ipv4, NetTcpHeaders *h,
                          const char **why);

/* The IP header's share of that (for a UDP segment too): the IPv4 total
 * length and identification (the packet's plus index), or the IPv6
 * payload length, of a segment of seg_len bytes whose IP header is at l3. */
void net_ip_segment_fields(uint8_t *seg, size_t seg_len, size_t l3, bool ipv4, unsigned index);

/*
 * In segment `index` of a packet (seg: its headers copied from the
 * packet's, then its payload; seg_len bytes in all), whose payload starts
 * `offset` bytes into the packet's payload: the IPv4 total length and
 * identification (the packet's plus index) or the IPv6 payload length, the
 * TCP sequence number (plus offset), and FIN and PSH cleared unless it is
 * the last segment.
 */
void net_tcp_segment_fields(uint8_t *seg, size_t seg_len, const NetTcpHeaders *h,
                            unsigned index, uint32_t offset, bool last);

/* Compute and store the checksum of the IPv4 header at ip, ihl bytes long,
 * whatever its field held. */
void net_ipv4_fill_header_checksum(uint8_t *ip, size_t ihl);

/* Compute and store the IPv4 header checksum (IPv4) and the TCP checksum
 * over the pseudo-header, whatever the fields held. */
void net_tcp_fill_checksums(uint8_t *seg, size_t seg_len, const NetTcpHeaders *h);

#endif
