/* format.c - `vfgx format`: list the built-in header profiles, and decode
 * a capture's UDP payloads with one (the same VFGX_HD rules the engines
 * run), one line per packet, then the drop counts per reason. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/core.h>
#include <vfgx/format.h>
#include <vfgx/stages.h>

#include "cliopt.h"
#include "commands.h"
#include "vfgx_build.h"

#if VFGX_HAVE_PCAP
#include <pcap/pcap.h>
#endif

static const struct cli_opt format_opts[] = {
	{ "profile", 'p', "NAME", "a built-in profile (vfgx format list names them)" },
	{ "config", 'c', "FILE", "a YAML file with pipeline.format (or format:, or the keys at its top)" },
	{ "port", 'P', "PORT", "only UDP packets to this destination port" },
	{ "summary", 's', NULL, "only the counts, no line per packet" },
	{ "write", 'w', "FILE", "assemble chunks by the placement rule and write each, in arrival order, up to its last byte placed" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_cli_format = {
	.name = "format",
	.operands = "list | decode FILE.pcap",
	.summary = "list header profiles; decode a capture with one",
	.more = "  decode prints per UDP packet: frame number, stream id as sent and its\n"
		"  index, extended sequence, sequence as sent, timestamp, payload offset\n"
		"  and length, end flag, chunk and the first piece's byte offset in it;\n"
		"  or the drop reason.  Then one line of counts.\n",
	.opts = format_opts,
};

/* Extension state per stream, keyed by the stream's index. */
#define FMT_CLI_STREAMS 1024
struct stream_slot {
	uint64_t raw;
	int used;
	struct vfgx_seq_state st;
};

struct decoder {
	struct vfgx_format f;
	uint16_t port;
	int summary;
	uint64_t frames, non_udp, decoded;
	uint64_t drops[VFGX_FD_MAX];
	struct stream_slot slots[FMT_CLI_STREAMS];
	/* --write: the chunk being assembled */
	FILE *out;
	uint8_t *chunk;
	uint64_t chunk_cap, chunk_id, chunk_hi;
	int chunk_open, write_failed;
};

static int chunk_flush(struct decoder *d)
{
	int ret = 0;

	if (d->chunk_open && d->chunk_hi &&
	    fwrite(d->chunk, 1, d->chunk_hi, d->out) != d->chunk_hi)
		ret = -EIO;
	d->chunk_open = 0;
	d->chunk_hi = 0;
	return ret;
}

/* Copy o's pieces into the chunk buffer at their placed offsets; the rules
 * have checked that each ends inside chunk_cap bytes. */
static int chunk_write(struct decoder *d, const uint8_t *p, const struct vfgx_fmt_pkt *o)
{
	if (d->chunk_open && o->chunk != d->chunk_id && chunk_flush(d))
		return -EIO;
	if (!d->chunk_open) {
		memset(d->chunk, 0, d->chunk_cap);
		d->chunk_open = 1;
		d->chunk_id = o->chunk;
	}
	for (uint32_t i = 0; i < o->nseg; i++) {
		const struct vfgx_fmt_seg *s = &o->seg[i];

		if (s->dst_off + s->len > d->chunk_cap)
			abort(); /* the rules' promise broken: never write past */
		memcpy(d->chunk + s->dst_off, p + s->src_off, s->len);
		if (s->dst_off + s->len > d->chunk_hi)
			d->chunk_hi = s->dst_off + s->len;
	}
	return o->end ? chunk_flush(d) : 0;
}

static struct vfgx_seq_state *state_of(struct decoder *d, uint64_t raw)
{
	uint32_t h = (uint32_t)(raw * 0x9e3779b97f4a7c15ull >> 54) % FMT_CLI_STREAMS;

	for (uint32_t i = 0; i < FMT_CLI_STREAMS; i++) {
		struct stream_slot *s = &d->slots[(h + i) % FMT_CLI_STREAMS];

		if (s->used && s->raw == raw)
			return &s->st;
		if (!s->used) {
			s->used = 1;
			s->raw = raw;
			return &s->st;
		}
	}
	return NULL;
}

