"""The Python package on a GPU (make test-gpu): GPU chunks handed to CuPy
and PyTorch through DLPack and __cuda_array_interface__ see the device
pointer the pipeline wrote (no copy) and its bytes; release is refused
while a GPU array views the chunk; chunks given back from a CuPy or
PyTorch stream (release(stream=)) are reused only after the work queued
before; the CuPy spectrometer's spectrum equals the C cuFFT
spectrometer's."""
import os
import subprocess
import sys

import numpy as np
import pytest

import vfgx

cp = pytest.importorskip("cupy")
torch = pytest.importorskip("torch")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("VFGX_BUILD", os.path.join(ROOT, "build"))

CONFIG = ("interfaces:\n  - backend: loopback\n    loopback: { packets: 20000, flows: 2 }\n"
          "pipeline:\n  device: cpu\n"
          "  chunks: { payload_bytes: 512, packets: 128, streams: 2, in_flight: 8, mem: gpu }\n")


def test_dlpack_and_cai_alias_the_device_pointer():
    with vfgx.Pipeline(CONFIG) as p:
        chunk = p.get(timeout=5)
        assert chunk.mem == "gpu"
        ptr = chunk._raw.data_ptr
        x = cp.from_dlpack(chunk)
        t = torch.from_dlpack(chunk)
        y = cp.asarray(chunk.data)  # __cuda_array_interface__
        assert x.data.ptr == ptr and t.data_ptr() == ptr and y.data.ptr == ptr
        assert t.device.type == "cuda" and x.shape == (128, 512)
        host = cp.asnumpy(x)
        for i in range(chunk.packets):  # 512 B frames: 454 B after the app header
            assert host[i, :454].tobytes() == vfgx.pattern(chunk.stream, chunk.seq + i, 454)
        assert torch.equal(t.cpu(), torch.from_numpy(host))
        with pytest.raises(BufferError):
            chunk.release()
        del x, t, y
        import gc
        gc.collect()
        chunk.release()
        with pytest.raises(ValueError, match="used after release"):
            chunk.data


def cupy_view_of(ts):
    """CuPy's stream object for a PyTorch stream (from_external where this
    CuPy has it; ExternalStream, deprecated since, before)."""
    if hasattr(cp.cuda.Stream, "from_external") and hasattr(ts, "__cuda_stream__"):
        return cp.cuda.Stream.from_external(ts)
    return cp.cuda.ExternalStream(ts.cuda_stream)


def test_release_from_a_stream():
    """Each chunk copied on a CUDA stream and given back from it (CuPy's
    and PyTorch's in turn): 20,000 packets over 2 streams x 8 slots make
    about 157 chunks, so slots are refilled many times; every copy holds
    the chunk's bytes (a slot refilled before its copy ran would not), and
    the run ends."""
    s = cp.cuda.Stream(non_blocking=True)
    ts = torch.cuda.Stream()
    copies, n = [], 0
    with vfgx.Pipeline(CONFIG) as p:
        for chunk in p.chunks(timeout=5.0):
            if n % 2:
                with s:
                    x, w = cp.from_dlpack(chunk), cp.from_dlpack(chunk.present)
                    copies.append((chunk.stream, chunk.seq, x.copy(), w.copy()))
                del x, w
                chunk.release(stream=s)
            else:
                with torch.cuda.stream(ts), cupy_view_of(ts):
                    t, w = torch.from_dlpack(chunk), cp.from_dlpack(chunk.present)
                    copies.append((chunk.stream, chunk.seq, t.clone(), w.copy()))
                del t, w
                chunk.release(stream=ts)
            assert chunk.released
            n += 1
        st = p.chunk_stats()
    s.synchronize()
    ts.synchronize()
    assert n == len(copies) > 16 and st["returned"] == 0 and st["handed_out"] == n
    for stream, seq, x, w in copies:
        host = x.cpu().numpy() if isinstance(x, torch.Tensor) else cp.asnumpy(x)
        words = w.cpu().numpy() if isinstance(w, torch.Tensor) else cp.asnumpy(w)
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")
        assert bits[:128].any()
        for i in np.flatnonzero(bits[:128]):  # 512 B frames: 454 B after the app header
            assert host[i, :454].tobytes() == vfgx.pattern(stream, seq + int(i), 454)


def test_cupy_fft_equals_c_spectrometer(tmp_path):
    c_out, py_out = tmp_path / "c.txt", tmp_path / "py.txt"
    subprocess.run([os.path.join(BUILD, "examples/spectrometer/spectrometer"), str(c_out)], check=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "examples/python/cupy_spectrometer.py"),
                    str(py_out)], check=True)
    c = np.loadtxt(c_out)
    py = np.loadtxt(py_out)
    assert c.shape == py.shape == (4096,)
    rel = np.abs(c - py) / np.maximum(np.abs(c), c.mean() * 1e-3)
    assert rel.max() < 1e-3, rel.max()
