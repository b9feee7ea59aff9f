#!/usr/bin/env python3
"""test_user_place.py VFGX TILE_PLACE_SO - examples/user_place as its
README runs it: make_tiles.py writes a capture of the made-up "tiles"
stream (tshark reads it: the frames and UDP payloads it says are there),
`vfgx run` reads it through backend: pcap with the example's config and
records the chunks to raw files; every frame of both streams is one
complete chunk whose bytes are where the header's rule puts them
((5k + 5) mod 16, computed here from the README, not by the function),
read from the raw files with a plain parse; the control packets are
user_place drops.  The same by slot (place: slot), and both on the gpu
engine from tile_place.fatbin where there is a GPU (else said skipped).  Then each wrong
user_place is one line and exit 2: a symbol the library lacks, a library
that does not exist, place: user without user_place, user_place on
place: offset, and `vfgx format decode` of a config that places by the
function (it reads descriptions alone)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

VFGX = os.path.abspath(sys.argv[1])
SO = os.path.abspath(sys.argv[2])
HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "user_place")
FRAMES, TILES, TB = 8, 16, 64
failures = []


def check(cond, msg):
    print(("ok   - " if cond else "FAIL - ") + msg)
    if not cond:
        failures.append(msg)


def frame_byte(stream, frame, i):
    return (stream * 101 + frame * 31 + i * 7 + 1) % 256


def config(tmp, pcap, place="user", user_place=None, name="run.yaml", device="cpu"):
    text = open(os.path.join(EXAMPLE, "tile_place.yaml")).read()
    # buffers the gpu engine's bounce slots take (host memory)
    text = text.replace("file: tiles.pcap", "file: %s, buf_size: 2048" % pcap)
    text = text.replace("build/examples/user_place/tile_place.so", SO)
    text = text.replace("build/examples/user_place/tile_place.fatbin",
                        os.path.join(os.path.dirname(SO), "tile_place.fatbin"))
    text = text.replace("place: user ", "place: %s " % place)
    text = text.replace("device: cpu", "device: " + device)
    if device == "gpu":  # the gpu engine places into pinned or GPU memory
        text = text.replace("in_flight: 8}", "in_flight: 8, mem: pinned}")
    if user_place is not None:
        start = text.index("    user_place:")
        end = text.index("  chunks:")
        text = text[:start] + user_place + text[end:]
    p = os.path.join(tmp, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def run(*args):
    return subprocess.run([VFGX, *args], capture_output=True, text=True, timeout=120)


def read_raw(path):
    """{(stream, frame): (bytes, present_count, flags)} from a raw
    recording; the frame from the chunk's first sequence (the function's
    frame x 16 + place, extended from 32 bits: the chunk index is the
    frame by the function's offsets, 2^28 + the frame by slot)."""
    lines = open(path + ".index.jsonl").read().splitlines()
    head = json.loads(lines[0])
    data = open(os.path.join(os.path.dirname(path), head["data_file"]), "rb").read()
    n = head["packets"] * head["payload_bytes"]
    out = {}
    for line in lines[1:]:
        c = json.loads(line)
        if "stream" not in c:
            continue
        off = c["offset"] + head["data_offset"]
        frame = (c["first_seq"] & 0xFFFFFFFF) // TILES
        out[(c["stream"], frame)] = (data[off:off + n], c["present_count"], c["flags"])
    return head, out


