#!/usr/bin/env python3
"""bench-stale.py - the committed benchmark results against the code.

  bench-stale.py [--results DIR]          list the results files whose
      measured sources changed since the commit the file names ("- commit:"
      line, written by bench/results.c; a "- code unchanged through: COMMIT
      (evidence)" line added at review moves the comparison to that later
      commit, when it descends from the measured one), or that name none;
      a file merged from two runs also checks the part it kept against
      that part's own commit ("- CPU part's commit:", PARTS below);
      always exit 0
      (exit 1 only for a results file the source map below lacks)
  bench-stale.py --check [--results DIR]  exit 1 when a `target:` line says
      met=yes without the numbers behind it: no measurement, no rounds, too
      few rounds for 95% (fewer than 6), a level that is not the one its
      rounds give, no reference for a ratio, an interval that does not meet
      the goal, a ratio above its bound (BOUNDED below); and when a bench/*.c call passes one buffer to
      bench_fmt_spread twice (both figures would print the last one)
  bench-stale.py --readme                 the README line naming the stale
      files (the listing says whether README.md has it)

The map from each results file to the sources it measures is SOURCES below,
the one place it is kept: the benchmark's own files, bench/results.c, and
the library code on its measured path (a directory stands for every file
under it).
"""
import argparse
import functools
import glob
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMMON = ["bench/results.c", "bench/results.h"]
# Stands, in a list below, for every file compiled into the GPU kernels:
# src/pipeline/gpu_proc.cu and the closure of what it includes (its .cuh
# files, rules.h, the format and stage rules both engines compile), found
# by reading the #include lines, so a new header is never left out.
GPU_KERNEL = "<gpu kernel>"
KERNEL_ROOTS = ["src/pipeline/gpu_proc.cu"]
INCLUDE_DIRS = ["include", "src/pipeline", "src/format", "src"]
# The cpu engine's processing path, with the rules it shares with the
# kernels: the files that python.md and record-gpu.md measure (chunks in GPU
# memory filled by the cpu engine, `device: cpu`; no kernel of gpu_proc.cu runs)
CPU_ENGINE = ["src/pipeline/proc.c", "src/pipeline/engine_cpu.c",
              "src/pipeline/rules.h", "include/vfgx/stages.h", "include/vfgx/format.h",
              "src/pipeline/pipeline.c", "src/pipeline/pipeline_opts.c"]
