/* pcap.c - the pcap port: a capture file as a finite source.  libpcap reads
 * pcap and pcapng (nanosecond timestamps either way).  The whole file is
 * read once at open, so a truncated or corrupt file, a link type the
 * pipeline cannot parse or timestamps going backwards are said before the
 * run starts, in one line naming the file; then rx_burst reads it again,
 * lap after lap, copying each record into a pool buffer, fast, at the
 * recorded timing or at a rate.  Loops rewrite sequence numbers (lap k adds
 * k x span, checksums updated incrementally) or keep them.  With
 * pcap.preload the file is read into the pool once instead, and rx only
 * hands its buffers out (pcap_preload.c). */
#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vfgx/pcap.h>

#include "backend.h"
#include "capture_open.h"
#include "pcap_opts.h"
#include "pcap_priv.h"
#include "seqhdr.h"


/* Recorded or rate timing: no record is due later than this after the
 * first rx_burst (about 146 years), so the due time's float-to-integer
 * conversion stays in range; pc_open refuses a file, loops and speed that
 * would need more. */
#define PC_DUE_MAX_NS 4611686018427387904.0 /* 2^62 */

/* libpcap reads a record at a time through stdio, whose buffer is
 * st_blksize (a 4 KiB read(2) for every 2.7 records of 1500 B): a larger
 * one makes a read(2) per 700 of them.  Measured on a loaded 2-core EPYC
 * (#38): libpcap alone 1.6-1.9 -> 2.8 Mpps per CPU-second; this port
 * (open, scan and one replay of 174k RFC 4175 records) 0.58-0.72 ->
 * 0.92-1.20. */
#define PC_STDIO_BUF (1u << 20)

int vfgx_pcap_info(vfgx_port *port, struct vfgx_pcap_info *info)
{
	memset(info, 0, sizeof(*info));
	if (!port || port->ops != &vfgx_pcap_ops)
		return -EINVAL;
	*info = ((struct pc_priv *)port->priv)->info;
	return 0;
}

uint64_t vfgx_pc_ts_ns(const struct pcap_pkthdr *h)
{
	/* a time before 1970 (libpcap reads pcap's 32-bit seconds signed)
	 * counts as 0, one past 2^64 ns (pcapng's 64-bit stamps) as 2^64 - 1,
	 * never a wrapped product: pc_check_timing refuses such spans */
	if (h->ts.tv_sec < 0)
		return 0;
	if ((uint64_t)h->ts.tv_sec >= UINT64_MAX / 1000000000ull)
		return UINT64_MAX;
	/* opened with nanosecond precision: tv_usec holds nanoseconds */
	return (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;
}

int vfgx_port_input_file(vfgx_port *port, struct stat *st, const char **path)
{
	struct pc_priv *pp;

	if (!port || port->ops != &vfgx_pcap_ops)
		return -ENOENT;
	pp = port->priv;
	*st = pp->file_st;
	*path = pp->file;
	return 0;
}

/* The file as a stream for libpcap.  Only a regular file: opened
 * O_NONBLOCK, so a FIFO without a writer cannot hold the open (nor the
 * run's start, where SIGINT is not yet the run's), and refused after. */
int vfgx_pc_open_file(struct vfgx_port *port, struct pc_priv *pp, pcap_t **out,
		      char **vbuf)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	int fd = open(pp->file, O_RDONLY | O_NONBLOCK | O_CLOEXEC), e;
	struct stat st;
	FILE *f;
	pcap_t *p;

	if (fd < 0) {
		e = errno;
		return vfgx_set_error(port->ctx, -e, "%s: pcap file %s: %s", port->name,
				      pp->file, strerror(e));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: pcap file %s is not a regular file (a FIFO, device, socket or directory): the pcap port reads capture files (name one in pcap.file)",
				      port->name, pp->file);
	}
	if (fcntl(fd, F_SETFL, O_RDONLY) < 0 || !(f = fdopen(fd, "rb"))) {
		e = errno;
		close(fd);
		return vfgx_set_error(port->ctx, -e, "%s: pcap file %s: %s", port->name,
				      pp->file, strerror(e));
	}
	pp->file_st = st;
	/* without memory for it, stdio's own buffer does */
	*vbuf = malloc(PC_STDIO_BUF);
	if (*vbuf && setvbuf(f, *vbuf, _IOFBF, PC_STDIO_BUF)) {
		free(*vbuf);
		*vbuf = NULL;
	}
	/* p owns f from here (the buffer stays ours, freed after
	 * pcap_close); a failed open leaves f to us */
	p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, err);
	if (!p) {
		fclose(f);
		free(*vbuf);
		*vbuf = NULL;
		return vfgx_set_error(port->ctx, -EINVAL, "%s: pcap file %s: %s", port->name,
				      pp->file, err);
	}
	*out = p;
	return 0;
}

