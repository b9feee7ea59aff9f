"""vfgx.record - read raw recordings of `vfgx run --record` (docs/record.md)
as NumPy arrays, without libvfgx: the sidecar PATH.index.jsonl (a header
line, then one line per chunk written once the chunk's data was on file)
and the data file it describes (fixed-size records: payload slots, present
bitmap, lengths at the header's offsets; format versions 1 to 3).  Only
bytes [0, lens[i]) of a slot whose present bit is set are the packet's:
the rest holds what the ring buffer held before.  HDF5 recordings open
with h5py directly.

    rec = vfgx.record.open_raw("run.raw")
    s = rec.stream(0)
    s.data      # (chunks, packets, payload_bytes) uint8
    s.present   # (chunks, packets) bool: slot i of chunk k arrived
    s.lens      # (chunks, packets) uint32 payload lengths
    s.index, s.first, s.flags, s.missing, s.present_count, s.ready_ns
    s.first_seq, s.hdr_ts, s.bytes, s.missing_bytes, s.hdr_flags
                # from the producer's header (pipeline.format; version 3;
                # zeros in files of versions 1 and 2)
    rec.profile # pipeline.format's profile ("vfgx": vfgx's own header)
"""
import json
import os

import numpy as np

__all__ = ["open_raw", "RawRecording", "RawStream"]

# the flags of struct vfgx_chunk (include/vfgx/chunk.h)
COMPLETE, BY_DISTANCE, BY_TIMEOUT, BY_RING, BY_END = 0x1, 0x2, 0x4, 0x8, 0x10

# 1: bitmap and lengths packed after the slots; 2: the chunk ring slot's
# layout (docs/record.md); 3: the header's metadata per chunk (first_seq,
# hdr_ts, bytes, missing_bytes, hdr_flags) and profile = pipeline.format's;
# all read through the header's offsets
_VERSIONS = (1, 2, 3)
# hdr_flags (include/vfgx/chunk.h)
HDR_TS, ENDED = 0x1, 0x2

_META = ("index", "first", "offset", "present_count", "missing", "flags",
         "ready_ns", "last_packet_ns", "late", "first_seq", "hdr_ts", "bytes",
         "missing_bytes", "hdr_flags")


class RawStream:
    """One stream's chunks, in index order, as arrays."""

    def __init__(self, rec, lines):
        lines = sorted(lines, key=lambda d: d["index"])
        for key in _META:
            setattr(self, key, np.array([d.get(key, 0) for d in lines], dtype=np.uint64))
        rows = (self.offset // rec.header["record_bytes"]).astype(np.intp)
        recs = rec._records()
        self.data = np.ascontiguousarray(recs["data"][rows]) if len(rows) else \
            np.zeros((0, rec.packets, rec.payload_bytes), np.uint8)
        words = np.ascontiguousarray(recs["present"][rows]) if len(rows) else \
            np.zeros((0, rec.header["present_words"]), np.uint64)
        self.present_words = words
        bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
        self.present = bits[:, :rec.packets].astype(bool)
        self.lens = np.ascontiguousarray(recs["lens"][rows]) if len(rows) else \
            np.zeros((0, rec.packets), np.uint32)

    def __len__(self):
        return len(self.index)


class RawRecording:
    """A raw recording: header (the index's first line), chunks (one dict
    per chunk line), stopped (the line that stopped the recording, or
    None), and stream(s) for one stream's arrays."""

    def __init__(self, path):
        if path.endswith(".index.jsonl"):
            path = path[:-len(".index.jsonl")]
        self.path = path
        self.index_path = path + ".index.jsonl"
        with open(self.index_path, "rb") as f:
            text = f.read()
        lines = text.split(b"\n")
        # the last element is b"" after a final newline, else a line cut
        # short by a crash: only whole lines count
        lines = lines[:-1]
        if not lines:
            raise ValueError("%s: no header line (not a vfgx raw index)" % self.index_path)
        self.header = json.loads(lines[0])
        if self.header.get("format") != "raw" or "vfgx_version" not in self.header:
            raise ValueError("%s: not a vfgx raw index (format %r, vfgx_version %r)"
                             % (self.index_path, self.header.get("format"),
                                self.header.get("vfgx_version")))
        if self.header.get("format_version") not in _VERSIONS:
            raise ValueError("%s: raw format version %r; this reader takes %s (a newer vfgx wrote it?)"
                             % (self.index_path, self.header.get("format_version"),
                                ", ".join(map(str, _VERSIONS))))
        self.packets = self.header["packets"]
        self.payload_bytes = self.header["payload_bytes"]
        self.config = self.header.get("config")
        self.profile = self.header.get("profile", "vfgx")
        self.chunks, self.stopped = [], None
        for line in lines[1:]:
            d = json.loads(line)
            if "stopped" in d:
                self.stopped = d["stopped"]
            else:
                self.chunks.append(d)
        self._recs = None

    def _records(self):
        if self._recs is None:
            h = self.header
            rb = h["record_bytes"]
            dt = np.dtype({"names": ["data", "present", "lens"],
                           "formats": [(np.uint8, (self.packets, self.payload_bytes)),
                                       (np.uint64, (h["present_words"],)),
                                       (np.uint32, (self.packets,))],
                           "offsets": [h["data_offset"], h["present_offset"], h["lens_offset"]],
                           "itemsize": rb})
            n = os.path.getsize(self.path) // rb
            self._recs = np.memmap(self.path, dtype=dt, mode="r", shape=(n,)) if n else \
                np.zeros(0, dtype=dt)
        return self._recs

    def streams(self):
        return sorted({d["stream"] for d in self.chunks})

    def stream(self, s):
        return RawStream(self, [d for d in self.chunks if d["stream"] == s])


def open_raw(path):
    """Open a raw recording by its data file or its .index.jsonl."""
    return RawRecording(path)
