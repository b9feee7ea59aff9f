#!/usr/bin/python3
"""record.py [--rounds N] [--packets P] [--dir DIR] [--out DIR] [--vfgx PATH]
[--device cpu|gpu] - the recorder's benchmarks (issue 42), written to
OUT/record.md (OUT/record-gpu.md with --device gpu) in the results format
of bench/results.c (date, machine, load, rounds, one target line per goal
with the same median / interval rule, ported here):

  record_raw_vs_fio    `vfgx run --record` raw files (O_DIRECT, io_uring,
                       queue depth record.ring) against fio writing the same
                       bytes to the same file system with the same block
                       size (one chunk record), O_DIRECT, io_uring, same
                       queue depth, in the same round: three raw runs
                       between four fio runs, each side's data bytes over
                       its data files' lives (birth to last write, as the
                       file system stamps them: one instrument for both),
                       summed in the round; each tool's own clock is a
                       row beside it;
  record_hdf5_vs_raw   the same run recorded to HDF5 against raw;
  record_pipeline_rate the pipeline's packet rate with raw recording to
                       tmpfs against the same run without recording.

--device gpu (a GPU host; chunks in GPU memory, `chunks.mem: gpu`):

  record_gpu           chunks recorded per second (raw files, the pinned
                       staging ring) against the lower of, in the same
                       round: the pinned-staging copy floor (record_d2h.cu,
                       built here with nvcc: the recorder's own three
                       cudaMemcpyAsync device-to-pinned copies and stream
                       sync per chunk, nothing else) and the disk (fio as
                       above, or where fio is not installed coreutils' dd
                       with O_DIRECT and the same block size, queue depth 1).

Rounds interleave the sides.  Every rate is what a user sees: the run's
--json report (recorded bytes over the run's seconds, the files closed
included), fio's own write bandwidth."""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK_PACKETS, PAYLOAD, RING = 1024, 2048, 4
ALTERNATIONS = 3  # raw runs per round in record_raw_vs_fio