/* Whether a UDP payload of more than vfgx's header is a frame of vfgx's
 * generator: its body the payload pattern of its stream and sequence
 * (sequences: auto). */
static bool pc_generated(const uint8_t *pay, uint32_t len)
{
	return vfgx_pattern_ok(vfgx_rd32(pay), vfgx_rd64(pay + 8), pay + VFGX_APP_HLEN,
			       len - VFGX_APP_HLEN);
}

/* The first read: every record must come out whole; link type, span and
 * timestamps noted. */
static int pc_scan(struct vfgx_port *port, struct pc_priv *pp, struct pc_load *ld)
{
	struct pcap_pkthdr *h;
	const u_char *d;
	uint64_t prev = 0, maxseq = 0, bodied = 0, ours = 0;
	bool any_seq = false;
	char *vbuf = NULL;
	pcap_t *p;
	int r, ret;

	if ((ret = vfgx_pc_open_file(port, pp, &p, &vbuf)))
		return ret;
	pp->info.linktype = pcap_datalink(p);
	if (pp->info.linktype != DLT_EN10MB) {
		const char *n = pcap_datalink_val_to_name(pp->info.linktype);

		ret = vfgx_set_error(port->ctx, -EINVAL,
				     "%s: pcap file %s: link type %d (%s) is not Ethernet: the pipeline parses Ethernet frames only",
				     port->name, pp->file, pp->info.linktype, n ? n : "unknown");
		pcap_close(p);
		free(vbuf);
		return ret;
	}
	while ((r = pcap_next_ex(p, &h, &d)) == 1) {
		uint64_t t = vfgx_pc_ts_ns(h);
		struct vfgx_parsed ps;
		int need;

		if (pp->info.records == 0)
			pp->ts_first = t;
		else if (t < prev)
			pp->info.ts_backwards++;
		prev = t;
		if (t > pp->ts_last)
			pp->ts_last = t;
		pp->info.records++;
		if (ld && (ret = vfgx_pc_pre_add(port, pp, ld, h, d))) {
			pcap_close(p);
			free(vbuf);
			return ret;
		}
		if (vfgx_parse_headers(d, h->caplen, &ps, &need) == VFGX_STAGE_PASS &&
		    ps.payload_len >= VFGX_APP_HLEN) {
			uint64_t s = vfgx_rd64(d + ps.payload_off + 8);

			any_seq = true;
			if (s > maxseq)
				maxseq = s;
			if (ps.payload_len > VFGX_APP_HLEN) {
				bodied++;
				ours += pc_generated(d + ps.payload_off, ps.payload_len);
			}
		}
	}
	if (r == PCAP_ERROR) {
		ret = vfgx_set_error(port->ctx, -EINVAL,
				     "%s: pcap file %s: record %llu: %s",
				     port->name, pp->file,
				     (unsigned long long)pp->info.records + 1, pcap_geterr(p));
		pcap_close(p);
		free(vbuf);
		return ret;
	}
	pcap_close(p);
	free(vbuf);
	pp->info.span = any_seq ? maxseq + 1 : 0;
	if (pp->o.sequences == VFGX_PCAP_AUTO)
		pp->o.sequences = ours && ours * 2 >= bodied ? VFGX_PCAP_REWRITE : VFGX_PCAP_KEEP;
	if (pp->o.sequences == VFGX_PCAP_KEEP)
		pp->info.span = 0;
	if (pp->info.ts_backwards)
		vfgx_warn(port->ctx, "%s: pcap file %s: %llu records are older than the one before (recorded timing sends them at once)",
			  port->name, pp->file, (unsigned long long)pp->info.ts_backwards);
	if (pp->info.records > 1) {
		uint64_t span = pp->ts_last - pp->ts_first;

		uint64_t gap = span / (pp->info.records - 1);

		/* saturated: pc_check_timing refuses such a lap anyway */
		pp->lap_ns = span > UINT64_MAX - gap ? UINT64_MAX : span + gap;
	}
	if (pp->info.records == 0)
		vfgx_warn(port->ctx, "%s: pcap file %s holds no packets", port->name, pp->file);
	return 0;
}