def placed_run(tmp, pcap, place, device="cpu"):
    cfg = config(tmp, pcap, place=place, name="run-%s-%s.yaml" % (place, device), device=device)
    rec = os.path.join(tmp, "frames-%s-%s.raw" % (place, device))
    r = run("run", "--json", "--record", rec, cfg)
    if device == "gpu" and r.returncode and ("finds no GPU" in r.stderr or
                                             "has no CUDA" in r.stderr):
        print("skip - the gpu engine: %s" % r.stderr.strip())
        return
    place = "%s on %s" % (place, device)
    check(r.returncode == 0, "place %s: vfgx run exits 0 (%d: %s)" % (place, r.returncode,
                                                                     r.stderr.strip()[-300:]))
    if r.returncode:
        return
    j = json.loads(r.stdout)
    drops = j["pipeline"]["drops"]
    check(drops.get("user_place") == FRAMES * 2 * 4,
          "place %s: the %d control packets are user_place drops (%s)" %
          (place, FRAMES * 2 * 4, drops.get("user_place")))
    others = {k: v for k, v in drops.items() if v and k != "user_place"}
    check(not others, "place %s: no other drops (%s)" % (place, others))
    check(j["chunks"]["complete"] == FRAMES * 2,
          "place %s: %d complete chunks (%s)" % (place, FRAMES * 2, j["chunks"]["complete"]))
    head, chunks = read_raw(rec)
    check(len(chunks) == FRAMES * 2, "place %s: %d chunks recorded" % (place, len(chunks)))
    bad = []
    for s in (0, 1):
        for f in range(FRAMES):
            got = chunks.get((s, f))
            want = bytes(frame_byte(s, f, i) for i in range(TILES * TB))
            if not got or got[0] != want or got[1] != TILES:
                bad.append((s, f))
    check(not bad, "place %s: every frame byte-identical to the rule's (bad: %s)" % (place, bad[:4]))


def refused(tmp, pcap, what, **kw):
    cfg = config(tmp, pcap, name="bad.yaml", **kw)
    r = run("run", cfg)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    check(r.returncode == 2 and len(lines) == 1 and "place" in r.stderr,
          "%s: exit 2 with one line (%d: %s)" % (what, r.returncode, r.stderr.strip()))
    return r.stderr


def main():
    tmp = tempfile.mkdtemp(prefix="vfgx-uplace-")
    try:
        pcap = os.path.join(tmp, "tiles.pcap")
        subprocess.run([sys.executable, os.path.join(EXAMPLE, "make_tiles.py"), pcap,
                        str(FRAMES)], check=True)
        if shutil.which("tshark"):
            t = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "udp.dstport",
                                "-e", "udp.length"], capture_output=True, text=True,
                               timeout=120, check=True)
            rows = [x.split() for x in t.stdout.splitlines() if x.strip()]
            check(len(rows) == FRAMES * 2 * (TILES + 4) and all(r[0] == "5000" for r in rows),
                  "tshark reads %d UDP packets to port 5000 in the capture" % len(rows))
        for place in ("user", "slot"):
            placed_run(tmp, pcap, place)
        # the same function from the fatbin, linked into the gpu engine's
        # persistent kernel (by its offsets and by slot), where there is a GPU
        for place in ("user", "slot"):
            placed_run(tmp, pcap, place, device="gpu")
        e = refused(tmp, pcap, "a symbol the library lacks",
                    user_place="    user_place: {library: %s, symbol: no_such_place}\n" % SO)
        check("no_such_place" in e, "the line names the symbol")
        e = refused(tmp, pcap, "a library that does not exist",
                    user_place="    user_place: {library: %s/none.so, symbol: tile_place}\n" % tmp)
        check("none.so" in e, "the line names the library")
        e = refused(tmp, pcap, "place: user without user_place", user_place="")
        e = refused(tmp, pcap, "user_place on place: offset", place="offset")
        # RTP learning its SSRCs (no stream_ids) cannot take the function's stream
        text = open(config(tmp, pcap, name="rtp.yaml")).read()
        text = text.replace("    layout: fixed\n", "    profile: rtp\n")
        for k in ("header_len", "stream", "seq", "end", "seq_bits"):
            text = re.sub(r"\n    %s: [^\n]*" % k, "", text)
        with open(os.path.join(tmp, "rtp.yaml"), "w") as f:
            f.write(text)
        r = run("run", os.path.join(tmp, "rtp.yaml"))
        check(r.returncode == 2 and "stream_ids" in r.stderr and len(r.stderr.splitlines()) == 1,
              "user_place with rtp without stream_ids: exit 2 with one line (%d: %s)" %
              (r.returncode, r.stderr.strip()))
        # vfgx format decode reads descriptions alone: it says so
        r = run("format", "decode", pcap, "--config", config(tmp, pcap, name="dec.yaml"))
        check(r.returncode == 2 and "place user" in r.stderr and len(r.stderr.splitlines()) == 1,
              "vfgx format decode refuses place: user in one line (%d: %s)" %
              (r.returncode, r.stderr.strip()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
