#!/usr/bin/env python3
"""test_capture.py VFGX - capture files and the pcap backend, checked with
Wireshark's tshark: a run with injected faults captured (--capture) opens
in tshark with as many frames and bytes as the run received; the capture
read back through `backend: pcap` gives the same pipeline counts and, when
captured again, the same bytes; sample and drops modes write what they
say; rotation keeps the files it should; bad capture files (truncated,
garbage, a link type that is not Ethernet, missing) and capture paths that
cannot be written (a missing directory, a full disk) give one line naming
the file, and leave no file half-written.  The same for pcapng (libwiretap:
capture.format, or a name ending in .pcapng): tshark reads the run's
frames and bytes with nanosecond resolution, backend: pcap replays it to
the same counts and payloads, rotation, a bad format value, a full disk.
Issue 43: an existing capture file is refused without --force, a symbolic
link, FIFO, directory or character device always, and the run's own pcap
input (by name or hard link) too, each with one line and nothing changed;
a rotation that cannot open its next file keeps the bytes written counted;
a disk full at the header is one line (pcapng crashed); a FIFO as
pcap.file is refused instead of blocking the open. Recorded or rate timing
that would put a record more than 100 years out is one line (a float to
integer conversion out of range before). A capture that drops
records says how many were not captured and fails its expectation.
pcap.preload (the file read into the pool once, its buffers handed out):
the same counts and, captured again, the same frames as the run's; three
laps rewritten in place equal three laps read from the file, frame for
frame; a pool too small for the file is one line. --expect-sent: a
report that is missing, empty, not JSON, of another schema or with
numbers no sender gives fails the run alike in text, JSON and exit status;
a device, FIFO, directory or file over 1 MiB is refused before the run."""
import json
import os
import shutil
import stat
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