def commit():
    """The commit measured (bench/results.c writes the same line): HEAD,
    -dirty when tracked files differ from it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        h = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.strip()
        # the results file being written is not a difference
        dirty = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD", "--", ".",
                                ":!bench/results"]).returncode != 0
        return h + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def config(d, packets, record, mem="host", rate_pps=0):
    path = os.path.join(d, "bench.yaml")
    with open(path, "w") as f:
        f.write("interfaces:\n"
                "  - backend: loopback\n"
                "    loopback: { packets: %d, flows: 1, packet_size: 2048, replay: true, "
                "replay_inline: %s, udp_csum: false%s }\n"
                "pipeline:\n"
                "  device: cpu\n"
                "  chunks: { payload_bytes: %d, packets: %d, streams: 1, in_flight: 8, mem: %s }\n"
                "%s" % (packets, "true" if mem != "gpu" else "false",
                        ", rate_pps: %d" % rate_pps if rate_pps else "", PAYLOAD,
                        CHUNK_PACKETS, mem, record))
    return path


def vfgx_run(vfgx, d, packets, record, **kw):
    cfg = config(d, packets, record, **kw)
    r = subprocess.run([vfgx, "run", "-q", "--json", cfg], capture_output=True, text=True,
                       timeout=600)
    try:
        rep = json.loads(r.stdout[r.stdout.find("{"):])
    except ValueError:
        sys.exit("record.py: vfgx run gave no report (exit %d): %s" % (r.returncode, r.stderr.strip()[-300:]))
    if record and rep["record"]["error"]:
        sys.exit("record.py: the recording stopped: %s" % rep["record"]["error"])
    return rep


def clean(d, stem):
    for x in os.listdir(d):
        if x.startswith(stem):
            os.unlink(os.path.join(d, x))


def file_span(path):
    """Seconds from the file's birth to its last data write, as the file
    system stamps them (statx btime and mtime): the same instrument for
    fio's file and the recorder's."""
    out = subprocess.run(["stat", "-c", "%w", path], capture_output=True, text=True).stdout.strip()
    day, clock, _ = out.split()
    sec, _, frac = clock.partition(".")
    born = datetime.datetime.strptime(day + " " + sec, "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    born_ns = int(born) * 1000000000 + int((frac + "000000000")[:9])
    return (os.stat(path).st_mtime_ns - born_ns) / 1e9


def fio(d, size, bs, span=False):
    path = os.path.join(d, "fio.dat")
    r = subprocess.run(["fio", "--name=rec", "--filename=" + path, "--rw=write",
                        "--bs=%d" % bs, "--size=%d" % size, "--direct=1",
                        "--ioengine=io_uring", "--iodepth=%d" % RING, "--end_fsync=1",
                        # as the recorder: a new file, made when the writes
                        # start, not allocated ahead
                        "--create_on_open=1", "--fallocate=none",
                        "--output-format=json"], capture_output=True, text=True, timeout=600)
    secs = file_span(path) if span and not r.returncode else 0.0
    os.unlink(path)
    if r.returncode:
        sys.exit("record.py: fio failed: %s" % r.stderr.strip()[-300:])
    bw = json.loads(r.stdout)["jobs"][0]["write"]["bw_bytes"]
    return (bw, secs) if span else bw


def dd(d, size, bs):
    """coreutils dd: the same bytes in blocks of bs with O_DIRECT, queue
    depth 1, fsync at the end (the disk reference where fio is missing)."""
    path = os.path.join(d, "dd.dat")
    n = max(1, size // bs)
    t0 = time.monotonic()
    r = subprocess.run(["dd", "if=/dev/zero", "of=" + path, "bs=%d" % bs, "count=%d" % n,
                        "oflag=direct", "conv=fsync"], capture_output=True, text=True, timeout=600)
    secs = time.monotonic() - t0
    os.unlink(path)
    if r.returncode:
        sys.exit("record.py: dd failed: %s" % r.stderr.strip()[-300:])
    return n * bs / secs


def binom_half_cdf(n, j):
    p, c = 0.0, 1.0
    for i in range(0, min(j, n) + 1):
        p += c
        c = c * (n - i) / (i + 1)
    return p * 0.5 ** n


def stat(v):
    x = sorted(v)
    n = len(x)
    med = x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * binom_half_cdf(n, k) >= 0.95:
        k += 1
    return dict(median=med, min=x[0], max=x[-1], lo=x[k - 1], hi=x[n - k],
                level=1 - 2 * binom_half_cdf(n, k - 1))


def target(name, measured, reference, goal):
    m, r = stat(measured), stat(reference)
    q = stat([a / b if b > 0 else 0 for a, b in zip(measured, reference)])
    # issue #41: as bench/results.c, no met=yes below the 95% stated
    few = q["level"] < 0.95
    met = q["lo"] >= goal and not few
    return ("target: %s measured=%.4g reference=%.4g ratio=%.4f goal=%.4g met=%s "
            "rounds=%d min=%.4g max=%.4g interval=[%.4g,%.4g] level=%.3f on=ratio%s"
            % (name, m["median"], r["median"], q["median"], goal, "yes" if met else "no",
               len(measured), q["min"], q["max"], q["lo"], q["hi"], q["level"],
               " (too few rounds for 95%: 6 needed)" if few else ""))


class RamLoop:
    """--ram-loop MB: ext4 on a loop device whose backing file lies in
    /dev/shm, mounted on a temporary directory - a block device with a
    file system, O_DIRECT and io_uring as on a disk, but without a shared
    disk's swings, so that the recorder's path and fio's are what differ."""

    def __init__(self, mb):
        self.mb, self.dev, self.mnt = mb, None, None
        self.img = tempfile.mkstemp(dir="/dev/shm", prefix="vfgx-bench-ram-")[1]

    def __enter__(self):
        subprocess.run(["truncate", "-s", "%dM" % self.mb, self.img], check=True)
        self.dev = subprocess.run(["losetup", "--find", "--show", self.img], check=True,
                                  capture_output=True, text=True).stdout.strip()
        subprocess.run(["mkfs.ext4", "-q", "-F", self.dev], check=True)
        self.mnt = tempfile.mkdtemp(prefix="vfgx-bench-ram-mnt-")
        subprocess.run(["mount", self.dev, self.mnt], check=True)
        return self.mnt

    def __exit__(self, *exc):
        if self.mnt:
            subprocess.run(["umount", self.mnt])
            os.rmdir(self.mnt)
        if self.dev:
            subprocess.run(["losetup", "-d", self.dev])
        os.unlink(self.img)


