#!/usr/bin/env python3
"""test_capture.py VFGX - capture files and the pcap backend, checked with
Wireshark's tshark: a run with injected faults captured (--capture) opens
in tshark with as many frames and bytes as the run received; the capture
read back through `backend: pcap` gives the same pipeline counts and, when
captured again, the same bytes; sample and drops modes write what they
say; rotation keeps the files it should; bad capture files (truncated,
garbage, a link type that is not Ethernet, missing) and capture paths that
cannot be written (a missing directory, a full disk) give one line naming
the file, and leave no file half-written."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

VFGX = os.path.abspath(sys.argv[1])
failures = []
if not shutil.which("tshark"):
    print("SKIP: tshark not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)


def check(cond, msg):
    print(("ok   - " if cond else "FAIL - ") + msg)
    if not cond:
        failures.append(msg)


def run(*args, cwd=None):
    return subprocess.run([VFGX, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def tshark_frames(path):
    """(frames, bytes, [frame hex]) as tshark reads them; raises on a bad file."""
    r = subprocess.run(["tshark", "-r", path, "-T", "fields", "-e", "frame.len",
                        "-e", "frame.cap_len"],
                       capture_output=True, text=True, timeout=120, check=True)
    lens = [int(line.split()[0]) for line in r.stdout.splitlines() if line.strip()]
    return len(lens), sum(lens)


def raw_frames(path):
    """Every frame's length, addresses, ports, UDP checksum and payload, as
    tshark dissects them, in file order."""
    r = subprocess.run(["tshark", "-r", path, "-T", "fields", "-e", "frame.len",
                        "-e", "eth.src", "-e", "ip.src", "-e", "udp.srcport",
                        "-e", "udp.checksum", "-e", "udp.payload"],
                       capture_output=True, text=True, timeout=120, check=True)
    return r.stdout


SOURCE = """
interfaces:
  - name: faulty
    backend: loopback
    rx:
      queues: [{id: 0}, {id: 1}]
    loopback:
      packets: 20000
      packet_size: 256
      flows: 4
      loss: 0.02
      reorder: 0.05
      duplicate: 0.02
      corrupt: 0.01
      seed: 7
"""
PIPE = """
pipeline:
  workers: 2
  reorder: {window: 256}
  verify_payload: true
  capture: {ring_bytes: 67108864%s}
"""
PCAP_IN = """
interfaces:
  - name: replay
    backend: pcap
    address: %s
    rx:
      queues: [{id: 0}]
