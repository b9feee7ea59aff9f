#!/usr/bin/env python3
"""test_send_profiles.py VFGX - `vfgx send` in every built-in profile
(send.format, #38), each checked by a program nobody here wrote.

Every run is a socket port sending on the loopback of a private network
namespace while tcpdump captures it and a receiver is bound to the port:
  - rtp: tshark's rtp dissector gives SSRC, payload type, sequence,
    timestamp and payload of every packet; they equal what send.header
    asked, per flow, across the 16-bit sequence wrap and the 32-bit
    timestamp wrap; with the generator's loss, reordering and duplicates
    the sequences tshark sees are the generator's (the report's counts);
  - rtp-video: GStreamer's rtpvrawdepay assembles the frames (udpsrc !
    rtpvrawdepay ! filesink); every frame tshark saw ended by a marker is
    in the file, byte for byte the pattern sent, across the sequence wrap;
  - vita49: tshark's vrt dissector: stream id, 4-bit count (wrapping),
    integer and fractional timestamps, packet size and payload;
  - ecpri: tshark's ecpri dissector: PC_ID, SEQ_ID (8-bit, wrapping),
    payload size and payload;
  - spead, vdif (no dissector, no sender in Debian): the UDP payloads
    tshark extracts are decoded by the small decoders below, written from
    the SPEAD specification (SPEAD-64-48 items 0x1-0x4) and the VDIF 1.1.1
    specification (the 32-byte header's four little-endian words);
  - gr-udp, gr-udp-size: GNU Radio's gr-network udp_source receives the
    stream with the sequence header (and with its size), reports no missed
    packet, and writes exactly the samples sent;
  - a frame port (DPDK net_pcap writing the frames): tshark finds every
    IPv4 and UDP length and checksum right around the rewritten payload,
    and the generator's corrupted packets as bad UDP checksums.
The payload pattern every profile sends is byte i of packet (or frame,
heap) n of flow s = (131 s + 7 n + 13 i + 1) mod 256 (docs/formats.md,
"Sending"); it is computed here on its own.
vfgx's own decoder then reads each capture back (a round trip: every packet
decoded, none dropped; a check of agreement, not an oracle).
Skips (77) when root, namespaces, tcpdump or tshark are missing; a
receiver that is absent (GStreamer, GNU Radio) is named and skipped.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

VFGX = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PORT = 5006
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        failures.append(what)


def pattern(s, n, off, length):
    c = 131 * s + 7 * n + 1
    return bytes((c + 13 * (off + i)) & 0xff for i in range(length))


SINK = ('import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        's.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24); s.bind(("127.0.0.1", %d)); '
        '[s.recv(65536) for _ in iter(int, 1)]' % PORT)


def send_capture(tmp, name, send_yaml, receiver=None, watch=(), gso=False):
    """vfgx send (socket port to 127.0.0.1:PORT, send_yaml under send:) in
    a private netns with lo up, tcpdump writing NAME.pcap and receiver (a
    shell command; default a socket that reads and drops) bound to the
    port first.  The receiver gets SIGINT once the capture and the files
    in watch stopped growing.  UDP GSO off unless gso: on loopback tcpdump
    sees a GSO batch as one datagram, unsegmented (a receiver gets each).
    Returns (pcap, the JSON report)."""
    pcap = os.path.join(tmp, name + '.pcap')
    cfg = os.path.join(tmp, name + '.yaml')
    rep = os.path.join(tmp, name + '.json')
    with open(cfg, 'w') as f:
        f.write('interfaces:\n'
                f'  - {{ name: out, backend: socket, address: "udp://127.0.0.1:{PORT}",\n'
                '      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },\n'
                '      socket: { role: client, gso: %s } }\n'
                'send:\n' % ('true' if gso else 'false') + send_yaml)
    rx = receiver or f"python3 -c '{SINK}'"
    files = ' '.join([pcap] + list(watch))
    script = f"""
