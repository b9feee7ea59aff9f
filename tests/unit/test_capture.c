/* test_capture.c - capture files and the pcap port, through the library:
 * two rx queues of a loopback port polled by two threads while the writer
 * drains their rings (the threads share the capture: this test runs under
 * ThreadSanitizer too), the file read back with libpcap (every record,
 * nanosecond precision, bytes as received), snap length, the pcap port
 * reading the file back (preloaded too, and through a pcap opts struct of
 * before preload), pcapng (libwiretap) chosen by the key or the
 * name and read back with libpcap, a version-1 conf (argsz 48), capture
 * by reference (frames released before the writer wrote them, from the
 * loopback replay across laps and file rotations, at the bound on what
 * the capture may hold, and released far out of rx order), and the
 * errors of conf, attach and open. */
#include <errno.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <vfgx/vfgx.h>

#include "vfgx_build.h"

#define PKTS 20000

static vfgx_ctx *ctx;
static char dir[] = "/tmp/vfgx-test-capture-XXXXXX";

static vfgx_port *loopback(uint16_t nq, uint32_t size, uint64_t packets)
{
	struct vfgx_loopback_opts lo;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "lo", .backend = "loopback",
				     .nb_rx_queues = nq, .burst = 64, .backend_opts = &lo.hdr };
	vfgx_port *p = NULL;

	vfgx_loopback_opts_default(&lo);
	lo.packets = packets;
	lo.packet_size = size;
	lo.flows = 4;
	lo.corrupt = 0.01;
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), 0);
	return p;
}

struct poller {
	vfgx_port *port;
	uint16_t q;
	uint64_t packets, bytes;
	/* the first frame this queue received, to compare with the file */
	uint8_t first[512];
	uint32_t first_len;
};

static void *poll_main(void *arg)
{
	struct poller *pl = arg;
	struct vfgx_pkt pk[64];

	while (!vfgx_port_rx_done(pl->port, pl->q)) {
		int n = vfgx_port_rx_burst(pl->port, pl->q, pk, 64);

		for (int i = 0; i < n; i++) {
			if (!pl->packets && !i) {
				pl->first_len = pk[i].len < 512 ? pk[i].len : 512;
				memcpy(pl->first, pk[i].data, pl->first_len);
			}
			pl->bytes += pk[i].len;
		}
		pl->packets += (uint64_t)(n > 0 ? n : 0);
		if (n > 0)
			vfgx_port_release(pl->port, pl->q, pk, (uint16_t)n);
	}
	return NULL;
}

static void path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* Records of a file: count, bytes, whether one matches frame. */
static uint64_t read_back(const char *path, uint64_t *bytes, uint32_t *max_caplen,
			  const uint8_t *frame, uint32_t frame_len, bool *found)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
	struct pcap_pkthdr *h;
	const u_char *d;
	uint64_t n = 0;

	assert_non_null(p);
	assert_int_equal(pcap_datalink(p), DLT_EN10MB);
	assert_int_equal(pcap_get_tstamp_precision(p), PCAP_TSTAMP_PRECISION_NANO);
	*bytes = 0;
	*max_caplen = 0;
	*found = false;
	while (pcap_next_ex(p, &h, &d) == 1) {
		n++;
		*bytes += h->len;
		if (h->caplen > *max_caplen)
			*max_caplen = h->caplen;
		if (frame && h->caplen >= frame_len && !memcmp(d, frame, frame_len))
			*found = true;
	}
	pcap_close(p);
	return n;
}

