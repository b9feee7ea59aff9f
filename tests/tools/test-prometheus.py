#!/usr/bin/env python3
"""test-prometheus.py VFGX - Debian's real Prometheus scrapes a running
`vfgx run --metrics` every second; the counters it stored must equal the
run's final report (--json) exactly, and `promtool check metrics` must
accept the raw page.

The run is a rate-limited loopback source (about 4 s); --metrics-hold keeps
the endpoint serving the final snapshot, which carries vfgx_run_finished 1,
so the values Prometheus holds once it has seen finished=1 are the final
counters, not a lagging copy.  During the hold, 40 connections from
127.0.0.2 that send a request header a byte a second (reopened as soon as
the endpoint cuts them) must not make one of Prometheus' scrapes fail.
Exit 77 (skip) without prometheus/promtool."""
import json
import select
import threading
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

VFGX = sys.argv[1]
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
if not PROMETHEUS or not PROMTOOL:
    print("SKIP: prometheus/promtool not installed (apt-get install prometheus)")
    sys.exit(77)

CONFIG = """
memory_regions:
  - { name: rx, kind: host, buf_size: 2048, num_bufs: 4096 }
interfaces:
  - name: lo0
    backend: loopback
    rx:
      queues:
        - { id: 0, memory_region: rx }
        - { id: 1, memory_region: rx }
    loopback: { packets: 50000, packet_size: 256, flows: 4, rate_pps: 10000,
                duplicate: 0.01, loss: 0.01, seed: 7 }
pipeline:
  workers: 2
  reorder: { enabled: true, window: 1024 }
expect:
  all_received: true
"""

failures = []


def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)


