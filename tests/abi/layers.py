#!/usr/bin/env python3
"""layers.py - no #include in src/ runs up the layer order of
docs/architecture.md ("The layers"):

    core < format < mem < rdma < eba < port < pipeline < mon, record
         < session < cli, mpi

Each src/<dir> and each include/vfgx/*.h has its layer in the tables
below; a directory or public header not in them is an error, so a new one
must be placed.  Every #include of src/**/*.{c,h,cu,cuh} and of the
public headers themselves is resolved (the
including file's directory, then src/, then include/) and an include of a
file in a higher layer is printed as one line,
`file:line: <layer> includes <header> (<its layer>)`, and fails the test.
Generated and system headers (not in the tree) have no layer.

bench/ (vfgx-bench, a command of the CLI) is a client: its files include
the public headers (include/vfgx, vfgx/bench.h among them), its own, and of
src/ only the CLI's command plumbing (BENCH_SRC_OK); any other include of
src/ is printed as `file:line: bench includes <header> (src: library
internals)` and fails the test.

usage: layers.py [SOURCE_ROOT]   (default: this file's ../..)
       layers.py --selftest        (the check fails where it must: a tree
                                    made in a temporary directory)
"""
import os
import re
import sys
import tempfile

ORDER = ["core", "format", "mem", "rdma", "eba", "port", "pipeline",
         "mon", "session", "cli"]
# layers that share a band: record sits beside mon, above pipeline;
# libvfgx_mpi is a client library beside the CLI
SAME = {"record": "mon", "mpi": "cli"}

SRC_DIRS = {
    "core": "core", "format": "format", "mem": "mem", "rdma": "rdma",
    "eba": "eba", "port": "port", "pipeline": "pipeline", "mon": "mon",
    "record": "record", "session": "session", "cli": "cli", "mpi": "mpi",
}

PUBLIC = {
    # core: context, errors, the config document's types, frames, the
    # VFGX_HD stage rules (no dependency of their own)
    "core.h": "core", "config.h": "core", "frame.h": "core",
    "stages.h": "core",
    "format.h": "format", "format_kinds.h": "format", "place.h": "format",
    "mem.h": "mem",
    "rdma.h": "rdma",
    "eba.h": "eba",
    "port.h": "port", "loopback.h": "port", "socket.h": "port",
    "afxdp.h": "port", "dpdk.h": "port", "pcap.h": "port",
    "capture.h": "port",
    "pipeline.h": "pipeline", "chunk.h": "pipeline",
    "chunk_device.h": "pipeline", "gpu.h": "pipeline", "user.h": "pipeline",
    "bench.h": "pipeline",
    "mon.h": "mon", "metrics.h": "mon",
    "record.h": "record",
    "session.h": "session", "send.h": "session",
    # the umbrella: every public header, the highest of them session's
    "vfgx.h": "session",
}

