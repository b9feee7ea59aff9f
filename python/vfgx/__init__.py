"""vfgx - VectorFlow-GX from Python: a session from a config, as `vfgx run`
runs it (ports, capture, pipeline, the Prometheus endpoint, user modules,
the recorder, the report), and its chunks as arrays that alias the
pipeline's memory (NumPy for host and pinned chunks; DLPack and
__cuda_array_interface__ for GPU chunks, so cupy.from_dlpack(chunk) and
torch.from_dlpack(chunk) take the device pointer the pipeline wrote).
docs/python.md has the whole story.

    with vfgx.Pipeline("config.yaml") as p:
        for chunk in p.chunks(timeout=1.0):
            with chunk:
                total += chunk.data.sum()

    s = vfgx.Session("config.yaml", capture="rx.pcapng", metrics="127.0.0.1:0")
    s.run_to_end()
    print(s.report_text)

Recording (docs/record.md): `p.record("run.h5")` records every chunk to
HDF5 (raw files for other names) until the sources end, in one call.
"""
import json
import os
import time
import warnings

import numpy as np

from . import _vfgx
from ._vfgx import ConfigError, now_ns, pattern  # noqa: F401

CHUNK_COMPLETE = _vfgx.CHUNK_COMPLETE

# struct vfgx_chunk_device (include/vfgx/chunk_device.h), field for field
CHUNK_DEVICE_DTYPE = np.dtype([
    ("argsz", np.uint32), ("streams", np.uint32), ("in_flight", np.uint32),
    ("packets", np.uint32), ("payload_bytes", np.uint32), ("present_words", np.uint32),
    ("slot_stride", np.uint64), ("present_off", np.uint64), ("lens_off", np.uint64),
    ("data", np.uint64), ("ready", np.uint64), ("returned", np.uint64),
    ("end", np.uint64), ("meta", np.uint64)], align=True)


def include_dir():
    """The folder holding vfgx/*.h (for a kernel that includes
    <vfgx/chunk_device.h>): $VFGX_INCLUDE_DIR, else the installed headers,
    else the source tree this package was built from."""
    for d in (os.environ.get("VFGX_INCLUDE_DIR"), _vfgx.INSTALL_INCLUDE, _vfgx.SOURCE_INCLUDE):
        if d and os.path.isfile(os.path.join(d, "vfgx", "chunk_device.h")):
            return d
    raise FileNotFoundError("vfgx.include_dir: no vfgx/chunk_device.h under $VFGX_INCLUDE_DIR, %s or %s"
                            % (_vfgx.INSTALL_INCLUDE, _vfgx.SOURCE_INCLUDE))

__all__ = ["Session", "Pipeline", "Chunk", "Recorder", "ConfigError", "CHUNK_COMPLETE",
           "CHUNK_DEVICE_DTYPE", "include_dir"]


def _config_text(config):
    """(yaml text, name) from a path, a YAML string or a dict."""
    if isinstance(config, dict):
        # JSON is YAML: libyaml reads it as flow mappings
        return json.dumps(config), "<dict>"
    if isinstance(config, os.PathLike) or (isinstance(config, str) and "\n" not in config
                                            and ":" not in config):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        except OSError as e:
            # the line `vfgx run` prints after "vfgx: " (src/core/config.c)
            err = ConfigError("%s: cannot open config: %s" % (path, e.strerror))
            err.message, err.file, err.line, err.column = str(err), path, None, None
            raise err from None
    if isinstance(config, str):
        return config, "<string>"
    raise TypeError("vfgx: config is a path, a YAML string or a dict, not %s"
                    % type(config).__name__)


