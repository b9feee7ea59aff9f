#!/usr/bin/python3
"""test_record.py VFGX BUILD - `vfgx run --record` and the record: section
(issue 42), read back without vfgx's writer: HDF5 files with h5py (Debian's
python3-h5py, hence Debian's /usr/bin/python3), raw files with the
package's reader (vfgx.record) and, for the same bytes, a plain NumPy parse
of the index's offsets.  Every byte of every slot is checked against the
loopback generator's payload pattern computed here from its definition
(include/vfgx/stages.h: byte i of stream s, sequence q is
s*131 + q*7 + i*13 + 1 mod 256; a frame of packet_size bytes carries
packet_size - 14 - 20 - 8 - 16 bytes after the app header), and the
per-chunk metadata against the chunks the run handed out (its --json
report).  Then: loss flagged as missing slots, deflate, rotation, and bad
input: a FIFO, a symlink (also one into a read-only place), an existing
file, a read-only and a full file system (tmpfs in a private mount namespace), a file removed while written,
SIGKILL (the raw index still opens and lists exactly what is on file),
SIGINT (files closed whole), a config without chunks, raw with deflate."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

VFGX = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.abspath(sys.argv[2]), "python"))
# gpu or pinned: chunks in that memory, recorded through the pinned
# staging ring (make test-gpu runs test_raw_from_device so)
MEM = os.environ.get("VFGX_RECORD_MEM", "")
try:
    import h5py
except ImportError:
    if not MEM:
        print("SKIP: python3-h5py not installed (scripts/install-deps.sh installs it)")
        sys.exit(77)
    h5py = None
import vfgx.record  # noqa: E402  the package's raw reader
# the rows readers shared with tests/python/test_record.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import record_rows  # noqa: E402

failures = []
HDRS = 14 + 20 + 8 + 16  # Ethernet, IPv4, UDP, the app header


def check(cond, msg):
    print(("ok   - " if cond else "FAIL - ") + msg)
    if not cond:
        failures.append(msg)


def config(d, packets=20000, flows=2, size=512, chunk=128, extra="", record=""):
    path = os.path.join(d, "c.yaml")
    with open(path, "w") as f:
        f.write("interfaces:\n"
                "  - backend: loopback\n"
                "    loopback: { packets: %d, flows: %d, packet_size: %d%s }\n"
                "pipeline:\n"
                "  device: cpu\n"
                "  chunks: { payload_bytes: 512, packets: %d, streams: %d, in_flight: 8%s }\n"
                "expect: { min_packets: 0 }\n%s"
                % (packets, flows, size, extra, chunk, flows,
                   ", mem: " + MEM if MEM else "", record))
    return path


def run(*args, timeout=180):
    return subprocess.run([VFGX, "run", "-q", *args], capture_output=True, text=True,
                          timeout=timeout)


def expected(stream, first, packets, plen):
    """(packets, plen) the generator's payloads of seqs first.. of stream."""
    q = (np.uint64(first) + np.arange(packets, dtype=np.uint64))[:, None]
    i = np.arange(plen, dtype=np.uint64)[None, :]
    return ((stream * 131 + q * 7 + i * 13 + 1) % 256).astype(np.uint8)


def popcount(words):
    return int(np.unpackbits(np.asarray(words, dtype=np.uint64).view(np.uint8)).sum())


