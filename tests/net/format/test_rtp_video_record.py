#!/usr/bin/env python3
"""test_rtp_video_record.py VFGX hdf5|no-hdf5 - examples/rtp_video end to end: GStreamer's
RFC 4175 video into `vfgx run` (pipeline.format rtp-video, chunks) recorded
to HDF5, read back with h5py by the example's frames.py.

Runs in a private network namespace (its own 127.0.0.1:5004), with tcpdump
capturing what GStreamer sent.  The oracles are programs nobody here wrote:
  - every frame on file is byte for byte the frame GStreamer's
    `videotestsrc ! filesink` writes for the same caps and frame count, in
    order, flagged complete with no byte missing;
  - each frame's recorded hdr_ts (and the HDR_TS flag) is the RTP timestamp
    tshark's rtp dissector reads from that frame's marker packet in the
    capture;
  - frames.py's PNG decodes with GStreamer's pngdec at 640x480.
Skips (77) without root, unshare, GStreamer, tcpdump, tshark, h5py or an
HDF5 build.
"""
import os
import shutil
import subprocess
import sys
import tempfile

VFGX = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EX = os.path.join(ROOT, "examples", "rtp_video")
W, H, FRAMES = 640, 480, 30
FRAME = W * H * 2
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def inner(tmp):
    """In the private namespace: capture, receive, reference, read back."""
    import h5py
    import numpy as np

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    cap = os.path.join(tmp, "sent.pcap")
    dump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "-w", cap, "udp", "port", "5004"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # tcpdump says when it listens
    dump.stderr.readline()
    h5 = os.path.join(tmp, "frames.h5")
    r = subprocess.run([os.path.join(EX, "receive.sh"), h5, str(FRAMES)],
                       env=dict(os.environ, VFGX=VFGX), capture_output=True, text=True, timeout=120)
    dump.terminate()
    dump.wait()
    check(r.returncode == 0, "receive.sh: vfgx run and GStreamer ended well (%d: %s)"
          % (r.returncode, r.stderr.strip()[-300:]))
    ref = os.path.join(tmp, "ref.uyvy")
    subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=%d" % FRAMES, "pattern=ball",
                    "!", "video/x-raw,format=UYVY,width=%d,height=%d,framerate=30/1" % (W, H),
                    "!", "filesink", "location=" + ref], check=True)
    want = np.fromfile(ref, np.uint8).reshape(FRAMES, FRAME)
    ts = subprocess.run(["tshark", "-r", cap, "-d", "udp.port==5004,rtp", "-Y", "rtp.marker == 1",
                         "-T", "fields", "-e", "rtp.timestamp"], check=True, capture_output=True,
                        text=True).stdout.split()
    check(len(ts) == FRAMES, "tshark: %d marker packets (one a frame) in the capture" % len(ts))
    with h5py.File(h5, "r") as f:
        check(f.attrs["profile"] == "rtp-video", "file attribute profile: %r" % f.attrs["profile"])
        g = f["stream0"]
        n = int(g.attrs["chunks"])
        check(n == FRAMES, "%d frames on file, %d sent" % (n, FRAMES))
        bad = tail = 0
        for i in range(min(n, FRAMES)):
            row = g["data"][i].reshape(-1)
            got = row[:FRAME]
            if not (g["flags"][i] & 1 and g["bytes"][i] == FRAME and g["missing_bytes"][i] == 0
                    and np.array_equal(got, want[i])):
                bad += 1
            # the row (packets x payload_bytes) past its frame: never written
            tail += bool(row[FRAME:].any())
        check(bad == 0, "every frame complete and equal to videotestsrc ! filesink's (%d differ)" % bad)
        check(g["data"].shape[1] * g["data"].shape[2] > FRAME and tail == 0,
              "no row holds a byte after its frame: not the ring's present map, lengths or "
              "another frame (%d rows do)" % tail)
        got_ts = [int(x) for x in g["hdr_ts"][:n]]
        check(all(int(x) & 1 for x in g["hdr_flags"][:n]), "every frame's hdr_flags has HDR_TS")
        check(got_ts == [int(x) for x in ts], "every frame's hdr_ts is its RTP timestamp as tshark reads it")
    png = os.path.join(tmp, "frame.png")
    r = subprocess.run([sys.executable, os.path.join(EX, "frames.py"), h5, png],
                       capture_output=True, text=True)
    check(r.returncode == 0 and "%d frames, %d complete" % (FRAMES, FRAMES) in r.stdout,
          "frames.py: one line a frame and the count (%s)" % r.stdout.strip().splitlines()[-2:])
    d = subprocess.run(["gst-launch-1.0", "-q", "filesrc", "location=" + png, "!", "pngdec", "!",
                        "video/x-raw,width=%d,height=%d" % (W, H), "!", "fakesink"],
                       capture_output=True, text=True)
    check(d.returncode == 0, "frames.py's PNG decodes with pngdec at %dx%d" % (W, H))


def main():
    if len(sys.argv) > 2 and sys.argv[2] == "--inner":
        inner(sys.argv[3])
        print("%d checks failed" % len(failures))
        sys.exit(1 if failures else 0)
    if os.geteuid() != 0:
        skip("needs root (a network namespace, tcpdump)")
    for tool in ("unshare", "ip", "gst-launch-1.0", "tcpdump", "tshark"):
        if not shutil.which(tool):
            skip("%s is not installed" % tool)
    try:
        import h5py  # noqa: F401
    except ImportError:
        skip("python3-h5py is not installed")
    if sys.argv[2] != "hdf5":
        skip("this build has no HDF5 (libhdf5-dev)")
    with tempfile.TemporaryDirectory(prefix="vfgx-rtp-rec-") as tmp:
        os.chmod(tmp, 0o755)
        r = subprocess.run(["unshare", "--net", sys.executable, os.path.abspath(__file__), VFGX,
                            "--inner", tmp], timeout=300)
        sys.exit(r.returncode)


if __name__ == "__main__":
    main()