"""


def cfg(tmp, name, text):
    p = os.path.join(tmp, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def jrun(cmd, *args):
    r = run(cmd, "--json", *args)
    try:
        return r, json.loads(r.stdout)
    except ValueError:
        print(r.stdout, r.stderr)
        return r, None


with tempfile.TemporaryDirectory() as tmp:
    cap = os.path.join(tmp, "run.pcap")
    # --- a run with faults, captured ------------------------------------
    gen = cfg(tmp, "gen.yaml", SOURCE + PIPE % "")
    r, j = jrun("run", "-q", "--capture", cap, gen)
    check(r.returncode == 0 and j and j["capture"]["error"] is None,
          "captured run passes (exit %d)" % r.returncode)
    rx = sum(q["rx_packets"] for q in j["queues"])
    rxb = sum(q["rx_bytes"] for q in j["queues"])
    c = j["capture"]
    check(c["seen"] == rx and c["written"] == rx and c["ring_full"] == 0,
          "capture wrote every received packet (%d seen, %d written, rx %d)"
          % (c["seen"], c["written"], rx))
    n, b = tshark_frames(cap)
    check((n, b) == (rx, rxb), "tshark reads %d frames / %d bytes, the run received %d / %d"
          % (n, b, rx, rxb))
    ftype = subprocess.run(["capinfos", "-t", cap], capture_output=True, text=True).stdout
    check("nanosecond" in ftype, "the file has nanosecond timestamps (capinfos: %s)"
          % " ".join(ftype.split()[-3:]))

    # --- the capture through backend: pcap --------------------------------
    cap2 = os.path.join(tmp, "replay.pcap")
    rep = cfg(tmp, "rep.yaml", PCAP_IN % cap + PIPE % "")
    r2, j2 = jrun("run", "-q", "--capture", cap2, rep)
    check(r2.returncode == 0 and j2 is not None, "pcap replay runs (exit %d)" % r2.returncode)
    if r2.returncode:
        print(r2.stderr)
    p1, p2 = j["pipeline"], j2["pipeline"]
    same = ["packets", "bytes", "passed", "delivered", "delivered_bytes", "gaps",
            "verify_errors"]
    check(all(p1[k] == p2[k] for k in same) and p1["drops"] == p2["drops"],
          "the replay's pipeline counts equal the run's: %s"
          % {k: (p1[k], p2[k]) for k in same if p1[k] != p2[k]})
    check(p1["drops"]["bad_udp_csum"] > 0 and p1["drops"]["duplicate"] > 0 and p1["gaps"] > 0,
          "the faults are in both (bad_udp_csum %d, duplicate %d, gaps %d)"
          % (p1["drops"]["bad_udp_csum"], p1["drops"]["duplicate"], p1["gaps"]))
    f1, f2 = raw_frames(cap), raw_frames(cap2)
    check(f1 == f2 and len(f1.splitlines()) == rx,
          "the replay, captured again, has the same %d frames, payloads and checksums"
          % len(f2.splitlines()))

    # --- loops with sequences rewritten -----------------------------------
    loops = cfg(tmp, "loops.yaml", (PCAP_IN % cap).replace(
        "queues: [{id: 0}]", "queues: [{id: 0}]\n    pcap: {loops: 3, sequences: rewrite}")
        + "\npipeline:\n  reorder: {window: 256}\n  verify_payload: true\n")
    r3, j3 = jrun("run", "-q", loops)
    check(r3.returncode == 0 and j3 and j3["pipeline"]["packets"] == 3 * rx and
          j3["pipeline"]["delivered"] == 3 * p1["delivered"],
          "3 laps, sequences rewritten: %s packets, %s delivered (3 x %d, 3 x %d)"
          % (j3 and j3["pipeline"]["packets"], j3 and j3["pipeline"]["delivered"], rx,
             p1["delivered"]))

    # --- sample and drops modes --------------------------------------------
    r4, j4 = jrun("run", "-q", "--capture", os.path.join(tmp, "s.pcap"),
                  cfg(tmp, "s.yaml", SOURCE + PIPE % ", mode: sample, sample_every: 10"))
    want = sum((q["rx_packets"] + 9) // 10 for q in j4["queues"])
    check(j4["capture"]["written"] == want == tshark_frames(os.path.join(tmp, "s.pcap"))[0],
          "sample 1 in 10: %d written, %d wanted" % (j4["capture"]["written"], want))
    r5, j5 = jrun("run", "-q", "--capture", os.path.join(tmp, "d.pcap"),
                  cfg(tmp, "d.yaml", SOURCE + PIPE % ", mode: drops"))
    bad = sum(v for k, v in j5["pipeline"]["drops"].items()
              if k in ("truncated", "bad_eth", "bad_ip", "bad_ip_csum", "not_udp", "bad_udp",
                       "bad_udp_csum"))
    check(j5["capture"]["written"] == bad > 0,
          "drops mode: %d written, %d dropped by parse/validate" % (j5["capture"]["written"], bad))

    # --- rotation ----------------------------------------------------------
    rot = os.path.join(tmp, "rot", "r.pcap")
    os.mkdir(os.path.dirname(rot))
    r6, j6 = jrun("run", "-q", "--capture", rot,
                  cfg(tmp, "rot.yaml", SOURCE + PIPE % ", rotate_bytes: 1000000, rotate_files: 2"))
    files = sorted(os.listdir(os.path.dirname(rot)))
    check(j6["capture"]["files"] >= 5 and len(files) == 2,
          "rotation: %d files written, %d kept (%s)" % (j6["capture"]["files"], len(files), files))
    check(all(tshark_frames(os.path.join(tmp, "rot", f))[0] > 0 for f in files),
          "every kept file opens in tshark")

    # --- bad capture files ---------------------------------------------------
    with open(cap, "rb") as f:
        whole = f.read()
    cases = {"truncated.pcap": whole[:3000], "garbage.pcap": b"not a capture file\n" * 4}
    for name, data in cases.items():
        with open(os.path.join(tmp, name), "wb") as f:
            f.write(data)
    subprocess.run(["editcap", "-T", "rawip", cap, os.path.join(tmp, "rawip.pcap")], check=True)
    for name, what in [("truncated.pcap", "truncated"), ("garbage.pcap", "format"),
                       ("rawip.pcap", "not Ethernet"), ("missing.pcap", "No such file")]:
        p = os.path.join(tmp, name)
        r7 = run("run", "-q", cfg(tmp, "bad.yaml", PCAP_IN % p + PIPE % ""))
        lines = r7.stderr.strip().splitlines()
        check(r7.returncode == (1 if name == "missing.pcap" else 2) and len(lines) == 1 and p in lines[0] and what in lines[0],
              "%s: exit %d, one line naming the file: %s" % (name, r7.returncode, lines))

    # --- timestamps going backwards: counted, said once, still read ------
    half = os.path.join(tmp, "early.pcap"), os.path.join(tmp, "late.pcap")
    subprocess.run(["editcap", "-r", cap, half[0], "1-1000"], check=True)
    subprocess.run(["editcap", "-r", cap, half[1], "1001-2000"], check=True)
    back = os.path.join(tmp, "back.pcap")
    subprocess.run(["mergecap", "-a", "-w", back, half[1], half[0]], check=True)
    r10, j10 = jrun("run", "-q", cfg(tmp, "back.yaml", PCAP_IN % back +
                                     "\npipeline: {reorder: {window: 2048}}\nexpect: {min_packets: 1}\n"))
    warn = [l for l in r10.stderr.splitlines() if "older than the one before" in l]
    deltas = subprocess.run(["tshark", "-r", back, "-T", "fields", "-e", "frame.time_delta"],
                            capture_output=True, text=True, check=True).stdout.split()
    older = sum(1 for d in deltas if d.startswith("-"))
    check(j10 is not None and j10["pipeline"]["packets"] == 2000 and len(warn) == 1 and
          back in warn[0] and (": %d records" % older) in warn[0] and older >= 1,
          "timestamps going backwards: the 2000 records read, one warning: %s" % warn)

    # --- capture paths that cannot be written ------------------------------
    nodir = os.path.join(tmp, "no", "such", "dir.pcap")
    r8 = run("run", "-q", "--capture", nodir, gen)
    lines = r8.stderr.strip().splitlines()
    check(r8.returncode != 0 and len(lines) == 1 and nodir in lines[0] and
          not os.path.exists(nodir), "missing directory: exit %d, one line: %s"
          % (r8.returncode, lines))
    if os.geteuid() == 0 and shutil.which("unshare"):
        # a 256 KiB tmpfs in a private mount namespace fills up mid-run
        full = os.path.join(tmp, "full")
        os.mkdir(full)
        sh = ("mount -t tmpfs -o size=256k none %s && %s run --json -q --capture %s/c.pcap %s"
              " > %s/out.json; cp %s/c.pcap %s/kept.pcap; ls %s > %s/ls.txt"
              % (full, VFGX, full, gen, tmp, full, tmp, full, tmp))
        r9 = subprocess.run(["unshare", "-m", "sh", "-c", sh], capture_output=True, text=True,
                            timeout=120)
        try:
            j9 = json.load(open(os.path.join(tmp, "out.json")))
            c9 = j9["capture"]
            n9 = tshark_frames(os.path.join(tmp, "kept.pcap"))[0]
            check(j9["exit_code"] == 1 and c9["error"] and "space" in c9["error"] and
                  c9["written"] == n9 and c9["failed"] + c9["written"] + c9["ring_full"] ==
                  c9["selected"],
                  "full disk: exit %d, '%s', %d written = %d frames tshark reads whole, %d failed"
                  % (j9["exit_code"], c9["error"], c9["written"], n9, c9["failed"]))
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            check(False, "full disk: %s; %s" % (e, r9.stderr.strip()[-300:]))
    else:
        print("skip - full disk: needs root and unshare for a private tmpfs")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
