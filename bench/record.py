#!/usr/bin/python3
"""record.py [--rounds N] [--packets P] [--dir DIR] [--out DIR] [--vfgx PATH]
- the recorder's benchmarks, written to OUT/record.md in the results format
of bench/results.c (date, machine, load, rounds, one target line per goal
with the same median / interval rule, ported here):

  record_raw_vs_fio    `vfgx run --record` raw files (O_DIRECT, io_uring,
                       queue depth record.ring) against fio writing the same
                       bytes to the same file system with the same block
                       size (one chunk record), O_DIRECT, io_uring, same
                       queue depth, in the same round;
  record_hdf5_vs_raw   the same run recorded to HDF5 against raw;
  record_pipeline_rate the pipeline's packet rate with raw recording to
                       tmpfs against the same run without recording.

Rounds interleave the sides.  Every rate is what a user sees: the run's
--json report (recorded bytes over the run's seconds), fio's own write
bandwidth."""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK_PACKETS, PAYLOAD, RING = 1024, 2048, 4


def commit():
    """The commit measured (bench/results.c writes the same line): HEAD,
    -dirty when tracked files differ from it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        h = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD", "--"]).returncode != 0
        return h + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def config(d, packets, record):
    path = os.path.join(d, "bench.yaml")
    with open(path, "w") as f:
        f.write("interfaces:\n"
                "  - backend: loopback\n"
                "    loopback: { packets: %d, flows: 1, packet_size: 2048 }\n"
                "pipeline:\n"
                "  device: cpu\n"
                "  chunks: { payload_bytes: %d, packets: %d, streams: 1, in_flight: 8 }\n"
                "%s" % (packets, PAYLOAD, CHUNK_PACKETS, record))
    return path


def vfgx_run(vfgx, d, packets, record):
    cfg = config(d, packets, record)
    r = subprocess.run([vfgx, "run", "-q", "--json", cfg], capture_output=True, text=True,
                       timeout=600)
    rep = json.loads(r.stdout[r.stdout.find("{"):])
    if record and rep["record"]["error"]:
        sys.exit("record.py: the recording stopped: %s" % rep["record"]["error"])
    return rep


def clean(d, stem):
    for x in os.listdir(d):
        if x.startswith(stem):
            os.unlink(os.path.join(d, x))


def fio(d, size, bs):
    path = os.path.join(d, "fio.dat")
    r = subprocess.run(["fio", "--name=rec", "--filename=" + path, "--rw=write",
                        "--bs=%d" % bs, "--size=%d" % size, "--direct=1",
                        "--ioengine=io_uring", "--iodepth=%d" % RING, "--end_fsync=1",
                        "--output-format=json"], capture_output=True, text=True, timeout=600)
    os.unlink(path)
    if r.returncode:
        sys.exit("record.py: fio failed: %s" % r.stderr.strip()[-300:])
    return json.loads(r.stdout)["jobs"][0]["write"]["bw_bytes"]


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


def fstype(d):
    r = subprocess.run(["stat", "-f", "-c", "%T", d], capture_output=True, text=True)
    return r.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--packets", type=int, default=400000, help="per run (2048 B frames)")
    ap.add_argument("--dir", default=None, help="file system the recordings and fio write to")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--vfgx", default=os.path.join(ROOT, "build", "src", "cli", "vfgx"))
    ap.add_argument("--note", default="", help="a line on the machine's state for the file")
    a = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("record.py: fio not installed (scripts/install-deps.sh installs it)")
    load = os.getloadavg()[0]
    started = datetime.datetime.now(datetime.timezone.utc)
    rows, t = [], {k: [] for k in ("raw", "fio", "hdf5", "raw2", "rec", "norec")}
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="vfgx-bench-record-") as d, \
            tempfile.TemporaryDirectory(dir="/dev/shm", prefix="vfgx-bench-record-") as shm:
        for rnd in range(1, a.rounds + 1):
            rep = vfgx_run(a.vfgx, d, a.packets, "record: { path: %s/r.raw, format: raw, ring: %d }\n"
                           % (d, RING))
            raw = rep["record"]["bytes"] / rep["seconds"]
            bs = json.loads(open(os.path.join(d, "r.raw.index.jsonl")).readline())["record_bytes"]
            direct = rep["record"]["direct"]
            size = os.path.getsize(os.path.join(d, "r.raw"))
            clean(d, "r.")
            ref = fio(d, size, bs)
            t["raw"].append(raw / 1e6)
            t["fio"].append(ref / 1e6)
            rows.append((rnd, "raw vs fio (bs %d, depth %d, O_DIRECT %s)" % (bs, RING, "yes" if direct else "no"),
                         "%.1f MB/s" % (raw / 1e6), "fio %.1f MB/s" % (ref / 1e6), raw / ref))
            rep = vfgx_run(a.vfgx, d, a.packets, "record: { path: %s/r.h5 }\n" % d)
            h5 = rep["record"]["bytes"] / rep["seconds"]
            clean(d, "r.")
            rep = vfgx_run(a.vfgx, d, a.packets, "record: { path: %s/r.raw, format: raw }\n" % d)
            raw2 = rep["record"]["bytes"] / rep["seconds"]
            clean(d, "r.")
            t["hdf5"].append(h5 / 1e6)
            t["raw2"].append(raw2 / 1e6)
            rows.append((rnd, "hdf5 vs raw", "%.1f MB/s" % (h5 / 1e6), "raw %.1f MB/s" % (raw2 / 1e6),
                         h5 / raw2))
            rep = vfgx_run(a.vfgx, shm, a.packets, "record: { path: %s/p.raw, format: raw }\n" % shm)
            rec = rep["pipeline"]["mpps"]
            clean(shm, "p.")
            rep = vfgx_run(a.vfgx, shm, a.packets, "")
            norec = rep["pipeline"]["mpps"]
            t["rec"].append(rec)
            t["norec"].append(norec)
            rows.append((rnd, "pipeline with raw recording to tmpfs vs without", "%.3f Mpps" % rec,
                         "no recording %.3f Mpps" % norec, rec / norec))
        fs = fstype(d)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "record.md")
    u = platform.uname()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    with open(path, "w") as f:
        f.write("# vfgx run --record\n\n")
        f.write("- date: %s\n" % started.strftime("%Y-%m-%d %H:%M:%S UTC"))
        f.write("- machine: %s, %d online cores, Linux %s %s\n" % (cpu, os.cpu_count(), u.release, u.machine))
        f.write("- load (1 min) at start: %.2f\n" % load)
        f.write("- commit: %s\n" % commit())
        if a.note:
            f.write("- note: %s\n" % a.note)
        f.write("- rounds: %d, sides interleaved in each; %d packets of 2048 B frames per run, "
                "chunks of %d packets, one stream; recordings and fio on %s (%s), the pipeline-rate "
                "rows on tmpfs (/dev/shm)\n\n" % (a.rounds, a.packets, CHUNK_PACKETS, a.dir or "/tmp", fs))
        f.write("What runs is what a user runs: `vfgx run --json` over the loopback generator, "
                "its record object's bytes over the run's seconds (the recording's rate as the "
                "run sees it, bounded by the generator and pipeline as much as by the disk), "
                "and fio's own write bandwidth for the same bytes, block size (one chunk record), "
                "O_DIRECT, io_uring and queue depth (bench/record.py).\n\n")
        f.write("| round | case | vfgx | reference | ratio |\n| --- | --- | --- | --- | --- |\n")
        for r in rows:
            f.write("| %d | %s | %s | %s | %.3f |\n" % r)
        f.write("\nEvery target line is computed by bench/record.py with bench/results.c's rule: the "
                "median over rounds, min..max, and a distribution-free confidence interval of the "
                "median of the per-round ratios (order statistics; with fewer than 6 rounds it is "
                "min..max and its coverage is printed); met=yes only when the whole interval meets "
                "the goal.\n\n")
        f.write(target("record_raw_vs_fio", t["raw"], t["fio"], 0.9) + "\n")
        f.write(target("record_hdf5_vs_raw", t["hdf5"], t["raw2"], 0.8) + "\n")
        f.write(target("record_pipeline_rate", t["rec"], t["norec"], 0.95) + "\n")
    print(open(path).read())


if __name__ == "__main__":
    main()
