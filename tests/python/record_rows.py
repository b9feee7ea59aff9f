"""A recording's chunk rows as dicts, for the recording tests
(tests/cli/test_record.py, tests/python/test_record.py): HDF5 read with
h5py, raw files with the package's reader (vfgx.record), neither through
vfgx's writer.  Each test names the per-chunk metadata fields it checks
(`keys`); every row also carries its present bitmap, lengths and data."""
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
