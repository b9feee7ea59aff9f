#!/usr/bin/env python3
"""test_send.py VFGX - `vfgx send` on one host, into a UDP socket this test
reads: every generated datagram arrives with the generator's sequence
header, replayed laps included; a pcap file sent twice (loops: 2) arrives as twice its records,
the second lap's sequences rewritten; send.memory_region in GPU memory
falls back to host memory with one line; send.spin_us and
send.sched_priority as the report gives them; bad configs and options give
one line and exit 2; the pacer's wait ends at --duration and at SIGINT,
and a burst whose turn has not come by then is never taken or sent."""
import json
import os
import re
import shutil
import signal
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
        try:
            # root: past net.core.rmem_max, so a burst of 1024 sent at once
            # is all queued while this thread may be off the CPU
            self.s.setsockopt(socket.SOL_SOCKET, 33, 1 << 23)  # SO_RCVBUFFORCE
        except PermissionError:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
        self.s.bind(("127.0.0.1", 0))
        self.s.settimeout(1.0)
        self.port = self.s.getsockname()[1]
        self.got = []
        self.raw = []
        self.stop = False
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.stop:
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                continue
            self.raw.append(d)
            if len(d) >= 16:
                self.got.append(struct.unpack("!IIQ", d[:16]))

    def close(self):
        """Stop reading; what the sender left queued (a sender that has
        exited: on loopback a datagram is queued before sendto returns) is
        read too."""
        self.stop = True
        self.t.join()
        self.s.setblocking(False)
        while True:
            try:
                d = self.s.recv(65536)
            except BlockingIOError:
                break
            self.raw.append(d)
            if len(d) >= 16:
                self.got.append(struct.unpack("!IIQ", d[:16]))
        self.s.close()


def write_cfg(tmp, text):
    path = os.path.join(tmp, "s%d.yaml" % len(os.listdir(tmp)))
    with open(path, "w") as f:
        f.write(text)
    return path


def send(tmp, text, *args):
    return subprocess.run([VFGX, "send", "--json", *args, write_cfg(tmp, text)],
                          capture_output=True, text=True, timeout=120)