# what bench/ may include from src/: the CLI's option parser and command
# table (vfgx-bench is built as a CLI command)
BENCH_SRC_OK = {"cli/cliopt.h", "cli/commands.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes(path):
    """(line number, '<' or '"', target) for each #include of the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield (lineno,) + m.groups()


def rank(layer):
    return ORDER.index(SAME.get(layer, layer))


def check(root):
    """(violation lines, files read) for the tree at root."""
    src = os.path.join(root, "src")
    inc = os.path.join(root, "include")
    out = []

    for name in sorted(os.listdir(os.path.join(inc, "vfgx"))):
        if name.endswith(".h") and name not in PUBLIC:
            out.append("include/vfgx/%s: not in layers.py's table: place it" % name)
    for name in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, name)) and name not in SRC_DIRS:
            out.append("src/%s: not in layers.py's table: place it" % name)

    def layer_of(path):
        """The layer of a file in the tree, "?" unplaced, None not ours."""
        parts = os.path.relpath(path, root).split(os.sep)
        if parts[0] == "include" and len(parts) == 3 and parts[1] == "vfgx":
            return PUBLIC.get(parts[2], "?")
        if parts[0] == "src" and len(parts) >= 3:
            return SRC_DIRS.get(parts[1], "?")
        return None

    files = 0
    for dirpath, dirs, names in [w for top in (src, os.path.join(inc, "vfgx"))
                                 for w in os.walk(top)]:
        dirs.sort()
        for name in sorted(names):
            if not name.endswith((".c", ".h", ".cu", ".cuh")):
                continue
            path = os.path.join(dirpath, name)
            me = layer_of(path)
            if me in (None, "?"):
                continue
            files += 1
            rel = os.path.relpath(path, root)
            for lineno, kind, target in includes(path):
                cands = [os.path.join(inc, target)]
                if kind == '"':
                    cands = [os.path.join(dirpath, target),
                             os.path.join(src, target)] + cands
                hit = next((os.path.normpath(c) for c in cands
                            if os.path.isfile(c)), None)
                if hit is None:
                    continue  # system or generated: no layer
                them = layer_of(hit)
                if them == "?":
                    out.append("%s:%d: includes %s, which has no layer in layers.py's table"
                               % (rel, lineno, target))
                elif them is not None and rank(them) > rank(me):
                    out.append("%s:%d: %s includes %s (%s)"
                               % (rel, lineno, me, target, them))
    bench = os.path.join(root, "bench")
    for dirpath, dirs, names in os.walk(bench) if os.path.isdir(bench) else ():
        dirs[:] = sorted(d for d in dirs if d != "results")
        for name in sorted(names):
            if not name.endswith((".c", ".h", ".cu", ".cuh")):
                continue
            path = os.path.join(dirpath, name)
            files += 1
            rel = os.path.relpath(path, root)
            for lineno, kind, target in includes(path):
                if kind != '"' or os.path.isfile(os.path.join(dirpath, target)):
                    continue  # public, system or bench's own
                for d in [src] + [os.path.join(src, s) for s in sorted(SRC_DIRS)]:
                    hit = os.path.join(d, target)
                    if os.path.isfile(hit):
                        r = os.path.relpath(hit, src).replace(os.sep, "/")
                        if r not in BENCH_SRC_OK:
                            out.append("%s:%d: bench includes %s (src: library internals)"
                                       % (rel, lineno, target))
                        break
    return out, files


def selftest():
    """A tree with one upward include, one sideways and downward, and an
    unplaced directory: exactly the two errors, and a clean tree passes."""
    with tempfile.TemporaryDirectory() as t:
        def put(rel, text):
            os.makedirs(os.path.dirname(os.path.join(t, rel)), exist_ok=True)
            with open(os.path.join(t, rel), "w") as f:
                f.write(text)
        put("include/vfgx/core.h", "")
        put("include/vfgx/pipeline.h", "#include \"core.h\"\n")
        put("src/core/ok.c", "#include <stdio.h>\n#include <vfgx/core.h>\n#include \"vfgx_build.h\"\n")
        put("src/pipeline/down.c", "#include <vfgx/core.h>\n#include \"core/ok.h\"\n")
        put("src/core/ok.h", "")
        clean, files = check(t)
        if clean or files != 5:
            print("selftest: a clean tree gave %r (%d files)" % (clean, files))
            return 1
        put("src/core/up.c", "/* x */\n#include <vfgx/pipeline.h>\n")
        put("src/core/up2.h", "#include \"../pipeline/down.c\"\n")
        put("src/zzz/z.c", "")
        put("include/vfgx/core.h", "#include \"pipeline.h\"\n")
        put("src/cli/cliopt.h", "")
        put("src/pipeline/priv.h", "")
        put("bench/ok.c", "#include <vfgx/pipeline.h>\n#include \"cliopt.h\"\n#include \"own.h\"\n")
        put("bench/own.h", "")
        put("bench/bad.c", "#include \"pipeline/priv.h\"\n")
        got, _ = check(t)
        want = ["src/zzz: not in layers.py's table: place it",
                "src/core/up.c:2: core includes vfgx/pipeline.h (pipeline)",
                "src/core/up2.h:1: core includes ../pipeline/down.c (pipeline)",
                "include/vfgx/core.h:1: core includes pipeline.h (pipeline)",
                "bench/bad.c:1: bench includes pipeline/priv.h (src: library internals)"]
        if got != want:
            print("selftest: got %r, want %r" % (got, want))
            return 1
    print("layers.py selftest: an upward include, an unplaced directory and bench/ reaching library internals fail, a clean tree passes")
    return 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    out, files = check(root)
    for line in out:
        print(line)
    if files == 0:
        print("layers.py: no source under %s" % os.path.join(root, "src"))
        return 1
    if out:
        print("layers.py: %d upward include(s) or unplaced file(s) in %d files"
              % (len(out), files))
        return 1
    print("layers.py: %d files, no include runs up the layers" % files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
