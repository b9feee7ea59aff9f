#!/usr/bin/env bash
# test-install-deps.sh - scripts/install-deps.sh --dry-run against real apt
# with its own, empty lists (a fresh machine's state) and a local flat
# repository: the kernel headers package is resolved after apt-get update
# (linux-image-amd64 -> linux-image-6.1.0-99-amd64 -> linux-headers-...),
# and where the lists cannot name it the script fails loudly.
set -uo pipefail
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/install-deps.sh
((EUID == 0)) || { echo "SKIP: apt-get update needs root"; exit 77; }
command -v apt-get >/dev/null || { echo "SKIP: not a Debian system (no apt-get)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # _apt reads the repository
fails=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; printf '     %s\n' "${out//$'\n'/$'\n'     }"; fails=$((fails + 1)); }

# apt_env NAME PACKAGES_TEXT: an apt configuration whose only source is a
# flat repository holding PACKAGES_TEXT, with empty lists and cache
apt_env() {
	local d=$tmp/$1
	mkdir -p "$d/repo" "$d/lists/partial" "$d/cache/archives/partial" "$d/parts"
	printf '%s' "$2" | gzip -9n >"$d/repo/Packages.gz"
	echo "deb [trusted=yes] file:$d/repo ./" >"$d/sources.list"
	cat >"$d/apt.conf" <<C
Dir::State::Lists "$d/lists";
Dir::Cache "$d/cache";
Dir::Etc::SourceList "$d/sources.list";
Dir::Etc::SourceParts "$d/parts";
Acquire::AllowInsecureRepositories "true";
C
	echo "$d/apt.conf"
}

meta='Package: linux-image-amd64
Version: 6.1.999-1
Architecture: amd64
Depends: linux-image-6.1.0-99-amd64 (= 6.1.999-1)
Filename: pool/linux-image-amd64_6.1.999-1_amd64.deb
Size: 1000
Description: test meta package

Package: linux-image-6.1.0-99-amd64
Version: 6.1.999-1
Architecture: amd64
Filename: pool/linux-image-6.1.0-99-amd64_6.1.999-1_amd64.deb
Size: 1000
Description: test kernel image
'
conf=$(apt_env good "$meta")
out=$(APT_CONFIG=$conf "$script" --dry-run 2>&1); rc=$?
if ((rc == 0)) && grep -q '^install-deps: apt-get update$' <<<"$out" &&
   grep -qE '^install-deps: would install (.* )?linux-headers-6\.1\.0-99-amd64( |$)' <<<"$out"; then
	ok "empty lists: updated first, then linux-headers-6.1.0-99-amd64 resolved"
else
	fail "empty lists: exit $rc, headers not resolved after the update"
fi

conf=$(apt_env none "")
out=$(APT_CONFIG=$conf "$script" --dry-run 2>&1); rc=$?
if ((rc == 1)) && grep -q '^install-deps: cannot resolve the kernel headers package' <<<"$out"; then
	ok "no linux-image-amd64 in the lists: exit 1, $(tail -1 <<<"$out")"
else
	fail "no linux-image-amd64 in the lists: exit $rc, want 1 and the reason"
fi
echo "test-install-deps: $fails failure(s)"
((fails == 0))
