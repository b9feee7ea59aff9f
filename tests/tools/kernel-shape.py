#!/usr/bin/env python3
"""kernel-shape.py BUILD [--write] - the gpu engine's kernels as ptxas
builds them, against tests/tools/kernel-shape.txt.

The kernels of src/pipeline/gpu_proc.cu share 128 registers a thread, so
what nvcc inlines decides what spills: at 137e844 a larger rule in
vfgx/format.h moved phase_b_group out of line with 3.4 KB of spills and
every path through phase B ran 13 to 37% slower on an H200 (docs/gpu.md,
"Inlining in phase B").  This compiles gpu_proc.cu with the build's own
nvcc command plus `-Xptxas -v` and compares, per kernel, the functions
kept out of line (a change in that set fails), the stack frame and the
spill bytes (more than a quarter and 64 bytes above the baseline fails;
less passes and says so).  The numbers depend on nvcc's version: another
version than the baseline's is a skip (77), as a build without CUDA is.
--write records the current shape as the baseline.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "kernel-shape.txt")
SKIP = 77


def nvcc_command(build):
    """The build's COMMAND for src/pipeline/gpu_proc.o, or None."""
    try:
        text = open(os.path.join(build, "build.ninja")).read()
    except OSError as e:
        sys.exit("kernel-shape: %s: %s" % (build, e.strerror))
    m = re.search(r"^build src/pipeline/gpu_proc\.o: .*\n((?: .*\n)*)", text, re.M)
    if not m:
        return None
    for line in m.group(1).splitlines():
        line = line.strip()
        if line.startswith("COMMAND = "):
            return shlex.split(line[len("COMMAND = "):])
    return None


def short_name(mangled):
    """A function's name without its arguments (c++filt), lambdas named
    by the function that holds them."""
    r = subprocess.run(["c++filt", mangled], capture_output=True, text=True)
    name = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else mangled
    name = re.sub(r"_INTERNAL_\w+::", "", name)  # a file-local's hashed namespace
    lam = "::{lambda" in name
    name = re.sub(r"\(.*", "", name.split("::{lambda")[0])
    name = name.split(" ")[-1]
    return name + "::lambda" if lam else name


def shape(build):
    """(nvcc version line, {kernel: {regs, stack, spill_st, spill_ld,
    calls: {name: (spill_st, spill_ld)}}}), or exits 77."""
    cmd = nvcc_command(build)
    if not cmd:
        print("SKIP: %s has no src/pipeline/gpu_proc.o (a build without CUDA)" % build)
        sys.exit(SKIP)
    ver = subprocess.run([cmd[0], "--version"], capture_output=True, text=True).stdout
    ver = [l for l in ver.splitlines() if "release" in l]
    ver = ver[0].strip() if ver else "unknown"
    out = tempfile.NamedTemporaryFile(suffix=".o", delete=False).name
    args = []
    skip = 0
    for i, a in enumerate(cmd):
        if skip:
            skip -= 1
            continue
        if a in ("-o", "-MF"):
            skip = 1
            continue
        if a == "-MD":
            continue
        args.append(a)
    args += ["-Xptxas", "-v", "-o", out]
    r = subprocess.run(args, cwd=build, capture_output=True, text=True)
    os.unlink(out)
    if r.returncode:
        sys.exit("kernel-shape: nvcc failed: %s" % r.stderr.strip()[-400:])
    kernels = {}
    cur = None
    props = None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = {"regs": 0, "stack": 0, "spill_st": 0, "spill_ld": 0, "calls": {}}
            kernels[short_name(m.group(1))] = cur
            props = None
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            props = short_name(m.group(1))
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur is not None and props:
            st, ld = int(m.group(2)), int(m.group(3))
            if props in kernels and kernels[props] is cur:
                cur["stack"], cur["spill_st"], cur["spill_ld"] = int(m.group(1)), st, ld
            else:
                cur["calls"][props] = (st, ld)
            props = None
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and cur is not None:
            cur["regs"] = int(m.group(1))
    if not kernels:
        sys.exit("kernel-shape: no kernel in ptxas's report")
    return ver, kernels


