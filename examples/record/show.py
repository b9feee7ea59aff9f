#!/usr/bin/python3
"""show.py FILE.h5 [PLOT.png] - what a vfgx recording holds, read with h5py
only: per stream the chunks, how many arrived whole, the missing packets,
and the first bytes of the first chunk; with PLOT.png, the packets that
arrived per chunk (matplotlib)."""
import sys

import h5py
import numpy as np

f = h5py.File(sys.argv[1], "r")
print("%s: profile %s, vfgx %s, %d packets x %d bytes per chunk"
      % (sys.argv[1], f.attrs["profile"], f.attrs["vfgx_version"],
         f.attrs["packets"], f.attrs["payload_bytes"]))
total = 0
for name in sorted(f):
    g = f[name]
    n = int(g.attrs["chunks"])  # the rows written whole
    flags, missing = g["flags"][:n], g["missing"][:n]
    total += n
    print("%s: %d chunks, %d complete, %d packets missing; chunk 0 slot 0: %s"
          % (name, n, int(np.count_nonzero(flags & 1)), int(missing.sum()),
             " ".join("%02x" % b for b in g["data"][0, 0, :8])))
print("total: %d chunks" % total)
if len(sys.argv) > 2:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for name in sorted(f):
        g = f[name]
        n = int(g.attrs["chunks"])
        plt.plot(g["index"][:n], g["present_count"][:n], label=name)
    plt.xlabel("chunk index")
    plt.ylabel("packets arrived")
    plt.legend()
    plt.savefig(sys.argv[2])
