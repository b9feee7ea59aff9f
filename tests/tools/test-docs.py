#!/usr/bin/env python3
"""test-docs.py VFGX - README.md, docs/*.md and examples/*/README.md name
only what is built:
every `vfgx COMMAND --option` (and -x) they mention is in that command's
option table, every subcommand exists, every config key in docs/config.md
is one a parser reads, every repository path and link they name exists,
every usage block is what the binary prints, every metric named
in docs/metrics.md and the Grafana dashboard is one src/mon/metrics.c
writes, every JSON schema in docs/json.md is one the code prints, and
an mpirun shown says how it starts as root."""
import glob
import json
import os
import re
import subprocess
import sys

VFGX = sys.argv[1]
SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOCS = ["README.md"] + sorted(os.path.relpath(p, SRC) for p in glob.glob(os.path.join(SRC, "docs", "*.md"))
                              + glob.glob(os.path.join(SRC, "examples", "*", "README.md")))
failures = []


def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)


def vfgx(*args):
    return subprocess.run([VFGX, *args], capture_output=True, text=True, timeout=30)


def read(rel):
    return open(os.path.join(SRC, rel)).read()


# --- the option tables, as the binary has them ------------------------------
tables = {}
for line in vfgx("completion", "list").stdout.splitlines():
    words = line.split()
    tables[" ".join(w for w in words if not w.startswith("--"))] = {w for w in words if w.startswith("--")}
if "run" not in tables:
    sys.exit("FAIL: vfgx completion list printed no tables")
shorts = {}
for cmd in tables:
    shorts[cmd] = set(re.findall(r"^\s+(-\S), --", vfgx(*cmd.split(), "--help").stdout, re.M))
benches = {c.split()[1] for c in tables if c.startswith("bench ")}
ALL_BENCHES = {"pipeline", "socket", "gpu", "e2e", "afxdp", "formats", "dpdk", "eba", "rdma", "scaleout"}  # dpdk, rdma, scaleout (MPI): optional builds

# --- 1. commands and options named in the docs ------------------------------
checked = 0
for doc in DOCS:
    fenced = False
    for n, line in enumerate(read(doc).splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if "does not exist" in line:
            continue
        # a command line in a code block (``` or indented): its first word
        # is the command a reader types (#44: README.md named commands vfgx
        # lacks and nothing said so)
        shown = fenced or line.startswith("    ")
        for m in re.finditer(r"(?<![\w/.-])vfgx ([a-z][\w-]*)((?: [^`#|]*)?)", line):
            cmd, rest = m.group(1), m.group(2)
            rest = re.split(r"(?<![\w-])vfgx ", rest)[0]
            if cmd in ("bench",):
                b = re.match(r" ([a-zA-Z]\w*)", rest)
                if b and b.group(1) == "NAME":
                    for opt in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest):
                        checked += 1
                        for c in tables:
                            if c.startswith("bench ") and opt not in tables[c]:
                                fail("%s:%d: vfgx %s %s: not an option of vfgx %s" % (doc, n, c, opt, c))
                    continue
                if b and b.group(1) in ALL_BENCHES:
                    if b.group(1) not in benches:
                        continue  # an optional benchmark this build lacks
                    cmd = "bench " + b.group(1)
                    rest = rest[b.end():]
            if cmd not in tables:
                # prose such as "vfgx run is ..." names a command; others are
                # words; in code and in backquotes it is a command
                typed = shown and re.match(r"\s*(?:\$ |# )?vfgx %s\b" % re.escape(cmd), line)
                if cmd in ("send", "help") or typed or re.search(r"`vfgx %s" % re.escape(cmd), line):
                    fail("%s:%d: `vfgx %s`: no such command" % (doc, n, cmd))
                continue
            for opt in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest):
                checked += 1
                if opt not in tables[cmd]:
                    fail("%s:%d: vfgx %s %s: not an option of vfgx %s" % (doc, n, cmd, opt, cmd))
            for opt in re.findall(r"(?<![\w-])(-[a-zA-Z1])(?![\w-])", rest):
                checked += 1
                if opt not in shorts[cmd]:
                    fail("%s:%d: vfgx %s %s: not an option of vfgx %s" % (doc, n, cmd, opt, cmd))
if checked < 20:
    fail("only %d options found in the docs: the pattern no longer matches" % checked)

# --- 2. config keys in docs/config.md are read by a parser -------------------
parser_keys = set()
for path in glob.glob(os.path.join(SRC, "src", "**", "*.c"), recursive=True):
    text = open(path).read()
    for arr in re.findall(r"keys\[\]\s*=\s*\{([^}]*)\}", text):
        parser_keys.update(re.findall(r'"(\w+)"', arr))
    parser_keys.update(re.findall(r'vfgx_cfg_\w+\(\s*&?\w+,\s*"(\w+)"', text))
    # option tables (src/core/opts.h): XX_OPT(TYPE, key, default, ...)
    parser_keys.update(re.findall(r'\b[A-Z]+_OPT\(\s*\w+,\s*(\w+),', text))
doc_keys = re.findall(r"^\| `([\w.\[\]<>-]+)` \|", read("docs/config.md"), re.M)
for key in doc_keys:
    last = re.sub(r"\[\]", "", key.split(".")[-1])
    if last.startswith("<"):
        continue
    if last not in parser_keys:
        fail("docs/config.md: key `%s` is read by no parser in src/" % key)
