#!/usr/bin/env python3
"""cupy_spectrometer.py - the spectrometer of examples/spectrometer in
CuPy: chunks in GPU memory handed to CuPy through DLPack (no copy), their
complex int8 samples unpacked (missing packets as zeros), cupy.fft over
4096 channels, power accumulated, written one value per line.  Each
chunk goes back from the CUDA stream after its work (release(stream=)),
so the loop never waits for the GPU.

    PYTHONPATH=build/python python3 examples/python/cupy_spectrometer.py OUT.txt

It reads the same stream as build/examples/spectrometer/spectrometer, so
the two files hold the same spectrum (tests/gpu/python compares them).
"""
import sys

try:
    import cupy as cp
except ImportError as e:
    # one line, not a traceback: what is missing and how to get it
    sys.exit("cupy_spectrometer: needs CuPy (%s; pip install cupy-cuda12x, "
             "or the wheel for your CUDA)" % e)

import vfgx

NFFT = 4096
CONFIG = """interfaces:
  - backend: loopback
    loopback: { packets: 200000, flows: 1, packet_size: 1082, loss: 0.001,
                replay: true, replay_inline: true }
pipeline:
  device: cpu
  chunks: { payload_bytes: 1024, packets: 64, in_flight: 8, mem: gpu }
"""


def main(out):
    spec = cp.zeros(NFFT, dtype=cp.float64)
    chunks = 0
    with vfgx.Pipeline(CONFIG) as p:
        for chunk in p.chunks(timeout=5.0):
            raw = cp.from_dlpack(chunk)            # (64, 1024) uint8, the chunk itself
            words = cp.from_dlpack(chunk._raw.device_present())
            bits = (words[0] >> cp.arange(64, dtype=cp.uint64)) & 1
            s = raw.view(cp.int8).astype(cp.float32) * bits[:, None].astype(cp.float32)
            x = (s[:, 0::2] + 1j * s[:, 1::2]).reshape(-1, NFFT)
            f = cp.fft.fft(x.astype(cp.complex64), axis=1)
            spec += (cp.abs(f) ** 2).astype(cp.float64).sum(axis=0)
            del raw, words, bits, s, x, f
            # back once the FFT queued on the stream is done; no wait here
            chunk.release(stream=cp.cuda.get_current_stream())
            chunks += 1
    with open(out, "w") as fh:
        for v in cp.asnumpy(spec):
            fh.write("%.10e\n" % v)
    print("cupy_spectrometer: %d chunks, %d channels -> %s" % (chunks, NFFT, out))
    return 0 if chunks else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: cupy_spectrometer.py OUT.txt\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