def check_chunks(name, stream, rows, plen, chunk, gen_per_stream, lossless):
    """rows: dicts of index, first, flags, missing, present_count, present
    (words), lens, data.  Every present slot byte-exact, missing slots
    flagged; returns (chunks, present slots, missing slots, bad bytes)."""
    bad = 0
    seqs = set()
    nmiss = npres = 0
    for r in rows:
        present = np.unpackbits(np.asarray(r["present"], np.uint64).view(np.uint8),
                                bitorder="little")[:chunk].astype(bool)
        want = expected(stream, r["first"], chunk, plen)
        got = np.asarray(r["data"])[:, :plen]
        bad += int((got[present] != want[present]).sum())
        bad += int((np.asarray(r["lens"])[present] != plen).sum())
        bad += int((np.asarray(r["lens"])[~present] != 0).sum())
        if r["first"] != r["index"] * chunk:
            bad += 1
        if int(present.sum()) != r["present_count"] or r["missing"] != chunk - r["present_count"]:
            bad += 1
        if bool(r["flags"] & 1) != (r["missing"] == 0):
            bad += 1
        if popcount(r["present"]) != r["present_count"]:
            bad += 1
        # the header metadata (vfgx's own header): a chunk spans its slots,
        # its missing bytes are its missing slots', its first_seq is one of
        # its present packets' sequences, and vfgx's header has no timestamp
        if "bytes" in r:
            slot = np.asarray(r["data"]).shape[1]
            if r["bytes"] != chunk * slot or r["missing_bytes"] != r["missing"] * slot:
                bad += 1
            if r["first_seq"] not in {int(r["first"]) + int(k) for k in np.nonzero(present)[0]}:
                bad += 1
            if r["hdr_flags"] & 1 or r["hdr_ts"] != 0:
                bad += 1
        seqs.update(int(r["first"]) + int(k) for k in np.nonzero(present)[0])
        npres += int(present.sum())
        nmiss += r["missing"]
    if lossless:
        # every generated sequence in exactly one slot; the last chunk's
        # tail past the end is the only thing missing
        check(seqs == set(range(gen_per_stream)) and npres == gen_per_stream,
              "%s stream %d: every one of %d sequences in its slot once" % (name, stream, gen_per_stream))
    return len(rows), npres, nmiss, bad


# the per-chunk metadata read back and checked
META = ("index", "first", "flags", "missing", "present_count", "first_seq", "hdr_ts", "bytes",
        "missing_bytes", "hdr_flags")


def h5_rows(f, s):
    return record_rows.h5_rows(f, s, META)


def raw_rows(path, s):
    return record_rows.raw_rows(path, s, META)


def verify_all(name, rows_of, flows, plen, chunk, per_stream, lossless, report):
    tot = [0, 0, 0, 0]
    for s in range(flows):
        for k, v in enumerate(check_chunks(name, s, rows_of(s), plen, chunk, per_stream, lossless)):
            tot[k] += v
    check(tot[3] == 0, "%s: every present byte, length and metadata field right (%d bad)" % (name, tot[3]))
    if report is not None:
        ch = report["chunks"]
        check(tot[0] == ch["handed_out"] == report["record"]["recorded"],
              "%s: %d chunks on file, %d handed out, %d recorded" % (name, tot[0], ch["handed_out"],
                                                                     report["record"]["recorded"]))
        check(tot[1] == ch["placed"] and tot[2] == ch["missing"],
              "%s: %d slots present / %d missing on file = placed %d / missing %d"
              % (name, tot[1], tot[2], ch["placed"], ch["missing"]))
    return tot


def json_run(*args):
    r = run("--json", *args)
    # a user module may print on stdout before the document
    start = r.stdout.find("{")
    try:
        return r, json.loads(r.stdout[start:])
    except ValueError:
        return r, None


def test_hdf5_and_raw(d):
    cfg = config(d)
    text = open(cfg).read()
    per, plen = 10000, 512 - HDRS
    h5 = os.path.join(d, "run.h5")
    r, rep = json_run(cfg, "--record", h5)
    check(r.returncode == 0 and rep, "hdf5 run passes (rc %d: %s)" % (r.returncode, r.stderr[-300:]))
    with h5py.File(h5, "r") as f:
        check(f.attrs["profile"] == "vfgx" and f.attrs["config"] == text,
              "hdf5: profile attribute vfgx, config attribute the config's text")
        ver = subprocess.run([VFGX, "--version"], capture_output=True, text=True).stdout.split()[-1]
        check(f.attrs["vfgx_version"] == ver, "hdf5: vfgx_version %s" % ver)
        check(f["stream0/data"].chunks == (1, 128, 512), "hdf5: one HDF5 chunk per vfgx chunk")
        verify_all("hdf5", lambda s: h5_rows(f, s), 2, plen, 128, per, True, rep)
    raw = os.path.join(d, "run.raw")
    r, rep = json_run(cfg, "--record", raw)
    check(r.returncode == 0 and rep, "raw run passes (rc %d: %s)" % (r.returncode, r.stderr[-300:]))
    verify_all("raw (vfgx.record)", lambda s: raw_rows(raw, s), 2, plen, 128, per, True, rep)
    h, plain = record_rows.raw_plain(raw)
    check(h["profile"] == "vfgx" and h["config"] == text, "raw index header: profile, config text")
    verify_all("raw (plain parse)", lambda s: plain.get(s, []), 2, plen, 128, per, True, rep)
    check(rep["record"]["direct"] == h["direct"], "raw: O_DIRECT %s reported" % h["direct"])


