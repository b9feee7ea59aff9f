#!/usr/bin/env python3
"""numpy_consumer.py - chunks as NumPy arrays, without a copy.

The loopback generator (4 streams, some loss and reordering) feeds a
pipeline whose records go into chunks of 256 packets in host memory; each
chunk arrives here as a (packets x payload_bytes) uint8 array over the
pipeline's own memory.  For every chunk we check the slots that arrived
against the generator's pattern, keep a per-stream byte sum, and give the
chunk back.

    PYTHONPATH=build/python python3 examples/python/numpy_consumer.py
"""
import sys

import numpy as np

import vfgx

CONFIG = {
    "interfaces": [{"backend": "loopback",
                    "loopback": {"packets": 200000, "flows": 4, "loss": 0.001, "reorder": 0.01}}],
    "pipeline": {"device": "cpu",
                 "chunks": {"payload_bytes": 512, "packets": 256, "streams": 4, "in_flight": 8}},
}


def main():
    sums = np.zeros(4, dtype=np.uint64)
    bad = chunks = 0
    with vfgx.Pipeline(CONFIG) as p:
        for chunk in p.chunks(timeout=2.0):
            with chunk:
                data, present, lens = chunk.data, chunk.present, chunk.lens
                sums[chunk.stream] += data[present].sum(dtype=np.uint64)
                for i in np.flatnonzero(present):
                    want = vfgx.pattern(chunk.stream, chunk.seq + int(i), int(lens[i]))
                    bad += data[i, : lens[i]].tobytes() != want
                del data  # the chunk goes back only when no array views it
                chunks += 1
        stats = p.chunk_stats()
    print("numpy_consumer: %d chunks (%d complete, %d slots missing), %d bad slots, "
          "byte sums per stream %s" % (chunks, stats["complete"], stats["missing"], bad,
                                       sums.tolist()))
    return 1 if bad or not chunks else 0


if __name__ == "__main__":
    sys.exit(main())
