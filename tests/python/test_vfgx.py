"""The Python package on the CPU (make test): configs and their errors,
chunks as NumPy arrays that alias the pipeline's memory, every byte
against the loopback generator, lifetimes (release with arrays alive,
use after release, release from a stream refused for host chunks, stop
and delete with arrays alive), the per-chunk
callback, and Ctrl-C."""
import ctypes
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vfgx
from conftest import BUILD, ROOT, loopback


def check_bytes(chunk):
    """Every present slot holds the generator's bytes; missing ones are 0 long."""
    data, present, lens = chunk.data, chunk.present, chunk.lens
    assert data.shape == (chunk.packets, chunk.payload_bytes)
    for i in range(chunk.packets):
        if not present[i]:
            assert lens[i] == 0
            continue
        want = vfgx.pattern(chunk.stream, chunk.seq + i, int(lens[i]))
        assert data[i, : lens[i]].tobytes() == want
    assert int(present.sum()) == chunk.present_count


def test_every_byte_and_counts():
    n = 0
    with vfgx.Pipeline(loopback(extra=", loss: 0.002, reorder: 0.01")) as p:
        assert p.engine == "cpu"
        for chunk in p.chunks():
            with chunk:
                check_bytes(chunk)
            n += 1
        cs, st = p.chunk_stats(), p.stats()
    assert n == cs["handed_out"] == cs["returned"] > 0
    assert cs["closed"] > 0 and cs["placed"] == st["delivered"]
    assert st["drops"]["late"] == cs["late"]


def test_array_aliases_chunk_memory():
    with vfgx.Pipeline(loopback(packets=5000)) as p:
        chunk = p.get(timeout=5)
        a, b = chunk.data, chunk.data
        # the array's buffer is the chunk's memory, not a copy
        assert a.__array_interface__["data"][0] == chunk._raw.data_ptr
        assert b.__array_interface__["data"][0] == chunk._raw.data_ptr
        before = ctypes.string_at(chunk._raw.data_ptr, 1)[0]
        a[0, 0] ^= 0xFF  # written through one view ...
        assert b[0, 0] == a[0, 0]  # ... seen through the other
        assert ctypes.string_at(chunk._raw.data_ptr, 1)[0] == before ^ 0xFF
        assert chunk._raw.exports == 2
        del a, b
        chunk.release()


def test_release_refused_while_viewed_and_use_after_release():
    with vfgx.Pipeline(loopback(packets=5000)) as p:
        chunk = p.get(timeout=5)
        arr = chunk.data
        with pytest.raises(BufferError, match="still view its memory"):
            chunk.release()
        assert not chunk.released
        total = int(arr.sum())  # still valid: the chunk was not given back
        del arr
        chunk.release()
        assert chunk.released
        with pytest.raises(ValueError, match="used after release"):
            chunk.data
        with pytest.raises(ValueError, match="used after release"):
            chunk.seq
        assert total > 0


def test_release_from_a_stream_needs_gpu_reachable_chunks():
    """Host chunks cannot go back from a CUDA stream: one OSError line, and
    the chunk stays held and whole (no data lost); a stream of the wrong
    type is a TypeError."""
    with vfgx.Pipeline(loopback(packets=5000)) as p:
        chunk = p.get(timeout=5)
        with pytest.raises(OSError, match="stream_put needs pinned or gpu chunk memory"):
            chunk.release(stream=0)
        with pytest.raises(TypeError, match="CuPy or PyTorch stream"):
            chunk.release(stream="s")
        assert not chunk.released
        check_bytes(chunk)
        chunk.release()
        assert chunk.released


def test_stop_and_delete_with_arrays_alive():
    p = vfgx.Pipeline(loopback(packets=20000))
    p.start()
    chunk = p.get(timeout=5)
    arr = chunk.data
    want = arr.copy()
    p.stop()
    del p  # the chunk keeps the pipeline's memory alive
    assert np.array_equal(arr, want)
    check_bytes(chunk)
    del arr
    chunk.release()


def test_context_exit_returns_chunks_and_callback():
    seen = []
    with vfgx.Pipeline(loopback(packets=20000)) as p:
        n = p.run(lambda c: seen.append((c.stream, c.index, int(c.data[0].sum()))))
        cs = p.chunk_stats()
    assert n == len(seen) == cs["handed_out"] == cs["returned"]
    per_stream = {}
    for s, i, _ in seen:
        assert i > per_stream.get(s, -1)  # in order per stream
        per_stream[s] = i


