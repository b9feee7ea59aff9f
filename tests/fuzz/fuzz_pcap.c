/* fuzz_pcap.c - libFuzzer target: hostile capture files into the pcap port.
 * The input is written as a file and opened as a pcap port (two laps,
 * sequences rewritten), every record read and released, once read lap by
 * lap and once preloaded (pcap.preload).  Must never crash or read out of
 * bounds: a file libpcap refuses fails the open with one line, either
 * way; records larger than a buffer are too_big drops; frames that do not
 * parse are handed out unchanged (the pipeline counts them); both ways
 * hand out the same records, byte for byte. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <vfgx/vfgx.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Open the file (preloaded or not), read every record of both laps and
 * release it; the records' lengths and bytes hashed (FNV-1a) into *h.
 * The open's result. */
static int read_all(vfgx_ctx *ctx, const char *path, bool preload, uint64_t *h)
{
	struct vfgx_pcap_opts po;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "fz", .backend = "pcap",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &po.hdr };
	struct vfgx_pkt pk[64];
	vfgx_port *p;
	int n, guard = 0, ret;

	vfgx_pcap_opts_default(&po);
	po.file = path;
	po.loops = 2;
	po.sequences = VFGX_PCAP_REWRITE; /* a fuzzed file is rarely vfgx's own (auto) */
	po.buf_size = 1024;
	po.num_bufs = 64;
	po.preload = preload;
	*h = 14695981039346656037ull;
	if ((ret = vfgx_port_open(ctx, &pc, &p)))
		return ret;
	while ((n = vfgx_port_rx_burst(p, 0, pk, 64)) > 0 && ++guard < 100000) {
		for (int i = 0; i < n; i++) {
			if (pk[i].len > 1024)
				abort();
			*h = (*h ^ pk[i].len) * 1099511628211ull;
			for (uint32_t j = 0; j < pk[i].len; j++)
				*h = (*h ^ ((const uint8_t *)pk[i].data)[j]) * 1099511628211ull;
		}
		vfgx_port_release(p, 0, pk, (uint16_t)n);
	}
	if (!vfgx_port_rx_done(p, 0))
		abort();
	vfgx_port_close(p);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static vfgx_ctx *ctx;
	static char path[64];
	uint64_t h_read, h_pre;
	FILE *f;

	if (!ctx) {
		if (vfgx_ctx_create(&ctx))
			abort();
		vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
		snprintf(path, sizeof(path), "/tmp/vfgx-fuzz-pcap.%d", (int)getpid());
	}
	f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	/* the same file both ways: opened alike, the same records */
	if (read_all(ctx, path, false, &h_read) != read_all(ctx, path, true, &h_pre) ||
	    h_read != h_pre)
		abort();
	unlink(path);
	return 0;
}