static void capture_two_threads(void **state)
{
	struct vfgx_capture_conf cc;
	struct vfgx_capture_stats st;
	struct poller pl[2];
	pthread_t th[2];
	vfgx_capture *c;
	vfgx_port *port = loopback(2, 512, PKTS);
	char path[256];
	uint64_t bytes;
	uint32_t maxcl;
	bool found;

	(void)state;
	path_of(path, sizeof(path), "two.pcap");
	vfgx_capture_conf_default(&cc);
	cc.path = path;
	cc.ring_bytes = 1u << 24;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), 0);
	assert_int_equal(vfgx_capture_attach(c, port), 0);
	assert_int_equal(vfgx_capture_attach(c, port), -EBUSY);
	for (int i = 0; i < 2; i++) {
		pl[i] = (struct poller){ .port = port, .q = (uint16_t)i };
		assert_int_equal(pthread_create(&th[i], NULL, poll_main, &pl[i]), 0);
	}
	/* counters read while the queues run and the writer writes */
	vfgx_capture_stats(c, &st);
	assert_true(st.written <= st.selected && st.selected <= st.seen);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(vfgx_capture_close(c, &st), 0);
	assert_int_equal(st.seen, pl[0].packets + pl[1].packets);
	assert_int_equal(st.selected, st.seen);
	assert_int_equal(st.written + st.ring_full, st.selected);
	assert_int_equal(st.ring_full, 0); /* 16 MiB rings hold every record */
	assert_int_equal(st.files, 1);
	assert_int_equal(st.error, 0);
	assert_int_equal(read_back(path, &bytes, &maxcl, pl[1].first, pl[1].first_len, &found),
			 st.written);
	assert_int_equal(bytes, pl[0].bytes + pl[1].bytes);
	assert_int_equal(maxcl, 512);
	assert_true(found); /* queue 1's first frame, byte for byte */
	vfgx_port_close(port);

	/* the file through the pcap port: every record, same bytes */
	struct vfgx_pcap_opts po;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "rd", .backend = "pcap",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &po.hdr };
	struct poller rd = { 0 };
	struct vfgx_pcap_info info;

	vfgx_pcap_opts_default(&po);
	po.file = path;
	assert_int_equal(vfgx_port_open(ctx, &pc, &rd.port), 0);
	poll_main(&rd);
	assert_int_equal(rd.packets, st.written);
	assert_int_equal(rd.bytes, bytes);
	assert_int_equal(vfgx_pcap_info(rd.port, &info), 0);
	assert_int_equal(info.records, st.written);
	assert_int_equal(info.laps, 1);
	assert_int_equal(vfgx_pcap_info(NULL, &info), -EINVAL);
	vfgx_port_close(rd.port);

	/* preloaded (its own pool grown to the records): the same records;
	 * a program built before preload (argsz up to num_bufs) still opens
	 * the file, preload off */
	struct poller pre = { 0 }, v1 = { 0 };

	po.preload = true;
	po.num_bufs = 64; /* fewer than the records: the pool grows */
	assert_int_equal(vfgx_port_open(ctx, &pc, &pre.port), 0);
	poll_main(&pre);
	assert_int_equal(pre.packets, st.written);
	assert_int_equal(pre.bytes, bytes);
	vfgx_port_close(pre.port);
	po.preload = false;
	po.hdr.argsz = (uint32_t)offsetof(struct vfgx_pcap_opts, preload);
	po.num_bufs = 4096;
	assert_int_equal(vfgx_port_open(ctx, &pc, &v1.port), 0);
	poll_main(&v1);
	assert_int_equal(v1.packets, st.written);
	assert_int_equal(v1.bytes, bytes);
	vfgx_port_close(v1.port);
}

/* Everything pl's port delivers, captured into the file cc names: open,
 * attach, poll the port dry, close; the close's stats in *st. */
static void capture_all(const struct vfgx_capture_conf *cc, struct poller *pl,
			struct vfgx_capture_stats *st)
{
	vfgx_capture *c;

	assert_int_equal(vfgx_capture_open(ctx, cc, &c), 0);
	assert_int_equal(vfgx_capture_attach(c, pl->port), 0);
	poll_main(pl);
	assert_int_equal(vfgx_capture_close(c, st), 0);
}

static void capture_snaplen_and_sample(void **state)
{
	struct vfgx_capture_conf cc;
	struct vfgx_capture_stats st;
	struct poller pl = { 0 };
	char path[256];
	uint64_t bytes;
	uint32_t maxcl;
	bool found;

	(void)state;
	pl.port = loopback(1, 512, 1000);
	path_of(path, sizeof(path), "snap.pcap");
	vfgx_capture_conf_default(&cc);
	cc.path = path;
	cc.snaplen = 64;
	cc.mode = VFGX_CAPTURE_SAMPLE;
	cc.sample_every = 10;
	capture_all(&cc, &pl, &st);
	assert_int_equal(st.seen, 1000);
	assert_int_equal(st.written, 100);
	assert_int_equal(read_back(path, &bytes, &maxcl, NULL, 0, &found), 100);
	assert_int_equal(maxcl, 64);     /* snapped */
	assert_int_equal(bytes, 100 * 512); /* the packets' own lengths kept */
	vfgx_port_close(pl.port);
}

