#!/usr/bin/env python3
"""test-link.py [--must-fail] [--also LIB.so]... LIBVFGX_SO INTERNAL_A BINARY...
[--modules MODULE...] -
every program a user runs or copies (vfgx, vfgx-bench, the Python extension,
the examples) is a client of libvfgx.so.2 and of its ABI alone:
  1. it needs libvfgx.so.2 (readelf -d NEEDED);
  2. every symbol it leaves undefined that is a vfgx_*/gpuk_* name or that
     the library's objects define (nm of the internal static library) is
     exported by libvfgx.so.2 (nm -D), or by a library given with --also
     (libvfgx_mpi.so.0), so nothing resolves against internals;
  3. it defines none of the library's global symbols: no library code is
     linked into it.
A module (a user module vfgx run dlopens) links nothing itself: 2 and 3
only.  Exit 0 when all hold for every binary, 1 with the offenders otherwise.
--must-fail inverts it, for the self-check (tests/abi/link_bad_*.c): exit 0
only when every binary given fails, each on the check its name says
(link_bad_undef: 2, link_bad_embed: 3)."""
import os
import re
import subprocess
import sys


def nm(args, path, global_only=False):
    out = subprocess.run(['nm'] + args + [path], capture_output=True, text=True,
                         check=True).stdout
    syms = set()
    for ln in out.splitlines():
        f = ln.split()
        if len(f) >= 2 and not ln.endswith(':'):
            if global_only and not (f[-2].isupper() or f[-2] in 'uvw'):
                continue
            syms.add(f[-1].split('@')[0])
    return syms


args = sys.argv[1:]
must_fail = False
also = []  # --also LIB.so: another library of the project (libvfgx_mpi.so.0)
while args and args[0] in ('--also', '--must-fail'):
    if args[0] == '--must-fail':
        must_fail = True
        args = args[1:]
    else:
        also.append(args[1])
        args = args[2:]
so, internal_a, bins = args[0], args[1], args[2:]
modules = set()
if '--modules' in bins:
    k = bins.index('--modules')
    modules = set(bins[k + 1:])
    bins = bins[:k] + bins[k + 1:]
if not bins:
    sys.exit('test-link.py: no binary to check')
exported = nm(['-D', '--defined-only'], so)
for lib in also:
    exported |= nm(['-D', '--defined-only'], lib)
# the library's global functions and data (text, data, bss, read-only);
# weak definitions (V, W: COMDAT, C++ runtime references such as
# DW.ref.__gxx_personality_v0) may be in every object by design
lib_defined = set()
out = subprocess.run(['nm', '--defined-only', internal_a], capture_output=True,
                     text=True, check=True).stdout
for ln in out.splitlines():
    f = ln.split()
    if len(f) == 3 and f[1] in 'TDBRG':
        lib_defined.add(f[2])
failed = False
for b in bins:
    name = os.path.basename(b)
    dyn = subprocess.run(['readelf', '-d', b], capture_output=True, text=True,
                         check=True).stdout
    needed = re.findall(r'\(NEEDED\).*\[(.*?)\]', dyn)
    problems = {}
    if 'libvfgx.so.2' not in needed and b not in modules:
        problems[1] = 'does not link libvfgx.so.2 (NEEDED: %s)' % ' '.join(needed)
    undef = {s for s in nm(['-D', '--undefined-only'], b)
             if s.startswith(('vfgx_', 'gpuk_')) or s in lib_defined}
    if undef - exported:
        problems[2] = ('uses symbols libvfgx.so.2 does not export: ' +
                       ' '.join(sorted(undef - exported)))
    if b.endswith('.so') or b in modules:
        own = nm(['-D', '--defined-only'], b)
    else:
        own = nm(['--defined-only'], b, global_only=True)
    embedded = sorted(own & lib_defined)
    if embedded:
        problems[3] = ('has the library\'s code linked in: ' + ' '.join(embedded[:12]) +
                       (' ...' if len(embedded) > 12 else ''))
    if must_fail:
        want = 2 if 'undef' in name else 3
        if want in problems:
            print('ok   %s: refused as it must be: %s' % (name, problems[want]))
        else:
            failed = True
            print('FAIL %s: check %d passed a binary built to fail it' % (name, want))
        continue
    if problems:
        failed = True
        for k in sorted(problems):
            print('FAIL %s: %s' % (name, problems[k]))
    else:
        print('ok   %s: libvfgx.so.2, %d exported symbols used' % (name, len(undef)))
sys.exit(1 if failed else 0)
