#!/usr/bin/env python3
"""test_send.py VFGX - `vfgx send` on one host, into a UDP socket this test
reads: every generated datagram arrives with the generator's sequence
header, replayed laps included; a pcap file sent twice (loops: 2) arrives as twice its records,
the second lap's sequences rewritten; send.memory_region in GPU memory
falls back to host memory with one line; send.spin_us and
send.sched_priority as the report gives them; bad configs and options give
one line and exit 2."""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

VFGX = sys.argv[1]
failures = []


def check(cond, msg):
    print(("ok   - " if cond else "FAIL - ") + msg)
    if not cond:
        failures.append(msg)


class Sink:
    """A UDP socket on 127.0.0.1 that keeps every datagram's header."""

    def __init__(self):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
        self.s.bind(("127.0.0.1", 0))
        self.s.settimeout(1.0)
        self.port = self.s.getsockname()[1]
        self.got = []
        self.stop = False
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.stop:
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                continue
            if len(d) >= 16:
                self.got.append(struct.unpack("!IIQ", d[:16]))

    def close(self):
        self.stop = True
        self.t.join()
        self.s.close()


def send(tmp, text, *args):
    path = os.path.join(tmp, "s%d.yaml" % len(os.listdir(tmp)))
    with open(path, "w") as f:
        f.write(text)
    return subprocess.run([VFGX, "send", "--json", *args, path], capture_output=True,
                          text=True, timeout=120)


IFACE = """interfaces:
  - { name: out, backend: socket, address: "udp://127.0.0.1:%d",
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      socket: { role: client } }
"""

def send_to_sink(tmp, send_yaml):
    """vfgx send from IFACE into a fresh sink: the sink (closed, what it got
    kept), the run, and its JSON report (None when it failed)."""
    sink = Sink()
    r = send(tmp, IFACE % sink.port + send_yaml)
    time.sleep(0.5)
    sink.close()
    return sink, r, json.loads(r.stdout) if r.returncode == 0 else None