/* Records that wrap around the ring's end, pcap (spans in two pieces)
 * and pcapng (a record put together before libwiretap gets it): 1500 B
 * frames through a 64 KiB ring, the queue polled one burst at a time,
 * each burst written before the next (no ring_full), every record read
 * back whole: its frame parses with a good UDP checksum, its sequence is
 * the next of its stream. */
static void capture_wraps(void **state)
{
	static const uint32_t fmts[] = { VFGX_CAPTURE_FORMAT_PCAP, VFGX_CAPTURE_FORMAT_PCAPNG };

	(void)state;
	for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
		struct vfgx_loopback_opts lo;
		struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "lo", .backend = "loopback",
					     .nb_rx_queues = 1, .burst = 32, .backend_opts = &lo.hdr };
		struct vfgx_capture_conf cc;
		struct vfgx_capture_stats st;
		struct vfgx_pkt pk[32];
		char path[256], err[PCAP_ERRBUF_SIZE];
		uint64_t rx = 0, recs = 0, next_seq[4] = { 0 };
		struct pcap_pkthdr *h;
		const u_char *d;
		vfgx_capture *c;
		vfgx_port *port = NULL;
		pcap_t *p;

		if (fmts[k] == VFGX_CAPTURE_FORMAT_PCAPNG && !VFGX_HAVE_PCAPNG)
			continue;
		vfgx_loopback_opts_default(&lo);
		lo.packets = 2000;
		lo.packet_size = 1500;
		lo.flows = 4;
		assert_int_equal(vfgx_port_open(ctx, &pc, &port), 0);
		path_of(path, sizeof(path), k ? "wrap.pcapng" : "wrap.pcap");
		vfgx_capture_conf_default(&cc);
		cc.path = path;
		cc.ring_bytes = 1u << 16;
		cc.format = fmts[k];
		assert_int_equal(vfgx_capture_open(ctx, &cc, &c), 0);
		assert_int_equal(vfgx_capture_attach(c, port), 0);
		while (!vfgx_port_rx_done(port, 0)) {
			int n = vfgx_port_rx_burst(port, 0, pk, 32);

			if (n <= 0)
				continue;
			rx += (uint64_t)n;
			vfgx_port_release(port, 0, pk, (uint16_t)n);
			do { /* the writer takes the burst: 48 KiB of a 64 KiB ring */
				struct timespec ts = { 0, 100000 };

				vfgx_capture_stats(c, &st);
				if (st.written + st.ring_full < rx)
					nanosleep(&ts, NULL);
			} while (st.written + st.ring_full < rx);
		}
		assert_int_equal(vfgx_capture_close(c, &st), 0);
		assert_int_equal(st.seen, 2000);
		assert_int_equal(st.ring_full, 0);
		assert_int_equal(st.written, 2000);
		p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
		assert_non_null(p);
		while (pcap_next_ex(p, &h, &d) == 1) {
			struct vfgx_parsed ps = { 0 };
			uint32_t stream;

			assert_int_equal(h->caplen, 1500);
			assert_int_equal(h->len, 1500);
			/* the UDP checksum covers every byte of the frame */
			assert_int_equal(vfgx_parse(d, h->caplen, &ps), VFGX_STAGE_PASS);
			stream = vfgx_rd32(d + ps.payload_off);
			assert_true(stream < 4);
			assert_int_equal(vfgx_rd64(d + ps.payload_off + 8), next_seq[stream]);
			next_seq[stream]++;
			recs++;
		}
		pcap_close(p);
		assert_int_equal(recs, 2000);
		vfgx_port_close(port);
	}
}