def send_bounded(tmp, text, *args, limit=60):
    """vfgx send that must end by itself: the run, or None when it was
    still running after limit seconds (killed then).  limit is no timing
    claim, only far past any run that ends."""
    try:
        return subprocess.run([VFGX, "send", "--json", *args, write_cfg(tmp, text)],
                              capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None


def report(r):
    return json.loads(r.stdout) if r and r.stdout.strip() else None


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
    # docs/json.md's vfgx.send/1 names every top-level key the report has
    text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                             "docs", "json.md")).read()
    block = re.search(r"## `vfgx\.send/1`.*?```\n(.*?)```", text, re.S)
    documented = set()
    for line in (block.group(1).splitlines() if block else []):
        m = re.match(r"([a-z_]+(?:, [a-z_]+)*)(?:\s|$)", line)
        if m:
            documented.update(m.group(1).split(", "))
    check(doc and documented == set(doc),
          "docs/json.md's vfgx.send/1 keys are the report's: missing from the docs %s, "
          "not in the report %s" % (sorted(set(doc or {}) - documented),
                                    sorted(documented - set(doc or {}))))

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

    # --- an RTP capture (text2pcap's frames), two laps: pcap.sequences'
    # default (auto) keeps a file that is not vfgx's own frames as
    # recorded (a rewrite would add to bytes 8..15, the SSRC and the
    # payload's first bytes) -------------------------------------------------
    rtp = [bytes([0x80, 96]) + struct.pack("!HII", 100 + i, 9000 * i, 0x1234abcd) +
           bytes((i * 7 + k) & 0xff for k in range(40)) for i in range(50)]
    hexf, rcap = os.path.join(tmp, "rtp.txt"), os.path.join(tmp, "rtp.pcap")
    with open(hexf, "w") as f:
        for d in rtp:
            f.write("".join("%06x %s\n" % (o, " ".join("%02x" % b for b in d[o:o + 16]))
                            for o in range(0, len(d), 16)) + "\n")
    r = subprocess.run(["text2pcap", "-q", "-e", "0x800", "-4", "10.0.0.1,10.0.0.2", "-u",
                        "5004,5004", hexf, rcap], capture_output=True, text=True)
    check(r.returncode == 0, "text2pcap writes 50 RTP frames (exit %d)" % r.returncode)
    sink, r, doc = send_to_sink(tmp, "send:\n  source: pcap\n  rate_pps: 20000\n"
                                "  pcap: { file: %s, loops: 2 }\n" % rcap)
    check(doc and doc["packets"] == 100 and sorted(sink.raw) == sorted(rtp * 2),
          "RTP, 2 laps: %s sent of 100, the sink got each payload twice, byte for byte "
          "(%d datagrams, %d not the file's)"
          % (doc and doc["packets"], len(sink.raw), sum(d not in rtp for d in sink.raw)))
    sink, r, doc = send_to_sink(tmp, "send:\n  source: pcap\n  rate_pps: 20000\n"
                                "  pcap: { file: %s, loops: 2, sequences: rewrite }\n" % rcap)
    check(doc and sum(d not in rtp for d in sink.raw) == 50,
          "RTP, 2 laps, sequences: rewrite asked: lap 2's 50 have bytes 8..15 advanced "
          "(%d not the file's)" % sum(d not in rtp for d in sink.raw))

    # --- the pacer's wait ends at --duration (issue 44): rate_bps 1 puts the
    # second burst hours away; the run ends at 1 s with only the first --------
    sink = Sink()
    r = send_bounded(tmp, IFACE % sink.port + "send: { rate_bps: 1, burst: 8,\n"
                     "  generator: { packets: 100, packet_size: 200 } }\n", "--duration", "1")
    sink.close()
    doc = report(r)
    check(r is not None, "rate_bps 1, --duration 1: the run ended by itself")
    check(doc and r.returncode == 0 and doc["packets"] == 8 and
          doc["source"]["generated"] == 8 and len(sink.got) == 8 and not doc["interrupted"],
          "rate_bps 1, --duration 1: the first burst of 8 sent and received, no more: "
          "exit %s, sent %s, generated %s, received %d"
          % (r and r.returncode, doc and doc["packets"], doc and doc["source"]["generated"],
             len(sink.got)))

    # --- rate_pps 1, burst 1024: one burst at t=0, the next due 1024 s later:
    # neither the end (--duration) nor SIGINT in the wait sends it ------------
    one_burst = "send: { rate_pps: 1, burst: 1024,\n  generator: { packets: 5000, packet_size: 200 } }\n"
    sink = Sink()
    r = send_bounded(tmp, IFACE % sink.port + one_burst, "--duration", "2")
    sink.close()
    doc = report(r)
    check(r is not None and doc and r.returncode == 0 and doc["packets"] == 1024 and
          doc["source"]["generated"] == 1024 and len(sink.got) == 1024,
          "rate_pps 1, burst 1024, --duration 2: one burst sent and received: exit %s, "
          "sent %s, generated %s, received %d"
          % (r and r.returncode, doc and doc["packets"], doc and doc["source"]["generated"],
             len(sink.got)))
    sink = Sink()
    p = subprocess.Popen([VFGX, "send", "--json", write_cfg(tmp, IFACE % sink.port + one_burst)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the first burst has arrived: the sender is in its wait for the second
    for _ in range(600):
        if len(sink.got) >= 1024 or p.poll() is not None:
            break
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    sink.close()
    doc = json.loads(out) if out.strip() else None
    check(doc and doc["interrupted"] and doc["packets"] == 1024 and
          doc["source"]["generated"] == 1024 and len(sink.got) == 1024,
          "rate_pps 1, burst 1024, SIGINT in the wait: the second burst not sent: sent %s, "
          "generated %s, received %d%s" % (doc and doc["packets"],
                                           doc and doc["source"]["generated"], len(sink.got),
                                           "" if doc else "; " + err.strip()))

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
    # the JSON's counts are the text report's (a check that could not
    # fail compared them with 0); a thread that sleeps between bursts
    # switches at least once
    line = re.search(r"sending thread: (\d+) involuntary, (\d+) voluntary context switches", r.stderr)
    check(csw and line and [csw["involuntary"], csw["voluntary"]] == [int(line.group(1)), int(line.group(2))]
          and csw["involuntary"] + csw["voluntary"] > 0,
          "the sending thread's context switches, the same in JSON and text: %s, %s" % (csw, line and line.group(0)))
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
