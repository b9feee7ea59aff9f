#!/usr/bin/env python3
"""python_consumer.py - the Python side of `vfgx bench python`: consume
chunks for --seconds from the config on stdin, touching each chunk once
with a NumPy reduction (host) or handing it to CuPy (--gpu: the time from
the chunk becoming ready to a CuPy array over it), and print one line:

    chunks N seconds S chunks_per_s R [handoff_us_median M]
"""
import argparse
import sys
import time

import numpy as np

import vfgx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--gpu", action="store_true")
    a = ap.parse_args()
    config = sys.stdin.read()
    if a.gpu:
        import cupy as cp
    n = 0
    handoff = []
    with vfgx.Pipeline(config) as p:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < a.seconds:
            # polling, as a consumer that owns a core does
            chunk = p.get(timeout=0)
            if chunk is None:
                continue
            if a.gpu:
                x = cp.from_dlpack(chunk)
                handoff.append((vfgx.now_ns() - chunk.ready_ns) / 1e3)
                del x
            else:
                d = chunk.data
                d.view("<u8").sum()  # the C side sums the same 64-bit words
                del d
            chunk.release()
            n += 1
        secs = time.perf_counter() - t0
    line = "chunks %d seconds %.3f chunks_per_s %.1f" % (n, secs, n / secs)
    if handoff:
        line += " handoff_us_median %.2f" % float(np.median(handoff))
    print(line, flush=True)


if __name__ == "__main__":
    main()