def fstype(d):
    r = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", d], capture_output=True, text=True)
    return " ".join(r.stdout.split()) or "?"


def head(f, title, a, started, load, extra):
    u = platform.uname()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    f.write("# %s\n\n" % title)
    f.write("- date: %s\n" % started.strftime("%Y-%m-%d %H:%M:%S UTC"))
    f.write("- machine: %s, %d online cores, %.0f GiB memory, Linux %s %s\n"
            % (cpu, os.cpu_count(), os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
               u.release, u.machine))
    f.write("- load (1 min) at start: %.2f, at end: %.2f\n" % (load, os.getloadavg()[0]))
    f.write("- commit: %s\n" % commit())
    if a.note:
        f.write("- note: %s\n" % a.note)
    f.write(extra)


def rows_table(f, rows):
    f.write("| round | case | vfgx | reference | ratio |\n| --- | --- | --- | --- | --- |\n")
    for r in rows:
        f.write("| %d | %s | %s | %s | %.3f |\n" % r)
    f.write("\nEvery target line is computed by bench/record.py with bench/results.c's rule: the "
            "median over rounds, min..max, and a distribution-free confidence interval of the "
            "median of the per-round ratios (order statistics; with fewer than 6 rounds it is "
            "min..max and its coverage is printed); met=yes only when the whole interval meets "
            "the goal.\n\n")


