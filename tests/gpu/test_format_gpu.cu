/* test_format_gpu.cu - the format rules (vfgx/format.h) give the same
 * answer on the GPU as on the CPU: for every built-in profile, packets
 * built from the profile's layout with random fields, then a quarter of
 * them corrupted (bytes flipped, cut short, lengthened), are decoded one
 * per GPU thread and by the host; sequence extension and placement run
 * in packet order per stream on one GPU thread and on the host.  Every
 * decision (drop reason) and every output field must be equal, and at
 * least one packet per profile must pass and one be dropped (else the
 * comparison proves nothing).  Exit 77 without a GPU. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/format.h>

/* vfgx_format_profile is the library's; this test builds the profiles'
 * packets itself and reads the descriptions from a table filled on the
 * host by the same code the library runs (linked from format.c). */
extern "C" int vfgx_format_profile(const char *name, struct vfgx_format *f);
extern "C" const char *vfgx_fmt_drop_name(int reason);
extern "C" void vfgx_format_index(struct vfgx_format *f);

#define NPKT 4096
#define PKT_MAX 2048
#define NSTREAM 4

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v >> 16); wr16(p + 2, v); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)(v >> 32)); wr32(p + 4, (uint32_t)v); }
static void le32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }

/* One well-formed packet of profile name, packet i; returns its length. */
static uint32_t build(const char *name, uint32_t i, uint8_t *p)
{
	uint32_t stream = i % NSTREAM, seq = i / NSTREAM, n = 16 + rnd() % 200;

	memset(p, 0, PKT_MAX);
	for (uint32_t k = 0; k < PKT_MAX; k++)
		p[k] = (uint8_t)rnd();
	if (!strcmp(name, "vfgx")) {
		wr32(p, stream);
		wr32(p + 4, rnd() % 2);
		wr64(p + 8, 1000 + seq);
		return 16 + n;
	}
	if (!strcmp(name, "rtp") || !strcmp(name, "rtp-video")) {
		uint32_t h = 12;

		p[0] = 0x80;
		p[1] = (uint8_t)((rnd() % 2 ? 0x80 : 0) | 96);
		wr16(p + 2, 65500 + seq);
		wr32(p + 4, 3000 * (seq / 8));
		wr32(p + 8, 0x1000 + stream);
		if (!strcmp(name, "rtp"))
			return h + n;
		wr16(p + 12, 0);
		/* two segments: line seq % 1080 from pixel 0, and the next line */
		wr16(p + 14, 480);
		wr16(p + 16, seq % 1079);
		wr16(p + 18, 0x8000 | 2 * (rnd() % 100));
		wr16(p + 20, 480);
		wr16(p + 22, seq % 1079 + 1);
		wr16(p + 24, 0);
		return 26 + 960;
	}
	if (!strcmp(name, "vita49")) {
		uint32_t words = 1 + 1 + 1 + 2 + n / 4;

		wr32(p, (1u << 28) | (1u << 22) | (2u << 20) | ((seq & 15) << 16) | words);
		wr32(p + 4, stream);
		return words * 4;
	}
	if (!strcmp(name, "ecpri")) {
		p[0] = 0x10;
		p[1] = 0;
		wr16(p + 2, 4 + n);
		wr16(p + 4, stream);
		p[6] = (uint8_t)seq;
		p[7] = 0x80;
		return 8 + n;
	}
	if (!strcmp(name, "spead")) {
		uint64_t size = 4096, off = (seq % 8) * 512;

		memcpy(p, "\x53\x04\x02\x06\x00\x00\x00\x04", 8);
		wr64(p + 8, (1ull << 63) | (1ull << 48) | (100 + seq / 8));
		wr64(p + 16, (1ull << 63) | (2ull << 48) | size);
		wr64(p + 24, (1ull << 63) | (3ull << 48) | off);
		wr64(p + 32, (1ull << 63) | (4ull << 48) | 512);
		return 40 + 512;
	}
	if (!strcmp(name, "vdif")) {
		le32(p, 1000 + seq / 100);
		le32(p + 4, seq % 100);
		le32(p + 8, (2u << 24) | (32 + 64) / 8);
		le32(p + 12, (stream << 16) | 0x4142);
		return 96;
	}
	/* gr-udp, gr-udp-size */
	for (int b = 0; b < 8; b++)
		p[b] = (uint8_t)((uint64_t)(1 + i) >> 8 * b);
	p[8] = (uint8_t)(16 + n);
	p[9] = (uint8_t)((16 + n) >> 8);
	return 16 + n;
}

