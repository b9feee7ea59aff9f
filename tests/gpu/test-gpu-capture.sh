#!/usr/bin/env bash
# test-gpu-capture.sh BUILD - capture from GPU memory: `vfgx run` on the GPU
# pipeline fed by a loopback replay source whose frames live in GPU memory,
# with --capture; every packet is copied out of GPU memory (none skipped),
# and the file, read back through backend: pcap with verify_payload, gives
# every record whole and the generator's payloads.  That file preloaded
# into GPU memory (pcap.preload) runs through the GPU pipeline again,
# verified, and its capture holds the same records byte for byte (read
# with Python's struct, the pcap file format); two laps hand the same GPU
# buffers out twice; sequences rewritten in GPU memory are refused with
# one line.  Exit 77 without a GPU or without libpcap in the build.
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
cat >"$tmp/pre.yaml" <<EOT
memory_regions:
  - { name: rx, kind: gpu, buf_size: 512, num_bufs: 65536 }
interfaces:
  - { name: pre, backend: pcap, address: "$tmp/gpu.pcap",
      rx: { queues: [ { id: 0, memory_region: rx, batch_size: 128 } ] },
      pcap: { preload: true, LAPS } }
pipeline:
  device: gpu
  reorder: { enabled: true, window: 1024 }
  verify_payload: true
  capture: { ring_bytes: 67108864 }
EOT
sed 's/LAPS/loops: 1/' "$tmp/pre.yaml" >"$tmp/pre1.yaml"
pre=$("$vfgx" run -q --capture "$tmp/pre.pcap" "$tmp/pre1.yaml" 2>&1)
prc=$?
echo "$pre" | grep -E "^capture|^pipeline|result:"
same=$(python3 - "$tmp/gpu.pcap" "$tmp/pre.pcap" <<'EOP'
import struct, sys
def records(path):
    b = open(path, "rb").read()
    out, i = [], 24
    while i + 16 <= len(b):
        incl = struct.unpack_from("<IIII", b, i)[2]
        out.append(b[i + 16:i + 16 + incl])
        i += 16 + incl
    return out
a, b = records(sys.argv[1]), records(sys.argv[2])
print("%d %d %s" % (len(a), len(b), "same" if a == b else "differ"))
EOP
)
if ((prc == 0)) && [ "$same" = "$written $written same" ] && grep -q "verify errors 0" <<<"$pre"; then
	echo "ok   - preloaded into GPU memory: $written records through the GPU pipeline, verified, captured again byte for byte"
else
	echo "FAIL - preload into GPU memory: exit $prc, records (first capture, again): ${same:-?}"
	fails=1
fi
sed -e 's/LAPS/loops: 2, sequences: keep/' -e '/capture:/d' "$tmp/pre.yaml" >"$tmp/pre2.yaml"
two=$("$vfgx" run -q "$tmp/pre2.yaml" 2>&1)
trc=$?
got=$(sed -n 's/^pipeline: \([0-9]*\) packets.*/\1/p' <<<"$two")
if ((trc == 0)) && [ "${got:-0}" = "$((2 * written))" ]; then
	echo "ok   - two laps of the preloaded GPU buffers: $got packets"
else
	echo "FAIL - two laps preloaded: exit $trc, ${got:-?} packets of $((2 * written))"
	echo "$two" | tail -n 5
	fails=1
fi
sed -e 's/LAPS/loops: 2/' -e '/capture:/d' "$tmp/pre.yaml" >"$tmp/pre3.yaml"
bad=$("$vfgx" run -q "$tmp/pre3.yaml" 2>&1)
brc=$?
if ((brc != 0)) && grep -q "set pcap.sequences: keep" <<<"$bad"; then
	echo "ok   - sequences rewritten in GPU memory refused: $(grep -m1 'sequences: keep' <<<"$bad" | cut -c1-100)"
else
	echo "FAIL - loops 2 with rewrite in GPU memory: exit $brc: $bad"
	fails=1
fi
exit $fails
