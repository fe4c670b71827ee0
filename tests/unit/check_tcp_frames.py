#!/usr/bin/env python3
"""An independent check of the TCP frames a NIC model sent (test-e1000).

Usage: check_tcp_frames.py DIR

DIR holds spec.json and the frames as 000.bin, 001.bin... in the order the
model sent them. spec.json says what the guest asked for:
  ipv          4 or 6
  mss          payload bytes per segment (the last may be shorter)
  payload_len  bytes of TCP payload in all
  seq          the first segment's sequence number
  ip_id        the first segment's IPv4 identification
  flags        the TCP flags the guest's header carried
  seed         payload byte j is (j * 131 + seed) & 0xff

Every frame is checked with Python's standard library only: Ethernet type,
IP header (version, lengths, IPv4 id and header checksum, IPv6 payload
length), TCP sequence number, flags (FIN and PSH only on the last
segment), the TCP checksum over the pseudo-header, and the payload bytes.
Exit status 0 if all is well; otherwise each problem is printed.
"""
import json
import os
import struct
import sys

FIN, PSH = 0x01, 0x08


def ones_sum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def check_frame(spec, index, count, frame, problems):
    def bad(msg):
        problems.append("frame %d: %s" % (index, msg))

    ethertype = struct.unpack("!H", frame[12:14])[0]
    ip = frame[14:]
    if spec["ipv"] == 4:
        if ethertype != 0x0800 or ip[0] >> 4 != 4:
            return bad("not IPv4 (type 0x%04x)" % ethertype)
        ihl = (ip[0] & 15) * 4
        total_len, ident = struct.unpack("!HH", ip[2:6])
        if total_len != len(ip):
            bad("IPv4 total length %d, frame carries %d" % (total_len, len(ip)))
        if ident != (spec["ip_id"] + index) & 0xFFFF:
            bad("IPv4 id 0x%04x, expected 0x%04x" % (ident, (spec["ip_id"] + index) & 0xFFFF))
        if ones_sum(ip[:ihl]) != 0xFFFF:
            bad("IPv4 header checksum wrong")
        if ip[9] != 6:
            bad("IPv4 protocol %d is not TCP" % ip[9])
        pseudo = ip[12:20] + struct.pack("!HH", 6, len(ip) - ihl)
        tcp = ip[ihl:]
    else:
        if ethertype != 0x86DD or ip[0] >> 4 != 6:
            return bad("not IPv6 (type 0x%04x)" % ethertype)
        payload_len, next_header = struct.unpack("!HB", ip[4:7])
        if payload_len != len(ip) - 40:
            bad("IPv6 payload length %d, frame carries %d" % (payload_len, len(ip) - 40))
        if next_header != 6:
            bad("IPv6 next header %d is not TCP" % next_header)
        tcp = ip[40:]
        pseudo = ip[8:40] + struct.pack("!IxxxB", len(tcp), 6)
    seq = struct.unpack("!I", tcp[4:8])[0]
    data_off = (tcp[12] >> 4) * 4
    flags = tcp[13]
    offset = index * spec["mss"]
    if seq != (spec["seq"] + offset) & 0xFFFFFFFF:
        bad("TCP seq 0x%08x, expected 0x%08x" % (seq, (spec["seq"] + offset) & 0xFFFFFFFF))
    want_flags = spec["flags"] if index == count - 1 else spec["flags"] & ~(FIN | PSH)
    if flags != want_flags:
        bad("TCP flags 0x%02x, expected 0x%02x" % (flags, want_flags))
    if ones_sum(pseudo + tcp) != 0xFFFF:
        bad("TCP checksum wrong")
    payload = tcp[data_off:]
    want_len = min(spec["mss"], spec["payload_len"] - offset)
    if len(payload) != want_len:
        bad("payload of %d bytes, expected %d" % (len(payload), want_len))
    want = bytes(((offset + j) * 131 + spec["seed"]) & 0xFF for j in range(len(payload)))
    if payload != want:
        bad("payload bytes differ from the guest's")


def main():
    directory = sys.argv[1]
    with open(os.path.join(directory, "spec.json")) as f:
        spec = json.load(f)
    names = sorted(n for n in os.listdir(directory) if n.endswith(".bin"))
    count = -(-spec["payload_len"] // spec["mss"]) or 1
    problems = []
    if len(names) != count:
        problems.append("%d frames, expected %d" % (len(names), count))
    for index, name in enumerate(names):
        with open(os.path.join(directory, name), "rb") as f:
            check_frame(spec, index, len(names), f.read(), problems)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
