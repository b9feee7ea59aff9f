#!/usr/bin/env python3
"""test_format_producers.py VFGX - `vfgx format decode` against producers
and dissectors nobody here wrote.

Each producer sends real UDP on the loopback of a private network
namespace while tcpdump captures it; vfgx decodes the capture with a
profile and tshark's dissector decodes the same capture.  The oracles:
  - GStreamer rtpvrawpay (RFC 4175): per packet SSRC, sequence, timestamp
    and marker equal tshark's rtp fields; the frames vfgx assembles by the
    rtp-video placement rule are byte-identical to what videotestsrc !
    filesink writes for the same caps;
  - FFmpeg's RTP muxer: SSRC, sequence, timestamp, marker equal tshark's,
    and the extended sequence equals tshark's rtp.extseq (after the first
    packet, which Wireshark's state starts from);
  - GNU Radio's gr-network UDP sink (when gnuradio is installed): the
    sequence numbers GNU Radio wrote equal 1..N in order and the payloads
    reassembled by the gr-udp placement equal the samples it was fed;
  - VITA-49 and eCPRI packets built here from the specifications: stream
    id and count (PC_ID and SEQ_ID) equal tshark's vrt and ecpri fields.
Skips (77) when a tool is missing; a producer that is absent is named.
"""
import os
import struct
import subprocess
import sys
import tempfile