class Trickler(threading.Thread):
    """n connections from src to port, each sending one byte of a request
    header a second (never finishing it); reopened when the server cuts them"""

    def __init__(self, port, src, n):
        super().__init__(daemon=True)
        self.port, self.src = port, src
        self.stop = threading.Event()
        self.cut = 0
        self.socks = [self.open() for _ in range(n)]

    def open(self):
        s = socket.socket()
        s.bind((self.src, 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        return s

    def run(self):
        while not self.stop.wait(1.0):
            for i, s in enumerate(self.socks):
                gone = False
                if select.select([s], [], [], 0)[0]:
                    try:
                        gone = s.recv(1) == b""
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        gone = True
                if gone:
                    self.cut += 1
                    s.close()
                    self.socks[i] = self.open()
                    continue
                try:
                    s.send(b"G")
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.join(timeout=10)
        for s in self.socks:
            s.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def query(prom, expr):
    url = "http://%s/api/v1/query?%s" % (prom, urllib.parse.urlencode({"query": expr}))
    data = json.loads(http_get(url))
    if data.get("status") != "success":
        raise RuntimeError("query %s: %s" % (expr, data))
    return data["data"]["result"]


def scalar(prom, expr):
    res = query(prom, expr)
    if len(res) != 1:
        raise RuntimeError("query %s: %d series, wanted 1: %s" % (expr, len(res), res))
    return float(res[0]["value"][1])


tmp = tempfile.mkdtemp(prefix="vfgx-prom-")
vfgx_port, prom_port = free_port(), free_port()
prom = "127.0.0.1:%d" % prom_port
with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
    f.write("""global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: vfgx
    static_configs:
      - targets: ['127.0.0.1:%d']
""" % vfgx_port)
with open(os.path.join(tmp, "run.yaml"), "w") as f:
    f.write(CONFIG)

prom_log = open(os.path.join(tmp, "prometheus.log"), "w")
prom_proc = subprocess.Popen(
    [PROMETHEUS, "--config.file=" + os.path.join(tmp, "prometheus.yml"),
     "--storage.tsdb.path=" + os.path.join(tmp, "data"),
     "--web.listen-address=" + prom],
    stdout=prom_log, stderr=subprocess.STDOUT)
run = None
try:
    deadline = time.time() + 60
    while True:
        try:
            if "Ready" in http_get("http://%s/-/ready" % prom):
                break
        except OSError:
            pass
        if time.time() > deadline or prom_proc.poll() is not None:
            print(open(os.path.join(tmp, "prometheus.log")).read()[-3000:])
            raise SystemExit("FAIL: prometheus did not become ready")
        time.sleep(0.2)

    # Prometheus starts scraping a few seconds after it is ready (target
    # updates are batched): wait for its first, failed, scrape of the target
    deadline = time.time() + 60
    while True:
        try:
            if query(prom, 'up{job="vfgx"}'):
                break
        except (RuntimeError, OSError):
            pass
        if time.time() > deadline:
            raise SystemExit("FAIL: prometheus never scraped the target")
        time.sleep(0.2)

    run = subprocess.Popen(
        [VFGX, "run", os.path.join(tmp, "run.yaml"), "--json", "--quiet",
         "--metrics", "127.0.0.1:%d" % vfgx_port, "--metrics-hold", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    # the raw page while the run is going, checked by promtool
    # (the page holds only vfgx_info until the run published its counters)
    page = None
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            page = http_get("http://127.0.0.1:%d/metrics" % vfgx_port)
            if "\nvfgx_snapshot_published 1\n" in page:
                break
        except OSError:
            pass
        time.sleep(0.05)
    if page is None or "\nvfgx_snapshot_published 1\n" not in page:
        raise SystemExit("FAIL: the endpoint never served published counters: %r" % page)
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=page, text=True,
                          capture_output=True)
    if lint.returncode != 0 or lint.stdout.strip() or lint.stderr.strip():
        fail("promtool check metrics: rc=%d %s %s" % (lint.returncode, lint.stdout, lint.stderr))
    for name in ("vfgx_pipeline_latency_seconds_bucket", "vfgx_port_drops_total",
                 "vfgx_pipeline_delivered_total"):
        if name not in page:
            fail("raw page lacks " + name)

    # the report: JSON printed once the run ended (the endpoint stays up)
    lines = []
    for line in run.stdout:
        lines.append(line)
        if line.rstrip() == "}":
            break
    report = json.loads("".join(lines))
    if report["schema"] != "vfgx.run/1" or report["result"] != "PASSED":
        fail("report: schema %s result %s" % (report["schema"], report["result"]))

    # wait until Prometheus stored a scrape of the final snapshot
    deadline = time.time() + 30
    while True:
        try:
            if scalar(prom, "vfgx_run_finished") == 1:
                break
        except (RuntimeError, OSError):
            pass
        if time.time() > deadline:
            raise SystemExit("FAIL: prometheus never stored vfgx_run_finished 1")
        time.sleep(0.5)

    scrapes = scalar(prom, "count_over_time(vfgx_pipeline_packets_total[10m])")
    if scrapes < 2:
        fail("prometheus stored %d scrapes, wanted at least 2" % scrapes)
    if scalar(prom, "min_over_time(vfgx_run_finished[10m])") != 0:
        fail("no scrape was taken while the run was going")

    # per-queue counters moved while the run was going (the workers' copies)
    during = query(prom, "max_over_time((sum(vfgx_port_rx_packets_total) and on() "
                         "(vfgx_run_finished == 0))[10m:500ms])")
    final_rx = sum(q["rx_packets"] for q in report["queues"])
    if not during or not 0 < float(during[0]["value"][1]) < final_rx:
        fail("per-queue rx counters during the run: %s (final %d)" % (during, final_rx))

    pl = report["pipeline"]
    checks = {
        "vfgx_pipeline_packets_total": pl["packets"],
        "vfgx_pipeline_bytes_total": pl["bytes"],
        "vfgx_pipeline_passed_total": pl["passed"],
        "vfgx_pipeline_delivered_total": pl["delivered"],
        "vfgx_pipeline_delivered_bytes_total": pl["delivered_bytes"],
        "vfgx_pipeline_gaps_total": pl["gaps"],
        "vfgx_pipeline_verify_errors_total": pl["verify_errors"],
        "vfgx_pipeline_order_errors_total": pl["order_errors"],
        "vfgx_pipeline_latency_seconds_count": sum(pl["latency"]["log2_ns_histogram"]),
    }
    for reason, n in pl["drops"].items():
        checks['vfgx_pipeline_drops_total{reason="%s"}' % reason] = n
    for q in report["queues"]:
        sel = '{port="%s",queue="%d"}' % (q["port"], q["queue"])
        checks["vfgx_port_rx_packets_total" + sel] = q["rx_packets"]
        checks["vfgx_port_rx_bytes_total" + sel] = q["rx_bytes"]
        checks['vfgx_port_drops_total{port="%s",queue="%d",reason="no_bufs"}'
               % (q["port"], q["queue"])] = q["drops"]["no_bufs"]
    if pl["drops"]["duplicate"] + pl["drops"]["late"] == 0 or pl["gaps"] == 0:
        fail("the run injected loss and duplicates but the report shows none: %s" % pl)
    for expr, want in sorted(checks.items()):
        got = scalar(prom, expr)
        if got != want:
            fail("%s: prometheus has %r, the report %r" % (expr, got, want))
    # slowloris during the hold: every scrape Prometheus takes meanwhile
    # succeeds (up == 1), and there are several
    trick = Trickler(vfgx_port, "127.0.0.2", 40)
    trick.start()
    t0 = time.time()
    time.sleep(8)
    span = int(time.time() - t0) - 1
    up_min = scalar(prom, 'min_over_time(up{job="vfgx"}[%ds])' % span)
    up_n = scalar(prom, 'count_over_time(up{job="vfgx"}[%ds])' % span)
    trick.close()
    if up_min != 1 or up_n < 3:
        fail("with 40 slow connections from 127.0.0.2: %s scrapes in %d s, lowest up %s (want >= 3, all up)"
             % (up_n, span, up_min))
    else:
        print("%d scrapes in %d s with 40 slow connections from 127.0.0.2 (%d cut and reopened): all up"
              % (up_n, span, trick.cut))
    if not failures:
        print("prometheus stored %d scrapes; %d counters equal the report (packets %d, delivered %d, gaps %d; run %.1f s)"
              % (scrapes, len(checks), pl["packets"], pl["delivered"], pl["gaps"], report["seconds"]))
finally:
    if run is not None:
        run.send_signal(signal.SIGTERM)
        try:
            run.wait(timeout=10)
        except subprocess.TimeoutExpired:
            run.kill()
            fail("vfgx run did not stop on SIGTERM")
        if run.returncode not in (0, None) and not failures:
            fail("vfgx run exited %s: %s" % (run.returncode, run.stderr.read()[-2000:]))
    prom_proc.terminate()
    try:
        prom_proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        prom_proc.kill()
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    sys.exit(1)
print("test-prometheus: ok")