/* The first four bytes of path as a number (pcapng: 0x0a0d0d0a). */
static uint32_t magic_of(const char *path)
{
	uint32_t m = 0;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fread(&m, sizeof(m), 1, f), 1);
	fclose(f);
	return m;
}

static void capture_pcapng(void **state)
{
	struct vfgx_capture_conf cc;
	struct vfgx_capture_stats st;
	struct poller pl = { 0 };
	vfgx_capture *c;
	char path[256];
	uint64_t bytes;
	uint32_t maxcl;
	bool found;

	(void)state;
	path_of(path, sizeof(path), "ng.cap"); /* the key says pcapng, not the name */
	vfgx_capture_conf_default(&cc);
	assert_int_equal(cc.format, VFGX_CAPTURE_FORMAT_AUTO);
	cc.path = path;
	cc.snaplen = 128;
	cc.format = VFGX_CAPTURE_FORMAT_PCAPNG;
#if VFGX_HAVE_PCAPNG
	pl.port = loopback(1, 512, 1000);
	capture_all(&cc, &pl, &st);
	assert_int_equal(st.written, 1000);
	assert_int_equal(magic_of(path), 0x0a0d0d0a);
	/* libpcap reads pcapng too: every record, nanoseconds, snapped */
	assert_int_equal(read_back(path, &bytes, &maxcl, pl.first, 128, &found), 1000);
	assert_int_equal(bytes, pl.bytes);
	assert_int_equal(maxcl, 128);
	assert_true(found);
	vfgx_port_close(pl.port);

	/* a version-1 conf (no format: auto) and a name ending in .pcapng */
	pl = (struct poller){ .port = loopback(1, 256, 100) };
	path_of(path, sizeof(path), "v1.pcapng");
	cc.format = 0;
	cc.argsz = 48;
	capture_all(&cc, &pl, &st);
	assert_int_equal(st.written, 100);
	assert_int_equal(magic_of(path), 0x0a0d0d0a);
	vfgx_port_close(pl.port);
#else
	/* refused with one line, by the key and by the name; no file */
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), -ENOTSUP);
	assert_non_null(strstr(vfgx_last_error(ctx), "libwiretap"));
	assert_int_equal(access(path, F_OK), -1);
	path_of(path, sizeof(path), "v1.pcapng");
	cc.format = VFGX_CAPTURE_FORMAT_AUTO;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), -ENOTSUP);
	assert_int_equal(access(path, F_OK), -1);
	(void)pl;
	(void)bytes;
	(void)maxcl;
	(void)found;
#endif
	/* an explicit pcap wins over the name */
	cc.argsz = sizeof(cc);
	cc.format = VFGX_CAPTURE_FORMAT_PCAP;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), 0);
	assert_int_equal(vfgx_capture_close(c, &st), 0);
	assert_int_equal(magic_of(path), 0xa1b23c4d); /* nanosecond pcap */
	/* a format that is not one */
	cc.format = 7;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "format"));
}

static void capture_errors(void **state)
{
	struct vfgx_capture_conf cc;
	vfgx_capture *c = (vfgx_capture *)&cc;
	char path[256];

	(void)state;
	vfgx_capture_conf_default(&cc);
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), -EINVAL); /* no path */
	assert_null(c);
	path_of(path, sizeof(path), "e.pcap");
	cc.path = path;
	cc.snaplen = 10;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "snaplen"));
	cc.snaplen = 65535;
	cc.ring_bytes = 100000;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "power of two"));
	cc.ring_bytes = 1u << 20;
	path_of(path, sizeof(path), "no/such/dir.pcap");
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), -ENOENT);
	assert_int_equal(access(path, F_OK), -1);
	cc.argsz = 3;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), -EINVAL);

	/* a socket port hands payloads: refused with one line */
	struct vfgx_socket_opts so;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "sk", .backend = "socket",
				     .address = "udp://127.0.0.1:0", .nb_rx_queues = 1,
				     .burst = 32, .backend_opts = &so.hdr };
	vfgx_port *sk;

	vfgx_socket_opts_default(&so);
	assert_int_equal(vfgx_port_open(ctx, &pc, &sk), 0);
	vfgx_capture_conf_default(&cc);
	path_of(path, sizeof(path), "sk.pcap");
	cc.path = path;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), 0);
	assert_int_equal(vfgx_capture_attach(c, sk), -ENOTSUP);
	assert_non_null(strstr(vfgx_last_error(ctx), "payloads"));
	assert_int_equal(vfgx_capture_close(c, NULL), 0);
	vfgx_port_close(sk);
}