static void pc_close(struct vfgx_port *port)
{
	struct pc_priv *pp = port->priv;

	if (pp->rd)
		pcap_close(pp->rd);
	pp->rd = NULL;
	free(pp->rd_buf);
	pp->rd_buf = NULL;
	vfgx_pc_pre_free(pp);
	if (pp->own_pool) {
		vfgx_pool_destroy(port->rx_pools[0]);
		port->rx_pools[0] = NULL;
	}
}

/* When the last record of the last lap is due, in ns after the start, as
 * pc_due computes it; it must stay below PC_DUE_MAX_NS (a timestamp far
 * in the future, a slow speed or many laps would need more). */
static int pc_check_timing(struct vfgx_port *port, struct pc_priv *pp)
{
	double last;

	if (pp->o.timing == VFGX_PCAP_FAST || !pp->info.records)
		return 0;
	if (pp->o.timing == VFGX_PCAP_RATE)
		last = (double)pp->info.records * (double)pp->o.loops * 1e9 / pp->o.rate_pps;
	else
		last = ((double)(pp->o.loops - 1) * (double)pp->lap_ns +
			(double)(pp->ts_last - pp->ts_first)) / pp->o.speed;
	if (last < PC_DUE_MAX_NS)
		return 0;
	if (pp->o.timing == VFGX_PCAP_RATE)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: pcap file %s: %llu records x %llu loops at %g pps would take more than 100 years (raise pcap.rate_pps or lower pcap.loops)",
				      port->name, pp->file, (unsigned long long)pp->info.records,
				      (unsigned long long)pp->o.loops, pp->o.rate_pps);
	return vfgx_set_error(port->ctx, -EINVAL,
			      "%s: pcap file %s: its timestamps span %.0f s (a record far in the future?); at speed %g over %llu loops, timing: recorded would take more than 100 years (use pcap.timing: fast or rate)",
			      port->name, pp->file, (double)(pp->ts_last - pp->ts_first) / 1e9,
			      pp->o.speed, (unsigned long long)pp->o.loops);
}

