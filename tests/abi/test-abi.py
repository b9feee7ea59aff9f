#!/usr/bin/env python3
"""test-abi.py LIBVFGX_SO FEATURES... - the ABI of libvfgx.so is the
documented API and nothing else:
  1. the soname carries the ABI version (libvfgx.so.2);
  2. the exported functions (nm -D) equal tests/abi/libvfgx.symbols, less
     the lines tagged with a feature this build lacks (FEATURES: the ones
     it has, e.g. rdma afxdp);
  3. that list equals the functions declared in include/vfgx/*.h (static
     inline helpers excepted), and vfgx.h includes every public header
     but bench.h (what vfgx-bench alone calls; docs/api.md).
Exit 0 when all hold, 1 with the differences otherwise."""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parents[2]
inc = root / 'include' / 'vfgx'
failed = False


def fail(msg):
    global failed
    failed = True
    print('FAIL ' + msg)


def diff(what, got, want):
    extra, missing = sorted(got - want), sorted(want - got)
    if extra or missing:
        fail(f'{what}:\n  not in the list: {" ".join(extra) or "-"}\n'
             f'  in the list, missing: {" ".join(missing) or "-"}')
    else:
        print(f'ok   {what}: {len(got)} functions')


def declared_functions():
    """Non-static functions declared in the public headers."""
    names = set()
    for h in sorted(inc.glob('*.h')):
        text = h.read_text()
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
        text = re.sub(r'//[^\n]*', ' ', text)
        text = re.sub(r'#ifdef __cplusplus.*?#endif', ' ', text, flags=re.S)
        text = re.sub(r'^\s*#.*?(?<!\\)$', ' ', text, flags=re.M | re.S)
        # brace blocks, innermost first: a function body (after ')') marks
        # its declaration as a definition; struct/enum bodies go
        while True:
            t = re.sub(r'\)\s*\{[^{}]*\}', ') @BODY;', text)
            if t == text:
                t = re.sub(r'\{[^{}]*\}', ';', text, count=1)
            if t == text:
                break
            text = t
        for decl in text.split(';'):
            m = re.search(r'\b(vfgx_\w+)\s*\(', decl)
            if (m and not re.search(r'\(\s*\*\s*$', decl[:m.start()]) and
                    not decl.rstrip().endswith('@BODY') and
                    not re.search(r'\b(static|typedef)\b', decl[:m.start()])):
                names.add(m.group(1))
    return names


so, features = sys.argv[1], set(sys.argv[2:])
dyn = subprocess.run(['readelf', '-d', so], capture_output=True, text=True,
                     check=True).stdout
soname = re.search(r'Library soname: \[(.*?)\]', dyn)
if soname and soname.group(1) == 'libvfgx.so.2':
    print('ok   soname libvfgx.so.2')
else:
    fail(f'soname: {soname.group(1) if soname else "none"}, wanted libvfgx.so.2')

nm = subprocess.run(['nm', '-D', '--defined-only', so], capture_output=True,
                    text=True, check=True).stdout
exported = {f[2].split('@')[0] for f in (ln.split() for ln in nm.splitlines())
            if len(f) == 3 and f[2] != 'VFGX_0'}

listed, all_listed = set(), set()
for ln in (root / 'tests' / 'abi' / 'libvfgx.symbols').read_text().splitlines():
    f = ln.split('#')[0].split()
    if not f:
        continue
    all_listed.add(f[0])
    if all(t in features for t in f[1:]):
        listed.add(f[0])
diff('exported by libvfgx.so vs tests/abi/libvfgx.symbols', exported, listed)
diff('tests/abi/libvfgx.symbols vs include/vfgx/*.h', all_listed,
     declared_functions())

umbrella = (inc / 'vfgx.h').read_text()
# a header that is part of another (it #errors when included alone, as
# format_kinds.h, part of format.h) comes with the one it is part of
part_of = {h.name for h in inc.glob('*.h')
           if re.search(r'#error "include <vfgx/\w+\.h>, not <vfgx/' + re.escape(h.name),
                        h.read_text())}
headers = {h.name for h in inc.glob('*.h')} - {'vfgx.h', 'bench.h'} - part_of
included = set(re.findall(r'#include "(\w+\.h)"', umbrella))
if headers - included:
    fail('vfgx.h does not include: ' + ' '.join(sorted(headers - included)))
else:
    print(f'ok   vfgx.h includes all {len(headers)} public headers')
sys.exit(1 if failed else 0)
