#!/usr/bin/env python3
"""udp_send.py PORT COUNT [SIZE] - once something listens on UDP
127.0.0.1:PORT (ss), send COUNT datagrams of stream 0, seq 0..COUNT-1 in
the loopback generator's format (16-byte big-endian app header, then
vfgx_pattern_byte), paced so the receiver's socket buffer never overflows.
Exit 1 when nothing listened within 20 s."""
import socket
import struct
import subprocess
import sys
import time

port, count = int(sys.argv[1]), int(sys.argv[2])
size = int(sys.argv[3]) if len(sys.argv) > 3 else 256
deadline = time.monotonic() + 20
while subprocess.run(["ss", "-Hnul", "sport = :%d" % port], capture_output=True,
                     text=True).stdout.strip() == "":
    if time.monotonic() > deadline:
        sys.exit("udp_send: nothing listens on 127.0.0.1:%d" % port)
    time.sleep(0.05)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for seq in range(count):
    body = bytes((seq * 7 + j * 13 + 1) & 0xFF for j in range(size))
    s.sendto(struct.pack(">IIQ", 0, 0, seq) + body, ("127.0.0.1", port))
    if seq % 64 == 63:
        time.sleep(0.001)