if len(doc_keys) < 30:
    fail("docs/config.md: only %d key rows found" % len(doc_keys))

# --- 3. paths and links -------------------------------------------------------
ROOTS = ("src/", "include/", "tests/", "docs/", "bench/", "scripts/", "configs/",
         "drivers/", "deploy/", "examples/", "python/")
for doc in DOCS:
    text = read(doc)
    base = os.path.dirname(os.path.join(SRC, doc))
    for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+://", link):
            continue
        if not os.path.exists(os.path.normpath(os.path.join(base, link))):
            fail("%s: link %s: no such file" % (doc, link))
    for m in re.finditer(r"(?<![\w/.-])((?:%s)[\w./-]*[\w/])(?!\w|\.?\{)" % "|".join(map(re.escape, ROOTS)), text):
        path = m.group(1)
        if re.search(r"(?:meson compile|ninja)(?: -C \S+)? $", text[max(0, m.start() - 40):m.start()]):
            continue  # a build target, not a file of the repository
        if re.search(r"[A-Z]{3,}|\*|<|\{", path) or "/X" in path:
            continue  # a pattern or placeholder (bench/results/NAME.md)
        if path.endswith((".ko", ".o")):
            continue  # built by make, not in the repository
        if not os.path.exists(os.path.join(SRC, path)):
            fail("%s: path %s: no such file or folder" % (doc, path))

# --- 4. every usage block shows what the binary prints -----------------------
# any ```text block that starts "usage: vfgx CMD...", wherever it stands (#44:
# only blocks right under a "## vfgx CMD" heading were compared)
cli = read("docs/cli.md")
nblocks = 0
for doc in DOCS:
    for m in re.finditer(r"^```text\n(usage: vfgx\b[^\n]*\n.*?)^```", read(doc), re.M | re.S):
        block = m.group(1)
        line = read(doc).count("\n", 0, m.start()) + 2
        args = []
        for w in block.split("\n", 1)[0].split()[2:]:
            if not re.match(r"[a-z][\w-]*$", w):
                break
            args.append(w)
        nblocks += 1
        if len(args) == 2 and args[0] == "bench" and args[1] not in benches:
            continue
        r = vfgx(*args, "--help")
        if r.returncode != 0 and "this build has no" in r.stderr:
            continue  # a part this build lacks (CUDA): its help is not here to compare
        got = r.stdout
        if args == ["bench"]:
            # the list of benchmarks is this build's: each one it has is documented
            listed = re.search(r"^benchmarks:(.*)$", block, re.M)
            have = re.search(r"^benchmarks:(.*)$", got, re.M)
            if listed and have:
                missing = set(have.group(1).split()) - set(listed.group(1).split())
                if missing:
                    fail("%s:%d: the benchmarks line lacks %s" % (doc, line, " ".join(sorted(missing))))
                got = got.replace(have.group(0), listed.group(0))
        if got != block:
            fail("%s:%d: the usage block of `vfgx %s` differs from `vfgx %s --help`"
                 % (doc, line, " ".join(args), " ".join(args)))
if nblocks < len(tables):
    fail("%d usage blocks in the docs for %d commands" % (nblocks, len(tables)))
for cmd in tables:
    if "## vfgx " + cmd not in cli:
        fail("docs/cli.md: no section for vfgx %s" % cmd)

# --- 5. metrics named in docs/metrics.md and the dashboard exist --------------
metrics_src = read("src/mon/metrics.c")
served = set(re.findall(r'"(vfgx_[a-z_]+)', metrics_src))
api = "".join(open(p).read() for p in glob.glob(os.path.join(SRC, "include", "vfgx", "*.h")))
for name in set(re.findall(r"\b(vfgx_[a-z_]+)\b", read("docs/metrics.md"))):
    if name.endswith("_") or re.search(r"\b%s\b" % name, api):
        continue  # a prefix, or an API name (function, type): not a series
    if name not in served:
        fail("docs/metrics.md: series %s is not written by src/mon/metrics.c" % name)
dash = json.load(open(os.path.join(SRC, "deploy/grafana/vfgx.json")))
exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
for name in set(re.findall(r"\b(vfgx_[a-z_]+)", " ".join(exprs))):
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    if base not in served:
        fail("deploy/grafana/vfgx.json: series %s is not served" % name)
if not exprs:
    fail("deploy/grafana/vfgx.json: no queries")

# --- 6. JSON schemas in docs/json.md are printed by the code ------------------
code = "".join(open(p).read() for p in glob.glob(os.path.join(SRC, "src", "cli", "*.[ch]")))
for schema in set(re.findall(r"vfgx\.[a-z]+/\d+", read("docs/json.md"))):
    if '"%s"' % schema not in code:
        fail("docs/json.md: schema %s is printed by no command" % schema)

# --- 7. mpirun as the docs show it starts as root ------------------------------
# Open MPI refuses root without --allow-run-as-root, and more ranks than
# cores without --oversubscribe: a document that shows an mpirun command
# says both (#44)
for doc in DOCS:
    text = read(doc)
    shows = re.search(r"^\s*mpirun\s+-", text, re.M)
    if shows:
        for flag in ("--allow-run-as-root", "--oversubscribe"):
            if flag not in text:
                fail("%s: shows `mpirun` but never says %s" % (doc, flag))

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("test-docs: %d options, %d config keys, cli.md, metrics and schemas match the build"
      % (checked, len(doc_keys)))