def test_config_errors_match_vfgx_run(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("pipeline:\n  chunks: { in_flight: 1 }\n")
    with pytest.raises(vfgx.ConfigError) as e:
        vfgx.Pipeline(str(bad))
    assert (e.value.file, e.value.line) == (str(bad), 2)
    run = subprocess.run([os.path.join(BUILD, "src/cli/vfgx"), "run", str(bad)],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip() == "vfgx: " + e.value.message
    with pytest.raises(vfgx.ConfigError) as e:
        vfgx.Pipeline({"pipeline": {"chunks": {"mem": "hugepage"}}})
    assert "chunks live in host, pinned or gpu memory" in e.value.message
    # a missing file and a directory: the same one line as vfgx run
    for path in (tmp_path / "missing.yaml", tmp_path):
        with pytest.raises(vfgx.ConfigError) as e:
            vfgx.Pipeline(str(path))
        assert e.value.file == str(path)
        run = subprocess.run([os.path.join(BUILD, "src/cli/vfgx"), "run", str(path)],
                             capture_output=True, text=True)
        assert run.returncode == 2
        assert run.stderr.strip() == "vfgx: " + e.value.message
        assert "cannot open config: " in e.value.message
    with pytest.raises(TypeError):
        vfgx.Pipeline(42)
    with pytest.raises(ValueError, match="no pipeline.chunks"):
        p = vfgx.Pipeline({"interfaces": [{"backend": "loopback", "loopback": {"packets": 10}}]})
        p.get(0)


def test_dict_config_and_stats():
    cfg = {"interfaces": [{"backend": "loopback", "loopback": {"packets": 3000, "flows": 1}}],
           "pipeline": {"device": "cpu", "chunks": {"payload_bytes": 512, "packets": 100}}}
    with vfgx.Pipeline(cfg) as p:
        chunks = sum(1 for c in p.chunks())
    st = p.stats()
    assert chunks == 30 and st["delivered"] == 3000 and st["gaps"] == 0
    assert set(st["drops"]) >= {"late", "duplicate", "too_big"}


def test_keyboard_interrupt_stops_cleanly():
    code = textwrap.dedent("""
        import signal, sys, vfgx
        # as in a terminal: a child started in the background inherits
        # SIGINT ignored, and Python then keeps it so
        signal.signal(signal.SIGINT, signal.default_int_handler)
        y = '''%s'''
        p = vfgx.Pipeline(y)
        try:
            with p:
                # "ready" only once a chunk has arrived: the interrupt then
                # always lands in a pipeline that has delivered something
                ready = False
                for c in p.chunks(timeout=None):
                    c.release()
                    if not ready:
                        print("ready", flush=True)
                        ready = True
        except KeyboardInterrupt:
            print("interrupted; delivered", p.stats()["delivered"] > 0, flush=True)
    """) % loopback(packets=0, flows=1, extra=", rate_pps: 200000")
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()  # never left running, whatever failed
        proc.wait()
    assert proc.returncode == 0
    assert out.strip() == "interrupted; delivered True"


def test_numpy_consumer_example():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ex = os.path.join(root, "examples", "python", "numpy_consumer.py")
    run = subprocess.run([sys.executable, ex], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert ", 0 bad slots," in run.stdout


def test_stop_before_start_refused():
    """stop() before start() and start() after stop() raise one line; the
    pipeline stays unstarted and can still be started (before, stop()
    passed and start() then ran a pipeline whose get() ended at once)."""
    p = vfgx.Pipeline(loopback(packets=2560, flows=1))
    with pytest.raises(RuntimeError, match=r"stop\(\) before start\(\)"):
        p.stop()
    with p:
        n = sum(1 for _ in p.chunks())
    assert n == 20
    with pytest.raises(RuntimeError, match=r"start\(\) after stop\(\); a pipeline runs once"):
        p.start()


def test_fork_child_refuses_and_exits():
    """A child of fork() cannot use an inherited pipeline or chunk (one
    RuntimeError line) and exits without hanging in the pipeline's teardown
    (before: pthread_cond_destroy in vfgx_chunkset_destroy waited for the
    parent's consumer threads, for ever); the parent goes on."""
    code = textwrap.dedent("""
        import os, sys, time, vfgx
        cfg = sys.argv[1]
        p = vfgx.Pipeline(cfg)
        p.start()
        c = p.get(5.0)
        assert c is not None
        # the worker fills the other slots and waits for this chunk's: a
        # condition variable the child inherits with a waiter
        time.sleep(0.5)
        pid = os.fork()
        if pid == 0:
            errs = []
            for use in (lambda: p.get(0), p.stats, lambda: c.index, c.release):
                try:
                    use()
                    errs.append("used")
                except RuntimeError as e:
                    errs.append(str(e))
            ok = all("inherited through fork()" in e and "\\n" not in e for e in errs)
            print("child:", "ok" if ok else errs, flush=True)
            # a normal exit: the pipeline and the chunk are torn down here
            sys.exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        c.release()
        n = 1 + sum(1 for _ in p.chunks())
        p.stop()
        print("parent:", n, flush=True)
    """)
    # a session of its own: a hung child is killed with its parent
    proc = subprocess.Popen([sys.executable, "-c", code, loopback(packets=2560, flows=1)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail("the forked child or its parent hung (30 s)\n" + out + err)
    assert proc.returncode == 0, out + err
    assert "child: ok" in out and "parent: 20" in out, out + err


def test_cupy_example_without_cupy(tmp_path):
    """examples/python/cupy_spectrometer.py where CuPy cannot be imported
    (blocked here, so the check also runs where CuPy is installed): one
    line naming CuPy and exit 1, not a traceback."""
    script = os.path.join(ROOT, "examples", "python", "cupy_spectrometer.py")
    code = ("import runpy, sys; sys.modules['cupy'] = None; sys.argv = [sys.argv[1], sys.argv[2]]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code, script, str(tmp_path / "out.txt")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cupy_spectrometer: needs CuPy ("), r.stderr
