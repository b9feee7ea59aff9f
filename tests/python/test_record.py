"""Recording from Python (issue 42): Pipeline.record() in one call and
Pipeline.recorder() beside a consumer of the program's own, read back
without vfgx's writer: HDF5 with h5py (Debian's python3-h5py), raw files
with the package's reader (vfgx.record) and a plain parse of the index.
Every byte of every present slot is checked against the loopback
generator's payload pattern computed here from its definition
(include/vfgx/stages.h: byte i of stream s, sequence q is
s*131 + q*7 + i*13 + 1 mod 256, after 14 + 20 + 8 + 16 header bytes), and
the per-chunk metadata against the chunks the pipeline handed out (seen
here as Chunk objects, or its chunk counters).  Then loss, bad paths
(errors raised before anything is written), a full file system in a
private mount namespace (the pipeline goes on, every chunk accounted
for), a duration, and Ctrl-C (the files closed whole).  On a GPU host,
VFGX_RECORD_MEM=gpu|pinned puts the one-call and loss cases' chunks in
that memory."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import vfgx
import vfgx.record
import record_rows
from conftest import BUILD, ROOT

# gpu or pinned (a GPU host): the one-call and loss cases record chunks in
# that memory, through the recorder's pinned staging ring
MEM = os.environ.get("VFGX_RECORD_MEM", "host")
try:
    with open(os.path.join(BUILD, "vfgx_build.h")) as _f:
        HAVE_HDF5 = "define VFGX_HAVE_HDF5 1" in _f.read()
except OSError:
    HAVE_HDF5 = True  # an installed package: assume it, a failure says otherwise
NO_HDF5 = pytest.mark.skipif(not HAVE_HDF5, reason="this build has no libhdf5")
HDRS = 14 + 20 + 8 + 16
PLEN = 512 - HDRS
CHUNK = 128


def cfg(packets=20000, flows=2, extra="", record="", mem="host"):
    return ("interfaces:\n"
            "  - backend: loopback\n"
            "    loopback: { packets: %d, flows: %d, packet_size: 512%s }\n"
            "pipeline:\n"
            "  device: cpu\n"
            "  chunks: { payload_bytes: 512, packets: %d, streams: %d, in_flight: 8, mem: %s }\n%s"
            % (packets, flows, extra, CHUNK, flows, mem, record))


def expected(stream, first, n):
    q = (np.uint64(first) + np.arange(n, dtype=np.uint64))[:, None]
    i = np.arange(PLEN, dtype=np.uint64)[None, :]
    return ((stream * 131 + q * 7 + i * 13 + 1) % 256).astype(np.uint8)


def bits(words):
    return np.unpackbits(np.asarray(words, np.uint64).view(np.uint8),
                         bitorder="little")[:CHUNK].astype(bool)


def check_rows(stream, rows):
    """rows: dicts of index, first, flags, missing, present_count, present
    (uint64 words), lens, data.  Returns the sequences present."""
    seqs = []
    for r in rows:
        present = bits(r["present"])
        want = expected(stream, r["first"], CHUNK)
        got = np.asarray(r["data"])[:, :PLEN]
        assert (got[present] == want[present]).all(), "stream %d chunk %d: bytes" % (stream, r["index"])
        assert (np.asarray(r["lens"])[present] == PLEN).all()
        assert (np.asarray(r["lens"])[~present] == 0).all()
        assert r["first"] == r["index"] * CHUNK
        assert int(present.sum()) == r["present_count"] == CHUNK - r["missing"]
        assert bool(r["flags"] & vfgx.CHUNK_COMPLETE) == (r["missing"] == 0)
        seqs.extend(int(r["first"]) + int(k) for k in np.nonzero(present)[0])
    return seqs


# the per-chunk metadata read back and checked
META = ("index", "first", "flags", "missing", "present_count", "ready_ns", "late")


def h5_rows(f, s):
    return record_rows.h5_rows(f, s, META)


def raw_rows(path, s):
    return record_rows.raw_rows(path, s, META)


def raw_plain(path):
    """The raw files parsed from docs/record.md's layout: {stream: rows},
    by index (the index lists them as the writes completed)."""
    _, out = record_rows.raw_plain(path)
    return {s: sorted(v, key=lambda r: r["index"]) for s, v in out.items()}


def total_rows(rows_of, flows):
    return sum(len(rows_of(s)) for s in range(flows))


def test_record_one_call_hdf5_and_raw(tmp_path):
    """p.record(path): every chunk handed out is on file, byte-exact, for
    HDF5 (the extension's choice) and raw; the files' config attribute
    is the config the pipeline loaded."""
    text = cfg(mem=MEM)
    # a GPU host's build may lack libhdf5: raw alone there
    h5py = pytest.importorskip("h5py") if HAVE_HDF5 else None
    for name in ("run.h5", "run.raw") if HAVE_HDF5 else ("run.raw",):
        path = str(tmp_path / name)
        p = vfgx.Pipeline(text)
        st = p.record(path)
        cs = p.chunk_stats()
        assert st["error"] is None and st["errno"] == 0 and st["files"] == 1
        assert st["recorded"] == cs["handed_out"] == cs["returned"] > 0
        assert st["not_recorded"] == 0 and st["path"] == path
        if name.endswith(".h5"):
            with h5py.File(path, "r") as f:
                assert f.attrs["config"] == text
                assert f.attrs["profile"] in ("vfgx", b"vfgx")
                rows = {s: h5_rows(f, s) for s in range(2)}
        else:
            assert st["bytes"] >= os.path.getsize(path)
            rows = {s: raw_rows(path, s) for s in range(2)}
            plain = raw_plain(path)
            assert json.loads(open(path + ".index.jsonl").readline())["config"] == text
            for s in range(2):
                assert [r["index"] for r in plain[s]] == [r["index"] for r in rows[s]]
                assert check_rows(s, plain[s]) == check_rows(s, rows[s])
        for s in range(2):
            seqs = check_rows(s, rows[s])
            # lossless: every generated sequence in its slot exactly once
            assert sorted(seqs) == list(range(10000))
        assert sum(len(rows[s]) for s in rows) == st["recorded"]
        assert sum(r["present_count"] for s in rows for r in rows[s]) == cs["placed"] == 20000


@NO_HDF5
def test_recorder_beside_own_consumer(tmp_path):
    """recorder().write(chunk) from the program's own loop: each file row
    holds the metadata of the Chunk the loop held, in HDF5 and raw."""
    h5py = pytest.importorskip("h5py")
    seen = {}
    h5, raw = str(tmp_path / "own.h5"), str(tmp_path / "own.raw")
    with vfgx.Pipeline(cfg(extra=", loss: 0.03, reorder: 0.01, seed: 5")) as p:
        with p.recorder(h5) as rh, p.recorder(raw) as rr:
            assert rh.path == h5 and not rr.closed
            for chunk in p.chunks():
                with chunk:
                    seen[(chunk.stream, chunk.index)] = dict(
                        first=chunk.seq, present_count=chunk.present_count, missing=chunk.missing,
                        flags=chunk.flags, ready_ns=chunk.ready_ns,
                        present=chunk.present.copy(), data=chunk.data.copy())
                    assert rh.write(chunk) and rr.write(chunk)
        sth, str_ = rh.stats(), rr.stats()
        assert rh.closed and rr.closed
    assert sth["recorded"] == str_["recorded"] == len(seen) > 0
    missing = 0
    with h5py.File(h5, "r") as f:
        for rows_of in (lambda s: h5_rows(f, s), lambda s: raw_rows(raw, s)):
            n = 0
            for s in range(2):
                rows = rows_of(s)
                check_rows(s, rows)
                for r in rows:
                    c = seen[(s, r["index"])]
                    for k in ("first", "present_count", "missing", "flags", "ready_ns"):
                        assert r[k] == c[k], (s, r["index"], k)
                    assert (bits(r["present"]) == c["present"]).all()
                    assert (np.asarray(r["data"]) == c["data"]).all()
                    missing += r["missing"]
                n += len(rows)
            assert n == len(seen)
    assert missing > 0  # the loss is flagged as missing slots


def test_loss(tmp_path):
    """A run with loss: missing slots flagged, zero length, the rest exact;
    slots present + missing per stream agree with the chunk counters."""
    path = str(tmp_path / ("loss.h5" if HAVE_HDF5 else "loss.raw"))
    p = vfgx.Pipeline(cfg(packets=40000, extra=", loss: 0.05, seed: 3", mem=MEM))
    st = p.record(path)
    cs = p.chunk_stats()
    if HAVE_HDF5:
        h5py = pytest.importorskip("h5py")
        with h5py.File(path, "r") as f:
            per = {s: h5_rows(f, s) for s in range(2)}
    else:
        per = {s: raw_rows(path, s) for s in range(2)}
    rows = [r for s in range(2) for r in per[s]]
    for s in range(2):
        check_rows(s, per[s])
    assert st["recorded"] == len(rows) == cs["handed_out"]
    assert sum(r["present_count"] for r in rows) == cs["placed"]
    assert sum(r["missing"] for r in rows) == cs["missing"] > 0
    assert any(not r["flags"] & vfgx.CHUNK_COMPLETE for r in rows)


@NO_HDF5
def test_options_and_rotation(tmp_path):
    """format= over the extension, rotate_bytes, deflate read back by
    HDF5's own filter, the config's record: section used when no path is
    given."""
    h5py = pytest.importorskip("h5py")
    base = str(tmp_path / "rot.bin")
    p = vfgx.Pipeline(cfg())
    st = p.record(base, format="raw", rotate_bytes=1000000)
    files = sorted(x for x in os.listdir(tmp_path) if x.startswith("rot") and not x.endswith("jsonl"))
    assert st["files"] == len(files) > 2
    n = 0
    for fn in files:
        rec = vfgx.record.open_raw(str(tmp_path / fn))
        n += len(rec.chunks)
        for s in range(2):
            check_rows(s, raw_rows(str(tmp_path / fn), s))
    assert n == st["recorded"] == p.chunk_stats()["handed_out"]
    path = str(tmp_path / "sec.h5")
    p = vfgx.Pipeline(cfg(record="record: { path: %s, compression: deflate, rotate_bytes: 100000 }\n"
                          % path))
    st = p.record()
    files = sorted(x for x in os.listdir(tmp_path) if x.startswith("sec"))
    assert st["path"] == path and st["files"] == len(files) > 1
    n = 0
    for fn in files:
        with h5py.File(str(tmp_path / fn), "r") as f:
            assert f["stream0"]["data"].compression == "gzip"
            for s in range(2):
                rows = h5_rows(f, s)
                check_rows(s, rows)
                n += len(rows)
    assert n == st["recorded"] == p.chunk_stats()["handed_out"]


def test_bad_paths(tmp_path):
    """Refused before anything is written, one line naming the path; the
    pipeline stays usable."""
    p = vfgx.Pipeline(cfg(packets=4000))
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    with pytest.raises(FileExistsError) as e:
        p.recorder(fifo)
    assert "FIFO" in str(e.value) and fifo in str(e.value) and "\n" not in str(e.value)
    target = tmp_path / "target"
    target.write_text("keep")
    link = str(tmp_path / "link.raw")
    os.symlink(target, link)
    with pytest.raises(OSError) as e:
        p.recorder(link)
    assert "symlink" in str(e.value) and target.read_text() == "keep"
    with pytest.raises(FileExistsError) as e:
        p.recorder(str(target))
    assert "overwrite" in str(e.value) and target.read_text() == "keep"
    with pytest.raises(FileNotFoundError) as e:
        p.recorder(str(tmp_path / "no" / "dir.raw"))
    assert "no/dir.raw" in str(e.value)
    with pytest.raises(ValueError, match="uncompressed"):
        p.recorder(str(tmp_path / "x.raw"), compression="deflate")
    with pytest.raises(ValueError, match="format"):
        p.recorder(str(tmp_path / "x.raw"), format="tiff")
    with pytest.raises(ValueError, match="ring"):
        p.recorder(str(tmp_path / "x.raw"), ring=65)
    with pytest.raises(ValueError, match="no path"):
        p.recorder()
    assert not os.path.exists(tmp_path / "x.raw")
    st = p.record(str(target), format="raw", overwrite=True)
    assert st["recorded"] == p.chunk_stats()["handed_out"] > 0
    assert len(vfgx.record.open_raw(str(target)).chunks) == st["recorded"]
    with pytest.raises(ValueError, match="no chunks"):
        vfgx.Pipeline("interfaces: [{backend: loopback, loopback: {packets: 10}}]\n").recorder("x.h5")


def test_write_rules(tmp_path):
    """write() takes a live chunk of its own pipeline; a closed recorder
    refuses; release() waits for no write (one thread at a time)."""
    with vfgx.Pipeline(cfg(packets=4000)) as p, vfgx.Pipeline(cfg(packets=4000)) as q:
        rec = p.recorder(str(tmp_path / "w.raw"))
        c, other = p.get(timeout=5), q.get(timeout=5)
        with pytest.raises(ValueError, match="another pipeline"):
            rec.write(other)
        with pytest.raises(TypeError):
            rec.write(object())
        assert rec.write(c)
        c.release()
        with pytest.raises(ValueError, match="after release"):
            rec.write(c)
        st = rec.close()
        assert st["recorded"] == 1 and rec.close()["recorded"] == 1
        c = p.get(timeout=5)
        with pytest.raises(ValueError, match="after close"):
            rec.write(c)
        c.release()
        other.release()
    rows = raw_plain(str(tmp_path / "w.raw"))
    assert sum(len(v) for v in rows.values()) == 1


def run_py(code, tmp_path, timeout=240, prefix=()):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(BUILD), "python"))
    return subprocess.Popen([*prefix, sys.executable, "-c", textwrap.dedent(code)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(tmp_path))


def test_full_file_system(tmp_path):
    """A 1 MiB tmpfs (a private mount namespace): the recording stops with
    one RuntimeWarning naming the file, the pipeline delivers everything,
    recorded + not recorded = every chunk handed out; the raw index lists
    exactly the chunks recorded and says it stopped."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("unshare -m not permitted here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    for name in ("x.raw", "x.h5") if HAVE_HDF5 else ("x.raw",):
        code = """
            import json, shutil, subprocess, sys, warnings
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", %r], check=True)
            import vfgx
            p = vfgx.Pipeline(%r)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                st = p.record(%r)
            for f in __import__("glob").glob(%r + "*"):
                shutil.copy(f, %r)
            print(json.dumps(dict(st=st, cs=p.chunk_stats(), ps=p.stats(),
                                  warnings=[str(x.message) for x in w])))
            """ % (str(mnt), cfg(packets=40000), str(mnt / name), str(mnt / name), str(tmp_path))
        pr = run_py(code, tmp_path, prefix=("unshare", "-m", "--propagation", "private"))
        out, err = pr.communicate(timeout=240)
        assert pr.returncode == 0, err[-500:]
        r = json.loads(out)
        st, cs = r["st"], r["cs"]
        assert len(r["warnings"]) == 1 and name in r["warnings"][0] and "\n" not in r["warnings"][0]
        assert "space" in r["warnings"][0].lower() and st["error"] == r["warnings"][0]
        assert r["ps"]["delivered"] == 40000
        assert st["not_recorded"] > 0 and st["recorded"] + st["not_recorded"] == cs["handed_out"]
        if name.endswith(".raw"):
            rec = vfgx.record.open_raw(str(tmp_path / name))
            assert rec.stopped and len(rec.chunks) == st["recorded"]
            for s in range(2):
                check_rows(s, raw_rows(str(tmp_path / name), s))


def _throttle_files():
    """The kernel's block throttle for a cgroup: cgroup v2's io.max where
    the io controller is on the unified hierarchy, else cgroup v1's
    blkio.throttle.write_bps_device (the same blk-throttle).  (make(name)
    -> (dir, write(majmin, bps))) or None with the reason."""
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        try:
            ctl = open(os.path.join(root, "cgroup.controllers")).read().split()
        except OSError:
            continue
        if "io" in ctl:
            def make(name, root=root):
                with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
                    f.write("+io")
                d = os.path.join(root, name)
                os.mkdir(d)
                return d, lambda mm, bps: open(os.path.join(d, "io.max"), "w").write(
                    "%s wbps=%d" % (mm, bps))
            return make, None
    v1 = "/sys/fs/cgroup/blkio"
    if os.path.exists(os.path.join(v1, "blkio.throttle.write_bps_device")):
        def make(name):
            d = os.path.join(v1, name)
            os.mkdir(d)
            return d, lambda mm, bps: open(os.path.join(d, "blkio.throttle.write_bps_device"),
                                           "w").write("%s %d" % (mm, bps))
        return make, None
    return None, "no cgroup io controller (neither io.max nor blkio.throttle) in this kernel"


def test_slow_disk(tmp_path):
    """A real slow disk: ext4 on a loop device, its writes throttled to
    64 KiB/s for the recording process by the kernel's cgroup block
    throttle (io.max wbps, or cgroup v1's blkio.throttle.write_bps_device
    where the io controller is bound to v1, as on this host).  A write not
    done within record.max_wait_ms stops the recording with one line; the
    pipeline delivers everything; recorded + not recorded = every chunk
    handed out; the index lists exactly the chunks recorded, byte-exact,
    and says why it stopped.  No timing is asserted."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop device, mount, cgroup)")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("unshare -m not permitted here")
    make, why = _throttle_files()
    if not make:
        pytest.skip(why)
    img = tmp_path / "disk.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True, capture_output=True)
    lo = subprocess.run(["losetup", "--find", "--show", str(img)], capture_output=True, text=True)
    if lo.returncode:
        pytest.skip("no loop device: " + lo.stderr.strip())
    dev = lo.stdout.strip()
    cg = None
    try:
        rdev = os.stat(dev).st_rdev
        cg, throttle = make("vfgx-test-slow-disk-%d" % os.getpid())
        throttle("%d:%d" % (os.major(rdev), os.minor(rdev)), 65536)
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        name = "x.raw"
        code = """
            import glob, json, os, shutil, subprocess, warnings
            subprocess.run(["mount", %r, %r], check=True)
            with open(os.path.join(%r, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            import vfgx
            p = vfgx.Pipeline(%r)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                st = p.record(%r)
            for f in glob.glob(%r + "*"):
                shutil.copy(f, %r)
            print(json.dumps(dict(st=st, cs=p.chunk_stats(), ps=p.stats(),
                                  warnings=[str(x.message) for x in w])))
            """ % (dev, str(mnt), cg, cfg(packets=40000, record="record:\n  format: raw\n  max_wait_ms: 300\n"),
                   str(mnt / name), str(mnt / name), str(tmp_path))
        pr = run_py(code, tmp_path, prefix=("unshare", "-m", "--propagation", "private"))
        out, err = pr.communicate(timeout=240)
        assert pr.returncode == 0, err[-500:]
        r = json.loads(out)
        st, cs = r["st"], r["cs"]
        assert len(r["warnings"]) == 1 and name in r["warnings"][0] and "\n" not in r["warnings"][0]
        assert "max_wait_ms" in r["warnings"][0] and st["error"] == r["warnings"][0]
        assert r["ps"]["delivered"] == 40000
        assert st["not_recorded"] > 0 and st["recorded"] + st["not_recorded"] == cs["handed_out"]
        rec = vfgx.record.open_raw(str(tmp_path / name))
        assert rec.stopped == st["error"] and len(rec.chunks) == st["recorded"]
        for s in range(2):
            check_rows(s, raw_rows(str(tmp_path / name), s))
    finally:
        if cg:
            for _ in range(100):  # the child's threads leave the cgroup as they exit
                try:
                    os.rmdir(cg)
                    break
                except OSError:
                    time.sleep(0.1)
        subprocess.run(["losetup", "-d", dev])


ENDLESS = """
    import json, sys, time, vfgx
    p = vfgx.Pipeline(%r)
    print("go", flush=True)
    try:
        st = p.record(%r%s)
        print(json.dumps(dict(st=st, cs=p.chunk_stats())), flush=True)
    except KeyboardInterrupt:
        print(json.dumps(dict(interrupted=True, cs=p.chunk_stats())), flush=True)
        sys.exit(3)
    """


@NO_HDF5
def test_duration_and_ctrl_c(tmp_path):
    """An endless source: duration= stops it, and Ctrl-C (SIGINT) does the
    same and raises KeyboardInterrupt once the files are closed whole: the
    HDF5 file opens and holds every chunk handed out, byte-exact."""
    h5py = pytest.importorskip("h5py")
    endless = cfg(packets=0, extra=", rate_pps: 200000")
    path = str(tmp_path / "dur.raw")
    pr = run_py(ENDLESS % (endless, path, ", duration=1.0"), tmp_path)
    out, err = pr.communicate(timeout=240)
    assert pr.returncode == 0, err[-500:]
    r = json.loads(out.splitlines()[-1])
    assert r["st"]["recorded"] == r["cs"]["handed_out"] > 0 and r["st"]["error"] is None
    assert total_rows(lambda s: raw_rows(path, s), 2) == r["st"]["recorded"]
    path = str(tmp_path / "int.h5")
    pr = run_py(ENDLESS % (endless, path, ""), tmp_path)
    assert pr.stdout.readline().strip() == "go"
    deadline = time.time() + 120
    while time.time() < deadline and pr.poll() is None:
        if os.path.exists(path) and os.path.getsize(path) > 3000000:
            break
        time.sleep(0.1)
    pr.send_signal(signal.SIGINT)
    out, err = pr.communicate(timeout=120)
    assert pr.returncode == 3, err[-500:]
    r = json.loads(out.splitlines()[-1])
    with h5py.File(path, "r") as f:
        n = 0
        for s in range(2):
            rows = h5_rows(f, s)
            check_rows(s, rows)
            n += len(rows)
    assert r["interrupted"] and n == r["cs"]["handed_out"] > 0


@NO_HDF5
def test_example_runs(tmp_path):
    """examples/record/record.py records the generator in one call and
    prints from the file it wrote."""
    pytest.importorskip("h5py")
    ex = os.path.join(ROOT, "examples", "record", "record.py")
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(BUILD), "python"))
    r = subprocess.run([sys.executable, ex, str(tmp_path / "ex.h5")], capture_output=True,
                       text=True, timeout=240, env=env)
    assert r.returncode == 0, r.stderr[-500:]
    lines = r.stdout.splitlines()
    rec = [x for x in lines if x.startswith("recorded")]
    assert rec and "0 not recorded" in rec[0]
    n = int(rec[0].split()[1])
    assert ("file: %d chunks" % n) in r.stdout
