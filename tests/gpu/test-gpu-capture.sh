#!/usr/bin/env bash
# test-gpu-capture.sh BUILD - capture from GPU memory: `vfgx run` on the GPU
# pipeline fed by a loopback replay source whose frames live in GPU memory,
# with --capture; every packet is copied out of GPU memory (none skipped),
# and the file, read back through backend: pcap with verify_payload, gives
# every record whole and the generator's payloads.  Exit 77 without a
# GPU or without libpcap in the build.
set -uo pipefail
build=$1
vfgx=$build/src/cli/vfgx
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/gpu.yaml" <<EOT
memory_regions:
  - { name: rx, kind: gpu, buf_size: 512, num_bufs: 8192 }
interfaces:
  - { name: rp0, backend: loopback,
      rx: { queues: [ { id: 0, memory_region: rx, batch_size: 128 } ] },
      loopback: { packets: 50000, packet_size: 256, flows: 4, replay: true,
                  loss: 0.01, duplicate: 0.01, reorder: 0.01 } }
pipeline:
  device: gpu
  reorder: { enabled: true, window: 1024 }
  verify_payload: true
  capture: { ring_bytes: 67108864 }
expect: { all_received: true, in_order: true, verified: true }
EOT
out=$("$vfgx" run -q --capture "$tmp/gpu.pcap" "$tmp/gpu.yaml" 2>&1)
rc=$?
echo "$out" | grep -E "^capture|^pipeline|result:"
if grep -q "backend 'pcap' is not in this build\|no libpcap" <<<"$out"; then
	echo "SKIP: this build has no libpcap"; exit 77
fi
line=$(grep "^capture" <<<"$out")
seen=$(sed -n 's/.*: \([0-9]*\) packets seen.*/\1/p' <<<"$line")
written=$(sed -n 's/.* \([0-9]*\) written.*/\1/p' <<<"$line")
gpu=$(sed -n 's/.* \([0-9]*\) in GPU memory not copied.*/\1/p' <<<"$line")
fails=0
if ((rc == 0)) && ((${seen:-0} > 0 && written == seen && gpu == 0)); then
	echo "ok   - $written of $seen packets copied out of GPU memory, none skipped"
else
	echo "FAIL - capture from GPU memory: exit $rc, seen ${seen:-?}, written ${written:-?}, not copied ${gpu:-?}"
	fails=1
fi
cat >"$tmp/back.yaml" <<EOT
interfaces:
  - { name: back, backend: pcap, address: "$tmp/gpu.pcap", rx: { queues: [ { id: 0 } ] } }
pipeline:
  device: cpu
  reorder: { enabled: true, window: 1024 }
  verify_payload: true
expect: { in_order: true, verified: true }
EOT
back=$("$vfgx" run -q "$tmp/back.yaml" 2>&1)
brc=$?
echo "$back" | grep -E "^pipeline|result:"
got=$(sed -n 's/^pipeline: \([0-9]*\) packets.*/\1/p' <<<"$back")
if ((brc == 0)) && [ "${got:-0}" = "$written" ] && grep -q "verify errors 0" <<<"$back"; then
	echo "ok   - the file read back: $got records, payloads verified"
else
	echo "FAIL - the capture read back: exit $brc, ${got:-?} records of ${written:-?}"
	fails=1
fi
exit $fails