SOURCES = {
    # the no-regression A/B (#39): vfgx run's whole path against an older build
    "regression-cpu.md": ["bench/regression.py", "bench/record.py", "src/core", "src/mem", "src/port",
                          "src/pipeline", "src/session", "src/cli", "include"],
    "regression-gpu.md": ["bench/regression.py", "bench/record.py", "src/core", "src/mem", "src/port",
                          "src/pipeline", "src/session", "src/cli", "include", "configs/gpu-loopback-replay.yaml"],
    "record.md": ["bench/record.py", "src/record", "src/session/user_cpu.c", "src/session/session_record.c",
                  "src/port/loopback.c"],
    "record-gpu.md": CPU_ENGINE + ["bench/record.py", "src/port/loopback.c", "src/port/loopback_replay.c", "bench/record_d2h.cu", "src/record", "src/session/user_cpu.c",
                      "src/session/session_record.c", "src/pipeline/chunk_cuda.c", "src/pipeline/chunk_gpu.c"],
    "pipeline-cpu.md": ["bench/pipeline_cpu.c", "bench/pipeline_work.c", "bench/pipeline_work.h",
                        "src/pipeline/proc.c", "src/pipeline/engine_cpu.c", "src/pipeline/pipeline_opts.c",
                        "src/pipeline/pipeline.c", "src/mem", "include/vfgx/stages.h"],
    "socket.md": ["bench/socket.c", "bench/socket_tcp.c", "bench/socket_priv.h", "bench/lo_rps.c",
                  "bench/socket_ref.c",
                  "bench/lo_rps.h", "src/port/socket.c", "src/port/socket_udp.c",
                  "src/port/socket_tcp.c", "src/port/socket_priv.h", "src/port/port.c"],
    "gpu.md": [GPU_KERNEL, "bench/gpu.c", "bench/gpu_bw.cu", "bench/gpu_bw.h", "bench/gpu_kernel.h",
               "bench/pipeline_work.c", "src/pipeline/gpu_proc_host.c", "src/pipeline/commlist.c",
               "src/pipeline/proc.c"],
    "e2e.md": [GPU_KERNEL, "bench/e2e.c", "bench/gpu_bw.cu", "bench/gpu_bw.h", "bench/gpu_kernel.h",
               "src/pipeline/gpu_runner.c", "src/pipeline/engine_gpu.c",
               "src/pipeline/gpu_proc_host.c", "src/pipeline/commlist.c",
               "src/port/loopback.c", "src/port/loopback_replay.c", "src/pipeline/pipeline.c",
               "src/pipeline/pipeline_opts.c"],
    "afxdp.md": ["bench/afxdp.c", "bench/testpmd.c", "bench/testpmd.h", "scripts/netns-veth.sh",
                 "src/port/afxdp.c", "src/port/afxdp_opts.c", "src/port/port.c"],
    "chunks.md": [GPU_KERNEL, "bench/chunks.c", "bench/chunk_stamp.cu", "bench/chunk_stamp.h",
                  "include/vfgx/chunk_device.h",
                  "bench/pipeline_work.c", "src/pipeline/chunk.c", "src/pipeline/chunk_cuda.c",
                  "src/pipeline/chunk_gpu.c", "src/pipeline/chunkset.h", "src/pipeline/proc.c",
                  "examples/spectrometer"],
    "python.md": CPU_ENGINE + ["bench/python_bench.c", "bench/python_consumer.py", "python/vfgx",
                               "src/pipeline/chunk.c", "src/pipeline/chunk_cuda.c",
                               "src/pipeline/chunk_gpu.c", "src/port/loopback.c",
                               "src/port/loopback_replay.c"],
    "send.md": ["bench/send.c", "bench/send_ref.c", "bench/send_ref.h", "bench/pace_rx.c",
                "bench/pace_rx.h", "bench/testpmd.c", "bench/testpmd.h", "src/cli/send.c",
                "src/cli/send_pace.c", "src/cli/run_capture.c", "src/port/capture.c",
                "src/port/capture_pcap.c", "src/port/capture_ref.c", "src/port/dpdk.c",
                "src/port/socket_udp.c"],
    "dpdk.md": ["bench/dpdk.c", "bench/testpmd.c", "bench/testpmd.h", "src/port/dpdk.c",
                "src/port/dpdk_setup.c", "src/port/dpdk_opts.c", "src/port/port.c"],
    "eba.md": ["bench/eba.c", "bench/guest_targets.h", "src/eba", "src/rdma"],
    "rdma.md": ["bench/rdma.c", "bench/guest_targets.h", "src/rdma"],
    "scaleout.md": ["bench/scaleout.c", "src/mpi", "examples/corner_turn"],
    # producers' formats (#38): the profiles against vfgx on both engines, RFC 4175 video
    "formats.md": [GPU_KERNEL, "bench/formats.c", "bench/formats_write.c", "bench/formats_video.c", "bench/formats_merge.c", "bench/formats.h",
                   "bench/formats_chunks.c",
                   "bench/pipeline_work.c", "bench/gpu_bw.cu", "bench/gpu_bw.h", "src/format",
                   "src/pipeline/proc.c",
                   "src/pipeline/chunk.c", "src/pipeline/chunk_consumer.c",
                   "src/pipeline/chunk_gpu.c", "src/pipeline/engine_cpu.c",
                   "src/pipeline/engine_gpu.c", "src/pipeline/pipeline.c", "src/pipeline/pipeline_opts.c",
                   "src/pipeline/gpu_proc_host.c", "src/pipeline/gpu_runner.c",
                   "src/port/loopback.c", "src/port/pcap.c"],
}

TARGET = re.compile(r"^target: (\S+) (.*)$")


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)


@functools.lru_cache(maxsize=None)
def kernel_sources():
    """The GPU kernels' sources: KERNEL_ROOTS and every project file they
    include ("x.h" from the including file's directory or INCLUDE_DIRS,
    <vfgx/x.h> from include/), transitively."""
    inc = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
    seen, pending = set(), list(KERNEL_ROOTS)
    while pending:
        rel = pending.pop()
        if rel in seen:
            continue
        seen.add(rel)
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = f.read()
        for kind, name in inc.findall(text):
            dirs = ([os.path.dirname(rel)] if kind == '"' else []) + INCLUDE_DIRS
            for d in dirs:
                cand = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(os.path.join(ROOT, cand)):
                    pending.append(cand)
                    break
    return tuple(sorted(seen))


def source_paths(f):
    """SOURCES[f] with GPU_KERNEL expanded, and COMMON."""
    out = []
    for p in SOURCES[f]:
        out.extend(kernel_sources() if p == GPU_KERNEL else [p])
    return out + COMMON


def results_files(d):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*.md")))


# A results file merged from two runs (bench formats --gpu-only
# --merge-from) names the part it kept with a commit of its own ("- CPU
# part's commit:", and its own "- CPU part's code unchanged through:");
# that part is checked against its own commit, over the sources its run
# measured (PART_SOURCES; the file's whole list where a part has none).
PARTS = ["CPU part's ", "GPU part's "]
FORMATS_GPU_ONLY = {GPU_KERNEL, "bench/formats_chunks.c", "bench/gpu_bw.cu", "bench/gpu_bw.h",
                    "src/pipeline/chunk_gpu.c", "src/pipeline/engine_gpu.c",
                    "src/pipeline/gpu_proc_host.c", "src/pipeline/gpu_runner.c"}