static int pc_open(struct vfgx_port *port, const struct vfgx_port_conf *conf)
{
	struct pc_priv *pp = port->priv;
	int ret;

	if ((ret = vfgx_pcap_opts_get(port->ctx, port->name, conf, &pp->o)))
		return ret;
	pp->file = pp->o.file ? pp->o.file : conf->address;
	if (!pp->file || !pp->file[0])
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: pcap port needs a file (pcap.file or the interface's address)",
				      port->name);
	if (port->nb_rx_queues != 1)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: a pcap port reads one file into one rx queue (it has %u)",
				      port->name, port->nb_rx_queues);
	if (pp->o.timing == VFGX_PCAP_RATE && pp->o.rate_pps <= 0)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: pcap timing: rate needs pcap.rate_pps above 0",
				      port->name);
	if (pp->o.preload && port->rx_pools[0]) {
		/* a queue's region: the records go in as the scan reads them */
		struct pc_load ld;

		if ((ret = vfgx_pc_pre_begin(port, pp, &ld)))
			return ret;
		ret = vfgx_pc_pre_end(port, pp, &ld, pc_scan(port, pp, &ld));
		if (!ret && (ret = pc_check_timing(port, pp)))
			pc_close(port);
		return ret;
	}
	if ((ret = pc_scan(port, pp, NULL)) || (ret = pc_check_timing(port, pp)))
		return ret;
	if (!port->rx_pools[0]) {
		/* preload: a buffer a record at least */
		uint64_t nb = pp->o.preload && pp->info.records > pp->o.num_bufs ?
				      pp->info.records : pp->o.num_bufs;

		if (nb > UINT32_MAX)
			return vfgx_set_error(port->ctx, -EINVAL,
					      "%s: pcap.preload: %s holds %llu records, more than a pool's buffers can count",
					      port->name, pp->file, (unsigned long long)nb);
		ret = vfgx_pool_create(port->ctx, NULL, pp->o.buf_size, (uint32_t)nb,
				       &port->rx_pools[0]);
		if (ret)
			return ret;
		pp->own_pool = true;
	} else if (!pp->o.preload &&
		   vfgx_region_info(vfgx_pool_region(port->rx_pools[0]))->kind == VFGX_MEM_GPU) {
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: the pcap port copies packets with the CPU; its queue's region is GPU memory (use host or pinned, or pcap.preload: true)",
				      port->name);
	}
	if (pp->o.preload && (ret = vfgx_pc_preload(port, pp)))
		pc_close(port); /* the pool made above */
	return ret;
}

static void pc_release(struct vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		       uint16_t n)
{
	if (((struct pc_priv *)port->priv)->pre)
		vfgx_pc_pre_release(port, q, pkts, n);
	else
		vfgx_port_release_to_pool(port, q, pkts, n);
}

/* When the next record is due, relative to the first rx_burst. */
static uint64_t pc_due(const struct pc_priv *pp)
{
	uint64_t lap = pp->info.laps ? pp->info.laps - 1 : 0;

	double off;

	if (pp->o.timing == VFGX_PCAP_RATE) {
		off = (double)pp->info.read * 1e9 / pp->o.rate_pps;
	} else {
		/* recorded: a record older than the first goes at once */
		uint64_t t = pp->cur.ts;

		off = ((double)(t > pp->ts_first ? t - pp->ts_first : 0) +
		       (double)lap * (double)pp->lap_ns) / pp->o.speed;
	}
	/* pc_check_timing kept every record below the bound; the clamp keeps
	 * the conversion defined whatever the file became since */
	if (!(off < PC_DUE_MAX_NS))
		off = PC_DUE_MAX_NS;
	return pp->t0_ns + (uint64_t)off;
}

/* The next record into pp->cur/pdata: a new lap when one ends; false when
 * the last lap ended (or a read failed: said once, the port ends). */
static bool pc_next(struct vfgx_port *port, struct pc_priv *pp)
{
	int r;

	for (;;) {
		if (!pp->rd) {
			if (pp->info.laps == pp->o.loops || !pp->info.records ||
			    vfgx_pc_open_file(port, pp, &pp->rd, &pp->rd_buf))
				return false;
			pp->info.laps++;
			pp->rec = 0;
		}
		struct pcap_pkthdr *ph;

		r = pcap_next_ex(pp->rd, &ph, &pp->pdata);
		if (r == 1) {
			pp->cur = (struct pc_rec){ vfgx_pc_ts_ns(ph), ph->caplen, ph->len };
			pp->rec++;
			return true;
		}
		if (r == PCAP_ERROR) /* the file changed since open */
			vfgx_warn(port->ctx, "%s: pcap file %s: lap %llu record %llu: %s",
				  port->name, pp->file, (unsigned long long)pp->info.laps,
				  (unsigned long long)pp->rec + 1, pcap_geterr(pp->rd));
		pcap_close(pp->rd);
		pp->rd = NULL;
		free(pp->rd_buf);
		pp->rd_buf = NULL;
		if (r == PCAP_ERROR)
			return false;
	}
}