def test_loss_deflate(d):
    rec = "record: { path: %s, compression: deflate }\n" % os.path.join(d, "loss.h5")
    cfg = config(d, packets=30000, flows=3, size=300, chunk=100,
                 extra=", loss: 0.05, seed: 3", record=rec)
    r, rep = json_run(cfg)
    check(r.returncode == 0 and rep, "lossy deflated run (rc %d: %s)" % (r.returncode, r.stderr[-300:]))
    lost = rep["source"]["lost"]
    with h5py.File(os.path.join(d, "loss.h5"), "r") as f:
        check(f["stream0/data"].compression == "gzip", "deflate filter on the data dataset")
        tot = verify_all("lossy", lambda s: h5_rows(f, s), 3, 300 - HDRS, 100, 10000, False, rep)
        flagged = sum(int((f["stream%d/flags" % s][:] & 1 == 0).sum()) for s in range(3))
    check(lost > 0 and tot[1] == 30000 - lost,
          "lossy: %d present slots = generated 30000 - lost %d" % (tot[1], lost))
    check(flagged > 0 and tot[2] >= lost, "lossy: %d chunks flagged incomplete, %d slots missing" % (flagged, tot[2]))


def test_rotation(d):
    base = os.path.join(d, "rot.raw")
    rec = "record: { path: %s, format: raw, rotate_bytes: 1000000 }\n" % base
    r, rep = json_run(config(d, record=rec))
    files = sorted(x for x in os.listdir(d) if x.startswith("rot") and not x.endswith(".jsonl"))
    check(r.returncode == 0 and rep and rep["record"]["files"] == len(files) > 2,
          "rotate_bytes: %d files reported, %s on disk" % (rep["record"]["files"] if rep else -1, files))
    rows = {0: [], 1: []}
    for fn in files:
        for s in (0, 1):
            rows[s] += raw_rows(os.path.join(d, fn), s)
    verify_all("rotated", lambda s: rows[s], 2, 512 - HDRS, 128, 10000, True, rep)
    h5 = os.path.join(d, "rot.h5")
    rec = "record: { path: %s, rotate_bytes: 2000000 }\n" % h5
    r, rep = json_run(config(d, record=rec))
    files = sorted(x for x in os.listdir(d) if x.startswith("rot") and x.endswith(".h5"))
    n = 0
    for fn in files:
        with h5py.File(os.path.join(d, fn), "r") as f:
            n += sum(int(f[g].attrs["chunks"]) for g in f)
    check(r.returncode == 0 and len(files) > 2 and n == rep["chunks"]["handed_out"],
          "hdf5 rotate_bytes: %d files (rot.h5, rot.1.h5 ...) hold all %d chunks" % (len(files), n))


def vfgx_lines(err):
    """vfgx's own lines on stderr (--json puts the text report there too),
    its info lines aside."""
    return [x for x in err.splitlines() if x.startswith("vfgx:") and not x.startswith("vfgx: info:")]


def one_line(r, what, needle):
    lines = vfgx_lines(r.stderr)
    check(len(lines) == 1 and needle in lines[0], "%s: one line naming it (%r)" % (what, lines))