with tempfile.TemporaryDirectory() as tmp:
    # --- the generator, paced, into the sink --------------------------------
    sink, r, doc = send_to_sink(tmp, "send: { rate_pps: 20000, generator: "
                                "{ packets: 4000, packet_size: 200, flows: 2 } }\n")
    check(doc and doc["packets"] == 4000 and doc["source"]["generated"] == 4000,
          "generator: 4000 sent (exit %d)" % r.returncode)
    seqs = sorted((st, sq) for st, _, sq in sink.got)
    check(seqs == sorted((f, q) for f in range(2) for q in range(2000)),
          "the sink got every (stream, sequence) once: %d datagrams" % len(sink.got))
    check(doc and doc["pacing"]["gaps"] > 0, "the report has the pacing measure")

    # --- the generator replaying a lap of 512 frames 4 times: the sequences
    # advanced on the sending thread, every one once -------------------------
    sink, r, doc = send_to_sink(tmp, "send: { rate_pps: 20000, generator: { packets: 2048, "
                                "packet_size: 200, flows: 2, replay: true, replay_frames: 600 } }\n")
    check(doc and doc["packets"] == 2048,
          "replay, 4 laps: %s sent of 2048 (exit %d)" % (doc and doc["packets"], r.returncode))
    seqs = sorted((st, sq) for st, _, sq in sink.got)
    check(seqs == sorted((f, q) for f in range(2) for q in range(1024)),
          "replay: the sink got every (stream, sequence) of 4 laps once: %d datagrams"
          % len(sink.got))

    # --- a pcap file, two laps, sequences rewritten ---------------------------
    cap = os.path.join(tmp, "in.pcap")
    gen = os.path.join(tmp, "gen.yaml")
    with open(gen, "w") as f:
        f.write("interfaces:\n  - { backend: loopback, rx: { queues: [ { id: 0 } ] },\n"
                "      loopback: { packets: 1000, packet_size: 128, flows: 1 } }\n")
    r = subprocess.run([VFGX, "run", "-q", "--capture", cap, gen], capture_output=True, text=True)
    check(r.returncode == 0, "a capture to send from (exit %d)" % r.returncode)
    sink, r, doc = send_to_sink(tmp, "send:\n  source: pcap\n  rate_pps: 20000\n"
                                "  pcap: { file: %s, loops: 2 }\n" % cap)
    got = sorted(sq for _, _, sq in sink.got)
    check(doc and doc["packets"] == 2000 and doc["source"] is None,
          "pcap, 2 laps: %s sent of 2000 (exit %d)" % (doc and doc["packets"], r.returncode))
    check(got == list(range(2000)), "lap 2's sequences follow lap 1's: %d datagrams, %s..%s"
          % (len(got), got[:1], got[-1:]))

    # --- GPU memory: one line, host memory instead -----------------------------
    sink = Sink()
    r = send(tmp, "memory_regions:\n  - { name: g, kind: gpu, buf_size: 2048, num_bufs: 1024 }\n"
             + IFACE % sink.port + "send: { memory_region: g, generator: { packets: 100, replay: true } }\n")
    sink.close()
    warn = [l for l in r.stderr.splitlines() if "GPU memory" in l]
    check(r.returncode == 0 and len(warn) == 1 and "host memory instead" in warn[0],
          "send.memory_region gpu: one line, sent from host memory (exit %d): %s"
          % (r.returncode, warn))

    # --- pacing keys: spin_us and sched_priority in the report ------------------
    # (what they do to the timing is measured by `vfgx bench send`, not here)
    sink, r, doc = send_to_sink(tmp, "send: { rate_pps: 20000, spin_us: 50, sched_priority: 1,\n"
                                "  generator: { packets: 400, packet_size: 200, flows: 2 } }\n")
    sch = doc and doc["sched"]
    check(doc and doc["packets"] == 400 and doc["pacing"]["spin_us"] == 50,
          "spin_us: 50 in the report's pacing (exit %d)" % r.returncode)
    check(sch and sch["priority"] == 1 and
          (sch["fifo"] and sch["refused"] is None and "SCHED_FIFO, priority 1" in r.stderr or
           not sch["fifo"] and "CAP_SYS_NICE" in sch["refused"] and
           "send.sched_priority" in r.stderr),
          "sched_priority: 1: SCHED_FIFO, or refused with the reason: %s" % sch)
    csw = doc and doc["context_switches"]
    check(csw and csw["involuntary"] >= 0 and csw["voluntary"] >= 0 and
          "sending thread:" in r.stderr, "the sending thread's context switches: %s" % csw)
    if os.geteuid() == 0 and shutil.which("setpriv") and shutil.which("prlimit"):
        # without CAP_SYS_NICE and with RLIMIT_RTPRIO 0: refused, one line, sent anyway
        sink = Sink()
        path = os.path.join(tmp, "nofifo.yaml")
        with open(path, "w") as f:
            f.write(IFACE % sink.port + "send: { rate_pps: 20000, sched_priority: 5,\n"
                    "  generator: { packets: 100 } }\n")
        r = subprocess.run(["setpriv", "--bounding-set=-sys_nice", "prlimit", "--rtprio=0",
                            VFGX, "send", "--json", path], capture_output=True, text=True,
                           timeout=60)
        sink.close()
        doc = json.loads(r.stdout) if r.returncode == 0 else None
        lines = [l for l in r.stderr.splitlines() if "send.sched_priority" in l and
                 l.startswith("vfgx:")]
        check(doc and doc["packets"] == 100 and doc["sched"]["fifo"] is False and
              "Operation not permitted" in doc["sched"]["refused"] and len(lines) == 1,
              "sched_priority refused: one line, normal scheduling, all sent (exit %d): %s"
              % (r.returncode, lines))
    else:
        print("SKIP: sched_priority: refused; needs root, setpriv and prlimit")
    sink, r, doc = send_to_sink(tmp, "send: { rate_pps: 20000, generator: { packets: 100 } }\n")
    check(doc and doc["sched"] is None and doc["pacing"]["spin_us"] == 1000 and
          doc["tx_in_place"] is False,
          "defaults: spin_us 1000, no sched, not in place on a socket (exit %d)" % r.returncode)

    # --- bad input: one line, exit 2 -------------------------------------------
    for text, args, what in [
            (IFACE % 9 + "send: { rate: 5 }\n", [], "unknown key"),
            (IFACE % 9 + "send: { interface: nope }\n", [], "no interface named"),
            (IFACE % 9 + "send: { memory_region: nope }\n", [], "not one of memory_regions"),
            (IFACE % 9 + "send: { source: pcap, pcap: { file: /nonexistent.pcap } }\n", [],
             "/nonexistent.pcap"),
            (IFACE % 9, ["--rate", "-1"], "--rate"),
            (IFACE % 9 + "send: { sched_priority: 100 }\n", [], "sched_priority"),
            (IFACE % 9 + "send: { spin_us: -5 }\n", [], "spin_us"),
            ("interfaces: []\n", [], "no interfaces")]:
        r = send(tmp, text, *args)
        lines = [l for l in r.stderr.strip().splitlines() if not l.startswith("vfgx: info:")]
        check(r.returncode in (1, 2) and len(lines) == 1 and what in lines[0],
              "%s: exit %d, one line: %s" % (what, r.returncode, lines))

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