PART_SOURCES = {
    "formats.md": {"CPU part's ": [p for p in SOURCES["formats.md"] if p not in FORMATS_GPU_ONLY]},
}


def named_commit(path, part=""):
    """(commit, dirty, through): the "- commit:" line's commit (with part,
    "- CPU part's commit:"), whether it says -dirty, and the commit of a
    "- code unchanged through:" line (a later commit whose changes to the
    measured sources compiled to the same code, the evidence written on
    that line), or None."""
    commit, dirty, through = None, False, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^- %scommit: ([0-9a-f]{7,40})(-dirty)?\b" % re.escape(part), line)
            if m and not commit:
                commit, dirty = m.group(1), bool(m.group(2))
            m = re.match(r"^- %scode unchanged through: ([0-9a-f]{7,40})\b" % re.escape(part), line)
            if m and not through:
                through = m.group(1)
    return commit, dirty, through


def commit_reason(commit, dirty, through, paths, what):
    """Why a run measured at commit (what: "measured", or "its CPU part
    measured") no longer stands for the sources in paths, or None."""
    if git("cat-file", "-e", commit + "^{commit}").returncode:
        return "names commit %s, not in this repository" % commit
    if through:
        # only a later commit on the same line of history can vouch
        if git("merge-base", "--is-ancestor", commit, through).returncode:
            return "code unchanged through %s: not a descendant of %s" % (through, commit[:12])
        commit = through
    # the commit against the working tree: committed and uncommitted changes
    changed = git("diff", "--name-only", commit, "--", *paths).stdout.split()
    if changed:
        return "%s at %s; changed since: %s" % (what, commit[:12], " ".join(changed))
    if dirty:
        return "%s at %s with uncommitted changes" % (what, commit[:12])
    return None


def stale(d):
    """[(file, reason)] for the stale files; SystemExit on a map error."""
    out = []
    missing = [f for f in results_files(d) if f not in SOURCES]
    if missing:
        print("bench-stale: no sources declared for %s (add them to SOURCES in %s)"
              % (", ".join(missing), os.path.relpath(__file__, ROOT)), file=sys.stderr)
        sys.exit(1)
    for f in results_files(d):
        path = os.path.join(d, f)
        commit, dirty, through = named_commit(path)
        if not commit:
            out.append((f, "names no commit (measured before results files named theirs)"))
            continue
        why = commit_reason(commit, dirty, through, source_paths(f), "measured")
        for part in PARTS:
            pc, pd, pt = named_commit(path, part)
            if pc and not why:
                paths = source_paths(f)
                if part in PART_SOURCES.get(f, {}):
                    paths = [q for p in PART_SOURCES[f][part]
                             for q in (kernel_sources() if p == GPU_KERNEL else [p])] + COMMON
                why = commit_reason(pc, pd, pt, paths, "its %s, measured" % part[:-3])
        if why:
            out.append((f, why))
    return out


def readme_line(st):
    if not st:
        return "Stale results (`make bench-stale`): none."
    return "Stale results (`make bench-stale`): %s." % ", ".join(f for f, _ in st)


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


CI_LEVEL = 0.95  # BENCH_CI_LEVEL in bench/results.h


def median_coverage(n):
    """The coverage bench/results.c gives the median's interval over n
    rounds: order statistics x(k)..x(n+1-k), k the largest rank whose
    coverage 1 - 2 P(Bin(n, 1/2) <= k-1) is >= CI_LEVEL (k = 1 if none)."""
    def cdf(j):
        return sum(math.comb(n, i) for i in range(j + 1)) / 2.0 ** n
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * cdf(k) >= CI_LEVEL:
        k += 1
    return 1 - 2 * cdf(k - 1)


# Targets whose reference bounds the measured path: the same work with a
# stage less, or a floor of the memory or link it crosses.  A ratio whose
# whole interval lies above BOUND_SLACK says the reference did not measure
# its bound, so no goal against it is met (issue #41: e2e's kernel-only
# figure fell to half of what `vfgx run` did through the same kernel).
BOUND_SLACK = 1.10
BOUNDED = {
    "e2e_64B_gpu_vs_kernel": "the kernel alone, fed the same frames",
    "e2e_8192B_pinned_vs_pcie": "the PCIe read floor",
    "gpu_8192B_gbytes_s_pinned_vs_pcie_read": "the PCIe read floor",
    "gpu_8192B_gbytes_s_vs_device_read_bw": "the device-memory read floor",
    "chunks_gpu_vs_e2e_8192B": "the same path without chunks",
    "chunks_fft_consumer_vs_none": "the same run without the consumer",
    "capture_pipeline_rate_vs_none": "the same run without capture",
}