def test_bad_paths(d):
    cfg = config(d, packets=4000)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    r, rep = json_run(cfg, "--record", fifo)
    one_line(r, "FIFO", fifo)
    check(r.returncode == 1 and rep and rep["record"]["recorded"] == 0 and
          rep["record"]["not_recorded"] == rep["chunks"]["handed_out"] > 0 and
          rep["pipeline"]["delivered"] == 4000,
          "FIFO: recording stopped, the run went on (all delivered, every chunk not recorded, rc 1)")
    target = os.path.join(d, "target")
    with open(target, "w") as f:
        f.write("keep")
    link = os.path.join(d, "link.h5")
    os.symlink(target, link)
    r = run(cfg, "--record", link)
    one_line(r, "symlink", "symlink")
    check(open(target).read() == "keep", "symlink: its target untouched")
    r = run(cfg, "--record", target)
    one_line(r, "existing file", "overwrite")
    check(open(target).read() == "keep", "existing file: untouched without record.overwrite")
    rec = "record: { path: %s, format: raw, overwrite: true }\n" % target
    r = run(config(d, packets=4000, record=rec))
    check(r.returncode == 0 and len(vfgx.record.open_raw(target).chunks) > 0,
          "record.overwrite: true replaces an existing regular file")
    r = run(cfg, "--record", os.path.join(d, "no", "such", "dir.raw"))
    one_line(r, "missing directory", "no/such/dir.raw")
    nochunks = os.path.join(d, "nochunks.yaml")
    with open(nochunks, "w") as f:
        f.write("interfaces: [{backend: loopback, loopback: {packets: 1000}}]\n")
    r = run(nochunks, "--record", os.path.join(d, "x.h5"))
    check(r.returncode == 2 and "pipeline.chunks" in r.stderr and len(vfgx_lines(r.stderr)) == 1,
          "no chunks: exit 2, one line naming pipeline.chunks (%r)" % r.stderr.strip())
    rec = "record: { path: x, format: raw, compression: deflate }\n"
    r = run(config(d, record=rec))
    check(r.returncode == 2 and "compression" in r.stderr and len(vfgx_lines(r.stderr)) == 1,
          "raw with deflate: exit 2, one config line (%r)" % r.stderr.strip())


def in_namespace(d, script):
    """script under sh in a private mount namespace (tmpfs mounts vanish
    with it)."""
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=300)


def test_full_and_readonly(d):
    cfg = config(d, packets=40000)
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    out = os.path.join(d, "full.json")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode:
        print("skip - unshare -m not permitted here: full and read-only file systems not tested")
        return
    for fmt in ("raw", "h5"):
        r = in_namespace(d, "mount -t tmpfs -o size=1m none %s; %s run -q --json %s --record %s/x.%s > %s; "
                         "rc=$?; cp %s/x.%s* %s/ 2>/dev/null || true; exit $rc"
                         % (mnt, VFGX, cfg, mnt, fmt, out, mnt, fmt, d))
        rep = json.load(open(out))
        lines = vfgx_lines(r.stderr)
        check(len(lines) == 1 and "x.%s" % fmt in lines[0] and "space" in lines[0].lower(),
              "full file system (%s): one line naming the file (%r)" % (fmt, lines))
        check(r.returncode == 1 and rep["pipeline"]["delivered"] == 40000 and
              rep["record"]["not_recorded"] > 0 and
              rep["record"]["recorded"] + rep["record"]["not_recorded"] == rep["chunks"]["handed_out"],
              "full file system (%s): the run went on, %d recorded + %d not = %d handed out"
              % (fmt, rep["record"]["recorded"], rep["record"]["not_recorded"], rep["chunks"]["handed_out"]))
        if fmt == "raw":
            rec = vfgx.record.open_raw(os.path.join(d, "x.raw"))
            check(len(rec.chunks) == rep["record"]["recorded"] and rec.stopped,
                  "full (raw): the index lists the %d chunks recorded and says it stopped" % len(rec.chunks))
            verify_all("full (raw)", lambda s: raw_rows(os.path.join(d, "x.raw"), s), 2,
                       512 - HDRS, 128, 20000, False, None)
    r = in_namespace(d, "mount -t tmpfs -o ro none %s; %s run -q %s --record %s/ro.raw" % (mnt, VFGX, cfg, mnt))
    one_line(r, "read-only file system", "ro.raw")
    check(r.returncode == 1 and "result: FAILED" in r.stdout and "delivered 40000 " in r.stdout,
          "read-only: the run went on, the record expectation failed")
    # a symlink in a writable directory pointing into the read-only place
    link = os.path.join(d, "into-ro.h5")
    os.symlink(os.path.join(mnt, "target.h5"), link)
    r = in_namespace(d, "mount -t tmpfs -o ro none %s; %s run -q %s --record %s; rc=$?; ls -A %s; exit $rc"
                     % (mnt, VFGX, cfg, link, mnt))
    lines = vfgx_lines(r.stderr)
    check(len(lines) == 1 and "symlink" in lines[0] and link in lines[0],
          "symlink into a read-only place: one line naming it (%r)" % lines)
    check(r.returncode == 1 and "delivered 40000 " in r.stdout and "target.h5" not in r.stdout and
          os.path.islink(link),
          "symlink into a read-only place: the run went on, nothing written through it")