def cpu_main(a, load, started):
    rows, t = [], {k: [] for k in ("raw", "fio", "hdf5", "raw2", "rec", "norec", "urec", "unorec")}
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="vfgx-bench-record-") as d, \
            tempfile.TemporaryDirectory(dir="/dev/shm", prefix="vfgx-bench-record-") as shm:
        # a warm-up run, not measured: the record size and file size fio writes
        vfgx_run(a.vfgx, d, a.packets, "record: { path: %s/r.raw, format: raw, ring: %d }\n" % (d, RING))
        bs = json.loads(open(os.path.join(d, "r.raw.index.jsonl")).readline())["record_bytes"]
        size = os.path.getsize(os.path.join(d, "r.raw"))
        clean(d, "r.")
        for rnd in range(1, a.rounds + 1):
            # F R F R F R F: ALTERNATIONS raw runs between fio runs of the
            # same bytes, each side's rate its bytes over its seconds summed
            # in the round, so the shared disk's slow spells (seconds long)
            # fall on both sides instead of on one run
            fb = fs = rb = rs = 0.0
            ffs = rfs = 0.0  # the file-time spans (file_span) of each side
            fios = []
            direct = True
            for k in range(ALTERNATIONS + 1):
                bw, span = fio(d, size, bs, span=True)
                fios.append(bw)
                fb += size
                fs += size / bw
                ffs += span
                if k == ALTERNATIONS:
                    break
                rep = vfgx_run(a.vfgx, d, a.packets, "record: { path: %s/r.raw, format: raw, ring: %d }\n"
                               % (d, RING))
                h = json.loads(open(os.path.join(d, "r.raw.index.jsonl")).readline())
                bs = h["record_bytes"]
                direct = direct and rep["record"]["direct"]
                size = os.path.getsize(os.path.join(d, "r.raw"))
                # the data file's bytes (what fio writes) over the run's seconds
                rb += rep["record"]["recorded"] * bs
                rs += rep["seconds"]
                rfs += file_span(os.path.join(d, "r.raw"))
                raw_file = rep["record"]["bytes"] / rep["seconds"]
                clean(d, "r.")
            # the target: both sides' data files timed by the file system,
            # birth to last write (bytes equal: size is the recording's);
            # the run's own seconds and fio's bw are the row's other pair
            raw_run, ref_bw = rb / rs, fb / fs
            raw, ref = rb / rfs, fb / ffs
            t["raw"].append(raw / 1e6)
            t["fio"].append(ref / 1e6)
            rows.append((rnd, "raw vs fio: %d raw runs of %.0f MB between %d fio runs of the same bytes, "
                         "blocks of %d, io_uring depth %d, O_DIRECT %s; each side's data bytes over its data "
                         "files' lives as the file system stamps them (birth to last write, summed in the "
                         "round; the same instrument both sides); besides, by each tool's own clock: vfgx "
                         "%.1f MB/s (the report's seconds, the run's start and close included), fio %.1f MB/s "
                         "(its bw: %s); vfgx also "
                         "generates and assembles the packets (the generator replaying in the "
                         "pipeline's thread, 1 consumer thread writing each chunk's ring slot as it "
                         "lies, no copy, at most record.ring chunks held)"
                         % (ALTERNATIONS, size / 1e6, ALTERNATIONS + 1, bs, RING, "yes" if direct else "no",
                            raw_run / 1e6, ref_bw / 1e6, ", ".join("%.0f" % (x / 1e6) for x in fios)),
                         "%.1f MB/s" % (raw / 1e6), "fio %.1f MB/s" % (ref / 1e6), raw / ref))
            rep = vfgx_run(a.vfgx, d, a.packets, "record: { path: %s/r.h5 }\n" % d)
            h5 = rep["record"]["bytes"] / rep["seconds"]
            clean(d, "r.")
            rep = vfgx_run(a.vfgx, d, a.packets, "record: { path: %s/r.raw, format: raw }\n" % d)
            raw2 = (raw_file + rep["record"]["bytes"] / rep["seconds"]) / 2
            clean(d, "r.")
            t["hdf5"].append(h5 / 1e6)
            t["raw2"].append(raw2 / 1e6)
            rows.append((rnd, "hdf5 vs raw: the same run and file system, file bytes written over "
                         "the run's seconds, raw before and after, their mean the reference "
                         "(hdf5: H5Dwrite_chunk from the chunk, buffered, a flush per chunk, fsync on close; raw: "
                         "each chunk's ring slot as it lies, O_DIRECT io_uring, fsync on close)",
                         "%.1f MB/s" % (h5 / 1e6), "raw %.1f MB/s" % (raw2 / 1e6), h5 / raw2))
            # the target's condition: tmpfs faster than the stream, the
            # stream paced at a.rate_pps (fio on tmpfs in the round shows it)
            shm_bw = fio(shm, a.rate_pps * 2048 * 2, bs)
            rep = vfgx_run(a.vfgx, shm, a.paced_packets, "record: { path: %s/p.raw, format: raw }\n" % shm,
                           rate_pps=a.rate_pps)
            rec = rep["pipeline"]["mpps"]
            clean(shm, "p.")
            rep = vfgx_run(a.vfgx, shm, a.paced_packets, "", rate_pps=a.rate_pps)
            norec = rep["pipeline"]["mpps"]
            t["rec"].append(rec)
            t["norec"].append(norec)
            rows.append((rnd, "pipeline rate, raw recording to tmpfs vs the same run without: stream "
                         "paced at %d pps (%.0f MB/s), tmpfs takes %.0f MB/s (fio, this round); "
                         "the consumer thread takes and gives back each chunk either way"
                         % (a.rate_pps, a.rate_pps * 2048 / 1e6, shm_bw / 1e6),
                         "%.4f Mpps" % rec, "no recording %.4f Mpps" % norec, rec / norec))
            # not a target: the generator unpaced, faster than tmpfs here
            rep = vfgx_run(a.vfgx, shm, a.packets, "record: { path: %s/p.raw, format: raw }\n" % shm)
            urec = rep["pipeline"]["mpps"]
            clean(shm, "p.")
            rep = vfgx_run(a.vfgx, shm, a.packets, "")
            unorec = rep["pipeline"]["mpps"]
            t["urec"].append(urec)
            t["unorec"].append(unorec)
            rows.append((rnd, "(not a target) the same, generator unpaced: the stream %.0f MB/s "
                         "without recording, tmpfs took %.0f MB/s by fio this round; recording adds "
                         "one copy per byte (the chunk's ring slot into tmpfs's pages, by the kernel; "
                         "no staging copy) on the consumer thread" % (unorec * 2048, shm_bw / 1e6),
                         "%.3f Mpps" % urec, "no recording %.3f Mpps" % unorec, urec / unorec))
            print("round %d: raw/fio %.3f hdf5/raw %.3f rate %.3f" % (rnd, raw / ref, h5 / raw2, rec / norec),
                  file=sys.stderr, flush=True)
        fs = fstype(d)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, a.name or "record.md")
    with open(path, "w") as f:
        head(f, "vfgx run --record", a, started, load,
             "- rounds: %d, sides interleaved in each; %d packets of 2048 B frames per run, "
             "chunks of %d packets, one stream, the loopback generator replaying its frames "
             "(replay, replay_inline, no UDP checksum: a stream faster than the disk); recordings "
             "and fio on %s (%s), the pipeline-rate rows on tmpfs (/dev/shm), paced rows %d "
             "packets\n\n" % (a.rounds, a.packets, CHUNK_PACKETS, a.dir or "/tmp", fs, a.paced_packets))
        f.write("What runs is what a user runs: `vfgx run --json` over the loopback generator, "
                "its record object's bytes over the run's seconds (the recording's rate as the "
                "run sees it, the files' close included), "
                "and fio's own write bandwidth for the same bytes, block size (one chunk record), "
                "O_DIRECT, io_uring and queue depth (bench/record.py).\n\n")
        rows_table(f, rows)
        f.write(target("record_raw_vs_fio", t["raw"], t["fio"], 0.9) + "\n")
        f.write(target("record_hdf5_vs_raw", t["hdf5"], t["raw2"], 0.8) + "\n")
        f.write(target("record_pipeline_rate", t["rec"], t["norec"], 0.95) + "\n")
        u = stat([x / y for x, y in zip(t["urec"], t["unorec"])])
        f.write("\n(not a target) the generator unpaced, raw recording to tmpfs against none: ratio "
                "median %.3f, interval [%.3f,%.3f]; each row gives the stream's rate without "
                "recording and what fio wrote to tmpfs in the same round (the target's condition, "
                "a disk faster than the stream, is the paced rows').\n" % (u["median"], u["lo"], u["hi"]))
    print(open(path).read())


