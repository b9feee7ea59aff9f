"""vfgx.Session (issue 39): what `vfgx run` runs, from Python, each part
checked by a reader that is not vfgx's:
  - capture: the pcapng file a session writes is read by Wireshark's
    tshark: as many frames as the loopback generator was told to make,
    each of the configured size, each (stream, sequence) once, every
    payload byte equal to the generator's pattern computed here from its
    definition, and the same slots the chunks the program took hold;
  - user modules: a module (py_user_module.c) whose stage drops every
    k-th sequence: the drops are counted as `user` (the records stay in
    their chunks, docs/chunks.md), and the records and byte sums the
    module saw equal what NumPy computes over the chunks for the
    sequences it keeps; with its chunk callback the
    session's consumer takes the chunks (get() refused), and the sums the
    callback saw equal NumPy's over the recording h5py reads back;
  - metrics: the endpoint (metrics= or metrics.listen) is scraped with
    urllib and parsed with prometheus_client's text parser (Debian's
    python3-prometheus-client); its final counters equal the report's.
Bad input: a module that is not there, a malformed listen address, each
one ConfigError line (the module's the line `vfgx run` prints)."""
import json
import os
import shutil
import subprocess
import urllib.request

import numpy as np
import pytest

import vfgx
from conftest import BUILD

MODULES = os.environ.get("VFGX_PY_MODULES", os.path.join(BUILD, "tests", "python"))
HDRS = 14 + 20 + 8 + 16  # Ethernet, IPv4, UDP, the app header (stages.h)
SIZE = 512               # loopback packet_size: the frame
PLEN = SIZE - HDRS
CHUNK = 128


def cfg(packets=6000, flows=2, extra="", pipeline_extra=""):
    return ("interfaces:\n"
            "  - backend: loopback\n"
            "    loopback: { packets: %d, flows: %d, packet_size: %d%s }\n"
            "pipeline:\n"
            "  device: cpu\n"
            "  chunks: { payload_bytes: 512, packets: %d, streams: %d, in_flight: 8 }\n%s"
            % (packets, flows, SIZE, extra, CHUNK, flows, pipeline_extra))


def pattern(stream, seqs):
    """The generator's payload (include/vfgx/stages.h): byte i of stream s,
    sequence q is s*131 + q*7 + i*13 + 1 mod 256."""
    q = np.asarray(seqs, dtype=np.uint64)[:, None]
    i = np.arange(PLEN, dtype=np.uint64)[None, :]
    return ((stream * 131 + q * 7 + i * 13 + 1) % 256).astype(np.uint8)


def take_chunks(s):
    """{stream: {seq: payload bytes}} of every present slot the program took."""
    got = {}
    for chunk in s.chunks():
        with chunk:
            data, present, lens = chunk.data, chunk.present, chunk.lens
            for k in np.nonzero(present)[0]:
                assert lens[k] == PLEN
                got.setdefault(chunk.stream, {})[chunk.seq + int(k)] = data[k, :PLEN].copy()
            del data
    return got