class Chunk:
    """One ready chunk.  Its arrays alias the pipeline's memory: give it
    back with release() (or leave a `with chunk:` block) once they are no
    longer used; release() refuses while an array still views the chunk."""

    def __init__(self, raw):
        self._raw = raw

    # what the chunk is
    stream = property(lambda self: self._raw.stream)
    index = property(lambda self: self._raw.index)
    seq = property(lambda self: self._raw.seq, doc="packet index of slot 0")
    packets = property(lambda self: self._raw.packets)
    payload_bytes = property(lambda self: self._raw.payload_bytes)
    present_count = property(lambda self: self._raw.present_count)
    missing = property(lambda self: self._raw.missing)
    late = property(lambda self: self._raw.late, doc="packets for it that came after it was ready")
    flags = property(lambda self: self._raw.flags)
    complete = property(lambda self: bool(self._raw.flags & CHUNK_COMPLETE))
    mem = property(lambda self: self._raw.mem)
    released = property(lambda self: self._raw.released)
    last_packet_ns = property(lambda self: self._raw.last_packet_ns)
    ready_ns = property(lambda self: self._raw.ready_ns)
    # from the producer's header (pipeline.format, docs/chunks.md)
    first_seq = property(lambda self: self._raw.first_seq, doc="extended sequence of its first packet that arrived")
    hdr_ts = property(lambda self: self._raw.hdr_ts, doc="that packet's header timestamp (RTP: the frame's)")
    bytes = property(lambda self: self._raw.bytes, doc="payload bytes the chunk spans")
    missing_bytes = property(lambda self: self._raw.missing_bytes)
    hdr_flags = property(lambda self: self._raw.hdr_flags, doc="1: hdr_ts valid, 2: an end mark arrived")

    @property
    def data(self):
        """packets x payload_bytes uint8: a NumPy array over host and
        pinned chunks, a device view (DLPack, CUDA array interface) over
        GPU chunks.  No copy either way."""
        if self._raw.mem == "gpu":
            return self._raw.device_data()
        return np.frombuffer(self._raw, dtype=np.uint8).reshape(self.packets, self.payload_bytes)

    @property
    def present(self):
        """bool per slot (a copy of the bitmap) for host and pinned chunks;
        the bitmap's uint64 words as a device view for GPU chunks."""
        if self._raw.mem == "gpu":
            return self._raw.device_present()
        words = np.frombuffer(self._raw.present_words(), dtype="<u8")
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")
        return bits[: self.packets].astype(bool)

    @property
    def lens(self):
        """payload bytes per slot (0 where missing), host and pinned chunks."""
        return np.frombuffer(self._raw.lens_bytes(), dtype="<u4")

    # GPU chunks are DLPack producers themselves: cupy.from_dlpack(chunk)
    def __dlpack__(self, *args, **kwargs):
        return self._gpu_view().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._gpu_view().__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        return self._gpu_view().__cuda_array_interface__

    def _gpu_view(self):
        if self._raw.mem == "host":
            raise TypeError("vfgx chunk: host memory has no GPU view (use chunk.data)")
        return self._raw.device_data()

    def release(self, stream=None):
        """Give the chunk back.  With `stream` (a CuPy or PyTorch CUDA
        stream, or a raw handle as an int) it goes back from that stream
        once the work queued on it so far is done, without waiting here
        (pinned and GPU chunks).  Arrays viewing the chunk are deleted
        first either way."""
        if stream is not None and not isinstance(stream, int):
            stream = getattr(stream, "ptr", getattr(stream, "cuda_stream", None))
            if stream is None:
                raise TypeError("vfgx chunk: release(stream=): a CuPy or PyTorch stream or an int handle")
        self._raw.release(stream=stream)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def __repr__(self):
        return "<vfgx.Chunk stream %d index %d seq %d %d/%d present %s%s>" % (
            self.stream, self.index, self.seq, self.present_count, self.packets,
            self.mem, " released" if self.released else "")