set -e
# whatever ends the script ends what it started (else their open output
# keeps this subprocess waiting)
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
ip link set lo up
tcpdump -i lo -U -B 65536 -s 0 -w {pcap} udp port {PORT} 2>{pcap}.err &
tp=$!
for i in $(seq 600); do grep -q listening {pcap}.err 2>/dev/null && break; sleep 0.1; done
grep -q listening {pcap}.err || {{ echo "tcpdump did not start: $(cat {pcap}.err)" >&2; exit 1; }}
# an asynchronous command of a script starts with SIGINT ignored: the
# receiver gets it back (gst-launch -e ends its stream on SIGINT)
env --default-signal=INT {rx} >{pcap}.rx.out 2>{pcap}.rx.err &
rx=$!
for i in $(seq 600); do ss -Hlun "sport = :{PORT}" | grep -q . && break; sleep 0.1; done
ss -Hlun "sport = :{PORT}" | grep -q . || {{ echo "the receiver did not bind: $(tail -3 {pcap}.rx.err)" >&2; exit 1; }}
{VFGX} send --json {cfg} >{rep} 2>{rep}.err || {{ cat {rep}.err >&2; exit 1; }}
# each file written as it is read: stop once none has grown for a second
# (a loaded machine can leave them seconds behind)
last=-1
for i in $(seq 120); do
	sleep 1
	now=$(stat -c %s {files} 2>/dev/null | tr '\\n' ' ')
	[ "$now" = "$last" ] && break
	last=$now
done
kill -INT $rx 2>/dev/null || true
wait $rx || true
kill $tp
wait $tp || true
"""
    r = subprocess.run(['unshare', '-n', 'bash', '-c', script], capture_output=True, text=True,
                       timeout=300)
    if r.returncode:
        raise RuntimeError(f'{name}: {r.stderr.strip()[-800:]}')
    return pcap, json.load(open(rep))


def tshark(pcap, fields, decode_as=None, extra=()):
    """One row per packet the dissector decoded: [frame, fields...]."""
    cmd = ['tshark', '-r', pcap, '-T', 'fields', '-E', 'separator=\t', *extra]
    if decode_as:
        cmd += ['-d', decode_as]
    for f in ['frame.number'] + fields:
        cmd += ['-e', f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [ln.split('\t') for ln in out.splitlines() if all(ln.split('\t')[1:])]


def num(s):
    return int(s, 16) if s.startswith('0x') else int(s)


def hexbytes(s):
    return bytes.fromhex(s.replace(':', ''))


def by_stream(rows, key):
    out = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return out


def round_trip(tmp, pcap, fmt_yaml, n, name):
    """vfgx's own decoder over the capture (a round trip, not the oracle:
    sender and receiver agree): every packet decoded, none dropped."""
    cfg = os.path.join(tmp, name + '-decode.yaml')
    with open(cfg, 'w') as f:
        f.write('format: ' + fmt_yaml + '\n')
    out = subprocess.run([VFGX, 'format', '--config', cfg, '--port', str(PORT), '--summary',
                          'decode', pcap], capture_output=True, text=True).stdout.strip()
    want = f'decoded {n} field_outside 0 bad_length 0 mismatch 0 offset_past_chunk 0 ' \
           f'segment_past_frame 0 seq_jump 0 late 0 bad_stream 0'
    check(want in out, f'{name}: vfgx format decode takes all {n} packets back ({out})')


def test_rtp(tmp):
    n, flows, size = 600, 2, 200
    pcap, rep = send_capture(tmp, 'rtp', f"""  rate_pps: 20000
  generator: {{ packets: {n}, packet_size: {size}, flows: {flows} }}
  format: {{ profile: rtp }}
  header: {{ seq_start: 65500, stream_id: 0x1000, payload_type: 97,
            timestamp_start: 4294967000, timestamp_step: 160 }}