static void pcap_port_errors(void **state)
{
	struct vfgx_pcap_opts po;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "rd", .backend = "pcap",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &po.hdr };
	vfgx_port *p;
	char path[256];
	FILE *f;

	(void)state;
	vfgx_pcap_opts_default(&po);
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), -EINVAL); /* no file */
	path_of(path, sizeof(path), "missing.pcap");
	po.file = path;
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), -ENOENT);
	assert_non_null(strstr(vfgx_last_error(ctx), path));
	path_of(path, sizeof(path), "junk.pcap");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("this is not a capture file at all\n", f);
	fclose(f);
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), path));
	po.timing = VFGX_PCAP_RATE; /* rate timing without a rate */
	path_of(path, sizeof(path), "two.pcap");
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "rate_pps"));
	po.timing = VFGX_PCAP_FAST;
	pc.nb_rx_queues = 2;
	assert_int_equal(vfgx_port_open(ctx, &pc, &p), -EINVAL);
}

/* Captured by reference: what each received packet was, to compare with
 * the files (a frame rewritten or reused before the writer wrote it
 * would not match). */
struct rx_log {
	uint64_t *hash;
	uint32_t *len;
	uint64_t n, cap;
};

static uint64_t fnv64(const uint8_t *d, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ d[i]) * 0x100000001b3ull;
	return h;
}

static void log_burst(struct rx_log *lg, const struct vfgx_pkt *pk, int n)
{
	for (int i = 0; i < n; i++) {
		assert_true(lg->n < lg->cap);
		lg->hash[lg->n] = fnv64(pk[i].data, pk[i].len);
		lg->len[lg->n++] = pk[i].len;
	}
}

/* The records of files STEM.pcap, STEM.1.pcap, ... (nfiles of them), in
 * order, are the received packets less ring_full of them, each byte for
 * byte; returns the records read. */
static uint64_t check_files(const char *stem, uint32_t nfiles, const struct rx_log *lg,
			    uint64_t ring_full)
{
	uint64_t j = 0, recs = 0, skipped = 0;

	for (uint32_t f = 0; f < nfiles; f++) {
		char path[300], err[PCAP_ERRBUF_SIZE];
		struct pcap_pkthdr *h;
		const u_char *d;
		pcap_t *p;

		if (f)
			snprintf(path, sizeof(path), "%s/%s.%u.pcap", dir, stem, f);
		else
			snprintf(path, sizeof(path), "%s/%s.pcap", dir, stem);
		p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
		assert_non_null(p);
		while (pcap_next_ex(p, &h, &d) == 1) {
			uint64_t hash = fnv64(d, h->caplen);

			assert_int_equal(h->caplen, h->len);
			while (j < lg->n && (lg->hash[j] != hash || lg->len[j] != h->len)) {
				j++;
				skipped++;
			}
			assert_true(j < lg->n); /* every record is a received packet, in order */
			j++;
			recs++;
		}
		pcap_close(p);
	}
	assert_int_equal(skipped + (lg->n - j), ring_full);
	return recs;
}

/* Poll q until it is done or stop packets came in, releasing each burst at
 * once (before the writer can have written it); the queue never stalls
 * for good. */
static void poll_release(vfgx_port *port, struct rx_log *lg, uint64_t stop)
{
	struct vfgx_pkt pk[64];
	uint64_t empty = 0;

	while (!vfgx_port_rx_done(port, 0) && (!lg || lg->n < stop)) {
		int n = vfgx_port_rx_burst(port, 0, pk, 64);

		assert_true(n >= 0);
		if (!n) {
			assert_true(++empty < 200000000ull);
			continue;
		}
		empty = 0;
		if (lg)
			log_burst(lg, pk, n);
		vfgx_port_release(port, 0, pk, (uint16_t)n);
	}
}

