"""A recording's chunk rows as dicts, for the recording tests
(tests/cli/test_record.py, tests/python/test_record.py): HDF5 read with
h5py, raw files with the package's reader (vfgx.record), neither through
vfgx's writer.  Each test names the per-chunk metadata fields it checks
(`keys`); every row also carries its present bitmap, lengths and data.
And the oracle beside both readers: the raw files parsed here from the
documented layout alone."""
import json

import numpy as np

import vfgx.record


def h5_rows(f, s, keys):
    """Stream s's rows of an open h5py.File."""
    g = f["stream%d" % s]
    n = int(g.attrs["chunks"])
    cols = {k: g[k][:n] for k in keys}
    pres, lens, data = g["present"][:n], g["lens"][:n], g["data"][:n]
    return [dict({k: int(cols[k][j]) for k in keys}, present=pres[j], lens=lens[j], data=data[j])
            for j in range(n)]


def raw_rows(path, s, keys):
    """Stream s's rows of the raw recording at path."""
    st = vfgx.record.open_raw(path).stream(s)
    cols = {k: getattr(st, k) for k in keys}
    return [dict({k: int(cols[k][j]) for k in keys}, present=st.present_words[j], lens=st.lens[j],
                 data=st.data[j])
            for j in range(len(st))]


def raw_plain(path):
    """The raw recording at path parsed here, from docs/record.md's layout
    (no vfgx code): (the index's header line, {stream: rows}), the rows in
    the order the index lists them (the order the writes completed)."""
    with open(path + ".index.jsonl") as f:
        lines = f.read().split("\n")[:-1]
    h = json.loads(lines[0])
    out = {}
    with open(path, "rb") as f:
        for line in lines[1:]:
            d = json.loads(line)
            if "stopped" in d:
                continue
            f.seek(d["offset"])
            b = f.read(h["record_bytes"])
            if len(b) != h["record_bytes"]:
                raise ValueError("chunk past the data file's end")
            p, n, w = h["packets"], h["payload_bytes"], h["present_words"]
            d["data"] = np.frombuffer(b, np.uint8, p * n, h["data_offset"]).reshape(p, n)
            d["present"] = np.frombuffer(b, "<u8", w, h["present_offset"])
            d["lens"] = np.frombuffer(b, "<u4", p, h["lens_offset"])
            out.setdefault(d["stream"], []).append(d)
    return h, out
