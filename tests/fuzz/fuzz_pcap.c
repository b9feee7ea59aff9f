/* fuzz_pcap.c - libFuzzer target: hostile capture files into the pcap port.
 * The input is written as a file and opened as a pcap port (two laps,
 * sequences rewritten), every record read and released.  Must never crash
 * or read out of bounds: a file libpcap refuses fails the open with one
 * line; records larger than a buffer are too_big drops; frames that do not
 * parse are handed out unchanged (the pipeline counts them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <vfgx/vfgx.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static vfgx_ctx *ctx;
	static char path[64];
	struct vfgx_pcap_opts po;
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "fz", .backend = "pcap",
				     .nb_rx_queues = 1, .burst = 64, .backend_opts = &po.hdr };
	struct vfgx_pkt pk[64];
	vfgx_port *p;
	FILE *f;
	int n, guard = 0;

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
	vfgx_pcap_opts_default(&po);
	po.file = path;
	po.loops = 2;
	po.buf_size = 1024;
	po.num_bufs = 64;
	if (vfgx_port_open(ctx, &pc, &p) == 0) {
		while ((n = vfgx_port_rx_burst(p, 0, pk, 64)) > 0 && ++guard < 100000) {
			for (int i = 0; i < n; i++)
				if (pk[i].len > 1024)
					abort();
			vfgx_port_release(p, 0, pk, (uint16_t)n);
		}
		if (!vfgx_port_rx_done(p, 0))
			abort();
		vfgx_port_close(p);
	}
	unlink(path);
	return 0;
}