class Session:
    """What `vfgx run` runs, from a config (a path, a YAML string or a
    dict): its ports, the capture (capture:, or `capture=PATH`, pcapng for
    a name ending .pcapng), the pipeline, the Prometheus endpoint
    (metrics.listen, or `metrics="ADDR:PORT"`, port 0 picks one), the user
    code of pipeline.user (or `user=PATH`, `user_arg=`), the recorder
    (record:, or `record=PATH`) and the report.  `duration` (seconds)
    overrides pipeline.duration_s.  Where a user module's chunk callback,
    a CUDA module or the recorder takes the chunks, the session's consumer
    thread hands each to them (`consumes` is True; get() is refused);
    otherwise the program takes them with get() or chunks().  Bad configs
    raise ConfigError with the same one-line message `vfgx run` prints
    (and .file, .line, .column)."""

    _kind = "Session"
    _record_section = True

    def __init__(self, config, name=None, *, capture=None, capture_replace=False, record=None,
                 metrics=None, user=None, user_arg=None, duration=None):
        text, default_name = _config_text(config)
        fs = lambda v: None if v is None else os.fspath(v)  # noqa: E731
        self._p = _vfgx.Session(
            text, name or default_name, record_section=self._record_section,
            capture=fs(capture), capture_replace=bool(capture_replace), record=fs(record),
            metrics=metrics, user=fs(user), user_arg=user_arg,
            duration=-1.0 if duration is None else float(duration), kind=self._kind)
        self._text = text  # the recordings' config attribute
        self._started = False
        self._report = None

    @property
    def consumes(self):
        """True when the session's consumer takes every chunk (a user
        module's chunk callback, a CUDA module, the recorder)."""
        return self._p.consumes

    @property
    def metrics_port(self):
        """The Prometheus endpoint's port (metrics.listen or metrics=), or
        None.  It serves until the session is deleted, the final counters
        after stop()."""
        return self._p.metrics_port

    def wait(self, timeout=None):
        """Wait until done() (the sources ended, duration_s passed, or user
        code failed), in slices of 50 ms (Ctrl-C is seen); False after
        `timeout` seconds."""
        t0 = time.monotonic()
        while not self.done():
            if timeout is not None and time.monotonic() - t0 >= timeout:
                return False
            time.sleep(0.05)
        return True

    def run_to_end(self, timeout=None):
        """start(), wait(timeout), stop(); the report.  Ctrl-C stops the
        session and raises KeyboardInterrupt."""
        if not self._started:
            self.start()
        try:
            self.wait(timeout)
        finally:
            self._stop_once()
        return self.report()

    def report(self):
        """After stop(): the report as a dict: secs, pipeline (stats()),
        pipeline_error, rx_packets, port_drops, conns_refused, source (what
        the loopback generator made, or None), chunks and complete (taken
        by the session's consumer), user_errors, user_module (name, fini),
        gpu_module (path, launches, error), capture (path, closed, seen,
        selected, written, ring_full, skipped_gpu, failed, bytes, files,
        error), record (path, recorded, not_recorded, bytes, files,
        direct, error), each None where the session ran none; ok: the
        user code and the recorder ended well (`vfgx run`'s rule)."""
        if self._report is None:
            rep, text = self._p.report()
            um, gm, rec = rep["user_module"], rep["gpu_module"], rep["record"]
            rep["ok"] = (rep["user_errors"] == 0 and (um is None or um["fini"] == 0)
                         and (gm is None or not gm["error"])
                         and (rec is None or rec["error"] is None))
            self._report, self._report_text = rep, text
        return self._report

    @property
    def report_text(self):
        """After stop(): the report's lines as `vfgx run` prints them."""
        self.report()
        return self._report_text

    @property
    def engine(self):
        return self._p.engine

    def start(self):
        self._p.start()
        self._started = True

    def stop(self):
        """Stop the engine; chunks and arrays still held stay valid."""
        self._p.stop()

    def done(self):
        return self._p.done()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def stats(self):
        return self._p.stats()

    def chunk_stats(self):
        return self._p.chunk_stats()

    def chunk_device(self):
        """The device chunk API's view (include/vfgx/chunk_device.h) as a
        NumPy structured scalar with the layout of struct vfgx_chunk_device,
        to pass by value to a kernel of your own, e.g. a cupy.RawKernel
        compiled with options=("-I" + vfgx.include_dir(), ...) that includes
        <vfgx/chunk_device.h>.  From this call on the pipeline's chunks go to
        that kernel, not to get().  With the gpu engine, compile and load the
        kernel before making the Pipeline (docs/chunks.md)."""
        raw = self._p.chunk_device()
        return np.frombuffer(raw, dtype=CHUNK_DEVICE_DTYPE)[0]

    def get(self, timeout=1.0):
        """The next ready chunk, None after `timeout` seconds, EOFError once
        the sources ended and every chunk was handed out."""
        raw = self._p.get(-1 if timeout is None else int(timeout * 1000))
        return None if raw is None else Chunk(raw)

    def chunks(self, timeout=1.0):
        """Iterate ready chunks until the sources end.  Waits in slices of
        at most 100 ms (so Ctrl-C is seen); stops iterating after `timeout`
        seconds without a chunk.  A chunk left unreleased and with no array
        viewing it is given back when the next one is asked for."""
        prev = None
        waited = 0.0
        while True:
            if prev is not None and not prev.released and not prev._raw.exports:
                prev.release()
            try:
                raw = self._p.get(100 if timeout is None else int(min(timeout, 0.1) * 1000))
            except EOFError:
                return
            if raw is None:
                waited += 0.1
                if timeout is not None and waited >= timeout:
                    return
                continue
            waited = 0.0
            prev = Chunk(raw)
            yield prev

    def run(self, on_chunk, timeout=1.0):
        """Call on_chunk(chunk) for every ready chunk, giving each back
        after the call; returns the number of chunks."""
        n = 0
        for chunk in self.chunks(timeout=timeout):
            try:
                on_chunk(chunk)
            finally:
                if not chunk._raw.exports:
                    chunk.release()
            n += 1
        return n

    # --- recording (issue 42, docs/record.md) --------------------------------
    def recorder(self, path=None, format=None, *, rotate_bytes=None, rotate_seconds=None,
                 compression=None, compression_level=None, ring=None, overwrite=None):
        """A Recorder for this pipeline's chunks, its first file open.  The
        options are the record: section's (docs/config.md); the config's
        record: section, where it has one, gives those not passed (its path
        too); without one, `format` follows the path: "hdf5" for a name
        ending in .h5 or .hdf5, "raw" otherwise, as `vfgx run --record`.
        A path that cannot be created (a FIFO, a symlink, an existing
        file, a missing directory) raises OSError with the one-line
        reason; options or a build that cannot record raise ValueError."""
        return Recorder(self._p.recorder(
            path=None if path is None else os.fspath(path), format=format,
            rotate_bytes=rotate_bytes, rotate_seconds=rotate_seconds,
            compression=compression, compression_level=compression_level, ring=ring,
            overwrite=overwrite, config_text=self._text))

    def record(self, path=None, format=None, *, duration=None, **options):
        """Record every chunk until the sources end, in one call: open a
        recorder (recorder()'s arguments), start the pipeline if it is not
        running, take each chunk, write it and give it back, then close the
        files.  `duration` (seconds) stops the pipeline after that long
        (an endless source), and the chunks still coming are recorded.
        Ctrl-C stops the pipeline the same way, closes the files whole and
        raises KeyboardInterrupt.  Returns the recorder's stats: recorded,
        not_recorded, bytes, files, direct, error (the line that stopped
        the recording, also given as a RuntimeWarning; the pipeline went
        on) or None."""
        rec = self.recorder(path, format, **options)
        try:
            if not self._started:
                self.start()
            t0, stopping = time.monotonic(), False
            # slices of 100 ms: Ctrl-C is seen between them
            while not rec._raw.consume(100):
                if duration is not None and not stopping and time.monotonic() - t0 >= duration:
                    self._stop_once()
                    stopping = True
        except KeyboardInterrupt:
            self._stop_once()
            while not rec._raw.consume(100):
                pass
            rec.close()
            raise
        finally:
            st = rec.close()
        return st

    def _stop_once(self):
        try:
            self.stop()
        except RuntimeError:
            pass  # stopped already