def write(path, ver, kernels):
    with open(path, "w") as f:
        f.write("# tests/tools/kernel-shape.py --write: src/pipeline/gpu_proc.cu as ptxas built it\n")
        f.write("nvcc: %s\n" % ver)
        for k in sorted(kernels):
            v = kernels[k]
            f.write("kernel %s regs=%d stack=%d spill_st=%d spill_ld=%d\n"
                    % (k, v["regs"], v["stack"], v["spill_st"], v["spill_ld"]))
            for c in sorted(v["calls"]):
                f.write("  call %s spill_st=%d spill_ld=%d\n" % ((c,) + v["calls"][c]))


def read(path):
    ver, kernels, cur = None, {}, None
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("nvcc: "):
            ver = line[len("nvcc: "):].strip()
            continue
        f = line.split()
        kv = dict(x.split("=") for x in f[2:])
        if f[0] == "kernel":
            cur = {"regs": int(kv["regs"]), "stack": int(kv["stack"]),
                   "spill_st": int(kv["spill_st"]), "spill_ld": int(kv["spill_ld"]), "calls": {}}
            kernels[f[1]] = cur
        elif f[0] == "call" and cur is not None:
            cur["calls"][f[1]] = (int(kv["spill_st"]), int(kv["spill_ld"]))
    return ver, kernels


def grew(now, was):
    return now > was + max(was // 4, 64)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    ver, kernels = shape(sys.argv[1])
    if "--write" in sys.argv[2:]:
        write(BASELINE, ver, kernels)
        print("kernel-shape: wrote %s (%d kernels, %s)" % (BASELINE, len(kernels), ver))
        return 0
    bver, base = read(BASELINE)
    if bver != ver:
        print("SKIP: nvcc is '%s', the baseline's '%s' (kernel-shape.py --write on the new one)"
              % (ver, bver))
        return SKIP
    bad = []
    for k in sorted(set(base) | set(kernels)):
        if k not in kernels or k not in base:
            bad.append("kernel %s: %s" % (k, "gone" if k not in kernels else "new"))
            continue
        n, b = kernels[k], base[k]
        if set(n["calls"]) != set(b["calls"]):
            bad.append("kernel %s: out of line now %s, in the baseline %s"
                       % (k, sorted(n["calls"]), sorted(b["calls"])))
        for key in ("stack", "spill_st", "spill_ld"):
            if grew(n[key], b[key]):
                bad.append("kernel %s: %s %d, baseline %d" % (k, key, n[key], b[key]))
        if n["regs"] > b["regs"]:
            bad.append("kernel %s: %d registers, baseline %d" % (k, n["regs"], b["regs"]))
        for c in sorted(set(n["calls"]) & set(b["calls"])):
            for i, key in enumerate(("spill_st", "spill_ld")):
                if grew(n["calls"][c][i], b["calls"][c][i]):
                    bad.append("kernel %s: %s's %s %d, baseline %d"
                               % (k, c, key, n["calls"][c][i], b["calls"][c][i]))
        print("kernel %s: %d registers, stack %d (baseline %d), spills %d/%d (%d/%d), out of line: %s"
              % (k, n["regs"], n["stack"], b["stack"], n["spill_st"], n["spill_ld"],
                 b["spill_st"], b["spill_ld"], ", ".join(sorted(n["calls"])) or "none"))
    if bad:
        for b in bad:
            print("FAIL: " + b)
        print("kernel-shape: the kernels' shape changed; if it is meant (measured on a GPU: docs/gpu.md, "
              "\"Inlining in phase B\"), record it with tests/tools/kernel-shape.py BUILD --write")
        return 1
    print("kernel-shape: %d kernels as the baseline (%s)" % (len(kernels), ver))
    return 0


if __name__ == "__main__":
    sys.exit(main())