def endless(d, name, record):
    cfg = config(d, packets=0, extra=", rate_pps: 200000", record=record)
    return subprocess.Popen([VFGX, "run", "-q", "--json", cfg], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_lines(index, n, p):
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        if os.path.exists(index) and open(index, "rb").read().count(b"\n") > n:
            return True
        time.sleep(0.1)
    return False


def test_signals(d):
    raw = os.path.join(d, "kill.raw")
    p = endless(d, "kill", "record: { path: %s, format: raw }\n" % raw)
    ok = wait_lines(raw + ".index.jsonl", 20, p)
    p.send_signal(signal.SIGKILL)
    p.communicate()
    rec = vfgx.record.open_raw(raw)
    check(ok and len(rec.chunks) >= 20, "SIGKILL: the raw index opens with %d chunks" % len(rec.chunks))
    tot = verify_all("SIGKILL", lambda s: raw_rows(raw, s), 2, 512 - HDRS, 128, 0, False, None)
    check(tot[0] == len(rec.chunks), "SIGKILL: every indexed chunk's bytes on file")
    h5 = os.path.join(d, "int.h5")
    p = endless(d, "int", "record: { path: %s }\n" % h5)
    time.sleep(0.5)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        try:
            if os.path.getsize(h5) > 3000000:
                break
        except OSError:
            pass
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    rep = json.loads(out)
    with h5py.File(h5, "r") as f:
        n = sum(int(f[g].attrs["chunks"]) for g in f)
        verify_all("SIGINT", lambda s: h5_rows(f, s), 2, 512 - HDRS, 128, 0, False, None)
    check(rep["interrupted"] and n == rep["record"]["recorded"] == rep["chunks"]["handed_out"] > 0,
          "SIGINT: hdf5 closed whole with all %d chunks handed out" % n)
    raw = os.path.join(d, "rm.raw")
    p = endless(d, "rm", "record: { path: %s, format: raw }\n" % raw)
    ok = wait_lines(raw + ".index.jsonl", 5, p)
    os.unlink(raw)
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    rep = json.loads(out)
    lines = vfgx_lines(err)
    check(ok and len(lines) == 1 and "removed" in lines[0] and rep["record"]["not_recorded"] > 0
          and rep["pipeline"]["delivered"] > 0,
          "file removed while written: one line, recording stopped, the run went on (%r)" % lines)


def test_rotate_seconds_and_example(d):
    h5 = os.path.join(d, "sec.h5")
    rec = "record: { path: %s, rotate_seconds: 0.000001 }\n" % h5
    r, rep = json_run(config(d, record=rec))
    files = sorted(x for x in os.listdir(d) if x.startswith("sec"))
    n = 0
    for fn in files:
        with h5py.File(os.path.join(d, fn), "r") as f:
            n += sum(int(f[g].attrs["chunks"]) for g in f)
    check(r.returncode == 0 and len(files) == rep["record"]["files"] > 1 and
          n == rep["chunks"]["handed_out"] and len(files) <= n,
          "rotate_seconds: %d files hold all %d chunks, none empty" % (len(files), n))
    exe = os.path.join(os.path.abspath(sys.argv[2]), "examples", "record", "record")
    show = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "examples", "record", "show.py")
    out = os.path.join(d, "example.h5")
    r = subprocess.run([exe, out], capture_output=True, text=True, timeout=180)
    s = subprocess.run([show, out, os.path.join(d, "plot.png")], capture_output=True, text=True,
                       timeout=180)
    rec_n = r.stdout.split(": ")[1].split()[0] if r.returncode == 0 else "?"
    check(r.returncode == 0 and s.returncode == 0 and
          ("total: %s chunks" % rec_n) in s.stdout and os.path.getsize(os.path.join(d, "plot.png")) > 0,
          "examples/record (vfgx_record_start) then show.py: %s chunks recorded, printed and plotted (%r)"
          % (rec_n, (r.stderr + s.stderr)[-200:]))


