#!/usr/bin/env bash
# test-install.sh - scripts/install-vectorflow-gx.sh --no-clone --no-bind into
# a temporary prefix, twice (idempotent): the prefix gets bin/vfgx, the
# library, include/vfgx and vfgx.pc, and a small program builds against it
# with pkg-config; the Python package lands where the interpreter imports
# from (the same path under its own prefix is on its sys.path) and imports
# from there.  --check finds vfgx where make's build put it.  Bad flags are
# one-line errors with exit status 2.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
script=$src/scripts/install-vectorflow-gx.sh
for tool in meson ninja pkg-config cc; do
	command -v "$tool" >/dev/null || { echo "test-install: skipped: $tool not installed"; exit 77; }
done
tmp=$(mktemp -d /tmp/vfgx-install-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
	echo "FAIL: $*"
	failed=1
}

# VFGX_TEST_PREFIX: install there instead (scripts/fresh-debian.sh: the
# real /usr/local of a throwaway Debian root)
export PREFIX=${VFGX_TEST_PREFIX:-$tmp/prefix} BUILD_DIR=$tmp/build
# the optional backends are not what this test is about: keep the build small
export MESON_ARGS="-Dcuda=disabled -Dafxdp=disabled -Ddpdk=disabled -Drdma=disabled"

# --- usage errors: one line, exit 2 ---------------------------------------------
for args in "--bogus" "-n" "-d" "-n 17:00" "-g xyz"; do
	# shellcheck disable=SC2086 # split the argument list on purpose
	err=$("$script" $args 2>&1 >/dev/null)
	rc=$?
	[ "$rc" -eq 2 ] || fail "'$args': exit $rc, expected 2"
	[ "$(wc -l <<<"$err")" -eq 1 ] || fail "'$args': error is not one line: $err"
done
err=$("$script" 2>&1)
grep -q -- '-r REPO_URL is required' <<<"$err" || fail "no -r and no --no-clone: $err"

# --- first install ----------------------------------------------------------------
out=$("$script" --no-clone --no-bind --no-kmod -d "$src" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "install: exit $rc"$'\n'"$out"
grep -q "configuring $BUILD_DIR" <<<"$out" || fail "install: no configure step in:"$'\n'"$out"
grep -q "run the demo:      $PREFIX/bin/vfgx run" <<<"$out" || fail "install: no run command printed"

[ -x "$PREFIX/bin/vfgx" ] || fail "no $PREFIX/bin/vfgx"
# #21: the benchmarks and their reference runners are vfgx-bench, beside vfgx
[ -x "$PREFIX/bin/vfgx-bench" ] || fail "no $PREFIX/bin/vfgx-bench"
if nm "$PREFIX/bin/vfgx" 2>/dev/null | grep -q -E ' vfgx_bench_(pipeline|socket|afxdp|dpdk|rdma|eba|gpu|e2e)$|bench_target'; then
	fail "vfgx carries benchmark code (it belongs in vfgx-bench)"
fi
"$PREFIX/bin/vfgx" bench pipeline --help | grep -q '^usage: vfgx bench pipeline' ||
	fail "installed vfgx bench pipeline --help does not reach vfgx-bench"
[ -f "$PREFIX/include/vfgx/vfgx.h" ] || fail "no $PREFIX/include/vfgx/vfgx.h"
lib=$(find "$PREFIX" -name 'libvfgx.so' | head -1)
pc=$(find "$PREFIX" -name vfgx.pc | head -1)
[ -n "$lib" ] || fail "no libvfgx.so under $PREFIX"
[ -n "$pc" ] || fail "no vfgx.pc under $PREFIX"
case $lib in "$PREFIX"/lib*) ;; *) fail "libvfgx.so outside $PREFIX/lib*: $lib" ;; esac

ver=$("$PREFIX/bin/vfgx" --version 2>&1) || fail "installed vfgx does not start: $ver"
[ "$ver" = "vfgx 0.1.0" ] || fail "vfgx --version: '$ver'"
"$PREFIX/bin/vfgx" doctor --root "$src/tests/fixtures/healthy-cx7-h100" >/dev/null ||
	fail "installed vfgx doctor on the healthy fixture: exit $?"

# --- pkg-config and a program built against the prefix --------------------------------
if [ -n "$pc" ]; then
	export PKG_CONFIG_PATH
	PKG_CONFIG_PATH=$(dirname "$pc")
	flags=$(pkg-config --cflags --libs vfgx) || fail "pkg-config --cflags --libs vfgx failed"
	grep -q -- "-I$PREFIX/include" <<<"$flags" || fail "pkg-config cflags lack -I$PREFIX/include: $flags"
	grep -q -- "-lvfgx" <<<"$flags" || fail "pkg-config libs lack -lvfgx: $flags"
	cat >"$tmp/hello.c" <<'C'
