#!/usr/bin/env python3
"""test_metrics_cli.py VFGX - the endpoint as `vfgx run` sets it up: from the
config's metrics.listen (port 0: the bound port is printed), the final
snapshot served during --metrics-hold, and one-line errors with exit 2 for
a malformed address or metrics key, exit 1 for a port already taken;
peers that send their request a byte at a time (from the scraper's own
address and from another one) do not keep a scrape out."""
import http.client
import select
import threading
import json
import os
import shutil
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

VFGX = sys.argv[1]
failures = []


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg)
        failures.append(msg)


BASE = """interfaces:
  - backend: loopback
    loopback: { packets: 20000, packet_size: 128, flows: 2 }
expect: { all_received: true }
"""
tmp = tempfile.mkdtemp(prefix="vfgx-mcli-")


def config(extra):
    path = os.path.join(tmp, "c%d.yaml" % len(os.listdir(tmp)))
    with open(path, "w") as f:
        f.write(BASE + extra)
    return path


def metrics_port(p):
    """The port of the "metrics at http://127.0.0.1:PORT/metrics" line that
    p writes on stderr (read up to that line), or None if p writes none."""
    for line in p.stderr:
        m = re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", line)
        if m:
            return int(m.group(1))
    return None


# 1. metrics.listen from the config, port 0
p = subprocess.Popen([VFGX, "run", config("metrics: { listen: \"127.0.0.1:0\" }\n"), "--quiet",
                      "--metrics-hold", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
port = metrics_port(p)
check(port and port > 0, "no 'metrics at' line with the bound port")
out = ""
for line in p.stdout:
    out += line
    if line.startswith("result:"):
        break
page = ""
if port:
    deadline = time.time() + 10
    while "vfgx_run_finished 1" not in page and time.time() < deadline:
        page = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
        time.sleep(0.1)
check("vfgx_run_finished 1" in page, "the held endpoint does not serve the final snapshot")
# every counter of the report's pipeline line, not only delivered
line = re.search(r"pipeline: (\d+) packets in .*, passed (\d+), delivered (\d+) \((\d+) payload bytes\), "
                 r"gaps (\d+), verify errors (\d+)", out)
check(line, "no pipeline line in the report")
if line:
    for name, value in zip(("packets", "passed", "delivered", "delivered_bytes", "gaps", "verify_errors"),
                           line.groups()):
        check(("vfgx_pipeline_%s_total{device=\"cpu\"} %s\n" % (name, value)) in page,
              "final page's vfgx_pipeline_%s_total differs from the report's %s" % (name, value))
p.terminate()
check(p.wait(timeout=10) == 0, "vfgx run after SIGTERM in the hold: exit %s" % p.returncode)


def one_line(args, want_rc, pattern, what):
    r = subprocess.run([VFGX, "run", "--quiet", *args], capture_output=True, text=True, timeout=60)
    lines = [l for l in r.stderr.splitlines() if not l.startswith("vfgx: info:")]
    check(r.returncode == want_rc, "%s: exit %d, wanted %d" % (what, r.returncode, want_rc))
    check(len(lines) == 1 and re.search(pattern, lines[0]), "%s: stderr %r" % (what, r.stderr))


one_line(["--metrics", "localhost"], 2, r"expected ADDR:PORT", "--metrics localhost")
one_line(["--metrics", "127.0.0.1:99999"], 2, r"expected ADDR:PORT", "--metrics port 99999")
one_line([config("metrics: { listen: \"nonsense\" }\n")], 2, r"nonsense.*ADDR:PORT", "metrics.listen nonsense")
# the port follows the project's number rules: a sign, a blank, a leading
# zero or a newline before the digits is refused, in the config and on the
# command line, with one line naming the value (never port 80)
for bad, shown in (("+80", "+80"), (" 80", " 80"), ("0080", "0080"), ("\n80", "\\n80")):
    one_line(["--metrics", "127.0.0.1:" + bad], 2, r"'127\.0\.0\.1:%s': port '%s' " % (re.escape(shown), re.escape(shown)),
             "--metrics 127.0.0.1:%r" % bad)
    one_line([config("metrics: { listen: %s }\n" % json.dumps("127.0.0.1:" + bad))], 2,
             r"'127\.0\.0\.1:%s': port '%s' " % (re.escape(shown), re.escape(shown)),
             "metrics.listen 127.0.0.1:%r" % bad)
one_line([config("metrics: { port: 9464 }\n")], 2, r":\d+:\d+: metrics.*port", "metrics.port (unknown key)")
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen(1)
one_line(["--metrics", "127.0.0.1:%d" % busy.getsockname()[1]], 1, r"cannot serve", "port in use")
busy.close()

# 3. vfgx send --metrics: the tx queue's counters while it sends, then the
# final ones equal to its report (a UDP sink takes the datagrams)
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.bind(("127.0.0.1", 0))
sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
scfg = os.path.join(tmp, "send.yaml")
with open(scfg, "w") as f:
    f.write("""interfaces:
  - { name: out, backend: socket, address: "udp://127.0.0.1:%d",
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] }, socket: { role: client } }
send: { rate_pps: 4000, burst: 8, generator: { packets: 12000, packet_size: 128, flows: 2 } }
""" % sink.getsockname()[1])
p = subprocess.Popen([VFGX, "send", "--json", "--metrics", "127.0.0.1:0", scfg],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
sport = metrics_port(p)
check(sport, "vfgx send: no 'metrics at' line")
live = ""
if sport:
    deadline = time.time() + 10
    while time.time() < deadline:
        live = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % sport, timeout=5).read().decode()
        if re.search(r'vfgx_port_tx_packets_total\{[^}]*port="out"[^}]*\} [1-9]', live):
            break
        time.sleep(0.2)
sent_doc = json.loads(p.communicate(timeout=60)[0])
sink.close()
m = re.search(r'vfgx_port_tx_packets_total\{[^}]*port="out"[^}]*\} (\d+)', live)
check(m and 0 < int(m.group(1)) <= sent_doc["packets"] and 'program="send"' in live,
      "vfgx send: a scrape during the send shows tx packets (%s) of %d sent"
      % (m and m.group(1), sent_doc["packets"]))
if shutil.which("promtool"):
    r = subprocess.run(["promtool", "check", "metrics"], input=live, capture_output=True, text=True)
    check(r.returncode == 0, "vfgx send page: promtool check metrics: %s" % r.stdout + r.stderr)

# 4. slowloris: connections that send one header byte a second (each byte
# restarts libmicrohttpd's idle timeout) never finish a request.
HEADER = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096


class Trickler(threading.Thread):
    """n connections from source address src, one byte each a second; a
    connection the server closes is counted (and reopened if reopen)."""

    def __init__(self, port, src, n, reopen):
        super().__init__(daemon=True)
        self.port, self.src, self.reopen = port, src, reopen
        self.stop = threading.Event()
        self.closed = 0
        self.socks = [self.open() for _ in range(n)]
        self.sent = {s: 0 for s in self.socks}

    def open(self):
        s = socket.socket()
        s.bind((self.src, 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        return s

    def gone(self, s):
        """the server closed s (end of stream or reset)"""
        if not select.select([s], [], [], 0)[0]:
            return False
        try:
            return s.recv(1) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    def run(self):
        while not self.stop.wait(1.0):
            for i, s in enumerate(self.socks):
                if s is None:
                    continue
                if self.gone(s):
                    self.closed += 1
                    s.close()
                    self.socks[i] = self.open() if self.reopen else None
                    if self.socks[i]:
                        self.sent[self.socks[i]] = 0
                    continue
                try:
                    k = self.sent[s]
                    s.send(HEADER[k % len(HEADER):k % len(HEADER) + 1])
                    self.sent[s] = k + 1
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    pass  # reset: gone() sees it next round

    def close(self):
        self.stop.set()
        self.join(timeout=10)
        for s in self.socks:
            if s:
                s.close()


def scrape(port, src):
    """a whole page from source address src, or the reason it failed"""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5, source_address=(src, 0))
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return body if r.status == 200 and "vfgx_info" in body else "status %d" % r.status
    except (OSError, http.client.HTTPException) as e:
        return "error: %s" % e


p = subprocess.Popen([VFGX, "run", config(""), "--quiet", "--metrics", "127.0.0.1:0",
                      "--metrics-hold", "100"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
mport = metrics_port(p)
check(mport, "slowloris: no 'metrics at' line")
if mport:
    # a: many slow connections from another address (127.0.0.2), reopened as
    # soon as they are closed: every scrape from 127.0.0.1 gets through
    t = Trickler(mport, "127.0.0.2", 40, True)
    t.start()
    time.sleep(3)
    got = [scrape(mport, "127.0.0.1") for _ in range(5)]
    t.close()
    bad = [g for g in got if "vfgx_info" not in g]
    check(not bad, "slowloris from 127.0.0.2: %d of 5 scrapes failed (%s)" % (len(bad), bad[:1]))
    # b: the scraper's own address: 16 slow connections, as many as the old
    # connection limit; they are cut within a bound and a scrape gets in
    t = Trickler(mport, "127.0.0.1", 16, False)
    t.start()
    page = ""
    deadline = time.time() + 60
    while time.time() < deadline:
        page = scrape(mport, "127.0.0.1")
        if "vfgx_info" in page and t.closed == 16:
            break
        time.sleep(1)
    t.close()
    check("vfgx_info" in page, "slowloris from 127.0.0.1: no scrape got through in 60 s (%s)" % page[:80])
    check(t.closed == 16, "slowloris from 127.0.0.1: %d of 16 slow connections closed in 60 s" % t.closed)
    m = re.search(r"^vfgx_metrics_deadline_closed_total (\d+)$", page, re.M)
    check(m and int(m.group(1)) >= 8, "slowloris: deadline closes not counted (%s)" % (m and m.group(1)))
    if shutil.which("promtool") and "vfgx_info" in page:
        r = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
        check(r.returncode == 0, "page with the deadline counter: promtool: %s" % r.stdout + r.stderr)
p.terminate()
p.wait(timeout=10)

if failures:
    sys.exit(1)
print("test_metrics_cli: ok")
