#!/usr/bin/python3
"""record.py FILE.h5|FILE.raw - the Python side of examples/record: record
the loopback generator's chunks in one call (Pipeline.record), then print
from the file: HDF5 read with h5py, raw files with vfgx.record (NumPy).

    PYTHONPATH=build/python python3 examples/record/record.py run.h5
"""
import sys

import numpy as np

import vfgx

CONFIG = """
interfaces:
  - backend: loopback
    loopback: { packets: 100000, flows: 2, loss: 0.01 }
pipeline:
  device: cpu
  chunks: { payload_bytes: 512, packets: 256, streams: 2, in_flight: 8 }
"""


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: record.py FILE.h5|FILE.raw")
    path = sys.argv[1]
    st = vfgx.Pipeline(CONFIG).record(path)  # HDF5 for .h5, raw otherwise
    print("recorded %d chunks, %d not recorded, %d files, %.1f MiB%s"
          % (st["recorded"], st["not_recorded"], st["files"], st["bytes"] / 2**20,
             "; stopped: " + st["error"] if st["error"] else ""))
    total = 0
    if path.endswith((".h5", ".hdf5")):
        import h5py
        with h5py.File(path, "r") as f:
            for name in sorted(f):
                g = f[name]
                n = int(g.attrs["chunks"])  # the rows written whole
                total += n
                print("%s: %d chunks, %d complete, %d packets missing; chunk 0 slot 0: %s"
                      % (name, n, int(np.count_nonzero(g["flags"][:n] & vfgx.CHUNK_COMPLETE)),
                         int(g["missing"][:n].sum()),
                         " ".join("%02x" % b for b in g["data"][0, 0, :8])))
    else:
        from vfgx import record as vfgx_record
        rec = vfgx_record.open_raw(path)
        for s in range(rec.header["streams"]):
            st_ = rec.stream(s)
            if not len(st_):
                continue
            total += len(st_)
            print("stream%d: %d chunks, %d complete, %d packets missing; chunk 0 slot 0: %s"
                  % (s, len(st_), int(np.count_nonzero(st_.flags & vfgx.CHUNK_COMPLETE)),
                     int(st_.missing.sum()), " ".join("%02x" % b for b in st_.data[0, 0, :8])))
    print("file: %d chunks" % total)


if __name__ == "__main__":
    main()
