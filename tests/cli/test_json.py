#!/usr/bin/env python3
"""test_json.py VFGX - every reporting subcommand's --json document parses,
carries its schema version (docs/json.md) and says what the text report
says: vfgx run (both from one run: --json puts the text on stderr), doctor
and devices on a fixture tree, bench pipeline (and that it wrote its SVG; the
SVG rendered to PNG is tests/tools/test-plot-png.py's), mon without the driver."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

VFGX = os.path.abspath(sys.argv[1])
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
failures = []


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg)
        failures.append(msg)


def run(*args):
    return subprocess.run([VFGX, *args], capture_output=True, text=True, timeout=300, cwd=SRC)


# --- vfgx run: the JSON document and the text report of the same run ------
r = run("run", "configs/loopback-faults.yaml", "--json")
doc = json.loads(r.stdout)
text = r.stderr
check(doc["schema"] == "vfgx.run/1", "run: schema %s" % doc["schema"])
check(doc["exit_code"] == r.returncode, "run: exit_code %s, process %d" % (doc["exit_code"], r.returncode))
m = re.search(r"^pipeline: (\d+) packets in [0-9.]+ s .* passed (\d+), delivered (\d+) \((\d+) payload bytes\), "
              r"gaps (\d+), verify errors (\d+)$", text, re.M)
check(m is not None, "run: no pipeline line in the text report")
if m:
    pl = doc["pipeline"]
    got = [pl[k] for k in ("packets", "passed", "delivered", "delivered_bytes", "gaps", "verify_errors")]
    check(got == [int(g) for g in m.groups()], "run: pipeline %s, text %s" % (got, m.groups()))
drops = dict((k, int(v)) for k, v in re.findall(r"^drop (\S+) +(\d+)$", text, re.M))
check(drops == {k: v for k, v in doc["pipeline"]["drops"].items() if v},
      "run: drops %s, text %s" % (doc["pipeline"]["drops"], drops))
check(sum(drops.values()) > 0, "run: the faults config dropped nothing")
queues = re.findall(r"^port (\S+) \((\S+)\) rx queue (\d+): (\d+) packets, (\d+) bytes", text, re.M)
check([(q["port"], q["backend"], str(q["queue"]), str(q["rx_packets"]), str(q["rx_bytes"])) for q in doc["queues"]]
      == queues, "run: queues %s, text %s" % (doc["queues"], queues))
src = re.search(r"^source: (\d+) sequences generated, injected: (\d+) lost, (\d+) duplicated, (\d+) corrupted, "
                r"(\d+) reordered$", text, re.M)
check(src is not None and doc["source"] is not None and
      [doc["source"][k] for k in ("generated", "lost", "duplicated", "corrupted", "reordered")]
      == [int(g) for g in src.groups()], "run: source %s" % doc["source"])
exp = re.findall(r"^  (\S+) +(ok|FAILED)", text, re.M)
check([(e["name"], "ok" if e["ok"] else "FAILED") for e in doc["expectations"]] == exp,
      "run: expectations %s, text %s" % (doc["expectations"], exp))
res = re.search(r"^result: (\S+)$", text, re.M)
check(res is not None and res.group(1) == doc["result"], "run: result %s" % doc["result"])
lat = re.search(r"p50 <= (\d+) ns, p99 <= (\d+) ns", text)
check(lat is not None and [doc["pipeline"]["latency"]["p50_ns"], doc["pipeline"]["latency"]["p99_ns"]]
      == [int(lat.group(1)), int(lat.group(2))], "run: latency")

# an unmet expectation: exit 1 and FAILED in both
r = run("run", "configs/loopback.yaml", "--json", "--duration", "0.001")
doc = json.loads(r.stdout)
check(r.returncode == doc["exit_code"], "run --duration 0.001: exit %d vs %s" % (r.returncode, doc["exit_code"]))

# --- chunks: the text says what the JSON says, in slots for slot chunks --
# (vfgx's header; chunks by bytes say bytes: tests/net/format's
# test_rtp_video_run.py, GStreamer's video through netem loss)
tmp = tempfile.mkdtemp(prefix="vfgx-json-chunks-")
try:
    cfg = os.path.join(tmp, "chunks.yaml")
    with open(cfg, "w") as f:
        f.write("interfaces:\n"
                "  - backend: loopback\n"
                "    loopback: { packets: 20000, flows: 2, packet_size: 300, loss: 0.02, seed: 5 }\n"
                "pipeline:\n"
                "  device: cpu\n"
                "  chunks: { payload_bytes: 256, packets: 100, streams: 2, in_flight: 8 }\n"
                "expect: { min_packets: 0 }\n")
    r = run("run", cfg, "--json", "-q")
    doc = json.loads(r.stdout)
    ch = doc["chunks"]
    m = re.search(r"^chunks: (\d+) handed out \((\d+) complete, (\d+) closed with (\d+) (\w+) missing\)",
                  r.stderr, re.M)
    check(m is not None, "run chunks: no chunks line in the text report (%r)" % r.stderr[-300:])
    if m:
        check([int(x) for x in m.groups()[:4]] == [ch["handed_out"], ch["complete"], ch["closed"], ch["missing"]]
              and m.group(5) == "slots",
              "run chunks: text %s, JSON %s" % (m.groups(), ch))
    # every chunk got packets: each packet the generator dropped is a slot missing
    check(doc["source"]["lost"] > 0 and ch["missing"] == doc["source"]["lost"] and
          ch["skipped"] == 0 and ch["missing_bytes"] == ch["missing"] * 256,
          "run chunks: %d lost, %d slots missing, missing_bytes %d (256 a slot)"
          % (doc["source"]["lost"], ch["missing"], ch["missing_bytes"]))
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# --- doctor on fixture trees: the same checks and verdicts ----------------
for fx in sorted(os.listdir(os.path.join(SRC, "tests/fixtures"))):
    root = os.path.join("tests/fixtures", fx)
    if not os.path.isdir(os.path.join(SRC, root)):
        continue
    t = run("doctor", "--root", root)
    j = run("doctor", "--root", root, "--json")
    doc = json.loads(j.stdout)
    check(doc["schema"] == "vfgx.doctor/1", "doctor %s: schema" % fx)
    check(t.returncode == j.returncode == doc["exit_code"],
          "doctor %s: exit text %d json %d doc %s" % (fx, t.returncode, j.returncode, doc["exit_code"]))
    lines = re.findall(r"^(pass|skip|warn|fail)  (\S+) +(.*)$", t.stdout, re.M)
    check([(c["verdict"], c["check"], c["message"]) for c in doc["checks"]] == lines,
          "doctor %s: checks differ from the text" % fx)
    fixes = re.findall(r"^      fix: (.*)$", t.stdout, re.M)
    check([c["fix"] for c in doc["checks"] if c["fix"]] == fixes, "doctor %s: fixes differ" % fx)
    check("result: " + doc["result"] in t.stdout, "doctor %s: result %s" % (fx, doc["result"]))

# --- devices: schema and the same GPU/NIC names as the text ---------------
t = run("devices", "--root", "tests/fixtures/healthy-cx7-h100")
doc = json.loads(run("devices", "--root", "tests/fixtures/healthy-cx7-h100", "--json").stdout)
check(doc["schema"] == "vfgx.devices/1", "devices: schema")
check(doc["interfaces"] and all(n["name"] in t.stdout for n in doc["interfaces"]), "devices: NIC names not in the text")
check(doc["gpus"] and all(g["pci"] in t.stdout for g in doc["gpus"]), "devices: GPU addresses not in the text")

# --- mon without the driver: one line, exit 1, nothing on stdout ----------
r = run("mon", "--json", "--once", "--device", "/nonexistent/gpurdma_mon")
check(r.returncode == 1 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1,
      "mon --json without the device: rc %d out %r err %r" % (r.returncode, r.stdout, r.stderr))

# --- bench pipeline: --json is the results file; the SVG is a picture -----
tmp = tempfile.mkdtemp(prefix="vfgx-json-")
try:
    r = run("bench", "pipeline", "--seconds", "0.05", "--rounds", "1", "--working-set", "16",
            "--out", tmp, "--json")
    check(r.returncode == 0, "bench pipeline: rc %d %s" % (r.returncode, r.stderr[-500:]))
    doc = json.loads(r.stdout)
    md = open(os.path.join(tmp, "pipeline-cpu.md")).read()
    check(doc["schema"] == "vfgx.bench/1" and doc["bench"] == "pipeline", "bench: schema/bench")
    check([t["line"] for t in doc["targets"]] == re.findall(r"^target: .*$", md, re.M), "bench: targets")
    rows = [l for l in md.splitlines() if re.match(r"^\| \d", l)]
    # traffic per size, rounds, medians: one row per size in each (one round)
    check(len(doc["tables"]) == 3 and [len(t["rows"]) for t in doc["tables"]] == [3, 3, 3]
          and len(rows) == 9, "bench: %d tables" % len(doc["tables"]))
    check(doc["tables"][0]["columns"][0] == "frame B", "bench: columns %s" % doc["tables"][0]["columns"])
    svg = os.path.join(tmp, "pipeline-cpu.svg")
    check(os.path.exists(svg) and doc["svg"] == svg, "bench: no %s" % svg)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("test_json: run, doctor, devices, bench and mon --json agree with their text")