static void decode_payload(struct decoder *d, uint64_t frame, const uint8_t *p,
			   uint32_t len)
{
	struct vfgx_fmt_pkt o = { 0 };
	struct vfgx_seq_state *st;
	int r = vfgx_fmt_decode(&d->f, p, len, &o);

	if (r == VFGX_FD_OK) {
		st = state_of(d, o.stream_raw);
		r = st ? vfgx_seq_extend(&d->f, st, o.seq, &o.ext_seq) : VFGX_FD_BAD_STREAM;
	}
	if (r == VFGX_FD_OK)
		r = vfgx_fmt_place(&d->f, &o);
	if (r != VFGX_FD_OK) {
		d->drops[r]++;
		if (!d->summary)
			printf("%" PRIu64 "\tdrop\t%s\n", frame, vfgx_fmt_drop_name(r));
		return;
	}
	d->decoded++;
	if (d->out && chunk_write(d, p, &o))
		d->write_failed = 1;
	if (d->summary)
		return;
	printf("%" PRIu64 "\t%" PRIu64 "\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
	       "\t%u\t%u\t%u\t%" PRIu64 "\t%" PRIu64 "\n",
	       frame, o.stream_raw, o.stream, o.ext_seq, o.seq, o.timestamp,
	       o.payload_off, o.payload_len, o.end, o.chunk,
	       o.nseg ? o.seg[0].dst_off : 0);
}

#if VFGX_HAVE_PCAP
/* The link layer's bytes before an Ethernet-like frame, or -1 when the
 * capture's link type is not one vfgx reads. */
static int decode_pcap(struct decoder *d, const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	pcap_t *pc = pcap_open_offline(path, err);
	int link, rc;

	if (!pc) {
		fprintf(stderr, "vfgx format decode: %s: %s\n", cli_esc(path), err);
		return 1;
	}
	link = pcap_datalink(pc);
	if (link != DLT_EN10MB && link != DLT_LINUX_SLL) {
		fprintf(stderr, "vfgx format decode: %s: link type %s; Ethernet or Linux cooked captures only\n",
			cli_esc(path), pcap_datalink_val_to_name(link));
		pcap_close(pc);
		return 1;
	}
	if (!d->summary)
		printf("#frame\tstream\tindex\text_seq\tseq\ttimestamp\tpayload_off\tpayload_len\tend\tchunk\tbyte_off\n");
	while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
		uint8_t buf[65536 + 16];
		const uint8_t *f = data;
		uint32_t len = h->caplen;
		struct vfgx_parsed ps;
		int csum;

		d->frames++;
		if (link == DLT_LINUX_SLL) {
			/* 16-byte cooked header ending in the protocol: make it
			 * look like Ethernet (12 address bytes, then the type) */
			if (len < 16 || len - 2 > sizeof(buf)) {
				d->non_udp++;
				continue;
			}
			memset(buf, 0, 12);
			memcpy(buf + 12, data + 14, len - 14);
			f = buf;
			len -= 2;
		}
		if (vfgx_parse_headers(f, len, &ps, &csum) != VFGX_STAGE_PASS ||
		    (d->port && ps.dst_port != d->port)) {
			d->non_udp++;
			continue;
		}
		decode_payload(d, d->frames, f + ps.payload_off, ps.payload_len);
	}
	if (rc == -1)
		fprintf(stderr, "vfgx format decode: %s: %s\n", cli_esc(path), pcap_geterr(pc));
	pcap_close(pc);
	return rc == -1;
}
#else
static int decode_pcap(struct decoder *d, const char *path)
{
	(void)d;
	fprintf(stderr, "vfgx format decode: %s: this build has no libpcap (libpcap-dev)\n",
		cli_esc(path));
	return 1;
}
#endif

static int list_profiles(void)
{
	static const char *const layouts[] = { "fixed", "rtp", "rfc4175", "vita49", "spead" };
	static const char *const places[] = { "slot", "offset", "lines", "user" };
	struct vfgx_format f;
	const char *n;

	for (unsigned i = 0; (n = vfgx_format_profile_name(i)); i++) {
		vfgx_format_profile(n, &f);
		printf("%-12s layout %-8s header %2u B  sequence %2u bits  place %s\n", n,
		       layouts[f.layout], f.header_len, f.seq_bits, places[f.place]);
	}
	return 0;
}