def test_with_user_module(d):
    """The user module and the recorder on the same consumer thread: the
    module sees every chunk (and checks its bytes), the recorder writes
    every chunk, nothing is held twice."""
    mod = os.path.join(os.path.abspath(sys.argv[2]), "examples", "user_module", "flow_sum.so")
    if not os.path.exists(mod):
        check(False, "examples/user_module/flow_sum.so built")
        return
    raw = os.path.join(d, "mod.raw")
    cfg = config(d, packets=40000, flows=4, chunk=256,
                 extra=", loss: 0.001, reorder: 0.01")
    text = open(cfg).read().replace("  chunks:", "  user: { library: %s, arg: verify }\n  chunks:" % mod)
    with open(cfg, "w") as f:
        f.write(text)
    r, rep = json_run(cfg, "--record", raw)
    m = [x for x in r.stderr.splitlines() if x.startswith("user module")]
    n = rep["chunks"]["handed_out"] if rep else -1
    check(r.returncode == 0 and m and (" %d chunks, 0 user errors" % n) in m[0] and
          rep["record"]["recorded"] == n > 0,
          "user module and recorder: the module saw all %d chunks (%r), all recorded" % (n, m))
    verify_all("with user module", lambda s: raw_rows(raw, s), 4, 512 - HDRS, 256, 10000, False, rep)


def test_raw_from_device(d):
    """Chunks in MEM (gpu or pinned) recorded raw (and to HDF5 where h5py
    is), every byte read back against the pattern."""
    cfg = config(d)
    per, plen = 10000, 512 - HDRS
    raw = os.path.join(d, "run.raw")
    r, rep = json_run(cfg, "--record", raw)
    check(r.returncode == 0 and rep, "raw run from %s chunks passes (rc %d: %s)"
          % (MEM or "host", r.returncode, r.stderr[-300:]))
    if r.returncode != 0:
        return
    verify_all("raw from %s" % (MEM or "host"), lambda s: raw_rows(raw, s), 2, plen, 128, per, True, rep)
    h, plain = record_rows.raw_plain(raw)
    verify_all("raw from %s (plain parse)" % (MEM or "host"), lambda s: plain.get(s, []), 2, plen, 128,
               per, True, rep)
    if h5py:
        h5 = os.path.join(d, "run.h5")
        r, rep = json_run(cfg, "--record", h5)
        check(r.returncode == 0 and rep, "hdf5 run from %s chunks passes" % (MEM or "host"))
        with h5py.File(h5, "r") as f:
            verify_all("hdf5 from %s" % (MEM or "host"), lambda s: h5_rows(f, s), 2, plen, 128, per, True, rep)


ALL = (test_raw_from_device, test_with_user_module, test_rotate_seconds_and_example, test_hdf5_and_raw, test_loss_deflate, test_rotation, test_bad_paths,
       test_full_and_readonly, test_signals)
for t in ALL:
    if len(sys.argv) > 3 and t.__name__ not in sys.argv[3:]:
        continue
    with tempfile.TemporaryDirectory(prefix="vfgx-record-") as d:
        print("# " + t.__name__)
        t(d)
if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("test_record: all passed")