def file_type(path):
    """capinfos' short name of the file type: "nsecpcap", "pcapng"..."""
    r = subprocess.run(["capinfos", "-t", "-T", "-r", path], capture_output=True, text=True,
                       check=True)
    return r.stdout.strip().split("\t")[-1]


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

    # --- pcap.preload: the file read into the pool once, buffers handed out -
    cap3 = os.path.join(tmp, "preload.pcap")
    pre = cfg(tmp, "pre.yaml", (PCAP_IN % cap).replace(
        "queues: [{id: 0}]", "queues: [{id: 0}]\n    pcap: {preload: true}") + PIPE % "")
    r8, j8 = jrun("run", "-q", "--capture", cap3, pre)
    check(r8.returncode == 0 and j8 and all(j8["pipeline"][k] == p1[k] for k in same),
          "preload: the pipeline counts equal the run's (exit %d)" % r8.returncode)
    check(raw_frames(cap3) == f1, "preload: captured again, the same %d frames as the run's"
          % len(f1.splitlines()))
    pre3 = cfg(tmp, "pre3.yaml", (PCAP_IN % cap).replace(
        "queues: [{id: 0}]", "queues: [{id: 0}]\n    pcap: {loops: 3, preload: true}")
        + "\npipeline:\n  reorder: {window: 256}\n  verify_payload: true\n"
        "  capture: {ring_bytes: 268435456}\n")
    cap4, cap5 = os.path.join(tmp, "laps.pcap"), os.path.join(tmp, "laps-pre.pcap")
    with open(pre3) as f:
        laps = cfg(tmp, "laps.yaml", f.read().replace(", preload: true", ""))
    r9, j9 = jrun("run", "-q", "--capture", cap4, laps)
    r10, j10 = jrun("run", "-q", "--capture", cap5, pre3)
    check(r9.returncode == 0 and r10.returncode == 0 and j10 and
          j10["pipeline"]["packets"] == 3 * rx and
          all(j9["pipeline"][k] == j10["pipeline"][k] for k in same),
          "preload, 3 laps rewritten in place: %s packets (3 x %d), counts as without preload"
          % (j10 and j10["pipeline"]["packets"], rx))
    check(raw_frames(cap4) == raw_frames(cap5),
          "preload, 3 laps: the same frames, sequences and checksums as 3 laps read from the file")
    small = cfg(tmp, "small.yaml", "memory_regions:\n  - {name: r, kind: host, buf_size: 512, "
                "num_bufs: 100}\n" + (PCAP_IN % cap).replace(
                    "queues: [{id: 0}]", "queues: [{id: 0, memory_region: r}]\n"
                    "    pcap: {preload: true}"))
    r11 = run("run", "-q", small)
    # the file's own warning (records older than the one before) aside
    err = [e for e in r11.stderr.strip().splitlines() if not e.startswith("vfgx: warn:")]
    check(r11.returncode != 0 and len(err) == 1 and "raise its num_bufs" in err[0] and
          "%d records" % rx in err[0],
          "preload into too few buffers: one line (%s)" % (err[-1] if err else ""))

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

    # rotate_bytes at the pcap file header's size: a record per file, and
    # the run ends (a span of no record rotated for ever before)
    tiny = os.path.join(tmp, "tiny", "t.pcap")
    os.mkdir(os.path.dirname(tiny))
    tcfg = cfg(tmp, "tiny.yaml", "interfaces:\n  - { name: lo0, backend: loopback, "
               "rx: { queues: [ { id: 0 } ] }, loopback: { packets: 200, packet_size: 200 } }\n"
               "pipeline:\n  capture: { path: %s, rotate_bytes: 24, rotate_files: 2 }\n" % tiny)
    try:
        r7, j7 = jrun("run", "-q", tcfg)
    except subprocess.TimeoutExpired:
        r7, j7 = None, None
    kept = sorted(os.listdir(os.path.dirname(tiny)))
    check(j7 is not None and r7.returncode == 0 and j7["capture"]["written"] == 200 and
          j7["capture"]["files"] >= 200 and len(kept) == 2,
          "rotate_bytes 24: the run ends, 200 written, %s files, %d kept" %
          (j7 and j7["capture"]["files"], len(kept)))
    check(all(tshark_frames(os.path.join(os.path.dirname(tiny), f))[0] <= 1 for f in kept),
          "every kept file opens in tshark, a record at most in each")

    # --- pcapng (libwiretap) -------------------------------------------------
    capng = os.path.join(tmp, "run.pcapng")
    rn, jn = jrun("run", "-q", "--capture", capng, gen)
    if "no libwiretap" in rn.stderr:
        print("SKIP: pcapng: this build has no libwiretap (libwiretap-dev): %s" % rn.stderr.strip())
        check(rn.returncode == 2 and len(rn.stderr.strip().splitlines()) == 1 and
              not os.path.exists(capng), "pcapng by the name: refused with one line, no file left")
        kng = cfg(tmp, "kng.yaml", SOURCE + PIPE % ", format: pcapng")
        rk = run("run", "-q", "--capture", os.path.join(tmp, "k.cap"), kng)
        lines = rk.stderr.strip().splitlines()
        check(rk.returncode == 2 and len(lines) == 1 and (kng + ":") in lines[0] and
              "libwiretap" in lines[0] and not os.path.exists(os.path.join(tmp, "k.cap")),
              "format: pcapng refused at config load, file:line:col: %s" % lines)
        has_pcapng = False
    else:
        has_pcapng = True
        check(rn.returncode == 0 and jn and jn["capture"]["error"] is None,
              "pcapng: captured run passes (exit %d)" % rn.returncode)
        rxn = sum(q["rx_packets"] for q in jn["queues"])
        rxbn = sum(q["rx_bytes"] for q in jn["queues"])
        cn = jn["capture"]
        check(file_type(capng) == "pcapng", "pcapng: capinfos says %s" % file_type(capng))
        check(cn["written"] == rxn == rx and cn["ring_full"] == 0 and
              cn["bytes"] == os.path.getsize(capng),
              "pcapng: every received packet written (%d of %d), %d bytes = the file's size"
              % (cn["written"], rxn, cn["bytes"]))
        check(tshark_frames(capng) == (rxn, rxbn),
              "pcapng: tshark reads %d frames / %d bytes, the run received %d / %d"
              % (tshark_frames(capng) + (rxn, rxbn)))
        iface = subprocess.run(["capinfos", "-I", capng], capture_output=True, text=True).stdout
        stamps = subprocess.run(["tshark", "-r", capng, "-T", "fields", "-e", "frame.time_epoch"],
                                capture_output=True, text=True, check=True).stdout.split()
        sub_us = sum(1 for t in stamps if len(t.split(".")[1]) == 9 and not t.endswith("000"))
        check("Time precision = nanoseconds (9)" in iface and sub_us > len(stamps) // 2,
              "pcapng: nanosecond resolution (interface: %s; %d of %d stamps below 1 us)"
              % ("nanoseconds" if "nanoseconds (9)" in iface else iface.strip()[-200:], sub_us,
                 len(stamps)))
        # the same source as the pcap run: the same frames (the two queues
        # interleave in their own order in each file)
        check(sorted(raw_frames(capng).splitlines()) == sorted(f1.splitlines()),
              "pcapng: the same %d frames, payloads and checksums as the pcap run's" % rxn)
        # through backend: pcap, captured again as pcapng
        capng2 = os.path.join(tmp, "replay.pcapng")
        rep = cfg(tmp, "repng.yaml", PCAP_IN % capng + PIPE % "")
        r2n, j2n = jrun("run", "-q", "--capture", capng2, rep)
        check(r2n.returncode == 0 and j2n is not None and
              all(jn["pipeline"][k] == j2n["pipeline"][k] for k in same) and
              jn["pipeline"]["drops"] == j2n["pipeline"]["drops"] and
              all(p1[k] == j2n["pipeline"][k] for k in same),
              "pcapng through backend: pcap: every pipeline count equals the run's (exit %d)"
              % r2n.returncode)
        check(raw_frames(capng) == raw_frames(capng2) and file_type(capng2) == "pcapng",
              "pcapng replay, captured again, has the same frames in the same order")
        # format by the key: a name without .pcapng; pcap wins over the name
        ra, ja = jrun("run", "-q", "--capture", os.path.join(tmp, "k.cap"),
                      cfg(tmp, "k.yaml", SOURCE + PIPE % ", format: pcapng"))
        rb, jb = jrun("run", "-q", "--capture", os.path.join(tmp, "k.pcapng"),
                      cfg(tmp, "kp.yaml", SOURCE + PIPE % ", format: pcap"))
        check(ra.returncode == 0 and file_type(os.path.join(tmp, "k.cap")) == "pcapng" and
              rb.returncode == 0 and file_type(os.path.join(tmp, "k.pcapng")) == "nsecpcap",
              "format: pcapng writes pcapng to k.cap, format: pcap writes pcap to k.pcapng")
        # rotation: STEM.N.EXT, every kept file pcapng and whole
        rotn = os.path.join(tmp, "rotng", "r.pcapng")
        os.mkdir(os.path.dirname(rotn))
        r6n, j6n = jrun("run", "-q", "--capture", rotn,
                        cfg(tmp, "rotng.yaml", SOURCE + PIPE % ", rotate_bytes: 1000000, rotate_files: 2"))
        files = sorted(os.listdir(os.path.dirname(rotn)))
        nf = j6n["capture"]["files"]
        check(r6n.returncode == 0 and nf >= 5 and
              files == sorted(["r.%d.pcapng" % (nf - 2), "r.%d.pcapng" % (nf - 1)]),
              "pcapng rotation: %d files written, %s kept" % (nf, files))
        kept = [os.path.join(tmp, "rotng", f) for f in files]
        check(all(file_type(f) == "pcapng" and tshark_frames(f)[0] > 0 for f in kept),
              "every kept pcapng file opens in tshark")

    # --- a bad capture.format ------------------------------------------------
    badf = cfg(tmp, "badf.yaml", SOURCE + PIPE % ", format: pcapngx")
    r11 = run("run", "-q", badf)
    lines = r11.stderr.strip().splitlines()
    check(r11.returncode == 2 and len(lines) == 1 and (badf + ":") in lines[0] and
          "capture.format" in lines[0] and "auto, pcap, pcapng" in lines[0],
          "format: pcapngx: exit %d, one line file:line:col: %s" % (r11.returncode, lines))

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
    for ext in ["pcap"] + (["pcapng"] if has_pcapng else []):
        nodir = os.path.join(tmp, "no", "such", "dir." + ext)
        r8 = run("run", "-q", "--capture", nodir, gen)
        lines = r8.stderr.strip().splitlines()
        check(r8.returncode != 0 and len(lines) == 1 and nodir in lines[0] and
              not os.path.exists(nodir), "%s, missing directory: exit %d, one line: %s"
              % (ext, r8.returncode, lines))
    for ext in ["pcap"] + (["pcapng"] if has_pcapng else []):
        if not (os.geteuid() == 0 and shutil.which("unshare")):
            print("SKIP: full disk: needs root and unshare for a private tmpfs")
            break
        # a 256 KiB tmpfs in a private mount namespace fills up mid-run
        full = os.path.join(tmp, "full")
        os.makedirs(full, exist_ok=True)
        sh = ("mount -t tmpfs -o size=256k none %s && %s run --json -q --capture %s/c.%s %s"
              " > %s/out.json; cp %s/c.%s %s/kept.%s; ls %s > %s/ls.txt"
              % (full, VFGX, full, ext, gen, tmp, full, ext, tmp, ext, full, tmp))
        r9 = subprocess.run(["unshare", "-m", "sh", "-c", sh], capture_output=True, text=True,
                            timeout=120)
        try:
            j9 = json.load(open(os.path.join(tmp, "out.json")))
            c9 = j9["capture"]
            kept = os.path.join(tmp, "kept." + ext)
            n9 = tshark_frames(kept)[0]
            check(j9["exit_code"] == 1 and c9["error"] and "space" in c9["error"] and
                  c9["written"] == n9 and c9["failed"] + c9["written"] + c9["ring_full"] ==
                  c9["selected"] and c9["bytes"] == os.path.getsize(kept) and
                  file_type(kept) == ("nsecpcap" if ext == "pcap" else "pcapng"),
                  "%s, full disk: exit %d, '%s', %d written = %d frames tshark reads whole"
                  " (%d bytes), %d failed"
                  % (ext, j9["exit_code"], c9["error"], c9["written"], n9,
                     os.path.getsize(kept), c9["failed"]))
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            check(False, "%s, full disk: %s; %s" % (ext, e, r9.stderr.strip()[-300:]))
        # rotating by 100 kB: the disk fills in the third file; the first
        # two stay whole, the third ends at its last flushed record
        rotcfg = cfg(tmp, "fullrot.yaml", SOURCE + PIPE % ", rotate_bytes: 100000")
        keep = os.path.join(tmp, "kept-" + ext)
        shutil.rmtree(keep, ignore_errors=True)
        sh = ("mount -t tmpfs -o size=256k none %s && %s run --json -q --capture %s/r.%s %s"
              " > %s/out.json; cp -r %s %s" % (full, VFGX, full, ext, rotcfg, tmp, full, keep))
        r12 = subprocess.run(["unshare", "-m", "sh", "-c", sh], capture_output=True, text=True,
                             timeout=120)
        try:
            c12 = json.load(open(os.path.join(tmp, "out.json")))["capture"]
            kept = sorted(os.listdir(keep))
            frames = sum(tshark_frames(os.path.join(keep, f))[0] for f in kept)
            size = sum(os.path.getsize(os.path.join(keep, f)) for f in kept)
            check(c12["error"] and "space" in c12["error"] and c12["files"] == len(kept) >= 3 and
                  c12["written"] == frames > 0 and c12["bytes"] == size,
                  "%s, full disk while rotating: %d files kept, each opens; %d written = %d frames,"
                  " %d bytes = %d on disk" % (ext, len(kept), c12["written"], frames,
                                               c12["bytes"], size))
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            check(False, "%s, full disk while rotating: %s; %s" % (ext, e, r12.stderr.strip()[-300:]))

    # --- existing files: refused unless --force, never followed, never an
    # input, never a device or FIFO, never unlinked ---------------------------
    def one_line(r, *words):
        # the replay's own warning (the two queues' timestamps interleave)
        lines = [l for l in r.stderr.strip().splitlines() if "are older than" not in l]
        return len(lines) == 1 and all(w in lines[0] for w in words), lines

    def digest(path):
        with open(path, "rb") as f:
            return hash(f.read())

    small = cfg(tmp, "small.yaml", "interfaces:\n  - { name: lo0, backend: loopback, "
                "rx: { queues: [ { id: 0 } ] }, loopback: { packets: 2000, packet_size: 200 } }\n")
    old = os.path.join(tmp, "old.pcap")
    shutil.copy(cap, old)
    before = digest(old)
    r = run("run", "-q", "--capture", old, small)
    ok, lines = one_line(r, old, "exists", "--force")
    check(r.returncode == 2 and ok and digest(old) == before,
          "an existing file without --force: exit %d, one line, file unchanged: %s"
          % (r.returncode, lines))
    r = run("run", "-q", "--force", "--capture", old, small)
    check(r.returncode == 0 and tshark_frames(old)[0] == 2000,
          "--force replaces it: exit %d, tshark reads %d frames" % (r.returncode,
                                                                   tshark_frames(old)[0]))
    link = os.path.join(tmp, "link.pcap")
    os.symlink(old, link)
    before = digest(old)
    r = run("run", "-q", "--force", "--capture", link, small)
    ok, lines = one_line(r, link, "symbolic link")
    check(r.returncode == 2 and ok and os.path.islink(link) and digest(old) == before,
          "a symbolic link, even with --force: exit %d, one line, link and target kept: %s"
          % (r.returncode, lines))
    # the run's own pcap input (20,000 records became 0), by name and by a
    # hard link to it
    inp = os.path.join(tmp, "input.pcap")
    shutil.copy(cap, inp)
    hard = os.path.join(tmp, "hard.pcap")
    os.link(inp, hard)
    before = digest(inp)
    icfg = cfg(tmp, "inp.yaml", PCAP_IN % inp)
    for target in (inp, hard):
        r = run("run", "-q", "--force", "--capture", target, icfg)
        ok, lines = one_line(r, target, "reads", inp)
        check(r.returncode == 2 and ok and digest(inp) == before and
              tshark_frames(inp)[0] == rx,
              "capture onto the run's pcap input (%s): exit %d, one line, %d records kept: %s"
              % (os.path.basename(target), r.returncode, tshark_frames(inp)[0], lines))
    # a FIFO without a reader: refused at once, not a blocked open
    fifo = os.path.join(tmp, "fifo.pcap")
    os.mkfifo(fifo)
    for extra in ([], ["--force"]):
        try:
            r = subprocess.run([VFGX, "run", "-q", *extra, "--capture", fifo, small],
                               capture_output=True, text=True, timeout=30)
            ok, lines = one_line(r, fifo, "FIFO")
            check(r.returncode == 2 and ok and os.path.exists(fifo),
                  "a FIFO %s: exit %d, one line, the FIFO kept: %s"
                  % (" ".join(extra), r.returncode, lines))
        except subprocess.TimeoutExpired:
            check(False, "a FIFO %s: the run blocked" % " ".join(extra))
    for ext in ["pcap"] + (["pcapng"] if has_pcapng else []):
        dirp = os.path.join(tmp, "isdir." + ext)
        os.mkdir(dirp)
        r = run("run", "-q", "--force", "--capture", dirp, small)
        ok, lines = one_line(r, dirp, "directory")
        check(r.returncode == 2 and ok and os.path.isdir(dirp),
              "%s onto a directory: exit %d, one line: %s" % (ext, r.returncode, lines))
    # character devices (copies of /dev/null and /dev/full: the header write
    # to /dev/null reads back as 0 bytes, which unlinked the path)
    if os.geteuid() == 0:
        for name, minor in (("null", 3), ("full", 7)):
            for ext in ["pcap"] + (["pcapng"] if has_pcapng else []):
                dev = os.path.join(tmp, "dev-%s.%s" % (name, ext))
                if not os.path.exists(dev):
                    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
                r = run("run", "-q", "--force", "--capture", dev, small)
                ok, lines = one_line(r, dev, "character device")
                check(r.returncode == 2 and ok and os.path.exists(dev) and
                      stat.S_ISCHR(os.lstat(dev).st_mode),
                      "%s onto a character device (/dev/%s's numbers): exit %d, one line, "
                      "the device kept: %s" % (ext, name, r.returncode, lines))
    else:
        print("skip - character devices: mknod needs root")

    # --- a rotation that cannot open its next file: the bytes written stay
    # counted (written 379, bytes 0 before) -----------------------------------
    for ext in ["pcap"] + (["pcapng"] if has_pcapng else []):
        rdir = os.path.join(tmp, "rotfail-" + ext)
        os.mkdir(rdir)
        os.mkdir(os.path.join(rdir, "r.2." + ext))  # the third file's name
        rr, jr = jrun("run", "-q", "--capture", os.path.join(rdir, "r." + ext),
                      cfg(tmp, "rotfail.yaml", SOURCE + PIPE % ", rotate_bytes: 100000"))
        kept = sorted(f for f in os.listdir(rdir) if os.path.isfile(os.path.join(rdir, f)))
        size = sum(os.path.getsize(os.path.join(rdir, f)) for f in kept)
        frames = sum(tshark_frames(os.path.join(rdir, f))[0] for f in kept)
        c = jr and jr["capture"]
        check(jr is not None and rr.returncode == 1 and len(kept) == 2 and
              c["bytes"] == size and c["written"] == frames > 0 and c["files"] == 2 and
              "directory" in rr.stderr,
              "%s, the third file cannot be opened: exit %d, %s bytes = %d on disk, %s written"
              " = %d frames in %s" % (ext, rr.returncode, c and c["bytes"], size,
                                      c and c["written"], frames, kept))

    # --- pcapng and pcap onto a disk full from the start: the header write
    # fails (pcapng crashed in wtap_dump_close with a NULL err_info) -------------
    for ext in ["pcap"] + (["pcapng"] if has_pcapng else []):
        if not (os.geteuid() == 0 and shutil.which("unshare")):
            print("skip - full disk at the header: needs root and unshare")
            break
        full = os.path.join(tmp, "full0")
        os.makedirs(full, exist_ok=True)
        sh = ("mount -t tmpfs -o size=64k none %s && (dd if=/dev/zero of=%s/fill bs=4k"
              " 2>/dev/null; true) && %s run -q --capture %s/c.%s %s; echo rc=$?; ls %s"
              % (full, full, VFGX, full, ext, small, full))
        r = subprocess.run(["unshare", "-m", "sh", "-c", sh], capture_output=True, text=True,
                           timeout=120)
        ok, lines = one_line(r, "c." + ext, "space")
        out = r.stdout.split()
        check("rc=1" in out and ok and ("c." + ext) not in out,
              "%s, disk full at the header: %s, one line, no file left: %s"
              % (ext, [w for w in out if w.startswith("rc=")], lines))

    # --- the pcap port's file: a FIFO without a writer is refused, not a
    # blocked open that SIGINT could not end ---------------------------------
    pfifo = os.path.join(tmp, "in-fifo.pcap")
    os.mkfifo(pfifo)
    try:
        r = subprocess.run([VFGX, "run", "-q", cfg(tmp, "fifoin.yaml", PCAP_IN % pfifo)],
                           capture_output=True, text=True, timeout=30)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and pfifo in lines[0] and
              "not a regular file" in lines[0],
              "pcap.file a FIFO without a writer: exit %d, one line: %s" % (r.returncode, lines))
    except subprocess.TimeoutExpired:
        check(False, "pcap.file a FIFO without a writer: the run blocked")
    r = run("run", "-q", cfg(tmp, "devin.yaml", PCAP_IN % "/dev/zero"))
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and "/dev/zero" in lines[0],
          "pcap.file /dev/zero: exit %d, one line: %s" % (r.returncode, lines))

    # --- timing: recorded with a record far in the future: one line (a
    # float-to-integer conversion out of range before) ------------------------
    far = os.path.join(tmp, "far.pcap")
    with open(cap, "rb") as f:
        f.read(24)
        rh = f.read(16)
        incl = int.from_bytes(rh[8:12], "little")
        data = f.read(incl)
    with open(cap, "rb") as f:
        ghdr = f.read(24)
    with open(far, "wb") as f:
        f.write(ghdr)
        for sec in (1, 0x7FFFFFF0):  # 1970 and 2038
            f.write(sec.to_bytes(4, "little") + (0).to_bytes(4, "little") + rh[8:16] + data)
    check(tshark_frames(far)[0] == 2, "far.pcap: tshark reads its 2 records")
    for timing in ("timing: recorded, speed: 0.001", "timing: recorded, loops: 8",
                   "timing: rate, rate_pps: 0.000000001, loops: 1000"):
        fcfg = cfg(tmp, "far.yaml", (PCAP_IN % far).replace(
            "queues: [{id: 0}]", "queues: [{id: 0}]\n    pcap: {%s}" % timing))
        try:
            r = subprocess.run([VFGX, "run", "-q", "-d", "3", fcfg], capture_output=True,
                               text=True, timeout=60)
            lines = r.stderr.strip().splitlines()
            check(r.returncode == 2 and len(lines) == 1 and far in lines[0] and
                  "100 years" in lines[0],
                  "pcap %s, a record in 2038: exit %d, one line: %s"
                  % (timing, r.returncode, lines))
        except subprocess.TimeoutExpired:
            check(False, "pcap %s: the run did not end" % timing)

    # --- a capture that cannot keep up: what was not captured is said, and
    # the capture expectation fails ------------------------------------------
    # a file a record (rotate_bytes 24): the writer opens a file per record,
    # far slower than the pipeline, so the 64 KiB ring fills
    slow = os.path.join(tmp, "slow")
    os.mkdir(slow)
    scfg = cfg(tmp, "slow.yaml", "interfaces:\n  - { name: lo0, backend: loopback, "
               "rx: { queues: [ { id: 0 } ] }, loopback: { packets: 200000, packet_size: 64 } }\n"
               "pipeline:\n  capture: { ring_bytes: 65536, rotate_bytes: 24, rotate_files: 2 }\n")
    rs = run("run", "-q", "--json", "--capture", os.path.join(slow, "s.pcap"), scfg)
    try:
        js = json.loads(rs.stdout)
        cs = js["capture"]
        miss = cs["ring_full"] + cs["skipped_gpu"] + cs["failed"]
        exp = [e for e in js["expectations"] if e["name"] == "capture"]
        text = [l for l in rs.stderr.splitlines() if l.startswith("capture ")]
        check(cs["ring_full"] > 0 and cs["not_captured"] == miss and
              cs["written"] + miss == cs["selected"] and rs.returncode == 1 and
              js["exit_code"] == 1 and js["result"] == "FAILED" and exp and
              not exp[0]["ok"] and ("%d of %d" % (miss, cs["selected"])) in exp[0]["detail"] and
              len(text) == 1 and ("%d not captured" % miss) in text[0] and
              "result: FAILED" in rs.stderr,
              "ring full: %d of %d not captured, said in text (%s) and JSON (%s), exit %d"
              % (miss, cs["selected"], text, exp and exp[0]["detail"], rs.returncode))
    except (ValueError, KeyError) as e:
        check(False, "ring full: %s; %s" % (e, rs.stderr.strip()[-300:]))

    # --- --expect-sent: a report that cannot be used fails the run the same
    # way in text, JSON and exit status; a device or FIFO is refused before
    # the run ------------------------------------------------------------------
    def sent(src):
        return json.dumps({"schema": "vfgx.send/1", "source": src})

    good = {"generated": 2000, "lost": 0, "duplicated": 0, "corrupted": 0, "reordered": 0}
    reports = [
        ("missing", None, "No such file"),
        ("empty", "", "empty"),
        ("not JSON", "not json at all", "not JSON"),
        ("cut short", sent(good)[:-5], "not JSON"),
        ("null schema", '{"schema": null}', "vfgx.send/1"),
        ("schema a number", '{"schema": 7, "source": {}}', "vfgx.send/1"),
        ("a JSON array", '[1, 2]', "vfgx.send/1"),
        ("null source", '{"schema": "vfgx.send/1", "source": null}', "source is null"),
        ("lost > generated", sent(dict(good, lost=2001)), "more than source.generated"),
        ("negative", sent(dict(good, generated=-3)), "out of range"),
        ("2^70", sent(good).replace("2000", str(2 ** 70)), "out of range"),
        ("2^64", sent(good).replace("2000", str(2 ** 64)), "out of range"),
        ("a fraction", sent(dict(good, lost=0.5)), "not a whole number"),
        ("a string", sent(dict(good, lost="0")), "not a whole number"),
        ("missing counter", sent({"generated": 2000}), "source.lost is missing"),
        ("duplicated > sent", sent(dict(good, duplicated=1500, corrupted=600)), "more than"),
        ("trailing text", sent(good) + " x", "at byte"),
        ("valid", sent(good), None),
    ]
    for name, text, why in reports:
        f = os.path.join(tmp, "sent-%s.json" % name.replace(" ", "_").replace("^", ""))
        if text is not None:
            with open(f, "w") as fh:
                fh.write(text)
        r, j = jrun("run", "-q", "--expect-sent", f, small)
        lines = [l for l in r.stderr.splitlines() if "expect_sent" in l]
        res = [l for l in r.stderr.splitlines() if l.startswith("result:")]
        ex = j and [e for e in j["expectations"] if e["name"] == "expect_sent"]
        if why:
            check(r.returncode == 1 and j and j["result"] == "FAILED" and j["exit_code"] == 1 and
                  res == ["result: FAILED"] and len(lines) == 1 and "FAILED" in lines[0] and
                  why in lines[0] and f in lines[0] and ex and not ex[0]["ok"],
                  "--expect-sent %s: exit %d, text %s, JSON %s: %s"
                  % (name, r.returncode, res, j and j["result"], lines))
        else:
            check(r.returncode == 0 and j and j["result"] == "PASSED" and res == ["result: PASSED"]
                  and ex and ex[0]["ok"] and j["source"]["generated"] == 2000,
                  "--expect-sent %s: exit %d, text %s, JSON %s: %s"
                  % (name, r.returncode, res, j and j["result"], lines))
    # a file larger than a report, a device, a FIFO: one line before the run
    big = os.path.join(tmp, "sent-big.json")
    with open(big, "w") as fh:
        fh.write(" " * (1 << 20) + sent(good))
    sfifo = os.path.join(tmp, "sent-fifo.json")
    os.mkfifo(sfifo)
    for what, f in (("/dev/zero", "/dev/zero"), ("a FIFO", sfifo), ("a directory", tmp),
                    ("more than 1 MiB", big)):
        try:
            r = subprocess.run([VFGX, "run", "-q", "--json", "--expect-sent", f, small],
                               capture_output=True, text=True, timeout=30)
            lines = r.stderr.strip().splitlines()
            check(r.returncode == 2 and len(lines) == 1 and f in lines[0] and
                  "--expect-sent" in lines[0] and r.stdout == "",
                  "--expect-sent %s: exit %d before the run, one line: %s"
                  % (what, r.returncode, lines))
        except subprocess.TimeoutExpired:
            check(False, "--expect-sent %s: the run did not end" % what)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