""")
    rows = tshark(pcap, ['rtp.ssrc', 'rtp.p_type', 'rtp.seq', 'rtp.timestamp', 'rtp.marker',
                         'rtp.payload'], f'udp.port=={PORT},rtp')
    check(rep['format'] == 'rtp' and rep['packets'] == n and len(rows) == n,
          f'rtp: {rep["packets"]} sent, tshark dissected {len(rows)} RTP packets of {n}')
    body = size - 42 - 12
    streams = by_stream(rows, lambda r: num(r[1]))
    check(sorted(streams) == [0x1000, 0x1001], f'rtp: SSRCs {sorted(streams)} are stream_id + flow')
    bad = 0
    for s in range(flows):
        for k, r in enumerate(streams.get(0x1000 + s, [])):
            want = [97, (65500 + k) & 0xffff, (4294967000 + 160 * k) & 0xffffffff]
            got = [int(r[2]), int(r[3]), int(r[4])]
            if (got != want or r[5] not in ('0', 'False') or
                    hexbytes(r[6]) != pattern(s, k, 0, body)):
                bad += 1
                if bad < 4:
                    print(f'     flow {s} packet {k}: tshark {r[1:6]}, wanted {want}')
    check(bad == 0, f'rtp: payload type, sequence (wrapping at 65536), timestamp (wrapping at 2^32) '
          f'and payload of every packet as asked ({bad} differ)')
    round_trip(tmp, pcap, '{ profile: rtp }', n, 'rtp')

    # the generator's faults arrive as the profile's: gaps, late and
    # repeated sequence numbers, as many as the report counts
    pcap, rep = send_capture(tmp, 'rtp-faults', f"""  rate_pps: 20000
  generator: {{ packets: {n}, packet_size: {size}, flows: {flows}, seed: 7,
               loss: 0.05, reorder: 0.03, duplicate: 0.03 }}
  format: {{ profile: rtp }}
  header: {{ seq_start: 65500 }}
""")
    rows = tshark(pcap, ['rtp.ssrc', 'rtp.seq'], f'udp.port=={PORT},rtp')
    src = rep['source']
    ks = [(num(r[1]), (int(r[2]) - 65500) & 0xffff) for r in rows]
    uniq = set(ks)
    late = sum(1 for s in range(flows) for a, b in zip([k for f, k in ks if f == s],
                                                      [k for f, k in ks if f == s][1:]) if b < a)
    check(len(rows) == rep['packets'] and len(uniq) == n - src['lost'] and
          len(ks) - len(uniq) == src['duplicated'] and (late > 0) == (src['reordered'] > 0) and
          src['lost'] > 0 and src['duplicated'] > 0,
          f'rtp with faults: {len(uniq)} distinct sequences = {n} - {src["lost"]} lost, '
          f'{len(ks) - len(uniq)} repeated = {src["duplicated"]} duplicated, {late} late '
          f'({src["reordered"]} reordered)')


def test_rtp_video(tmp):
    if not shutil.which('gst-launch-1.0'):
        print('SKIP rtp-video: gst-launch-1.0 not installed (gstreamer1.0-tools)')
        return
    w, h = 320, 240
    frame = w * h * 2
    out = os.path.join(tmp, 'video.raw')
    caps = ('application/x-rtp,media=(string)video,clock-rate=(int)90000,encoding-name=(string)RAW,'
            'sampling=(string)YCbCr-4:2:2,depth=(string)8,width=(string)%d,height=(string)%d,'
            'colorimetry=(string)BT601-5,payload=(int)96' % (w, h))
    gst = (f'gst-launch-1.0 -e -q udpsrc port={PORT} buffer-size=33554432 caps="{caps}" '
           f'! rtpvrawdepay ! video/x-raw,format=UYVY ! filesink location={out}')
    pcap, rep = send_capture(tmp, 'rtp-video', f"""  rate_pps: 20000
  generator: {{ packets: 1300, packet_size: 1442, flows: 1 }}
  format: {{ profile: rtp-video, width: {w}, height: {h} }}
  header: {{ seq_start: 65000, timestamp_start: 90000 }}