def build_d2h(d):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    exe = os.path.join(d, "record_d2h")
    r = subprocess.run([nvcc, "-O2", "-o", exe, os.path.join(ROOT, "bench", "record_d2h.cu")],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("record.py: nvcc bench/record_d2h.cu failed: %s" % (r.stderr.strip()[-300:] or nvcc))
    return exe


def gpu_main(a, load, started):
    rows, t = [], {k: [] for k in ("rec", "ref", "floor", "disk", "norec")}
    have_fio = shutil.which("fio") is not None
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="vfgx-bench-record-") as d, \
            tempfile.TemporaryDirectory(prefix="vfgx-bench-d2h-") as bd:
        d2h = build_d2h(bd)
        for rnd in range(1, a.rounds + 1):
            rep = vfgx_run(a.vfgx, d, a.packets, "record: { path: %s/g.raw, format: raw, ring: %d }\n"
                           % (d, RING), mem="gpu")
            h = json.loads(open(os.path.join(d, "g.raw.index.jsonl")).readline())
            bs, n = h["record_bytes"], rep["record"]["recorded"]
            if n != rep["chunks"]["handed_out"] or n == 0:
                sys.exit("record.py: %d of %d chunks recorded" % (n, rep["chunks"]["handed_out"]))
            rec = n / rep["seconds"]
            size = os.path.getsize(os.path.join(d, "g.raw"))
            clean(d, "g.")
            disk = (fio(d, size, bs) if have_fio else dd(d, size, bs)) / bs
            r = subprocess.run([d2h, str(CHUNK_PACKETS), str(PAYLOAD), str(max(n, 64)), str(RING),
                                str(a.gpu)], capture_output=True, text=True, timeout=600)
            if r.returncode:
                sys.exit("record.py: record_d2h: %s" % r.stderr.strip()[-300:])
            floor = json.loads(r.stdout)["chunks_per_s"]
            rep = vfgx_run(a.vfgx, d, a.packets, "", mem="gpu")
            norec = rep["chunks"]["handed_out"] / rep["seconds"]
            ref = min(floor, disk)
            for k, v in (("rec", rec), ("ref", ref), ("floor", floor), ("disk", disk), ("norec", norec)):
                t[k].append(v)
            rows.append((rnd, "GPU chunks recorded raw vs min(copy floor %.0f, disk %.0f chunks/s: %s "
                         "blocks of %d, O_DIRECT); the same run without recording %.0f chunks/s"
                         % (floor, disk, "fio io_uring depth %d" % RING if have_fio else
                            "dd depth 1, the recorder's record.ring 1",
                            bs, norec),
                         "%.0f chunks/s" % rec, "%.0f chunks/s" % ref, rec / ref))
            print("round %d: rec %.0f floor %.0f disk %.0f norec %.0f chunks/s" % (rnd, rec, floor, disk, norec),
                  file=sys.stderr, flush=True)
        fs = fstype(d)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", str(a.gpu)],
                         capture_output=True, text=True).stdout.strip() or "?"
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, a.name or "record-gpu.md")
    with open(path, "w") as f:
        head(f, "vfgx run --record, chunks in GPU memory", a, started, load,
             "- GPU: %s (%d)\n- rounds: %d, sides interleaved in each; %d packets of 2048 B frames per "
             "run, chunks of %d packets in GPU memory (chunks.mem: gpu, cpu engine), one stream, "
             "staging ring %d; recordings and the disk reference on %s (%s)\n\n"
             % (gpu, a.gpu, a.rounds, a.packets, CHUNK_PACKETS, RING, a.dir or "/tmp", fs))
        f.write("vfgx: `vfgx run --json` recording raw files, chunks recorded over the run's seconds "
                "(files closed included).  Copy floor: bench/record_d2h.cu, the recorder's own "
                "copies per chunk (slots, bitmap, lengths: three cudaMemcpyAsync device to pinned "
                "host on one stream, then a sync) and nothing else, as many chunks, ring %d.  "
                "Disk: %s writing the data file's bytes in blocks of one record.  The reference "
                "is the lower of the two in the same round.\n\n"
                % (RING, "fio (O_DIRECT, io_uring, depth %d, fsync at the end)" % RING if have_fio
                   else "coreutils dd (O_DIRECT, depth 1, fsync at the end; fio is not installed)"))
        rows_table(f, rows)
        f.write(target("record_gpu", t["rec"], t["ref"], 0.9) + "\n")
    print(open(path).read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--packets", type=int, default=200000, help="per run (2048 B frames)")
    ap.add_argument("--dir", default=None, help="file system the recordings and fio write to")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--vfgx", default=os.path.join(ROOT, "build", "src", "cli", "vfgx"))
    ap.add_argument("--note", default="", help="a line on the machine's state for the file")
    ap.add_argument("--rate-pps", type=int, default=50000,
                    help="record_pipeline_rate: the stream's pace, below what tmpfs takes")
    ap.add_argument("--paced-packets", type=int, default=200000,
                    help="record_pipeline_rate: packets per paced run")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--ram-loop", type=int, default=0, metavar="MB",
                    help="record and run fio on ext4 on a loop device over a /dev/shm file of MB "
                    "(root; instead of --dir)")
    ap.add_argument("--name", default="", help="the results file's name (default record.md / record-gpu.md)")
    ap.add_argument("--gpu", type=int, default=0, help="--device gpu: the GPU")
    a = ap.parse_args()
    if a.rounds < 7:
        print("record.py: fewer than 7 rounds: a target's interval is not a 95%% one", file=sys.stderr)
    if a.device == "cpu" and not shutil.which("fio"):
        sys.exit("record.py: fio not installed (scripts/install-deps.sh installs it)")
    if a.device == "gpu" and not shutil.which("fio"):
        # the disk reference is then dd, one write in flight: the recorder
        # gets the same (record.ring 1), so both sides keep one write queued
        global RING
        RING = 1
        print("record.py: no fio: the disk reference is dd (queue depth 1), record.ring 1 to match",
              file=sys.stderr)
    load = os.getloadavg()[0]
    started = datetime.datetime.now(datetime.timezone.utc)
    if a.ram_loop:
        with RamLoop(a.ram_loop) as mnt:
            a.dir = mnt
            (gpu_main if a.device == "gpu" else cpu_main)(a, load, started)
    else:
        (gpu_main if a.device == "gpu" else cpu_main)(a, load, started)


if __name__ == "__main__":
    main()
