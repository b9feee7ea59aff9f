#!/usr/bin/env python3
"""make_tiles.py OUT.pcap [FRAMES] - a capture of the made-up "tiles"
stream examples/user_place places (tile_place.c): FRAMES frames (default
8) on streams 0 and 1, each frame's 16 tiles sent in order k = 0..15 with
0 to 2 optional header words, a control packet after every fourth tile.
Tile k of frame f of stream s carries 64 bytes whose values are those of
its place in the frame, (5k + 5) mod 16: byte i of the frame is
(s * 101 + f * 31 + i * 7 + 1) mod 256.  Ethernet, IPv4 and UDP (to port
5000, no UDP checksum) are written here; any pcap reader opens it."""
import struct
import sys

TILES, TILE_BYTES = 16, 64


def frame_byte(stream, frame, i):
    return (stream * 101 + frame * 31 + i * 7 + 1) % 256


def place(k):
    return (5 * k + 5) % TILES


def tiles_payload(stream, frame, k, opt, kind=0):
    hdr = bytes([0x10 | kind, 2 + opt]) + struct.pack(">HBBH", frame, k, stream, TILE_BYTES)
    body = bytes(frame_byte(stream, frame, place(k) * TILE_BYTES + i) for i in range(TILE_BYTES))
    return hdr + b"\xee" * (4 * opt) + body


def ipv4_csum(h):
    s = sum(struct.unpack("!10H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth_ip_udp(payload):
    udp = struct.pack("!HHHH", 4000, 5000, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    ip = ip[:10] + struct.pack("!H", ipv4_csum(ip)) + ip[12:]
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp


def packets(frames):
    for f in range(frames):
        for k in range(TILES):
            for s in (0, 1):
                yield tiles_payload(s, f, k, (f + k) % 3)
                if k % 4 == 3:
                    yield tiles_payload(s, f, k, 0, kind=1)  # control


def main():
    out = sys.argv[1]
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    with open(out, "wb") as w:
        w.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n, p in enumerate(packets(frames)):
            fr = eth_ip_udp(p)
            w.write(struct.pack("<IIII", n // 1000, (n % 1000) * 1000, len(fr), len(fr)))
            w.write(fr)


if __name__ == "__main__":
    main()