""", receiver=gst, watch=[out])
    rows = tshark(pcap, ['rtp.seq', 'rtp.timestamp', 'rtp.marker'], f'udp.port=={PORT},rtp')
    seqs = [int(r[1]) for r in rows]
    markers = [r for r in rows if r[3] in ('1', 'True')]
    frames = len(markers)
    check(len(rows) == 1300 and seqs == [(65000 + k) & 0xffff for k in range(1300)],
          f'rtp-video: tshark sees {len(rows)} packets, sequences 65000.. wrapping at 65536')
    check(frames >= 8 and [int(r[2]) for r in markers] == [90000 + 1500 * i for i in range(frames)],
          f'rtp-video: {frames} frames ended by a marker, timestamps 1500 apart')
    got = open(out, 'rb').read() if os.path.exists(out) else b''
    want = b''.join(pattern(0, i, 0, frame) for i in range(frames))
    check(len(got) == len(want) and got == want,
          f'rtp-video: GStreamer rtpvrawdepay wrote {len(got)} bytes = the {frames} frames sent, '
          f'byte for byte ({len(want)})')
    round_trip(tmp, pcap, f'{{ profile: rtp-video, width: {w}, height: {h} }}', 1300, 'rtp-video')


def test_vita49(tmp):
    n, flows, size = 64, 2, 200
    pcap, rep = send_capture(tmp, 'vita49', f"""  rate_pps: 20000
  generator: {{ packets: {n}, packet_size: {size}, flows: {flows} }}
  format: {{ profile: vita49 }}
  header: {{ stream_id: 0xabc00, timestamp_start: 1700000000, timestamp_step: 250000000000 }}
""")
    rows = tshark(pcap, ['vrt.type', 'vrt.sid', 'vrt.seq', 'vrt.len', 'vrt.tsi', 'vrt.tsf',
                         'vrt.ts_int', 'vrt.ts_frac_picosecond', 'vrt.data'],
                  f'udp.port=={PORT},vrt')
    check(len(rows) == n, f'vita49: tshark dissected {len(rows)} VRT packets of {n}')
    words = (size - 42) // 4
    streams = by_stream(rows, lambda r: num(r[2]))
    check(sorted(streams) == [0xabc00, 0xabc01], f'vita49: stream ids {[hex(x) for x in streams]}')
    bad = 0
    for s in range(flows):
        for k, r in enumerate(streams.get(0xabc00 + s, [])):
            t = k * 250000000000
            want = [1, k & 0xf, words, 1, 2, 1700000000 + t // 10**12, t % 10**12]
            got = [num(r[1]), int(r[3]), int(r[4]), num(r[5]), num(r[6]), num(r[7]), int(r[8])]
            if got != want or hexbytes(r[9])[:4 * words - 20] != pattern(s, k, 0, 4 * words - 20):
                bad += 1
                if bad < 4:
                    print(f'     flow {s} packet {k}: tshark {got}, wanted {want}')
    check(bad == 0, f'vita49: type 1, count (wrapping at 16), size, TSI/TSF, integer and fractional '
          f'timestamps and payload of every packet as asked ({bad} differ)')
    round_trip(tmp, pcap, '{ profile: vita49, stream_ids: [0xabc00, 0xabc01] }', n, 'vita49')


def test_ecpri(tmp):
    n, flows, size = 600, 2, 120
    pcap, rep = send_capture(tmp, 'ecpri', f"""  rate_pps: 20000
  generator: {{ packets: {n}, packet_size: {size}, flows: {flows} }}
  format: {{ profile: ecpri }}
  header: {{ stream_id: 0x200, seq_start: 200 }}
