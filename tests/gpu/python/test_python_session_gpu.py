"""vfgx.Session on a GPU (make test-gpu, issue 39): a CUDA user module
(pipeline.user.gpu_module: examples/user_module's flow_sum_gpu.fatbin) runs
its kernel on every pinned chunk of a session made from Python, next to a
CPU module's chunk callback (tests/python/py_user_module.c): the per-stream
byte sums the kernel kept in its state equal the CPU callback's and the
sums NumPy computes from the loopback generator's definition; with
device: gpu the same kernel on the gpu engine's chunks finds the same
sums."""
import json
import os
import struct

import numpy as np
import pytest

import vfgx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("VFGX_BUILD", os.path.join(ROOT, "build"))
FATBIN = os.path.join(BUILD, "examples", "user_module", "flow_sum_gpu.fatbin")
PY_CHUNKS = os.path.join(BUILD, "tests", "python", "py_chunks.so")
FLOWS, PER_STREAM, PLEN = 3, 20000, 512 - (14 + 20 + 8 + 16)


def pattern_sum(stream):
    """The generator's bytes of one stream (include/vfgx/stages.h: byte i
    of stream s, sequence q is s*131 + q*7 + i*13 + 1 mod 256), summed."""
    q = np.arange(PER_STREAM, dtype=np.uint64)[:, None]
    i = np.arange(PLEN, dtype=np.uint64)[None, :]
    return int(((stream * 131 + q * 7 + i * 13 + 1) % 256).sum(dtype=np.uint64))


def config(device, state_out, library):
    user = {"gpu_module": FATBIN, "gpu_state_bytes": 8 * FLOWS, "gpu_state_out": state_out}
    if library:
        user["library"] = library[0]
        user["arg"] = library[1]
    return {"interfaces": [{"backend": "loopback",
                            "loopback": {"packets": FLOWS * PER_STREAM, "flows": FLOWS}}],
            "pipeline": {"device": device,
                         "chunks": {"payload_bytes": 512, "packets": 256, "streams": FLOWS,
                                    "in_flight": 8, "mem": "pinned"},
                         "user": user}}


@pytest.mark.skipif(not os.path.exists(FATBIN) or not os.path.exists(PY_CHUNKS),
                    reason="a build with CUDA and the python test modules")
def test_cuda_module_from_a_session(tmp_path):
    want = [pattern_sum(s) for s in range(FLOWS)]
    state, out = str(tmp_path / "state.bin"), str(tmp_path / "mod.json")
    s = vfgx.Session(config("cpu", state, (PY_CHUNKS, "out=" + out)))
    assert s.consumes
    rep = s.run_to_end(timeout=120)
    assert rep["ok"], s.report_text
    gm = rep["gpu_module"]
    assert gm["error"] == "" and gm["launches"] == rep["chunks"] > 0
    gpu = list(struct.unpack("<%dQ" % FLOWS, open(state, "rb").read()))
    cpu = json.load(open(out))["chunk_sum"][:FLOWS]
    assert gpu == cpu == want
    # the gpu engine's chunks: the same kernel, the same sums
    state2 = str(tmp_path / "state_gpu.bin")
    s2 = vfgx.Session(config("gpu", state2, None))
    rep2 = s2.run_to_end(timeout=120)
    assert rep2["ok"] and rep2["gpu_module"]["launches"] > 0, s2.report_text
    assert list(struct.unpack("<%dQ" % FLOWS, open(state2, "rb").read())) == want