/* A capture of port's queue 0 into DIR/STEM.pcap (rotate_bytes and
 * ring_bytes when not 0), and lg sized for cap packets. */
static vfgx_capture *cap_start(vfgx_port *port, const char *stem, uint64_t rotate,
			       uint32_t ring, struct rx_log *lg, uint64_t cap)
{
	struct vfgx_capture_conf cc;
	vfgx_capture *c;
	char path[256];

	snprintf(path, sizeof(path), "%s/%s.pcap", dir, stem);
	vfgx_capture_conf_default(&cc);
	cc.path = path;
	if (rotate)
		cc.rotate_bytes = rotate;
	if (ring)
		cc.ring_bytes = ring;
	assert_int_equal(vfgx_capture_open(ctx, &cc, &c), 0);
	assert_int_equal(vfgx_capture_attach(c, port), 0);
	lg->cap = cap;
	lg->hash = calloc(cap, sizeof(*lg->hash));
	lg->len = calloc(cap, sizeof(*lg->len));
	assert_true(lg->hash && lg->len);
	return c;
}

/* Close c: every packet seen was logged, each selected one written or
 * ring_full, no error, and the files hold exactly the received bytes of
 * the written ones, in rx order. */
static void cap_finish(vfgx_capture *c, const char *stem, const struct rx_log *lg,
		       struct vfgx_capture_stats *st)
{
	assert_int_equal(vfgx_capture_close(c, st), 0);
	assert_int_equal(st->seen, lg->n);
	assert_int_equal(st->written + st->ring_full, st->selected);
	assert_int_equal(st->error, 0);
	assert_int_equal(check_files(stem, st->files, lg, st->ring_full), st->written);
}

/* Every buffer of pool is back, none given back twice. */
static void assert_pool_whole(vfgx_pool *pool)
{
	struct vfgx_pool_stats ps;

	vfgx_pool_stats(pool, &ps);
	assert_int_equal(ps.available, ps.num_bufs);
	assert_int_equal(ps.double_free, 0);
}

/* Captured by reference from the loopback replay, which hands its frames
 * out again lap after lap with new sequences: the pipeline releases each
 * burst before the writer wrote it, the capture holds the frames back
 * (the replay must not rewrite one the writer has not written) and
 * rotates files across such spans.  Every record is a received frame,
 * byte for byte, in rx order; the frames held at close go back to the
 * port (the replay hands out the rest of the run after it). */
static void capture_by_ref_replay(void **state)
{
	struct vfgx_loopback_opts lo;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "lo", .backend = "loopback",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &lo.hdr };
	struct vfgx_capture_stats st;
	struct rx_log lg = { 0 };
	vfgx_capture *c;
	vfgx_port *port = NULL;

	(void)state;
	vfgx_loopback_opts_default(&lo);
	lo.replay = true;
	lo.packets = 4 * 3072; /* 4 laps of 3072 frames (4 flows x 768) */
	lo.packet_size = 700;
	lo.flows = 4;
	assert_int_equal(vfgx_port_open(ctx, &pc, &port), 0);
	c = cap_start(port, "rep", 256 << 10, 0, &lg, lo.packets);
	poll_release(port, &lg, 3 * 3072 + 100); /* into the fourth lap */
	cap_finish(c, "rep", &lg, &st);
	assert_int_equal(st.selected, st.seen);
	assert_true(st.files > 2);
	/* the rest of the run: every frame came back */
	poll_release(port, NULL, 0);
	assert_true(vfgx_port_rx_done(port, 0));
	vfgx_port_close(port);
	free(lg.hash);
	free(lg.len);
}

/* References are bounded by the queue's pool (an eighth of 64 buffers
 * here), and the arena takes only a burst's worth of copies while the
 * writer stays behind: records past both are ring_full, the queue never
 * waits, every record written is the packet received, and at close every
 * buffer is back in the pool. */