""")
    # O-RAN's dissector would take the payload, PC_ID and SEQ_ID with it
    rows = tshark(pcap, ['ecpri.revision', 'ecpri.type', 'ecpri.size', 'ecpri.pcid',
                         'ecpri.seqid', 'ecpri.payload'], f'udp.port=={PORT},ecpri',
                  ['--disable-protocol', 'oran_fh_cus'])
    check(len(rows) == n, f'ecpri: tshark dissected {len(rows)} eCPRI messages of {n}')
    room = size - 42
    streams = by_stream(rows, lambda r: num(r[4]))
    check(sorted(streams) == [0x200, 0x201], f'ecpri: PC_IDs {[hex(x) for x in streams]}')
    bad = 0
    for s in range(flows):
        for k, r in enumerate(streams.get(0x200 + s, [])):
            want = [1, 0, room - 4, (((200 + k) & 0xff) << 8) | 0x80]
            got = [num(r[1]), num(r[2]), num(r[3]), num(r[5])]
            if got != want or not hexbytes(r[6]).endswith(pattern(s, k, 0, room - 8)):
                bad += 1
                if bad < 4:
                    print(f'     flow {s} message {k}: tshark {got}, wanted {want}')
    check(bad == 0, f'ecpri: revision 1, IQ data, payload size, SEQ_ID (wrapping at 256, E bit) '
          f'and IQ payload of every message as asked ({bad} differ)')
    round_trip(tmp, pcap, '{ profile: ecpri }', n, 'ecpri')


def udp_payloads(pcap):
    return [hexbytes(r[1]) for r in tshark(pcap, ['udp.payload'])]


def spead_decode(p):
    """A SPEAD packet (SPEAD spec, 'packet format'): header 0x53, version
    4, item pointer width 2 and heap address width 6 bytes (SPEAD-64-48),
    2 reserved bytes, 16-bit item count; then 64-bit item pointers (1
    immediate bit, 15-bit id, 48-bit value or address), then the payload.
    Returns {id: value} of the immediate items and the payload."""
    if p[0] != 0x53 or p[1] != 4 or p[2] != 2 or p[3] != 6:
        raise ValueError('not SPEAD-64-48: %s' % p[:4].hex())
    nitems = int.from_bytes(p[6:8], 'big')
    items = {}
    for i in range(nitems):
        v = int.from_bytes(p[8 + 8 * i:16 + 8 * i], 'big')
        if v >> 63:
            items[(v >> 48) & 0x7fff] = v & ((1 << 48) - 1)
    return items, p[8 + 8 * nitems:]


def test_spead(tmp):
    n, flows, size, heap = 80, 2, 1042, 4000
    pcap, rep = send_capture(tmp, 'spead', f"""  rate_pps: 20000
  generator: {{ packets: {n}, packet_size: {size}, flows: {flows} }}
  format: {{ profile: spead, chunk_bytes: {heap} }}
  header: {{ seq_start: 7 }}
""")
    heaps, bad = {}, 0
    pkts = udp_payloads(pcap)
    for p in pkts:
        items, payload = spead_decode(p)
        cnt, hsize, off, plen = (items.get(i) for i in (1, 2, 3, 4))
        if plen != len(payload) or hsize != heap:
            bad += 1
            continue
        heaps.setdefault(cnt, {})[off] = payload
    check(len(pkts) == n and bad == 0, f'spead: {len(pkts)} packets, each with heap counter, heap size '
          f'{heap}, heap offset and a payload length that matches ({bad} do not)')
    # 5 packets a heap (4 x 960 + 160 bytes): 8 heaps per flow, counters
    # interleaved over the two flows from 7 on
    want_cnts = sorted(7 + i * flows + s for i in range(8) for s in range(flows))
    check(sorted(heaps) == want_cnts, f'spead: heap counters {sorted(heaps)[:4]}..: 7 + heap x 2 + flow')
    whole = 0
    for cnt, parts in heaps.items():
        data = b''.join(parts[o] for o in sorted(parts))
        s, i = (cnt - 7) % flows, (cnt - 7) // flows
        contiguous = all(o == sum(len(parts[x]) for x in sorted(parts) if x < o) for o in parts)
        whole += contiguous and data == pattern(s, i, 0, heap)
    check(whole == len(want_cnts), f'spead: {whole} of {len(want_cnts)} heaps reassembled by offset '
          f'are complete and the pattern sent')
    round_trip(tmp, pcap, f'{{ profile: spead, chunk_bytes: {heap} }}', n, 'spead')


def vdif_decode(p):
    """A VDIF data frame header (VDIF 1.1.1, section 3): eight 32-bit
    little-endian words; word 0: invalid (31), legacy (30), seconds from
    the reference epoch (0-29); word 1: reference epoch (24-29), frame
    number within the second (0-23); word 2: version (29-31), log2
    channels (24-28), frame length in 8-byte units (0-23); word 3:
    complex (31), bits per sample - 1 (26-30), thread id (16-25), station
    id (0-15)."""
    w = [int.from_bytes(p[4 * i:4 * i + 4], 'little') for i in range(4)]
    return {'invalid': w[0] >> 31, 'legacy': (w[0] >> 30) & 1, 'seconds': w[0] & 0x3fffffff,
            'frame': w[1] & 0xffffff, 'length': (w[2] & 0xffffff) * 8,
            'bits': ((w[3] >> 26) & 0x1f) + 1, 'thread': (w[3] >> 16) & 0x3ff}, p[32:]


def test_vdif(tmp):
    n, flows, size, fps = 450, 3, 1042, 64
    pcap, rep = send_capture(tmp, 'vdif', f"""  rate_pps: 20000
  generator: {{ packets: {n}, packet_size: {size}, flows: {flows} }}
  format: {{ profile: vdif, frames_per_second: {fps} }}
  header: {{ stream_id: 5, seq_start: 60, timestamp_start: 1000 }}