int vfgx_cmd_format(int argc, char **argv)
{
	struct decoder *d = calloc(1, sizeof(*d));
	const char *profile = NULL, *config = NULL, *write_path = NULL;
	vfgx_ctx *ctx = NULL;
	uint32_t port = 0;
	int c, ret = 2;

	if (!d)
		return 1;
	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_cli_format)) != -1) {
		switch (c) {
		case 'p':
			profile = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'P':
			if (vfgx_flag_u32("format", "--port", optarg, 1, 65535, &port))
				goto out;
			break;
		case 's':
			d->summary = 1;
			break;
		case 'w':
			write_path = optarg;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_cli_format);
			ret = 0;
			goto out;
		default:
			goto out;
		}
	}
	if (optind < argc && !strcmp(argv[optind], "list")) {
		ret = optind + 1 < argc ? cli_bad_operands(&vfgx_cli_format, argv[optind + 1])
					: list_profiles();
		goto out;
	}
	if (optind >= argc || strcmp(argv[optind], "decode") || optind + 2 != argc) {
		fprintf(stderr, "vfgx format: expected 'list' or 'decode FILE.pcap' (vfgx format --help)\n");
		goto out;
	}
	if (profile && config) {
		fprintf(stderr, "vfgx format decode: --profile and --config both given; a config names its profile itself\n");
		goto out;
	}
	if (vfgx_ctx_create(&ctx)) {
		ret = 1;
		goto out;
	}
	if (config) {
		if (vfgx_format_load_file(ctx, config, &d->f)) {
			fprintf(stderr, "vfgx format decode: %s\n", vfgx_last_error(ctx));
			goto out;
		}
		if (d->f.place == VFGX_FMT_PLACE_USER) {
			fprintf(stderr, "vfgx format decode: %s: place user: a user placement function places these packets, and decode reads the description alone (run the config with vfgx run)\n",
				cli_esc(config));
			goto out;
		}
	} else if (vfgx_format_profile(profile ? profile : "vfgx", &d->f)) {
		fprintf(stderr, "vfgx format decode: --profile %s: unknown (vfgx format list names them)\n",
			cli_esc(profile));
		goto out;
	} else if (vfgx_format_check(ctx, &d->f, 65507, 0)) {
		fprintf(stderr, "vfgx format decode: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	d->port = (uint16_t)port;
	if (write_path) {
		d->chunk_cap = d->f.place == VFGX_FMT_PLACE_SLOT
				       ? (uint64_t)d->f.packets * d->f.payload_bytes
				       : d->f.chunk_bytes;
		if (d->chunk_cap > (1ull << 32) || !(d->chunk = malloc(d->chunk_cap))) {
			fprintf(stderr, "vfgx format decode: --write: a chunk of %" PRIu64 " bytes is too large to assemble here\n",
				d->chunk_cap);
			ret = 1;
			goto out;
		}
		if (!(d->out = fopen(write_path, "wb"))) {
			fprintf(stderr, "vfgx format decode: %s: %s\n", cli_esc(write_path), strerror(errno));
			ret = 1;
			goto out;
		}
	}
	ret = decode_pcap(d, argv[optind + 1]);
	if (d->out) {
		if (chunk_flush(d) || d->write_failed || fclose(d->out)) {
			fprintf(stderr, "vfgx format decode: %s: write failed\n", cli_esc(write_path));
			ret = 1;
		}
		d->out = NULL;
	}
	if (ret == 0) {
		printf("# frames %" PRIu64 " not_udp %" PRIu64 " decoded %" PRIu64, d->frames,
		       d->non_udp, d->decoded);
		for (int r = 1; r < VFGX_FD_MAX; r++)
			printf(" %s %" PRIu64, vfgx_fmt_drop_name(r), d->drops[r]);
		printf("\n");
	}
out:
	if (ctx)
		vfgx_ctx_destroy(ctx);
	if (d->out)
		fclose(d->out);
	free(d->chunk);
	free(d);
	return ret;
}
