#!/usr/bin/python3
"""frames.py FILE.h5 [IMAGE.png] [--width W --height H] - the frames
examples/rtp_video/receive.sh recorded, read with h5py into NumPy: one
line a frame (its RTP timestamp, complete or what is missing), and the
first complete frame written as a PNG by GStreamer (rawvideoparse !
videoconvert ! pngenc)."""
import argparse
import subprocess
import sys
import tempfile

import h5py
import numpy as np

COMPLETE, HDR_TS = 0x1, 0x1  # struct vfgx_chunk flags, hdr_flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("image", nargs="?")
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    a = ap.parse_args()
    frame_bytes = a.width * a.height * 2  # UYVY: 2 bytes a pixel
    with h5py.File(a.file, "r") as f:
        print("profile %s, vfgx %s" % (f.attrs["profile"], f.attrs["vfgx_version"]))
        g = f["stream0"]
        n = int(g.attrs["chunks"])  # the rows written in full
        flags, hflags = g["flags"][:n], g["hdr_flags"][:n]
        ts, nbytes, missing = g["hdr_ts"][:n], g["bytes"][:n], g["missing_bytes"][:n]
        shown = None
        for i in range(n):
            ok = bool(flags[i] & COMPLETE)
            print("frame %d: rtp timestamp %s, %d bytes, %s"
                  % (int(g["index"][i]), int(ts[i]) if hflags[i] & HDR_TS else "-", int(nbytes[i]),
                     "complete" if ok else "%d bytes missing" % int(missing[i])))
            if ok and shown is None and nbytes[i] == frame_bytes:
                # the chunk's bytes are the frame, line after line
                shown = g["data"][i].reshape(-1)[:frame_bytes].reshape(a.height, a.width * 2)
        print("%d frames, %d complete" % (n, int((flags & COMPLETE).astype(bool).sum())))
    if a.image:
        if shown is None:
            sys.exit("frames.py: no complete frame to write")
        with tempfile.NamedTemporaryFile(suffix=".uyvy") as t:
            t.write(np.ascontiguousarray(shown).tobytes())
            t.flush()
            subprocess.run(["gst-launch-1.0", "-q", "filesrc", "location=" + t.name, "!",
                            "rawvideoparse", "format=uyvy", "width=%d" % a.width,
                            "height=%d" % a.height, "!", "videoconvert", "!", "pngenc", "!",
                            "filesink", "location=" + a.image], check=True)
        print("wrote", a.image)


if __name__ == "__main__":
    main()