""")
    pkts = udp_payloads(pcap)
    per, bad = {}, 0
    for p in pkts:
        hd, data = vdif_decode(p)
        if hd['invalid'] or hd['legacy'] or hd['length'] != len(p) or hd['bits'] != 8:
            bad += 1
        per.setdefault(hd['thread'], []).append((hd['seconds'] * fps + hd['frame'], data))
    check(len(pkts) == n and bad == 0, f'vdif: {len(pkts)} frames valid, not legacy, 8-bit samples, '
          f'frame length = UDP payload ({bad} not)')
    check(sorted(per) == [5, 6, 7], f'vdif: thread ids {sorted(per)} are stream_id + flow')
    bad = 0
    for s in range(flows):
        for k, (seq, data) in enumerate(per.get(5 + s, [])):
            if seq != 1000 * fps + 60 + k or data != pattern(s, k, 0, len(data)):
                bad += 1
    check(bad == 0, f'vdif: seconds x {fps} + frame number counts on by one per thread from '
          f'1000 s + 60 frames, across second boundaries, and each frame\'s data is the pattern '
          f'({bad} differ)')
    round_trip(tmp, pcap, f'{{ profile: vdif, frames_per_second: {fps} }}', n, 'vdif')


GR_SOURCE = r'''
import os, sys, time
from gnuradio import gr, blocks, network
port, header, room, want, out = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                 int(sys.argv[4]), sys.argv[5])
tb = gr.top_block()
# itemsize 1, veclen 1, port, header type, payload size (with the header),
# notify missed packets, no zeros when idle, IPv4
src = network.udp_source(1, 1, port, header, room, True, False, False)
snk = blocks.file_sink(1, out, False)
snk.set_unbuffered(True)
tb.connect(src, snk)
tb.start()
for _ in range(1200):
    if os.path.exists(out) and os.path.getsize(out) >= want:
        break
    time.sleep(0.05)
tb.stop()
tb.wait()
'''


def test_gr_udp(tmp):
    try:
        subprocess.run(['/usr/bin/python3', '-c', 'from gnuradio import network'], check=True,
                       capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        print('SKIP gr-udp: gr-network not installed (gnuradio)')
        return
    fg = os.path.join(tmp, 'gr_source.py')
    open(fg, 'w').write(GR_SOURCE)
    # 80 datagrams fit the socket's default receive buffer whole: GNU
    # Radio's source starts reading when its flowgraph runs, a while after
    # it bound the port
    n, size = 80, 1042
    room = size - 42
    for profile, htype, hl in (('gr-udp', 1, 8), ('gr-udp-size', 2, 16)):
        out = os.path.join(tmp, profile + '.samples')
        want = b''.join(pattern(0, k, 0, room - hl) for k in range(n))
        rx = f'/usr/bin/python3 {fg} {PORT} {htype} {room} {len(want)} {out}'
        pcap, rep = send_capture(tmp, profile, f"""  rate_pps: 2000
  generator: {{ packets: {n}, packet_size: {size}, flows: 1 }}
  format: {{ profile: {profile} }}