# --- capture ---------------------------------------------------------------
def tshark_frames(path):
    """[(frame.len, stream, seq, payload after the app header)] as tshark
    dissects the file; the app header is big-endian stream, flags, seq."""
    r = subprocess.run(["tshark", "-r", path, "-T", "fields", "-e", "frame.len",
                        "-e", "udp.payload"], capture_output=True, text=True, timeout=120,
                       check=True)
    out = []
    for line in r.stdout.splitlines():
        flen, hexpay = line.split()
        b = bytes.fromhex(hexpay)
        out.append((int(flen), int.from_bytes(b[0:4], "big"), int.from_bytes(b[8:16], "big"),
                    np.frombuffer(b[16:], np.uint8)))
    return out


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed")
@pytest.mark.parametrize("how", ["keyword", "section"])
def test_capture_read_by_tshark(tmp_path, how):
    path = str(tmp_path / "rx.pcapng")
    n, flows = 6000, 2
    if how == "keyword":
        s = vfgx.Session(cfg(n, flows), capture=path)
    else:
        s = vfgx.Session(cfg(n, flows, pipeline_extra="  capture: { path: %s }\n" % path))
    assert not s.consumes
    with s:
        got = take_chunks(s)
    rep = s.report()
    frames = tshark_frames(path)
    # as many frames as the generator was told to make, each of its size
    assert len(frames) == n
    assert all(f[0] == SIZE for f in frames)
    assert sum(f[0] for f in frames) == n * SIZE
    # each (stream, seq) once, and the payload is the generator's
    keys = sorted((f[1], f[2]) for f in frames)
    assert keys == [(st, q) for st in range(flows) for q in range(n // flows)]
    for st in range(flows):
        mine = [f for f in frames if f[1] == st]
        seqs = [f[2] for f in mine]
        assert (np.stack([f[3] for f in mine]) == pattern(st, seqs)).all()
        # the slots the chunks hold are the frames the capture holds
        assert sorted(got[st]) == sorted(seqs)
        want = {f[2]: f[3] for f in mine}
        assert all((got[st][q] == want[q]).all() for q in got[st])
    c = rep["capture"]
    assert c["path"] == path and c["closed"] and c["error"] == 0
    assert c["written"] == c["seen"] == rep["rx_packets"] == n
    assert "capture %s: %d packets seen" % (path, n) in s.report_text
    fmt = subprocess.run(["capinfos", "-t", "-T", "-r", path], capture_output=True, text=True,
                         check=True).stdout.strip().split("\t")[-1]
    assert fmt == "pcapng"


def test_capture_existing_file_refused(tmp_path):
    path = tmp_path / "old.pcapng"
    path.write_bytes(b"keep me")
    with pytest.raises(vfgx.ConfigError) as e:
        vfgx.Session(cfg(100), capture=str(path))
    assert "\n" not in e.value.message and str(path) in e.value.message
    assert path.read_bytes() == b"keep me"  # nothing lost
    vfgx.Session(cfg(100), capture=str(path), capture_replace=True).run_to_end()
    assert path.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"  # a pcapng section header


# --- user modules ----------------------------------------------------------
def module(name):
    path = os.path.join(MODULES, name + ".so")
    if not os.path.exists(path):
        pytest.skip("%s not built (meson builds it with the python test)" % path)
    return path


def user_section(path, arg):
    return "  user: { library: %s, arg: %s }\n" % (json.dumps(path), json.dumps(arg))


@pytest.mark.parametrize("how", ["section", "keyword"])
def test_user_module_stage_drops_what_numpy_says(tmp_path, how):
    out = str(tmp_path / "mod.json")
    n, flows, k = 6000, 2, 3
    arg = "drop=%d out=%s" % (k, out)
    if how == "section":
        s = vfgx.Session(cfg(n, flows, pipeline_extra=user_section(module("py_stage"), arg)))
    else:
        s = vfgx.Session(cfg(n, flows), user=module("py_stage"), user_arg=arg)
    assert not s.consumes  # a stage alone: the program takes the chunks
    with s:
        got = take_chunks(s)
    rep = s.report()
    mod = json.load(open(out))
    seqs = np.arange(n // flows)
    kept = seqs[seqs % k != 0]
    for st in range(flows):
        # the chunks are placed from the packets, before the stage: every
        # sequence is there, byte-exact
        assert sorted(got[st]) == seqs.tolist()
        assert (np.stack([got[st][q] for q in seqs]) == pattern(st, seqs)).all()
        # the module saw exactly the records NumPy says it keeps, and
        # their bytes
        data = np.stack([got[st][q] for q in kept])
        assert mod["records"][st] == len(kept)
        assert mod["record_sum"][st] == int(data.sum(dtype=np.uint64))
    dropped = flows * int((seqs % k == 0).sum())
    assert rep["pipeline"]["drops"]["user"] == mod["dropped"] == dropped
    assert rep["pipeline"]["delivered"] == n - dropped
    assert rep["user_module"] == {"name": "py_stage", "fini": 0} and rep["ok"]
    assert "user module py_stage: 0 chunks, 0 user errors" in s.report_text


def test_user_module_chunk_callback_and_recording(tmp_path):
    """The callback takes the chunks on the session's consumer, then the
    recorder writes them; h5py reads the recording back: the callback
    summed what the file holds, and the stage what NumPy says it keeps."""
    h5py = pytest.importorskip("h5py")
    out, rec = str(tmp_path / "mod.json"), str(tmp_path / "run.h5")
    n, flows, k = 6000, 2, 4
    s = vfgx.Session(cfg(n, flows), user=module("py_chunks"),
                     user_arg="drop=%d out=%s" % (k, out), record=rec)
    assert s.consumes
    with pytest.raises(RuntimeError, match="the session's consumer hands every chunk"):
        s.get(0)
    with pytest.raises(RuntimeError, match="the session's consumer"):
        s.recorder(str(tmp_path / "other.h5"))
    rep = s.run_to_end(timeout=60)
    mod = json.load(open(out))
    assert rep["ok"] and rep["user_errors"] == 0
    assert rep["chunks"] == mod["chunks"] == rep["record"]["recorded"] > 0
    seqs_all = np.arange(n // flows)
    kept = seqs_all[seqs_all % k != 0]
    with h5py.File(rec, "r") as f:
        assert f.attrs["config"] == cfg(n, flows)
        for st in range(flows):
            g = f["stream%d" % st]
            m = int(g.attrs["chunks"])
            first, pres, data = g["first"][:m], g["present"][:m], g["data"][:m]
            bits = np.unpackbits(pres.astype("<u8").view(np.uint8), axis=1,
                                 bitorder="little")[:, :CHUNK].astype(bool)
            seqs = (first.astype(np.int64)[:, None] + np.arange(CHUNK)[None, :])[bits]
            assert sorted(seqs.tolist()) == seqs_all.tolist()
            slots = data[:, :, :PLEN][bits]
            assert (slots == pattern(st, seqs)).all()
            # what the callback summed is what the file holds
            assert mod["slots"][st] == len(seqs_all)
            assert mod["chunk_sum"][st] == int(slots.sum(dtype=np.uint64))
            # and the stage the records NumPy says it keeps
            keep = seqs % k != 0
            assert mod["records"][st] == len(kept)
            assert mod["record_sum"][st] == int(slots[keep].sum(dtype=np.uint64))
    assert rep["pipeline"]["drops"]["user"] == mod["dropped"] == flows * (len(seqs_all) - len(kept))


def test_user_module_missing_is_one_line_as_vfgx_run(tmp_path):
    missing = str(tmp_path / "no_such_module.so")
    text = cfg(100, pipeline_extra=user_section(missing, ""))
    conf = tmp_path / "bad.yaml"
    conf.write_text(text)
    with pytest.raises(vfgx.ConfigError) as e:
        vfgx.Session(str(conf))
    assert "\n" not in e.value.message and missing in e.value.message
    run = subprocess.run([os.path.join(BUILD, "src/cli/vfgx"), "run", str(conf)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip() == "vfgx: " + e.value.message


# --- metrics ---------------------------------------------------------------
def scrape(port):
    from prometheus_client.parser import text_string_to_metric_families
    page = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read()
    samples = {}
    for fam in text_string_to_metric_families(page.decode()):
        for smp in fam.samples:
            samples[(smp.name, tuple(sorted(smp.labels.items())))] = smp.value
    return samples


@pytest.mark.parametrize("how", ["keyword", "section"])
def test_metrics_scraped_equal_report(how):
    pytest.importorskip("prometheus_client")
    extra = ", loss: 0.01, duplicate: 0.005, reorder: 0.01, seed: 3"
    if how == "keyword":
        s = vfgx.Session(cfg(20000, 2, extra), metrics="127.0.0.1:0")
    else:
        s = vfgx.Session(cfg(20000, 2, extra) + "metrics: { listen: \"127.0.0.1:0\" }\n")
    port = s.metrics_port
    assert port and port > 0
    with s:
        take_chunks(s)
    rep = s.report()
    m = scrape(port)  # the final counters: the endpoint serves until s goes
    dev = (("device", "cpu"),)
    assert m[("vfgx_run_finished", ())] == 1
    pl = rep["pipeline"]
    for name in ("packets", "bytes", "passed", "delivered", "delivered_bytes", "gaps",
                 "verify_errors"):
        assert m[("vfgx_pipeline_%s_total" % name, dev)] == pl[name], name
    for reason, v in pl["drops"].items():
        assert m[("vfgx_pipeline_drops_total", dev + (("reason", reason),))] == v, reason
    rx = sum(v for (name, _), v in m.items() if name == "vfgx_port_rx_packets_total")
    assert rx == rep["rx_packets"] == pl["packets"]
    assert pl["drops"]["duplicate"] > 0 and pl["gaps"] > 0  # the faults were there
    del s


def test_metrics_bad_address_one_line():
    with pytest.raises(vfgx.ConfigError) as e:
        vfgx.Session(cfg(100), metrics="not-an-address")
    assert "\n" not in e.value.message and "not-an-address" in e.value.message


def test_no_endpoint_unless_asked():
    s = vfgx.Session(cfg(100))
    assert s.metrics_port is None
    rep = s.run_to_end()
    assert rep["capture"] is None and rep["record"] is None and rep["user_module"] is None
