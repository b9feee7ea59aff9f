#!/usr/bin/env python3
"""test-config-doc.py - docs/config.md names every key the config loader,
the loopback backend and the sections' option tables accept, and each
literal default next to its key."""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FILES = ["src/session/config_load.c", "src/port/loopback.c", "src/pipeline/chunk_opts.c",
         "src/pipeline/gpu_opts.c", "src/pipeline/pipeline_opts.c",
         "src/port/pcap_opts.c", "src/session/sender.c", "src/cli/run_config.c",
         "src/record/record.c"]

doc = open(os.path.join(SRC, "docs/config.md")).read()
rows = [l for l in doc.splitlines() if l.startswith("| `")]
failed = False


def doc_rows(key):
    pat = re.compile(r"^\| `(?:[\w\[\]<>]+\.)*%s` \|" % re.escape(key))
    return [r for r in rows if pat.match(r)]


for rel in FILES:
    text = open(os.path.join(SRC, rel)).read()
    keys = set()
    for arr in re.findall(r"keys\[\]\s*=\s*\{([^}]*)\}", text):
        keys.update(re.findall(r'"(\w+)"', arr))
    for key in sorted(keys):
        if not doc_rows(key) and "`%s`" % key not in doc:
            print("FAIL: %s: key '%s' is not in docs/config.md" % (rel, key))
            failed = True
    calls = re.findall(r'vfgx_cfg_(u32|u64|double|bool)\(\s*&?\w+,\s*"(\w+)",\s*([^,]+),', text)
    # option tables (src/core/opts.h): XX_OPT(TYPE, key, default, ...)
    arrays = {name: re.findall(r'"(\w+)"', body) for name, body in
              re.findall(r'const char \*const (\w+)\[\]\s*=\s*\{([^}]*)\}', text)}
    for kind, key, default, rest in re.findall(r'\b[A-Z]+_OPT\((\w+),\s*(\w+),\s*([^,)]+)([^)]*)\)', text):
        keys.add(key)
        if kind in ("STR", "STRN", "SKIP"):
            # strings default to NULL or "": the doc row says what that means;
            # SKIP: a sub-mapping another parser reads (no default here)
            continue
        if kind == "BOOL":
            default = "true" if default.strip() == "1" else "false"
        if kind == "ENUM":
            # the default is an index into the names array the entry names
            names = arrays.get(rest.split(",")[-1].strip(), [])
            if not default.strip().isdigit() or int(default) >= len(names):
                continue
            default = names[int(default)]
            if not any("`%s`" % default in r.split("|")[2] for r in doc_rows(key)):
                print("FAIL: %s: key '%s' default %s is not in its docs/config.md row" % (rel, key, default))
                failed = True
            continue
        calls.append((kind.lower(), key, default))
    for kind, key, default in calls:
        default = default.strip()
        if not re.fullmatch(r"\d+|true|false", default):
            continue
        if not any("`%s`" % default in r.split("|")[2] for r in doc_rows(key)):
            print("FAIL: %s: key '%s' default %s is not in its docs/config.md row" % (rel, key, default))
            failed = True
    if not keys or not calls:
        print("FAIL: %s: found no keys (the pattern no longer matches the source)" % rel)
        failed = True

if failed:
    sys.exit(1)
print("test-config-doc: every key of %s documented with its default" % ", ".join(FILES))