VFGX = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def capture(pcap, producer, port=5004):
    """Run producer (a shell command) in a private netns, lo up, with
    tcpdump writing pcap; return when the producer has ended."""
    script = f"""
set -e
ip link set lo up
tcpdump -i lo -U -B 65536 -s 0 -w {pcap} udp port {port} 2>{pcap}.err &
tp=$!
for i in $(seq 600); do grep -q listening {pcap}.err 2>/dev/null && break; sleep 0.1; done
grep -q listening {pcap}.err || {{ echo "tcpdump did not start: $(cat {pcap}.err)" >&2; exit 1; }}
# a receiver on the port: without one, ICMP port unreachable makes a
# connected sender's next send fail (FFmpeg stops early)
python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24); s.bind(("127.0.0.1", {port})); sys.stdout.write("bound\\n"); sys.stdout.flush(); [s.recv(65536) for _ in iter(int, 1)]' >{pcap}.rx &
rx=$!
for i in $(seq 300); do grep -q bound {pcap}.rx 2>/dev/null && break; sleep 0.1; done
{producer}
# tcpdump writes each packet as it reads it (-U): stop once the file has
# not grown for a second (a loaded machine can leave it seconds behind)
last=-1
for i in $(seq 120); do
	sleep 0.5
	now=$(stat -c %s {pcap})
	[ "$now" = "$last" ] && break
	last=$now
	sleep 0.5
done
kill $tp $rx
wait $tp || true
"""
    r = subprocess.run(['unshare', '-n', 'bash', '-c', script],
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise RuntimeError(f'capture of {producer!r} failed: {r.stderr.strip()[-500:]}')


def vfgx_decode(pcap, *args):
    rows, summary = [], None
    for ln in run([VFGX, 'format', *args, 'decode', pcap]).splitlines():
        if ln.startswith('# frames'):
            summary = ln
        elif not ln.startswith('#'):
            rows.append(ln.split('\t'))
    return rows, summary


def tshark(pcap, decode_as, fields, extra=()):
    cmd = ['tshark', '-r', pcap, '-T', 'fields', '-E', 'separator=\t', *extra]
    if decode_as:
        cmd += ['-d', decode_as]
    for f in ['frame.number'] + fields:
        cmd += ['-e', f]
    out = {}
    for ln in run(cmd).splitlines():
        c = ln.split('\t')
        if all(c[1:]):
            out[int(c[0])] = c[1:]
    return out


def num(s):
    return int(s, 16) if s.startswith('0x') else int(s)


def rtp_against_tshark(pcap, rows, name):
    ts = tshark(pcap, 'udp.port==5004,rtp',
                ['rtp.ssrc', 'rtp.seq', 'rtp.timestamp', 'rtp.marker', 'rtp.extseq'])
    good = [r for r in rows if r[1] != 'drop']
    check(len(good) == len(ts) and len(good) > 0,
          f'{name}: vfgx decoded {len(good)} packets, tshark dissected {len(ts)} as RTP')
    bad = 0
    ext_differ = []
    for r in good:
        frame = int(r[0])
        t = ts.get(frame)
        if (not t or num(t[0]) != int(r[1]) or int(t[1]) != int(r[4]) & 0xffff or
                int(t[2]) != int(r[5]) or (t[3] in ('1', 'True')) != (r[8] == '1')):
            bad += 1
            if bad < 4:
                print(f'     frame {frame}: vfgx {r} tshark {t}')
            continue
        # Wireshark seeds a stream's extended sequence with its first
        # packet, whose own rtp.extseq is 0x10000 alone: compare the rest
        if frame != min(ts) and int(r[3]) != int(t[4]):
            ext_differ.append((frame, r[3], t[4]))
    check(bad == 0, f'{name}: SSRC, sequence, timestamp and marker of every packet equal tshark\'s ({bad} differ)')
    return ext_differ


def test_gstreamer(tmp):
    if not shutil_which('gst-launch-1.0'):
        print('SKIP gstreamer: gst-launch-1.0 not installed (gstreamer1.0-tools)')
        return
    caps = 'video/x-raw,format=UYVY,width=320,height=240,framerate=30/1'
    frames = 12
    pcap, raw, got = (os.path.join(tmp, n) for n in ('gst.pcap', 'gst.raw', 'gst.frames'))
    capture(pcap, f'gst-launch-1.0 -q videotestsrc num-buffers={frames} pattern=smpte ! {caps} '
            f'! rtpvrawpay seqnum-offset=65000 ! udpsink host=127.0.0.1 port=5004')  # paced at 30 fps: tcpdump keeps up
    run(['gst-launch-1.0', '-q', 'videotestsrc', f'num-buffers={frames}', 'pattern=smpte', '!',
         *caps.split(), '!', 'filesink', f'location={raw}'])
    cfg = os.path.join(tmp, 'rtp-video.yaml')
    with open(cfg, 'w') as f:
        f.write('pipeline:\n  format:\n    profile: rtp-video\n    width: 320\n    height: 240\n')
    rows, summary = vfgx_decode(pcap, '--config', cfg, '--write', got)
    print('     ' + summary)
    check(all(r[1] != 'drop' for r in rows), 'gstreamer rtp-video: no packet dropped')
    rtp_against_tshark(pcap, rows, 'gstreamer rtp-video')
    # seqnum-offset 65000: RTP's sequence wraps in the first frames; the
    # extended sequence counts on by one across it
    seqs = [int(r[4]) for r in rows if r[1] != 'drop']
    ext = [int(r[3]) for r in rows if r[1] != 'drop']
    check(0 in seqs and seqs[0] == 65000 and all(b - a == 1 for a, b in zip(ext, ext[1:])),
          f'gstreamer rtp-video: the extended sequence counts by one across the 16-bit wrap ({ext[0]}..{ext[-1]})')
    ends = sum(1 for r in rows if r[1] != 'drop' and r[8] == '1')
    check(ends == frames, f'gstreamer rtp-video: {ends} marker bits end {frames} frames')
    a, b = open(got, 'rb').read(), open(raw, 'rb').read()
    check(len(b) == frames * 320 * 240 * 2 and a == b,
          f'gstreamer rtp-video: {len(a)} assembled bytes equal filesink\'s {len(b)} byte for byte')
    # the same capture with the plain rtp profile: every packet decoded
    _, summary = vfgx_decode(pcap, '--profile', 'rtp', '--summary')
    check(f'decoded {len(rows)} field_outside 0 bad_length 0 mismatch 0' in summary,
          f'gstreamer rtp: the plain rtp profile decodes all {len(rows)} packets ({summary})')


def test_ffmpeg(tmp):
    if not shutil_which('ffmpeg'):
        print('SKIP ffmpeg: not installed')
        return
    pcap = os.path.join(tmp, 'ff.pcap')
    capture(pcap, 'ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc=duration=2:size=320x240:rate=25 '
            '-c:v mpeg4 -f rtp rtp://127.0.0.1:5004')
    rows, summary = vfgx_decode(pcap, '--profile', 'rtp')
    print('     ' + summary)
    check(all(r[1] != 'drop' for r in rows), 'ffmpeg rtp: no packet dropped')
    differ = rtp_against_tshark(pcap, rows, 'ffmpeg rtp')
    check(not differ, f'ffmpeg rtp: extended sequence equals tshark\'s rtp.extseq after the first packet ({differ[:3]})')
    # RTP described in YAML alone, as a fixed layout any header could use:
    # the same fields as the built-in profile, against tshark again
    cfg = os.path.join(tmp, 'rtp-described.yaml')
    with open(cfg, 'w') as f:
        f.write('format:\n  layout: fixed\n  header_len: 12\n'
                '  match: [{offset: 0, size: 1, shift: 6, bits: 2, value: 2}]\n'
                '  stream: {offset: 8, size: 4}\n  seq: {offset: 2, size: 2}\n'
                '  timestamp: {offset: 4, size: 4}\n  end: {offset: 1, bit: 7}\n'
                '  seq_bits: 16\n  seq_max_dropout: 3000\n  seq_max_misorder: 100\n')
    rows, _ = vfgx_decode(pcap, '--config', cfg)
    differ = rtp_against_tshark(pcap, rows, 'ffmpeg rtp described in YAML')
    check(not differ, f'ffmpeg rtp described in YAML: extended sequence equals tshark\'s rtp.extseq ({differ[:3]})')


GR_FLOWGRAPH = r'''
import sys
import numpy as np
from gnuradio import gr, blocks, network
n = int(sys.argv[1])
data = (np.arange(n, dtype=np.uint64) * 2654435761 % 4294967291).astype(np.uint32)
data.tofile(sys.argv[2])
tb = gr.top_block()
src = blocks.vector_source_i(data.view(np.int32).tolist(), False)
thr = blocks.throttle(4, 200000)
# itemsize 4, veclen 1, host, port, header SEQNUM (1), payload 1472, send_eof
snk = network.udp_sink(4, 1, '127.0.0.1', 5004, 1, 1472, False)
tb.connect(src, thr, snk)
tb.run()
'''


def test_gnuradio(tmp):
    try:
        # Debian's python3, whose dist-packages hold gnuradio
        subprocess.run(['/usr/bin/python3', '-c', 'from gnuradio import network'], check=True,
                       capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        print('SKIP gnuradio: gr-network not installed (gnuradio)')
        return
    pcap, samples, got = (os.path.join(tmp, n) for n in ('gr.pcap', 'gr.samples', 'gr.stream'))
    fg = os.path.join(tmp, 'fg.py')
    open(fg, 'w').write(GR_FLOWGRAPH)
    # a whole number of 1464-byte payloads (1472 less the 8-byte header)
    n = 366 * 40
    capture(pcap, f'/usr/bin/python3 {fg} {n} {samples}')
    cfg = os.path.join(tmp, 'gr.yaml')
    with open(cfg, 'w') as f:
        f.write('format:\n  profile: gr-udp\n  payload_bytes: 1464\n  packets: 40\n')
    rows, summary = vfgx_decode(pcap, '--config', cfg, '--write', got)
    print('     ' + summary)
    seqs = [int(r[4]) for r in rows if r[1] != 'drop']
    check(seqs == list(range(1, 41)), f'gnuradio gr-udp: sequences 1..40 in order ({seqs[:3]}..., {len(seqs)})')
    # sequence 1 starts the stream: the slot placement puts it at slot 1
    a = open(got, 'rb').read()[1464:]
    b = open(samples, 'rb').read()
    check(a == b, f'gnuradio gr-udp: the {len(a)} bytes placed equal the {len(b)} samples fed')


def ip_udp(payload, port):
    """Ethernet/IPv4/UDP around payload (UDP checksum 0: not computed)."""
    udp = struct.pack('!HHHH', 40000, port, 8 + len(payload), 0) + payload
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]))
    s = sum(struct.unpack('!10H', ip))
    s = (s & 0xffff) + (s >> 16)
    s = (s & 0xffff) + (s >> 16)
    ip = ip[:10] + struct.pack('!H', ~s & 0xffff) + ip[12:]
    return b'\0' * 12 + b'\x08\x00' + ip + udp


