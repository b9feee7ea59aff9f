"""The Python package with `device: gpu` (make test-gpu): a gpu-engine
pipeline hands out chunks holding the generator's bytes; while it runs,
deleting another pipeline that holds GPU memory returns at once (CUDA's
frees wait for the persistent kernel, so the library queues them until
it stops), creating GPU or pinned memory is refused with one line instead
of waiting forever, and a CuPy kernel compiled before start runs beside
it.  Each case runs in a child with a time limit: a hang fails the test
instead of stopping the suite."""
import os
import subprocess
import sys

import pytest

import vfgx

cp = pytest.importorskip("cupy")

GPU = ("interfaces:\n  - backend: loopback\n    loopback: { packets: 400000000, flows: 2 }\n"
       "pipeline:\n  device: gpu\n  gpu: { mode: persistent }\n"
       "  chunks: { payload_bytes: 512, packets: 128, streams: 2, in_flight: 8, mem: gpu }\n")
GPUMEM = ("interfaces:\n  - backend: loopback\n    loopback: { packets: 20000, flows: 2 }\n"
          "pipeline:\n  device: cpu\n"
          "  chunks: { payload_bytes: 512, packets: 128, streams: 2, in_flight: 8, mem: gpu }\n")
HOSTMEM = ("interfaces:\n  - backend: loopback\n    loopback: { packets: 20000, flows: 2 }\n"
           "pipeline:\n  device: cpu\n"
           "  chunks: { payload_bytes: 512, packets: 128, streams: 2, in_flight: 8, mem: host }\n")


def child(body, limit=60):
    """Run body (after a gpu-engine pipeline `p` started and chunk `c`
    taken) in a fresh interpreter; its stdout lines, or a failure naming
    the last line printed before the limit."""
    src = ("import gc, sys, time, vfgx\nimport cupy as cp\n"
           f"GPU, GPUMEM, HOSTMEM = {GPU!r}, {GPUMEM!r}, {HOSTMEM!r}\n"
           f"{body}\n")
    try:
        r = subprocess.run([sys.executable, "-u", "-c", src], capture_output=True,
                           text=True, timeout=limit, env=os.environ.copy())
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"hung after: {out.strip().splitlines()[-1:] or 'nothing'}")
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines()


def test_gpu_engine_chunks_hold_the_generator_bytes():
    with vfgx.Pipeline(GPU) as p:
        assert p.engine == "gpu"
        for _ in range(4):
            chunk = p.get(timeout=10)
            assert chunk is not None and chunk.mem == "gpu"
            host = cp.asnumpy(cp.from_dlpack(chunk))
            present = cp.asnumpy(cp.from_dlpack(chunk.present))
            assert host.shape == (128, 512)
            checked = 0
            for i in range(chunk.packets):
                if (present[i // 64] >> (i % 64)) & 1:
                    assert host[i, :454].tobytes() == vfgx.pattern(chunk.stream, chunk.seq + i, 454)
                    checked += 1
            assert checked > 0
            chunk.release()


def test_other_pipelines_while_the_persistent_kernel_runs():
    out = child("""
before = vfgx.Pipeline(GPUMEM)           # GPU memory, made before the start
p = vfgx.Pipeline(GPU); p.start()
c = p.get(timeout=10); assert c is not None
print("running", flush=True)
del before; gc.collect()
print("deleted", flush=True)
try:
    vfgx.Pipeline(GPUMEM)
    print("created")
except Exception as e:
    print("refused:", str(e).splitlines()[0], len(str(e).splitlines()), flush=True)
h = vfgx.Pipeline(HOSTMEM); h.start(); n = h.run(lambda ch: None, timeout=5); h.stop(); del h
print("host pipeline ran", n > 0, flush=True)
c.release(); p.stop()
print("stopped", flush=True)
""")
    assert out[:2] == ["running", "deleted"], out
    refused = [l for l in out if l.startswith("refused:")]
    assert refused and "device: gpu pipeline is running" in refused[0] and refused[0].endswith(" 1"), out
    assert "host pipeline ran True" in out and out[-1] == "stopped", out


def test_kernel_compiled_before_start_runs_beside_it():
    out = child("""
k = cp.RawKernel(r'extern "C" __global__ void f(int *x){ x[0] += 7; }', 'f')
k.compile()
s = cp.cuda.Stream(non_blocking=True)
x = cp.zeros(1, dtype=cp.int32)
p = vfgx.Pipeline(GPU); p.start()
c = p.get(timeout=10); assert c is not None
with s:
    k((1,), (1,), (x,))
    e = s.record()
for _ in range(200):
    if e.done:
        break
    time.sleep(0.05)
print("ran" if e.done else "did not run", int(x.get(stream=s)[0]) if e.done else -1, flush=True)
c.release(); p.stop()
print("stopped", flush=True)
""")
    assert out == ["ran 7", "stopped"], out
