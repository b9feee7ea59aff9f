#!/usr/bin/env bash
# ring.sh PEER - host side of the exposed-buffer ring test: boots the
# QEMU guest (tests/vm/vm-run.sh) and runs guest.sh in it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/../vm-run.sh" -t 900 -- bash "$here/guest.sh" "$(realpath "$1")"