def write_pcap(path, frames):
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack('<IIII', i, 0, len(fr), len(fr)) + fr)


def vita49_packet(i):
    """VITA-49.0 data packet (spec section 6.1): word 0 = packet type (4)
    | C | T | 2 reserved | TSI (2) | TSF (2) | packet count (4) | packet
    size in 32-bit words (16).  Types 1 (with stream id) and 0 (without)
    alternate per stream; TSI 1 (UTC) with an integer timestamp word,
    TSF 2 (real time, ps) with a 64-bit fractional timestamp."""
    stream = i % 3
    count = (i // 3) & 0xf
    with_sid = stream != 2
    words = [0xDEADBEEF, i]  # two payload words
    hdr = []
    if with_sid:
        hdr.append(0x1000 + stream)
    hdr.append(1700000000 + i)  # integer seconds
    frac = [0, i * 1000]
    size = 1 + len(hdr) + 2 + len(words)
    w0 = ((1 if with_sid else 0) << 28) | (1 << 22) | (2 << 20) | (count << 16) | size
    return struct.pack('!I', w0) + b''.join(struct.pack('!I', w) for w in hdr + frac + words)


def ecpri_packet(i):
    """eCPRI 2.0 common header (section 3.1.3.1): revision 1 (4 bits), 3
    reserved, C=0 | message type 0 (IQ data) | payload size (16 bits,
    bytes after the common header); IQ data (3.2.4.1): PC_ID (16) |
    SEQ_ID: sequence (8), E bit + sub-sequence (8); then the samples."""
    pcid = 0x100 + i % 2
    seq = (i // 2) & 0xff  # wraps every 256 packets of a stream
    iq = bytes(range(16))
    body = struct.pack('!HBB', pcid, seq, 0x80) + iq
    return struct.pack('!BBH', 0x10, 0, len(body)) + body


def test_vita49_ecpri(tmp):
    pv = os.path.join(tmp, 'vrt.pcap')
    write_pcap(pv, [ip_udp(vita49_packet(i), 4991) for i in range(120)])
    rows, summary = vfgx_decode(pv, '--profile', 'vita49')
    print('     ' + summary)
    ts = tshark(pv, 'udp.port==4991,vrt', ['vrt.seq'])
    sid = tshark(pv, 'udp.port==4991,vrt', ['vrt.sid'])
    bad = 0
    for r in rows:
        f = int(r[0])
        want_sid = num(sid[f][0]) if f in sid else 0
        if r[1] == 'drop' or int(ts[f][0]) != int(r[4]) or want_sid != int(r[1]):
            bad += 1
    check(len(rows) == 120 and bad == 0, f'vita49: stream id and count of {len(rows)} packets equal tshark vrt\'s ({bad} differ)')
    # the 4-bit count extended: per stream 0, 1, 2, ... across wraps
    ext = {}
    for r in rows:
        ext.setdefault(r[1], []).append(int(r[3]))
    check(all(b - a == 1 for v in ext.values() for a, b in zip(v, v[1:])),
          'vita49: extended counts grow by one per stream across 4-bit wraps')

    pe = os.path.join(tmp, 'ecpri.pcap')
    frames = [ip_udp(ecpri_packet(i), 50000) for i in range(600)]
    # a real-time control message (type 2), not IQ data: a mismatch
    frames.append(ip_udp(struct.pack('!BBHHBB', 0x10, 2, 4, 0x100, 0, 0x80), 50000))
    write_pcap(pe, frames)
    rows, summary = vfgx_decode(pe, '--profile', 'ecpri')
    print('     ' + summary)
    # O-RAN's dissector would take the IQ payload, PC_ID and SEQ_ID with it
    ts = tshark(pe, 'udp.port==50000,ecpri', ['ecpri.pcid', 'ecpri.seqid'],
                ['--disable-protocol', 'oran_fh_cus'])
    bad = 0
    for r in rows[:600]:
        t = ts.get(int(r[0]))
        if not t or r[1] == 'drop' or num(t[0]) != int(r[1]) or num(t[1]) >> 8 != int(r[4]):
            bad += 1
            if bad < 4:
                print(f'     {r} tshark {t}')
    check(bad == 0 and len(rows) == 601, f'ecpri: PC_ID and SEQ_ID of 600 IQ packets equal tshark ecpri\'s ({bad} differ)')
    check(rows[600][1:] == ['drop', 'mismatch'], 'ecpri: a control message (type 2) is dropped as mismatch')
    ext = {}
    for r in rows[:600]:
        ext.setdefault(r[1], []).append(int(r[3]))
    check(all(b - a == 1 for v in ext.values() for a, b in zip(v, v[1:])) and
          all(v[-1] - v[0] == 299 for v in ext.values()),
          'ecpri: extended sequences grow by one per PC_ID across 8-bit wraps')


def shutil_which(t):
    import shutil
    return shutil.which(t)


def main():
    probe = subprocess.run([os.path.join(ROOT, 'scripts', 'netns-probe.sh'), 'tcpdump', 'tshark', 'unshare'],
                           capture_output=True, text=True)
    if probe.returncode:
        print(probe.stdout.strip() or 'SKIP: netns probe failed')
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o777)  # tcpdump drops to its own user to write
        test_vita49_ecpri(tmp)
        test_gstreamer(tmp)
        test_ffmpeg(tmp)
        test_gnuradio(tmp)
    print(f'{len(failures)} failed' if failures else 'all passed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
