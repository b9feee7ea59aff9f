#!/usr/bin/python3
"""regression.py --old BUILD --old-commit REV [--new BUILD] [--device cpu|gpu]
[--rounds N] [--packets P] [--out DIR] - the no-regression target of issue 39:
the code after a change against the code before it, in the same run.

Both builds run the same `vfgx run --json` on the same config, alternating
old, new, new, old in each round (so a drift of the machine falls on both
sides), and each side's rate is its packets over its seconds summed in the
round.  The config is what a user runs at 64 B, the loopback generator
replaying its frames at full rate with reorder and payload verify on:

  --device cpu   the CPU pipeline, 2 rx queues, 2 workers, host memory;
  --device gpu   the gpu engine, frames in GPU memory, twice: `vfgx bench
                 e2e`'s 64 B peak run (the issue's target) and
                 configs/gpu-loopback-replay.yaml at 64 B with its loss,
                 reordering and duplicates (the reorder window's slow
                 path), each its own target line.

`vfgx bench pipeline` and `vfgx bench e2e` measure components and many
sizes (38 and 5 minutes here); this measures the path both share, end to
end, which is what a regression would show in.

Writes OUT/regression-DEVICE.md in the results format of bench/results.c
(date, machine, load, rounds, the target line with the median / interval
rule)."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import record as rb  # noqa: E402  (the results rule and the head, ported once)

ROOT = os.path.dirname(HERE)

CPU_CONFIG = """interfaces:
  - backend: loopback
    rx:
      queues:
        - { id: 0, memory_region: rx, batch_size: 64 }
        - { id: 1, memory_region: rx, batch_size: 64 }
    loopback: { packets: %d, packet_size: 64, flows: 4, dst_port: 5000, replay: true }
memory_regions:
  - { name: rx, kind: host, buf_size: 2048, num_bufs: 4096 }
pipeline:
  device: cpu
  workers: 2
  filter: { udp_dst_ports: [5000] }
  reorder: { enabled: true, window: 1024 }
  verify_payload: true
"""


# The clean gpu case: `vfgx bench e2e`'s 64 B peak run (bench/e2e.c e2e_yaml
# with its QUEUES, FLOWS, ring_for_size(64) and items_for(64)): 8 rx queues
# of replayed 64 B frames in GPU memory, 64 flows, reorder on, the
# persistent kernel with 256 items, for a fixed time (a source of fewer
# queues, like the faulted case's, bounds both sides below the GPU's rate).
GPU_E2E_CONFIG = """log_level: warn
memory_regions: [{name: r, kind: gpu, buf_size: 64, num_bufs: 524288}]
interfaces:
  - name: rp
    backend: loopback
    rx: {queues: [%s]}
    loopback: {packets: 0, packet_size: 64, flows: 64, replay: true}
pipeline:
  device: gpu
  workers: 1
  duration_s: %g
  filter: {udp_dst_ports: [5000]}
  reorder: {enabled: true, window: 1024, slot_size: 2048}
  verify_payload: false
  gpu: {mode: persistent, items: 256, burst: 1024, graph_items: 128, timeout_ms: 20000}
""" % (", ".join("{id: %d, memory_region: r, batch_size: 256}" % q for q in range(8)), 2.0)


def gpu_config(packets):
    with open(os.path.join(ROOT, "configs", "gpu-loopback-replay.yaml")) as f:
        s = f.read()
    s = s.replace("packet_size: 512", "packet_size: 64")
    s = s.replace("packets: 20000000", "packets: %d" % packets)
    return s[:s.index("expect:")] if "expect:" in s else s


def run(build, cfg):
    exe = os.path.join(build, "src", "cli", "vfgx")
    r = subprocess.run([exe, "run", "-q", "--json", cfg], capture_output=True, text=True,
                       timeout=600)
    try:
        rep = json.loads(r.stdout[r.stdout.find("{"):])
    except ValueError:
        sys.exit("regression.py: %s gave no report (exit %d): %s"
                 % (exe, r.returncode, r.stderr.strip()[-300:]))
    p = rep["pipeline"]
    return p["packets"], rep["seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="build directory of the code before the change")
    ap.add_argument("--old-commit", required=True, help="the commit --old was built from")
    ap.add_argument("--new", default=os.path.join(ROOT, "build"))
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--packets", type=int, default=0, help="per run (default cpu 10M, gpu 60M)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    packets = a.packets or (10000000 if a.device == "cpu" else 60000000)
    started = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()[0]
    if a.device == "cpu":
        cases = [("run_64B", "64 B, cpu", CPU_CONFIG % packets)]
    else:
        cases = [("run_64B", "64 B clean, gpu, bench e2e's peak run (8 queues, 2 s)", GPU_E2E_CONFIG),
                 ("run_64B_faults", "64 B loss 0.01% reorder 1% dup 0.5%, gpu", gpu_config(packets))]
    rows, old, new = [], {c[0]: [] for c in cases}, {c[0]: [] for c in cases}
    with tempfile.TemporaryDirectory(prefix="vfgx-regression-") as d:
        cfgs = {}
        for name, _, text in cases:
            cfgs[name] = os.path.join(d, name + ".yaml")
            with open(cfgs[name], "w") as f:
                f.write(text)
            run(a.new, cfgs[name])  # warm-up, not measured
        for rnd in range(1, a.rounds + 1):
            for name, label, _ in cases:
                side = {"old": [0, 0.0], "new": [0, 0.0]}
                for who in ("old", "new", "new", "old"):
                    n, s = run(a.old if who == "old" else a.new, cfgs[name])
                    side[who][0] += n
                    side[who][1] += s
                o = side["old"][0] / side["old"][1] / 1e6
                nw = side["new"][0] / side["new"][1] / 1e6
                old[name].append(o)
                new[name].append(nw)
                rows.append((rnd, "%s, old new new old, each side 2 x %d packets" % (label, packets),
                             "%.2f Mpps" % nw, "old %.2f Mpps" % o, nw / o))
                print("round %d %s: new %.2f old %.2f Mpps ratio %.3f" % (rnd, name, nw, o, nw / o),
                      flush=True)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "regression-%s.md" % a.device)
    with open(path, "w") as f:
        extra = "- before the change: %s (built in %s)\n- rounds: %d, each old new new old, %d packets a run\n\n" % (
            a.old_commit, a.old, a.rounds, packets)
        rb.head(f, "no regression (#39): %s, 64 B, vfgx run" % a.device, a, started, load, extra)
        f.write("Each side runs `vfgx run --json` on the same config (the loopback generator replaying "
                "64 B frames at full rate, reorder and verify on; %s); the rate is the report's packets "
                "over its seconds, summed per side in the round. Both sides do the same work on the "
                "same threads and memory: only the library code differs.\n\n"
                % ("CPU pipeline, 2 queues, 2 workers, host memory" if a.device == "cpu"
                   else "gpu engine, frames in GPU memory, persistent kernel; two configs in every "
                        "round: `vfgx bench e2e`'s 64 B peak run (8 rx queues, 64 flows, 256 items, "
                        "2 s; every record in order: phase B's run path) and, at 60M packets a run, with configs/gpu-loopback-replay.yaml's "
                        "loss, reordering and duplicates (a lost sequence holds its stream's next "
                        "records in the reorder window until it is full, each copied: the window's "
                        "record-by-record path)"))
        rb.rows_table(f, rows)
        for name, _, _ in cases:
            f.write(rb.target("no_regression_%s_%s" % (a.device, name), new[name], old[name], 0.97) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