/* a quarter of the packets: flip bytes, cut short or lengthen */
static uint32_t corrupt(uint8_t *p, uint32_t len)
{
	switch (rnd() % 12) {
	case 1:
		for (int k = 0; k < 3; k++)
			p[rnd() % (len < 48 ? len : 48)] ^= (uint8_t)(1u << rnd() % 8);
		return len;
	case 2:
		return rnd() % len;
	case 3:
		return len + rnd() % 64 < PKT_MAX ? len + rnd() % 64 : len;
	default:
		return len;
	}
}

__global__ void decode_kernel(const struct vfgx_format *f, const uint8_t *pkts,
			      const uint32_t *lens, struct vfgx_fmt_pkt *out, int *why)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	struct vfgx_fmt_pkt o;

	if (i >= NPKT)
		return;
	memset(&o, 0, sizeof(o));
	why[i] = vfgx_fmt_decode(f, pkts + (size_t)i * PKT_MAX, lens[i], &o);
	out[i] = o;
}

/* RTP without stream_ids: the stream index of raw by the table of those
 * seen (vfgx_fmt_learn_entry, as both engines look it up) */
__host__ __device__ static uint32_t learn(const struct vfgx_format *f, uint64_t *table,
					  uint64_t raw)
{
	int32_t at = -1;

	for (uint32_t k = 0; k < NSTREAM && at < 0; k++) {
		int e = vfgx_fmt_learn_entry(table[k], raw);

		if (e == VFGX_FMT_LEARN_FREE)
			table[k] = raw + 1;
		if (e != VFGX_FMT_LEARN_NEXT)
			at = (int32_t)k;
	}
	return vfgx_fmt_learned_stream(f, at);
}

/* extension and placement in packet order, as an engine's per-stream
 * step: one thread; learned SSRCs first (in arrival order) */
__global__ void order_kernel(const struct vfgx_format *f, struct vfgx_seq_state *st,
			     struct vfgx_fmt_pkt *out, int *why)
{
	uint64_t table[NSTREAM] = { 0 };