static void capture_by_ref_bound(void **state)
{
	struct vfgx_loopback_opts lo;
	vfgx_pool *pool = NULL;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "lo", .backend = "loopback",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &lo.hdr,
				     .rx_pools = &pool };
	struct vfgx_capture_stats st;
	struct rx_log lg = { 0 };
	vfgx_capture *c;
	vfgx_port *port = NULL;

	(void)state;
	assert_int_equal(vfgx_pool_create(ctx, NULL, 2048, 64, &pool), 0);
	vfgx_loopback_opts_default(&lo);
	lo.packets = 20000;
	lo.packet_size = 1500;
	lo.flows = 4;
	assert_int_equal(vfgx_port_open(ctx, &pc, &port), 0);
	c = cap_start(port, "bound", 0, 64 << 10, &lg, lo.packets);
	poll_release(port, &lg, lo.packets);
	assert_int_equal(lg.n, lo.packets);
	cap_finish(c, "bound", &lg, &st);
	assert_true(st.ring_full > 0);
	assert_true(st.written > 0);
	assert_pool_whole(pool);
	vfgx_port_close(port);
	vfgx_pool_destroy(pool);
	free(lg.hash);
	free(lg.len);
}

/* Released far out of rx order (bursts of 192 received, then handed back
 * last first, up to 191 records apart), from the loopback replay
 * (which rewrites a frame once it is released) and from a pool (whose
 * buffers rx fills again at once): a packet the writer has not written
 * stays held wherever it lies, so every record is the bytes received,
 * or counted ring_full; at close every buffer is back. */
static void capture_by_ref_reversed(void **state)
{
	(void)state;
	for (int use_pool = 0; use_pool < 2; use_pool++) {
		struct vfgx_loopback_opts lo;
		vfgx_pool *pool = NULL;
		struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "lo",
					     .backend = "loopback", .nb_rx_queues = 1,
					     .burst = 64, .backend_opts = &lo.hdr,
					     .rx_pools = use_pool ? &pool : NULL };
		struct vfgx_capture_stats st;
		struct rx_log lg = { 0 };
		struct vfgx_pkt pk[192], rev[192];
		uint64_t empty = 0;
		vfgx_capture *c;
		vfgx_port *port = NULL;
		char stem[16];

		if (use_pool)
			assert_int_equal(vfgx_pool_create(ctx, NULL, 2048, 4096, &pool), 0);
		vfgx_loopback_opts_default(&lo);
		lo.replay = !use_pool;
		lo.packets = use_pool ? 12000 : 4 * 3072;
		lo.packet_size = 700;
		lo.flows = 4;
		assert_int_equal(vfgx_port_open(ctx, &pc, &port), 0);
		snprintf(stem, sizeof(stem), "rev%d", use_pool);
		c = cap_start(port, stem, 1 << 20, 0, &lg, lo.packets);
		while (!vfgx_port_rx_done(port, 0) && lg.n < lo.packets - 200) {
			int n = 0;

			/* up to three bursts; an empty poll lets the capture
			 * give back what the writer wrote */
			while (n < 192) {
				int got = vfgx_port_rx_burst(port, 0, pk + n, 64);

				assert_true(got >= 0);
				if (!got)
					break;
				n += got;
			}
			if (!n) {
				assert_true(++empty < 200000000ull);
				continue;
			}
			empty = 0;
			log_burst(&lg, pk, n);
			for (int i = 0; i < n; i++)
				rev[i] = pk[n - 1 - i];
			vfgx_port_release(port, 0, rev, (uint16_t)n);
		}
		cap_finish(c, stem, &lg, &st);
		poll_release(port, NULL, 0);
		if (use_pool)
			assert_pool_whole(pool);
		vfgx_port_close(port);
		vfgx_pool_destroy(pool);
		free(lg.hash);
		free(lg.len);
	}
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	return vfgx_ctx_create(&ctx);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	vfgx_ctx_destroy(ctx);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(capture_two_threads),
		cmocka_unit_test(capture_snaplen_and_sample),
		cmocka_unit_test(capture_pcapng),
		cmocka_unit_test(capture_wraps),
		cmocka_unit_test(capture_by_ref_replay),
		cmocka_unit_test(capture_by_ref_bound),
		cmocka_unit_test(capture_by_ref_reversed),
		cmocka_unit_test(capture_errors),
		cmocka_unit_test(pcap_port_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
