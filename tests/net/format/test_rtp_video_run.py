#!/usr/bin/env python3
"""test_rtp_video_run.py VFGX FRAME_DUMP_SO - `vfgx run` receiving
GStreamer's RFC 4175 raw video as chunks, over a veth pair between two
network namespaces.

GStreamer (videotestsrc ! rtpvrawpay ! udpsink) sends in one namespace;
`vfgx run` (socket backend, cpu engine, pipeline.format rtp-video,
pipeline.chunks) receives in the other and hands every chunk to a user
module (frame_dump.so) that appends its bytes and header metadata to two
files.  The oracle is GStreamer's own videotestsrc ! filesink for the same
caps and frame count:
  - without netem: every frame arrives as one chunk, complete, byte for
    byte equal to filesink's frame, with its RTP timestamp;
  - with tc netem loss 1% and reordering on the sender's veth (where the
    kernel lacks sch_netem, a seeded relay in the sender's namespace drops
    1% and reorders 10%): every chunk
    flagged complete equals its frame byte for byte (its frame found by
    its RTP timestamp, so a chunk mixing two frames cannot pass), every
    other chunk is flagged (closed, missing_bytes > 0), and no frame is
    handed out twice;
  - the text report counts missing bytes (not slots), as many as the
    chunks' missing_bytes add up to.
Skips (77) without root, namespaces, tc or GStreamer.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

VFGX, DUMP = sys.argv[1], sys.argv[2]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NAME, NET = 'fmtv', '93'
W, H, FPS = 320, 240, 30
FRAME = W * H * 2
CAPS = f'video/x-raw,format=UYVY,width={W},height={H},framerate={FPS}/1'
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        failures.append(what)


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def config(tmp, dump):
    path = os.path.join(tmp, 'rtp-video-run.yaml')
    with open(path, 'w') as f:
        f.write(f'''log_level: warn
memory_regions:
  - {{name: rx, kind: host, buf_size: 2048, num_bufs: 8192}}
interfaces:
  - name: udp0
    backend: socket
    address: udp://198.18.{NET}.2:5004
    rx:
      queues:
        - {{id: 0, memory_region: rx, batch_size: 64}}
    socket: {{role: server, rcvbuf: 16777216}}
pipeline:
  device: cpu
  workers: 1
  duration_s: 8
  format:
    profile: rtp-video
    width: {W}
    height: {H}               # no stream_ids: GStreamer's random SSRC is learned
  chunks:
    packets: 512          # >= a frame's packets (the present map's bits)
    payload_bytes: 1500
    streams: 1
    in_flight: 8
    close_distance: 3
  user:
    library: {DUMP}
    arg: {dump}
''')
    return path


# Where the kernel has no sch_netem (some VM kernels), the same faults
# from a relay in the sender's namespace: GStreamer sends to it on the
# namespace's loopback; it forwards each datagram unchanged over the veth,
# dropping 1% and holding 10% back behind the next one to three (seeded:
# the same faults every run).  It stops after a second without input.
RELAY = r"""
import random, socket, sys
rng = random.Random(38)
i = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
i.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
i.bind(("127.0.0.1", 6000))
o = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dst = (sys.argv[1], 5004)
print("bound", flush=True)
i.settimeout(30)
held = []
while True:
    try:
        d = i.recv(65536)
    except socket.timeout:
        break
    i.settimeout(1)
    if rng.random() < 0.01:
        continue
    if rng.random() < 0.10:
        held.append([rng.randint(1, 3), d])
        continue
    o.sendto(d, dst)
    for h in held:
        h[0] -= 1
    for h in [h for h in held if h[0] <= 0]:
        o.sendto(h[1], dst)
    held = [h for h in held if h[0] > 0]
for h in held:
    o.sendto(h[1], dst)