	for (uint32_t i = 0; i < NPKT; i++) {
		if (vfgx_fmt_learns(f) && (why[i] == VFGX_FD_OK || why[i] == VFGX_FD_BAD_STREAM)) {
			out[i].stream = learn(f, table, out[i].stream_raw);
			why[i] = out[i].stream == UINT32_MAX ? VFGX_FD_BAD_STREAM : VFGX_FD_OK;
		}
		if (why[i] != VFGX_FD_OK)
			continue;
		why[i] = vfgx_seq_extend(f, &st[out[i].stream % NSTREAM], out[i].seq,
					 &out[i].ext_seq);
		if (why[i] == VFGX_FD_OK)
			why[i] = vfgx_fmt_place(f, &out[i]);
	}
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

/* --host-only: the host half alone (the packets' pass/drop mix), where
 * no GPU is */
int main(int argc, char **argv)
{
	int host_only = argc > 1 && !strcmp(argv[1], "--host-only");
	/* "rtp+learn", "rtp-video+learn": without stream_ids (SSRCs learned);
	 * "rtp+hash": the ids looked up by their hash index (turned on for
	 * these few, as for more than VFGX_FMT_IDS_IN_ORDER) */
	static const char *const profiles[] = { "vfgx", "rtp", "rtp-video", "vita49", "ecpri",
		"spead", "vdif", "gr-udp", "gr-udp-size", "rtp+learn", "rtp-video+learn",
		"rtp+hash", "rtp-video+hash" };
	static uint8_t pkts[NPKT * PKT_MAX];
	static uint32_t lens[NPKT];
	static struct vfgx_fmt_pkt host[NPKT], dev[NPKT];
	static int why_h[NPKT], why_d[NPKT];
	int ndev = 0, failed = 0;
	struct vfgx_format *d_f = NULL;
	struct vfgx_seq_state *d_st = NULL;
	struct vfgx_fmt_pkt *d_out = NULL;
	uint8_t *d_pkts = NULL;
	uint32_t *d_lens = NULL;
	int *d_why = NULL;

	if (!host_only && (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	if (!host_only) {
		CK(cudaMalloc(&d_f, sizeof(struct vfgx_format)));
		CK(cudaMalloc(&d_st, NSTREAM * sizeof(struct vfgx_seq_state)));
		CK(cudaMalloc(&d_out, sizeof(host)));
		CK(cudaMalloc(&d_pkts, sizeof(pkts)));
		CK(cudaMalloc(&d_lens, sizeof(lens)));
		CK(cudaMalloc(&d_why, sizeof(why_h)));
	}
	for (size_t pi = 0; pi < sizeof(profiles) / sizeof(profiles[0]); pi++) {
		struct vfgx_format f;
		struct vfgx_seq_state st[NSTREAM];
		uint64_t table[NSTREAM] = { 0 };
		uint32_t pass = 0, drop = 0, differ = 0;
		char base[32];
		bool learned = strstr(profiles[pi], "+learn") != NULL;

		snprintf(base, sizeof(base), "%.*s", (int)strcspn(profiles[pi], "+"), profiles[pi]);
		if (vfgx_format_profile(base, &f))
			return 1;
		f.seq_major_mult = 100;
		f.max_streams = NSTREAM; /* corrupted stream ids reach past */
		if ((f.layout == VFGX_FMT_RTP || f.layout == VFGX_FMT_RFC4175) && !learned) {
			f.n_stream_ids = NSTREAM; /* SSRCs 0x1000.. */
			for (uint32_t k = 0; k < NSTREAM; k++)
				f.stream_ids[k] = 0x1000 + k;
			vfgx_format_index(&f); /* as the engines */
			if (strstr(profiles[pi], "+hash"))
				f.stream_index = 1;
		}
		for (uint32_t i = 0; i < NPKT; i++) {
			lens[i] = build(base, i, pkts + (size_t)i * PKT_MAX);
			lens[i] = corrupt(pkts + (size_t)i * PKT_MAX, lens[i]);
		}
		/* host */
		memset(st, 0, sizeof(st));
		memset(host, 0, sizeof(host));
		for (uint32_t i = 0; i < NPKT; i++) {
			why_h[i] = vfgx_fmt_decode(&f, pkts + (size_t)i * PKT_MAX, lens[i], &host[i]);
		}
		for (uint32_t i = 0; i < NPKT; i++) {
			if (vfgx_fmt_learns(&f) &&
			    (why_h[i] == VFGX_FD_OK || why_h[i] == VFGX_FD_BAD_STREAM)) {
				host[i].stream = learn(&f, table, host[i].stream_raw);
				why_h[i] = host[i].stream == UINT32_MAX ? VFGX_FD_BAD_STREAM : VFGX_FD_OK;
			}
			if (why_h[i] != VFGX_FD_OK)
				continue;
			why_h[i] = vfgx_seq_extend(&f, &st[host[i].stream % NSTREAM], host[i].seq,
						   &host[i].ext_seq);
			if (why_h[i] == VFGX_FD_OK)
				why_h[i] = vfgx_fmt_place(&f, &host[i]);
		}
		if (host_only) {
			for (uint32_t i = 0; i < NPKT; i++)
				why_h[i] == VFGX_FD_OK ? pass++ : drop++;
			printf("host %-12s %u passed, %u dropped\n", profiles[pi], pass, drop);
			failed += !pass || !drop;
			continue;
		}
		/* device */
		CK(cudaMemcpy(d_f, &f, sizeof(f), cudaMemcpyHostToDevice));
		CK(cudaMemset(d_st, 0, NSTREAM * sizeof(struct vfgx_seq_state)));
		CK(cudaMemcpy(d_pkts, pkts, sizeof(pkts), cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d_lens, lens, sizeof(lens), cudaMemcpyHostToDevice));
		decode_kernel<<<NPKT / 128, 128>>>(d_f, d_pkts, d_lens, d_out, d_why);
		CK(cudaGetLastError());
		order_kernel<<<1, 1>>>(d_f, d_st, d_out, d_why);
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(dev, d_out, sizeof(dev), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(why_d, d_why, sizeof(why_d), cudaMemcpyDeviceToHost));
		for (uint32_t i = 0; i < NPKT; i++) {
			if (why_h[i] != why_d[i] || memcmp(&host[i], &dev[i], sizeof(host[i]))) {
				if (differ++ < 3)
					printf("     %s packet %u: host %s, gpu %s\n", profiles[pi], i,
					       vfgx_fmt_drop_name(why_h[i]), vfgx_fmt_drop_name(why_d[i]));
			}
			if (why_h[i] == VFGX_FD_OK)
				pass++;
			else
				drop++;
		}
		printf("%s %-12s %u packets: %u passed, %u dropped, %u differ\n",
		       differ || !pass || !drop ? "FAIL" : "ok  ", profiles[pi], NPKT, pass, drop,
		       differ);
		failed += differ || !pass || !drop;
	}
	return failed ? 1 : 0;
}
