"""The device chunk API from Python (make test-gpu): a cupy.RawKernel that
includes <vfgx/chunk_device.h> gets Pipeline.chunk_device() by value and
consumes every chunk in a resident loop (no get(), no launch per chunk);
the byte sums it finds equal those of the same stream's chunks taken with
get() on the CPU engine in host memory and summed by NumPy.  Runs in a
child with a time limit: a hang fails the test instead of the suite."""
import os
import subprocess
import sys

import pytest

cp = pytest.importorskip("cupy")

BODY = r'''
import os, numpy as np, cupy as cp, vfgx

def cfg(device, mem):
    return ("interfaces:\n  - backend: loopback\n"
            "    loopback: { packets: 64000, flows: 1, packet_size: 560, loss: 0.002, seed: 3 }\n"
            "pipeline:\n  device: %s\n"
            "  chunks: { payload_bytes: 512, packets: 64, in_flight: 8, mem: %s }\n" % (device, mem))

# the reference: host chunks on the CPU, summed by NumPy
ref = {}
with vfgx.Pipeline(cfg("cpu", "host")) as p:
    for c in p.chunks(timeout=5.0):
        with c:
            lens, data, present = c.lens, c.data, c.present
            pres = [bool(present[i]) for i in range(c.packets)]
            ref[c.index] = (sum(pres), int(sum(int(data[i, :lens[i]].sum()) for i in range(c.packets) if pres[i])))
            del lens, data, present  # no array may view the chunk at its release

SRC = r"""
#include <vfgx/chunk_device.h>
extern "C" __global__ void consume(vfgx_chunk_device v, unsigned long long *out,
                                   unsigned int cap, unsigned int *count)
{
    unsigned int k = 0;
    for (uint64_t n = 0;; n++) {
        int r = vfgx_dev_chunk_wait(&v, 0, n);
        if (r == VFGX_DEV_CHUNK_END)
            break;
        if (r != VFGX_DEV_CHUNK_READY)
            continue;
        const uint8_t *d = vfgx_dev_chunk_data(&v, 0, n);
        const uint64_t *pr = vfgx_dev_chunk_present(&v, 0, n);
        const uint32_t *ln = vfgx_dev_chunk_lens(&v, 0, n);
        unsigned long long s = 0, in = 0;
        for (uint32_t p = 0; p < v.packets; p++) {
            if (!(pr[p / 64] >> (p % 64) & 1))
                continue;
            in++;
            for (uint32_t b = 0; b < ln[p]; b++)
                s += d[(size_t)p * v.payload_bytes + b];
        }
        if (k < cap) {
            out[3 * k] = n;
            out[3 * k + 1] = in;
            out[3 * k + 2] = s;
        }
        k++;
        vfgx_dev_chunk_put(&v, 0, n);
    }
    *count = k;
}
"""
opts = ["-I" + vfgx.include_dir(), "-std=c++17"]
cuda = cp.cuda.get_cuda_path()
if cuda and os.path.isdir(os.path.join(cuda, "include")):
    opts.append("-I" + os.path.join(cuda, "include"))
kern = cp.RawKernel(SRC, "consume", options=tuple(opts))
# compiled, loaded and memory made before the gpu engine's kernel runs
kern.compile()
cap = 2000
out = cp.zeros(3 * cap, dtype=cp.uint64)
count = cp.zeros(1, dtype=cp.uint32)
stream = cp.cuda.Stream(non_blocking=True)
cp.cuda.runtime.deviceSynchronize()
print("compiled", flush=True)
for device in ("gpu", "cpu"):
    out.fill(0)
    cp.cuda.runtime.deviceSynchronize()
    p = vfgx.Pipeline(cfg(device, "gpu"))
    v = p.chunk_device()
    assert v["argsz"] == vfgx.CHUNK_DEVICE_DTYPE.itemsize and v["packets"] == 64
    p.start()
    with stream:
        kern((1,), (1,), (v, out, np.uint32(cap), count))
    while not p.done():
        pass
    p.stop()
    stream.synchronize()
    n = int(count.get()[0])
    got = out.get().reshape(-1, 3)[:n]
    seen = {int(i): (int(a), int(b)) for i, a, b in got}
    assert seen == ref, (device, len(seen), len(ref))
    print("ok", device, n, flush=True)
    del p
'''


def test_device_consumer_from_cupy_matches_numpy():
    try:
        r = subprocess.run([sys.executable, "-u", "-c", BODY], capture_output=True, text=True,
                           timeout=180, env=os.environ.copy())
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"hung after: {out.strip().splitlines()[-1:] or 'nothing'}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split().count("ok") == 2, r.stdout