def check_target(name, rest):
    """None when a met=yes line has its numbers behind it, else why not."""
    kv = dict(re.findall(r"(\w+)=(\[[^\]]*\]|\S+)", rest))
    if kv.get("met") != "yes":
        return None
    m, r, q, g = (num(kv.get(k)) for k in ("measured", "reference", "ratio", "goal"))
    if None in (m, r, q, g):
        return "met=yes without measured, reference, ratio and goal all numbers"
    if "rounds" not in kv:
        # issue #41: one value has no interval; every target is from rounds
        return "met=yes without rounds=N interval=[lo,hi] level=L (no rounds behind it)"
    iv = re.fullmatch(r"\[([^,]+),([^\]]+)\]", kv.get("interval", ""))
    lo, hi = (num(iv.group(1)), num(iv.group(2))) if iv else (None, None)
    n = num(kv["rounds"])
    if not n or n < 1 or n != int(n):
        return "met=yes over %s rounds" % kv["rounds"]
    n = int(n)
    if lo is None or hi is None or kv.get("on") not in ("ratio", "measured"):
        return "met=yes from rounds without interval=[lo,hi] and on=ratio|measured"
    level = num(kv.get("level"))
    cover = median_coverage(n)
    if cover < CI_LEVEL:
        return ("met=yes over %d rounds: too few for %.0f%% (the median's interval "
                "covers %.3f)" % (n, CI_LEVEL * 100, cover))
    if level is None or abs(level - cover) > 0.0006:
        return "met=yes with level=%s, but %d rounds give %.3f" % (kv.get("level"), n, cover)
    if kv["on"] == "ratio" and not (r > 0 and q > 0):
        return "met=yes on a ratio with reference=%g ratio=%g (no ratio computed)" % (r, q)
    med = q if kv["on"] == "ratio" else m
    if not lo <= med <= hi:
        return "met=yes with the median %g outside its interval [%g,%g]" % (med, lo, hi)
    if not (lo >= g or hi <= g):
        return "met=yes with the interval [%g,%g] across the goal %g" % (lo, hi, g)
    if name in BOUNDED and kv["on"] == "ratio" and lo > BOUND_SLACK:
        return ("met=yes with the ratio's interval [%g,%g] above %g against %s, which "
                "bounds the path: the reference did not measure its bound"
                % (lo, hi, BOUND_SLACK, BOUNDED[name]))
    return None


def check(d):
    bad = []
    for f in results_files(d):
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                t = TARGET.match(line.rstrip("\n"))
                if t:
                    why = check_target(t.group(1), t.group(2))
                    if why:
                        bad.append("%s:%d: %s: %s" % (f, i, t.group(1), why))
    # one buffer twice in one call: every use prints what was written last
    for src in sorted(glob.glob(os.path.join(ROOT, "bench", "*.c"))):
        text = open(src, encoding="utf-8").read()
        for stmt in re.finditer(r"[^;{}]*bench_fmt_spread\([^;]*;", text):
            bufs = re.findall(r"bench_fmt_spread\(\s*(\w+)", stmt.group(0))
            dup = sorted({b for b in bufs if bufs.count(b) > 1})
            if dup:
                line = text.count("\n", 0, stmt.start()) + 1
                bad.append("%s:%d: %s passed to bench_fmt_spread twice in one statement"
                           % (os.path.relpath(src, ROOT), line, ", ".join(dup)))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--readme", action="store_true")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    a = ap.parse_args()
    a.results = os.path.relpath(os.path.abspath(a.results), ROOT)
    os.chdir(ROOT)
    if a.check:
        bad = check(a.results)
        for b in bad:
            print("FAIL: " + b)
        n = sum(1 for f in results_files(a.results)
                for line in open(os.path.join(a.results, f), encoding="utf-8")
                if line.startswith("target: ") and " met=yes" in line)
        print("bench-stale --check: %d met=yes lines in %s, %d refused; %d problems"
              % (n, os.path.relpath(a.results, ROOT), sum(1 for b in bad if ".md:" in b), len(bad)))
        return 1 if bad else 0
    st = stale(a.results)
    if a.readme:
        print(readme_line(st))
        return 0
    for f, why in st:
        print("stale: bench/results/%s: %s" % (f, why))
    print("%d of %d results files stale" % (len(st), len(results_files(a.results))))
    want = readme_line(st)
    have = [l.rstrip("\n") for l in open(os.path.join(ROOT, "README.md"), encoding="utf-8")
            if l.startswith("Stale results (`make bench-stale`):")]
    if have == [want]:
        print("README.md's line is current: " + want)
    else:
        print("README.md should say: " + want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