class Pipeline(Session):
    """A Session whose record: section is the program's: p.record() and
    p.recorder() take their defaults from it, and the session records
    nothing itself (vfgx.Session(record=...) does).  Everything else is
    the Session's: capture, metrics, user code."""

    _kind = "Pipeline"
    _record_section = False

    def __init__(self, config, name=None, *, capture=None, capture_replace=False,
                 metrics=None, user=None, user_arg=None, duration=None):
        super().__init__(config, name, capture=capture, capture_replace=capture_replace,
                         metrics=metrics, user=user, user_arg=user_arg, duration=duration)


class Recorder:
    """Records chunks to HDF5 or raw files (docs/record.md); from
    Pipeline.recorder().  write(chunk) records a chunk the program holds
    (give it back after); the recorder never keeps it.  A write error (a
    full disk, a file removed while written) stops the recording, never
    the pipeline: write() then returns False, the chunk is counted as not
    recorded, and the line that said why is in stats()["error"] and given
    once as a RuntimeWarning."""

    def __init__(self, raw):
        self._raw = raw
        self._warned = False

    path = property(lambda self: self._raw.path, doc="the first file")
    closed = property(lambda self: self._raw.closed)

    def write(self, chunk):
        ok = self._raw.write(chunk._raw if isinstance(chunk, Chunk) else chunk)
        if not ok:
            self._warn(self._raw.stats())
        return ok

    def stats(self):
        """recorded, not_recorded, bytes, files, direct, errno, error."""
        return self._raw.stats()

    def close(self):
        """Finish the writes in flight and close the files; the stats."""
        st = self._raw.close()
        self._warn(st)
        return st

    def _warn(self, st):
        if st["error"] and not self._warned:
            self._warned = True
            warnings.warn(st["error"], RuntimeWarning, stacklevel=3)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<vfgx.Recorder %s%s>" % (self.path, " closed" if self.closed else "")