/* hello.c - the smallest libvfgx user: a context and the default config */
#include <stdio.h>
#include <vfgx/vfgx.h>

int main(void)
{
	struct vfgx_config *cfg;
	vfgx_ctx *ctx;

	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_config_load_default(ctx, &cfg)) {
		fprintf(stderr, "%s\n", vfgx_last_error(ctx));
		return 1;
	}
	printf("libvfgx %s, %u interface(s) in the default config\n",
	       VFGX_VERSION_STRING, cfg->nb_ifaces);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	return 0;
}
C
	# shellcheck disable=SC2086 # pkg-config output is a list of flags
	if cc -std=c17 -Wall -Werror "$tmp/hello.c" -o "$tmp/hello" $flags; then
		got=$(LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/hello")
		[ "$got" = "libvfgx 0.1.0, 1 interface(s) in the default config" ] ||
			fail "hello against the prefix printed '$got'"
	else
		fail "cc against pkg-config vfgx failed"
	fi
fi

# --- the Python package: where python3 imports from --------------------------------
# the interpreter meson builds it for: the one meson runs under
py=$(sed -n '1s/^#! *//p' "$(command -v meson)")
py=${py%% *}
if [ -x "$py" ] && "$py" -c 'import numpy' 2>/dev/null && [ -e /usr/include/dlpack/dlpack.h ]; then
	init=$(find "$PREFIX" -path '*/vfgx/__init__.py' | head -1)
	if [ -z "$init" ]; then
		fail "no vfgx/__init__.py under $PREFIX"
	else
		site=$(dirname "$(dirname "$init")")
		rel=${site#"$PREFIX"/}
		# #44: Debian's meson chose lib/python3/dist-packages, which python3
		# never reads under /usr/local
		"$py" - "$rel" <<-'PY' || fail "python: $rel under the interpreter's prefix is not on its sys.path"
			import os, sys, sysconfig
			want = os.path.join(sysconfig.get_paths()["data"], sys.argv[1])
			sys.exit(0 if want in sys.path else 1)
		PY
		# under the interpreter's own prefix it imports as it is; elsewhere
		# with the site folder on PYTHONPATH
		pypath=$site
		[ "$PREFIX" != "$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["data"])')" ] || pypath=
		got=$(cd / && PYTHONPATH=$pypath "$py" -c 'import vfgx; print(vfgx.__file__)' 2>&1)
		[ "$got" = "$init" ] || fail "python: import vfgx (PYTHONPATH=$pypath) gave: $got"
	fi
else
	echo "test-install: python part skipped (no numpy for $py or no dlpack/dlpack.h)"
fi

# --- --check finds what make built (build/src/cli/vfgx) --------------------------------
out=$(cd "$tmp" && PREFIX=$tmp/none BUILD_DIR='' "$script" --check 2>&1)
rc=$?
if [ -x "$src/build/src/cli/vfgx" ]; then
	[ "$rc" -le 2 ] || fail "--check with make's build: exit $rc"$'\n'"$out"
	grep -q "vfgx doctor ($src/build/src/cli/vfgx)" <<<"$out" ||
		fail "--check did not find $src/build/src/cli/vfgx:"$'\n'"$out"
fi

# --- second run: nothing to redo, same result -----------------------------------------
out=$("$script" --no-clone --no-bind --no-kmod -d "$src" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "second install: exit $rc"$'\n'"$out"
grep -q "reconfiguring $BUILD_DIR" <<<"$out" || fail "second install did not reuse $BUILD_DIR"
# bench/bench_commit.h is a vcs_tag, looked at on every build (it is
# rewritten only when the commit changes, so nothing after it reruns)
grep -qE "building: (ninja: no work to do\.|\[1/[0-9]+\] Generating bench/bench_commit.h with a custom command)$" <<<"$out" ||
	fail "second install rebuilt something:"$'\n'"$out"
[ -x "$PREFIX/bin/vfgx" ] || fail "second install lost bin/vfgx"

# --- --check runs the doctor from the prefix --------------------------------------------
out=$("$script" --check 2>&1)
rc=$?
[ "$rc" -le 2 ] || fail "--check: exit $rc"
grep -q "vfgx doctor ($PREFIX/bin/vfgx)" <<<"$out" || fail "--check did not use $PREFIX/bin/vfgx:"$'\n'"$out"
grep -q '^result: ' <<<"$out" || fail "--check printed no doctor result"

if [ "$failed" -ne 0 ]; then
	echo "test-install: FAILED"
	exit 1
fi
echo "test-install: all checks passed"