""", receiver=rx, watch=[out], gso=True)
        got = open(out, 'rb').read() if os.path.exists(out) else b''
        log = open(pcap + '.rx.out').read() + open(pcap + '.rx.err').read()
        check(rep['packets'] == n and got == want,
              f'{profile}: GNU Radio udp_source (header type {htype}) wrote {len(got)} bytes = '
              f'the {n} payloads sent ({len(want)})')
        check('missed' not in log, f'{profile}: GNU Radio reports no missed packet '
              f'(its sequence numbers count by one)')
    # the generator's loss is what GNU Radio counts as missed (less any
    # lost after the last packet it got, which nothing can see)
    out = os.path.join(tmp, 'gr-loss.samples')
    body = room - 8
    rx = f'/usr/bin/python3 {fg} {PORT} 1 {room} {n * body} {out}'
    pcap, rep = send_capture(tmp, 'gr-loss', f"""  rate_pps: 2000
  generator: {{ packets: {n}, packet_size: {size}, flows: 1, loss: 0.1, seed: 3 }}
  format: {{ profile: gr-udp }}
""", receiver=rx, watch=[out], gso=True)
    log = open(pcap + '.rx.out').read() + open(pcap + '.rx.err').read()
    missed = sum(int(m) for m in re.findall(r'missed\s+packets:\s*(\d+)', log))
    lost = rep['source']['lost']
    got = os.path.getsize(out) if os.path.exists(out) else 0
    check(lost > 0 and 0 < missed <= lost and got == (n - lost) * body,
          f'gr-udp with loss: GNU Radio counts {missed} missed of the {lost} lost, and wrote the '
          f'{got // body} payloads that were sent ({n - lost})')


def test_frames(tmp):
    """A frame port: DPDK's net_pcap writes the frames vfgx send built
    (lengths and checksums redone around the profile's payload); tshark
    checks the IPv4 and UDP checksums and dissects the VITA-49 packets,
    rounded down to whole words.  The generator's corruption arrives as
    that many bad UDP checksums."""
    out = os.path.join(tmp, 'frames.pcap')
    cfg = os.path.join(tmp, 'frames.yaml')
    n, size = 400, 303  # a 261-byte UDP payload: VITA-49 sends 260
    with open(cfg, 'w') as f:
        f.write(f"""interfaces:
  - name: out
    backend: dpdk
    address: net_pcap0,tx_pcap={out}
    tx: {{ queues: [ {{ id: 0 }} ] }}
    dpdk: {{ memory: {{ num_mbufs: 8191, fallback: host }} }}
send:
  generator: {{ packets: {n}, packet_size: {size}, flows: 2, udp_csum: true, corrupt: 0.05, seed: 5 }}
  format: {{ profile: vita49 }}
  header: {{ stream_id: 77 }}
""")
    r = subprocess.run([VFGX, 'send', '--json', cfg], capture_output=True, text=True, timeout=120)
    if r.returncode and ('dpdk' in r.stderr.lower() or 'net_pcap' in r.stderr):
        print('SKIP frames: no DPDK net_pcap port here: ' + r.stderr.strip().splitlines()[-1][:200])
        return
    rep = json.loads(r.stdout)
    rows = tshark(out, ['ip.len', 'udp.length', 'ip.checksum.status', 'udp.checksum.status',
                        'vrt.sid', 'vrt.seq', 'vrt.len'], 'udp.port==5000,vrt',
                  ['-o', 'ip.check_checksum:TRUE', '-o', 'udp.check_checksum:TRUE'])
    bad_csum = sum(1 for r in rows if r[4] != '1')
    corrupted = rep['source']['corrupted']
    shape = all(int(r[1]) == 20 + 8 + 260 and int(r[2]) == 8 + 260 and r[3] == '1' and
                int(r[7]) == 65 for r in rows)
    check(len(rows) == n and shape, f'frames: {len(rows)} frames of {n}, IPv4 length 288, UDP 268, '
          f'IPv4 checksum good, VITA-49 65 words')
    per = by_stream(rows, lambda r: num(r[5]))
    check(sorted(per) == [77, 78] and
          all([int(r[6]) for r in v] == [k & 0xf for k in range(n // 2)] for v in per.values()),
          'frames: stream ids 77, 78, counts 0, 1, ... wrapping at 16')
    check(corrupted > 0 and bad_csum == corrupted,
          f'frames: {bad_csum} UDP checksums tshark finds bad = the {corrupted} the generator corrupted')


def test_errors(tmp):
    """Bad send.format input: one line, exit 2, nothing sent."""
    cfg = os.path.join(tmp, 'bad.yaml')
    cases = [
        ('format: { profile: vdif }\n', 'frames_per_second'),
        ('format: { profile: nosuch }\n', 'unknown profile'),
        ('format: { profile: rtp-video, width: 320, height: 240 }\n  generator: { packet_size: 60 }\n',
         'raise generator.packet_size'),
        ('format: { profile: rtp }\n  header: { payload_type: 200 }\n', 'payload_type'),
        ('format: { seq: { offset: 0, size: 4 } }\n', 'of your own'),
        ('source: pcap\n  pcap: { file: /nonexistent.pcap }\n  format: { profile: rtp }\n',
         'sent as recorded'),
    ]
    for body, words in cases:
        with open(cfg, 'w') as f:
            f.write('interfaces:\n  - { name: out, backend: socket, address: "udp://127.0.0.1:9",\n'
                    '      tx: { queues: [ { id: 0 } ] }, socket: { role: client } }\n'
                    'send:\n  ' + body)
        r = subprocess.run([VFGX, 'send', cfg], capture_output=True, text=True, timeout=60)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and words in lines[0],
              f'bad send.format ({body.strip().splitlines()[0]}): exit {r.returncode}, '
              f'one line naming "{words}": {lines[:2]}')
    with open(cfg, 'w') as f:
        f.write('interfaces:\n  - { name: out, backend: socket, address: "udp://127.0.0.1:9",\n'
                '      tx: { queues: [ { id: 0 } ] }, socket: { role: client } }\n'
                'send: { format: { profile: rtp } }\n')
    r = subprocess.run([VFGX, 'send', '--format', 'ecpri', cfg], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and
          'send.format is profile rtp' in r.stderr,
          f'--format ecpri over send.format rtp: exit {r.returncode}, one line: {r.stderr.strip()[:120]}')
    with open(cfg, 'w') as f:
        f.write('interfaces:\n  - { name: out, backend: socket, address: "udp://127.0.0.1:9",\n'
                '      tx: { queues: [ { id: 0 } ] }, socket: { role: client } }\n')
    r = subprocess.run([VFGX, 'send', '--format', 'nosuch', cfg], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 2 and 'built in: vfgx, rtp' in r.stderr,
          f'--format nosuch: exit {r.returncode}, the built-in profiles named')


def main():
    probe = subprocess.run([os.path.join(ROOT, 'scripts', 'netns-probe.sh'), 'tcpdump', 'tshark',
                            'unshare', 'ss'], capture_output=True, text=True)
    if probe.returncode:
        print(probe.stdout.strip() or 'SKIP: netns probe failed')
        return 77
    only = sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o777)  # tcpdump drops to its own user to write
        for t in (test_errors, test_frames, test_rtp, test_rtp_video, test_vita49, test_ecpri, test_spead,
                  test_vdif, test_gr_udp):
            if not only or t.__name__[5:] in only:
                t(tmp)
    print(f'{len(failures)} failed' if failures else 'all passed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
