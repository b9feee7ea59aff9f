#!/usr/bin/env bash
# test-user-module.sh VFGX FLOW_SUM.so BAD_ABI.so LIBVFGX.so CONSUMER FUNC.so SMALL.so EVIL.so -
# user code without rebuilding libvfgx: `vfgx run` loads examples/user_module
# (flow_sum) from the config, its per-record sums equal its per-chunk sums
# and every byte matches the generator; the chunk_consumer example checks
# every byte from C; a missing file, a library without vfgx_user_module, a
# module of another ABI version and a chunk callback without chunks each
# stop the run with exit 2 and one line; so do a FIFO or a directory as
# the library (no hang), a vfgx_user_module that is a function or a
# smaller object, and dlerror's text and a module's name are escaped.
set -uo pipefail
vfgx=$1 flow_sum=$2 bad_abi=$3 libvfgx=$4 consumer=$5 func_sym=$6 small_sym=$7 evil=$8
tmp=$(mktemp -d /tmp/vfgx-usermod.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

cfg() { # LIBRARY [CHUNKS]
	cat <<YAML
interfaces:
  - backend: loopback
    loopback: { packets: 100000, flows: 3, loss: 0.002, reorder: 0.02, duplicate: 0.001 }
pipeline:
  device: cpu
  workers: 1
${2-  chunks: { payload_bytes: 512, packets: 128, streams: 3, in_flight: 8 \}}
  user: { library: "$1", arg: verify }
expect: { in_order: true }
YAML
}

cfg "$flow_sum" >"$tmp/ok.yaml"
out=$("$vfgx" run -q "$tmp/ok.yaml" 2>&1)
rc=$?
if ((rc != 0)); then
	fail "flow_sum run: exit $rc"$'\n'"$out"
elif [ "$(grep -c '^flow_sum: stream [0-2]: ' <<<"$out")" != 3 ] || grep -q MISMATCH <<<"$out" ||
	! grep -q '^flow_sum: [1-9][0-9]* chunks read, 0 bytes off the pattern$' <<<"$out" ||
	! grep -q '^  user_module   ok' <<<"$out"; then
	fail "flow_sum run: sums or checks missing"$'\n'"$out"
else
	echo "ok   flow_sum: $(grep 'chunks read' <<<"$out")"
fi

out=$("$consumer" cpu 2>&1)
rc=$?
if ((rc == 0)) && grep -q '^cpu engine: [1-9][0-9]* chunks .* 0 bad$' <<<"$out"; then
	echo "ok   chunk_consumer: $out"
else
	fail "chunk_consumer: exit $rc"$'\n'"$out"
fi

refuse() { # NAME YAML WANT
	local out rc
	out=$("$vfgx" run -q "$2" 2>&1)
	rc=$?
	if ((rc == 2)) && [ "$(wc -l <<<"$out")" = 1 ] && grep -q -- "$3" <<<"$out"; then
		echo "ok   $1: $out"
	else
		fail "$1: exit $rc, want 2 and one line with '$3'"$'\n'"$out"
	fi
}
cfg "$tmp/none.so" >"$tmp/missing.yaml"
refuse "missing library" "$tmp/missing.yaml" "pipeline.user.library: $tmp/none.so: cannot open shared object file"
cfg "$libvfgx" >"$tmp/nosym.yaml"
refuse "no module symbol" "$tmp/nosym.yaml" "defines no vfgx_user_module"
cfg "$bad_abi" >"$tmp/abi.yaml"
refuse "other ABI" "$tmp/abi.yaml" "module ABI version 99, this vfgx runs version 1"
cfg "$flow_sum" "" >"$tmp/nochunks.yaml"
refuse "chunk callback, no chunks" "$tmp/nochunks.yaml" "has a chunk callback but the pipeline has no chunks"
mkfifo "$tmp/fifo.so"
cfg "$tmp/fifo.so" >"$tmp/fifo.yaml"
# before: dlopen blocked in open(2) on the FIFO, deaf to SIGINT and SIGTERM
out=$(timeout -s KILL 20 "$vfgx" run -q "$tmp/fifo.yaml" 2>&1)
rc=$?
if ((rc == 2)) && [ "$(wc -l <<<"$out")" = 1 ] &&
	grep -q "pipeline.user.library: $tmp/fifo.so is not a regular file (a FIFO" <<<"$out"; then
	echo "ok   FIFO library: $out"
else
	fail "FIFO library: exit $rc, want 2 and one line (137: it hung)"$'\n'"$out"
fi
cfg "$tmp" >"$tmp/dir.yaml"
refuse "directory library" "$tmp/dir.yaml" "is not a regular file (a directory"
cfg "$func_sym" >"$tmp/func.yaml"
refuse "symbol is a function" "$tmp/func.yaml" "vfgx_user_module is a function of [0-9]* bytes, not a struct vfgx_user_module"
cfg "$small_sym" >"$tmp/small.yaml"
refuse "symbol too small" "$tmp/small.yaml" "vfgx_user_module is an object of 4 bytes, not a struct vfgx_user_module"

# a library whose path (so dlerror's text) carries a forged line and an
# escape: one line, the bytes escaped
head -c 4096 /dev/zero | tr '\0' x >"$tmp/evil"$'\n''result: PASSED'$'\e''[2J.so'
cfg "$tmp/evil\nresult: PASSED\e[2J.so" >"$tmp/evil-path.yaml"
refuse "dlerror escaped" "$tmp/evil-path.yaml" 'evil\\nresult: PASSED\\x1b\[2J.so: .*invalid ELF header'
out=$("$vfgx" run -q "$tmp/evil-path.yaml" 2>&1)
if grep -q $'\e' <<<"$out"; then
	fail "dlerror escaped: a raw ESC printed"
fi
# a module's name: escaped where vfgx run prints it (here the refusal of a
# chunk callback without chunks)
cfg "$evil" "" >"$tmp/evil-name.yaml"
refuse "module name escaped" "$tmp/evil-name.yaml" 'user module evil\\nresult: PASSED\\x1b\[2J has a chunk callback'
out=$("$vfgx" run -q "$tmp/evil-name.yaml" 2>&1)
if grep -q $'\e' <<<"$out"; then
	fail "module name escaped: a raw ESC printed"
fi
# and in the report of a run that uses it (the run's own result line is
# the only one)
cfg "$evil" >"$tmp/evil-run.yaml"
out=$("$vfgx" run -q "$tmp/evil-run.yaml" 2>&1)
rc=$?
if ((rc == 0)) && grep -q '^user module evil\\nresult: PASSED\\x1b\[2J: [1-9][0-9]* chunks' <<<"$out" &&
	[ "$(grep -c '^result: ' <<<"$out")" = 1 ] && ! grep -q $'\e' <<<"$out"; then
	echo "ok   module name escaped in the report"
else
	fail "module name in the report: exit $rc"$'\n'"$out"
fi
exit $failed