static int pc_rx_burst(struct vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
		       uint16_t max)
{
	struct pc_priv *pp = port->priv;
	vfgx_pool *pool = port->rx_pools[q];
	uint32_t cap = vfgx_pool_buf_size(pool);
	uint64_t now = vfgx_now_ns();
	uint16_t n = 0;

	if (pp->done)
		return 0;
	if (!pp->t0_ns)
		pp->t0_ns = now;
	while (n < max) {
		void *b;

		if (!pp->have_pending) {
			if (!(pp->pre ? vfgx_pc_pre_next(pp) : pc_next(port, pp))) {
				pp->done = true;
				break;
			}
			pp->have_pending = true;
		}
		if (pp->o.timing != VFGX_PCAP_FAST && pc_due(pp) > now)
			break;
		if (pp->cur.caplen > cap) {
			pp->st.drops[VFGX_DROP_TOO_BIG]++;
			pp->info.too_big++;
			pp->info.read++;
			pp->have_pending = false;
			continue;
		}
		if (pp->pre) {
			/* its buffer, once back from the lap before */
			uint64_t idx = pp->pre_cur;

			if (__atomic_load_n(&pp->held[idx], __ATOMIC_ACQUIRE))
				break;
			__atomic_store_n(&pp->held[idx], 1, __ATOMIC_RELAXED);
			b = pp->pre_base + idx * pp->pre_cap;
		} else {
			if (vfgx_pool_alloc_bulk(pool, &b, 1) < 0)
				break; /* backpressure: the record waits */
			memcpy(b, pp->pdata, pp->cur.caplen);
		}
		if (pp->cur.caplen < pp->cur.len)
			pp->info.snapped++;
		if (pp->o.sequences == VFGX_PCAP_REWRITE && pp->info.laps > 1 &&
		    pp->info.span) {
			struct vfgx_parsed ps;
			int need;

			/* a fresh copy of the record gets every lap before; a
			 * preloaded one (host memory: vfgx_pc_preload refuses the
			 * rewrite in GPU memory) holds the lap before's */
			if (vfgx_parse_headers(b, pp->cur.caplen, &ps, &need) == VFGX_STAGE_PASS &&
			    ps.payload_len >= VFGX_APP_HLEN)
				vfgx_seq_advance((uint8_t *)b + ps.l4_off + 6,
						 pp->pre ? pp->info.span :
							   (pp->info.laps - 1) * pp->info.span);
		}
		pkts[n] = (struct vfgx_pkt){ .data = b, .len = pp->cur.caplen,
					     .handle = b, .ts_ns = now, .queue = q,
					     .flags = pp->pre_gpu ? VFGX_PKT_GPU : 0 };
		pp->st.rx_packets++;
		pp->st.rx_bytes += pp->cur.caplen;
		pp->info.read++;
		pp->have_pending = false;
		n++;
	}
	return n;
}

static int pc_tx_burst(struct vfgx_port *port, uint16_t q, const struct vfgx_pkt *pkts,
		       uint16_t n)
{
	(void)q;
	(void)pkts;
	(void)n;
	return vfgx_set_error(port->ctx, -ENOTSUP, "%s: a pcap port does not send",
			      port->name);
}

static int pc_stats(struct vfgx_port *port, uint16_t q, struct vfgx_queue_stats *st)
{
	struct pc_priv *pp = port->priv;
	struct vfgx_pool_stats ps;

	*st = pp->st;
	vfgx_pool_stats(port->rx_pools[q], &ps);
	st->drops[VFGX_DROP_NOBUFS] = ps.alloc_fail;
	return 0;
}

static bool pc_rx_done(struct vfgx_port *port, uint16_t q)
{
	(void)q;
	return ((struct pc_priv *)port->priv)->done;
}

const struct vfgx_port_ops vfgx_pcap_ops = {
	.name = "pcap",
	.priv_size = sizeof(struct pc_priv),
	.opts_size = sizeof(struct vfgx_pcap_opts),
	.parse = vfgx_pcap_opts_parse,
	.rx_frame_max = vfgx_pcap_frame_max,
	.open = pc_open,
	.rx_burst = pc_rx_burst,
	.release = pc_release,
	.tx_burst = pc_tx_burst,
	.stats = pc_stats,
	.close = pc_close,
	.rx_done = pc_rx_done,
};
