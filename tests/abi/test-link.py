#!/usr/bin/env python3
"""test-link.py [--also LIB.so]... LIBVFGX_SO INTERNAL_A BINARY... - every program a user runs
or copies (vfgx, vfgx-bench, the Python extension, the examples) is a
client of libvfgx.so.0 and of its ABI alone:
  1. it needs libvfgx.so.0 (readelf -d NEEDED);
  2. every vfgx_* symbol it leaves undefined is exported by libvfgx.so.0
     (nm -D), or by a library given with --also (libvfgx_mpi.so.0), so
     nothing resolves against internals;
  3. it defines none of the library's own symbols (nm of the internal
     static library): no library code is linked into it.
Exit 0 when all hold for every binary, 1 with the offenders otherwise."""
import os
import re
import subprocess
import sys


def nm(args, path):
    out = subprocess.run(['nm'] + args + [path], capture_output=True, text=True,
                         check=True).stdout
    syms = set()
    for ln in out.splitlines():
        f = ln.split()
        if len(f) >= 2 and not ln.endswith(':'):
            syms.add(f[-1].split('@')[0])
    return syms


args = sys.argv[1:]
also = []  # --also LIB.so: another library of the project (libvfgx_mpi.so.0)
while args and args[0] == '--also':
    also.append(args[1])
    args = args[2:]
so, internal_a, bins = args[0], args[1], args[2:]
exported = nm(['-D', '--defined-only'], so)
for lib in also:
    exported |= nm(['-D', '--defined-only'], lib)
# the library's functions and data (text, data, bss, read-only), local
# symbols excepted
lib_defined = set()
out = subprocess.run(['nm', '--defined-only', internal_a], capture_output=True,
                     text=True, check=True).stdout
for ln in out.splitlines():
    f = ln.split()
    if len(f) == 3 and f[1] in 'TDBRVW':
        lib_defined.add(f[2])
failed = False
for b in bins:
    name = os.path.basename(b)
    dyn = subprocess.run(['readelf', '-d', b], capture_output=True, text=True,
                         check=True).stdout
    needed = re.findall(r'\(NEEDED\).*\[(.*?)\]', dyn)
    problems = []
    if 'libvfgx.so.0' not in needed:
        problems.append('does not link libvfgx.so.0 (NEEDED: %s)' % ' '.join(needed))
    undef = {s for s in nm(['-D', '--undefined-only'], b) if s.startswith('vfgx_')}
    if undef - exported:
        problems.append('uses symbols libvfgx.so.0 does not export: ' +
                        ' '.join(sorted(undef - exported)))
    own = nm(['--defined-only'], b) if not b.endswith('.so') else nm(['-D', '--defined-only'], b)
    embedded = sorted(s for s in own & lib_defined if s.startswith(('vfgx_', 'gpuk_')))
    if embedded:
        problems.append('has the library\'s code linked in: ' + ' '.join(embedded[:12]) +
                        (' ...' if len(embedded) > 12 else ''))
    if problems:
        failed = True
        for p in problems:
            print('FAIL %s: %s' % (name, p))
    else:
        print('ok   %s: libvfgx.so.0, %d exported symbols used' % (name, len(undef)))
sys.exit(1 if failed else 0)