"""


def netem_works():
    """Can tc add a netem qdisc here (sch_netem in this kernel)?"""
    ns = f'{NAME}p'
    subprocess.run(['ip', 'netns', 'add', ns], capture_output=True)
    try:
        subprocess.run(['ip', '-n', ns, 'link', 'add', 'p0', 'type', 'veth', 'peer', 'name', 'p1'],
                       capture_output=True)
        r = subprocess.run(['tc', '-n', ns, 'qdisc', 'add', 'dev', 'p0', 'root', 'netem', 'loss', '1%'],
                           capture_output=True, text=True)
        return r.returncode == 0
    finally:
        subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)


def run_once(tmp, tag, frames, netem):
    ref = os.path.join(tmp, f'{tag}.ref')
    sh('gst-launch-1.0', '-q', 'videotestsrc', f'num-buffers={frames}', 'pattern=ball', '!',
       *CAPS.split(), '!', 'filesink', f'location={ref}')
    dump = os.path.join(tmp, tag)
    cfg = config(tmp, dump)
    subprocess.run([os.path.join(ROOT, 'scripts', 'netns-veth.sh'), 'up', NAME],
                   env=dict(os.environ, VETH_NET=NET), check=True, capture_output=True)
    try:
        relay, host, port = None, f'198.18.{NET}.2', 5004
        if netem == 'netem':
            sh('tc', '-n', f'{NAME}-a', 'qdisc', 'add', 'dev', f'{NAME}-a0', 'root', 'netem',
               'delay', '2ms', 'reorder', '10%', '50%', 'loss', '1%')
        elif netem == 'relay':
            relay = subprocess.Popen(['ip', 'netns', 'exec', f'{NAME}-a', sys.executable, '-c',
                                      RELAY, host], stdout=subprocess.PIPE, text=True)
            relay.stdout.readline()
            host, port = '127.0.0.1', 6000
        rx = subprocess.Popen(['ip', 'netns', 'exec', f'{NAME}-b', VFGX, 'run', cfg],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.5)  # the socket is bound well before this
        sh('ip', 'netns', 'exec', f'{NAME}-a', 'gst-launch-1.0', '-q', 'videotestsrc',
           f'num-buffers={frames}', 'pattern=ball', '!', *CAPS.split(), '!',
           'rtpvrawpay', '!', 'udpsink', f'host={host}', f'port={port}')
        if relay:
            relay.wait(timeout=60)
        out, _ = rx.communicate(timeout=60)
    finally:
        subprocess.run([os.path.join(ROOT, 'scripts', 'netns-veth.sh'), 'down', NAME],
                       capture_output=True)
    print('\n'.join('     ' + ln for ln in out.strip().splitlines()[-12:]))
    check(rx.returncode == 0, f'{tag}: vfgx run exited {rx.returncode}')
    refb = open(ref, 'rb').read()
    check(len(refb) == frames * FRAME, f'{tag}: filesink wrote {frames} frames')
    rows = [list(map(int, ln.split())) for ln in open(dump + '.index')]
    data = open(dump + '.data', 'rb').read()
    # the text report counts a chunk by bytes' loss in bytes, as each
    # chunk's missing_bytes does (slot chunks say slots: tests/cli/test_json.py)
    m = re.search(r'^chunks: \d+ handed out \(\d+ complete, \d+ closed with (\d+) (\w+) missing\)',
                  out, re.M)
    check(m is not None and m.group(2) == 'bytes' and int(m.group(1)) == sum(r[3] for r in rows),
          f'{tag}: report says {m.group(1) + " " + m.group(2) if m else "no chunks line"} missing, '
          f'its chunks {sum(r[3] for r in rows)} bytes')
    return rows, data, refb


def frames_of(rows, data, refb, tag):
    """Per chunk: its frame (by RTP timestamp), complete or not, and
    whether its bytes equal that frame's."""
    ts0 = min(r[4] for r in rows)
    out, off = [], 0
    for idx, flags, nbytes, missing, ts, hflags, first, present in rows:
        # 90 kHz x 1/30 s: 3000 ticks a frame, give or take GStreamer's
        # rounding of each buffer's timestamp
        d = (ts - ts0) & 0xffffffff
        k = (d + 45000 // FPS) // (90000 // FPS)
        chunk = data[off:off + nbytes]
        off += nbytes
        same = abs(d - k * 90000 // FPS) <= 1 and nbytes == FRAME and \
            k * FRAME + FRAME <= len(refb) and chunk == refb[k * FRAME:k * FRAME + FRAME]
        out.append((k, flags, missing, hflags, same))
    return out


def test_clean(tmp):
    frames = 40
    rows, data, refb = run_once(tmp, 'clean', frames, None)
    got = frames_of(rows, data, refb, 'clean')
    check(len(got) == frames, f'clean: {len(got)} chunks for {frames} frames')
    check([g[0] for g in got] == list(range(frames)),
          'clean: one chunk per frame, in order (by RTP timestamp)')
    check(all(g[1] == 1 and g[2] == 0 for g in got), 'clean: every chunk complete, 0 bytes missing')
    check(all(g[3] == 3 for g in got), 'clean: every chunk has its RTP timestamp and end mark')
    check(all(g[4] for g in got), f'clean: all {len(got)} frames byte-identical to filesink\'s')


def test_netem(tmp):
    frames = 60
    how = 'netem' if netem_works() else 'relay'
    if how == 'relay':
        print('     this kernel has no sch_netem: loss and reordering from the relay instead')
    rows, data, refb = run_once(tmp, 'netem', frames, how)
    got = frames_of(rows, data, refb, 'netem')
    complete = [g for g in got if g[1] == 1]
    holed = [g for g in got if g[1] != 1]
    print(f'     {len(got)} chunks: {len(complete)} complete, {len(holed)} with holes')
    check(len(got) > frames // 2, f'netem: {len(got)} chunks of {frames} frames handed out')
    check(len({g[0] for g in got}) == len(got), 'netem: no frame handed out twice')
    check(all(g[2] == 0 and g[4] for g in complete),
          f'netem: all {len(complete)} complete chunks byte-identical to their filesink frame')
    check(all(g[2] > 0 for g in holed), f'netem: all {len(holed)} chunks with holes flagged with missing bytes')
    check(len(complete) > 0 and len(holed) > 0,
          'netem: loss left some frames whole and some with holes (the test saw both)')


def main():
    probe = subprocess.run([os.path.join(ROOT, 'scripts', 'netns-probe.sh'), 'tc', 'gst-launch-1.0'],
                           capture_output=True, text=True)
    if probe.returncode:
        print(probe.stdout.strip() or 'SKIP: netns probe failed')
        return 77
    r = subprocess.run(['gst-inspect-1.0', 'rtpvrawpay'], capture_output=True)
    if r.returncode:
        print('SKIP: GStreamer rtpvrawpay not installed (gstreamer1.0-plugins-good)')
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        test_clean(tmp)
        test_netem(tmp)
    print(f'{len(failures)} failed' if failures else 'all passed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
