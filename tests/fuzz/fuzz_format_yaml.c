/* fuzz_format_yaml.c - libFuzzer target: hostile pipeline.format YAML.
 * The loader must answer 0 or a negative errno with one error line, never
 * crash or leak; a description it accepts must pass vfgx_format_check on
 * its own terms, and the rules under it must keep a packet's pieces
 * inside the packet and the chunk (the packet: the input's bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/vfgx.h>

#include "format/format_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static vfgx_ctx *ctx;
	struct vfgx_format f;
	struct vfgx_seq_state st = { 0 };
	struct vfgx_fmt_pkt o;
	uint64_t cap;
	int r;

	if (size > 4096)
		return 0;
	if (!ctx && vfgx_ctx_create(&ctx))
		abort();
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	r = vfgx_format_load_string(ctx, "fuzz.yaml", (const char *)data, size, &f);
	if (r > 0)
		abort();
	if (r < 0) {
		if (strchr(vfgx_last_error(ctx), '\n'))
			abort(); /* one line */
		return 0;
	}
	if (vfgx_format_check(ctx, &f, 65507, 0))
		abort(); /* accepted by the loader, refused by the check */
	r = vfgx_fmt_decode(&f, data, (uint32_t)size, &o);
	if (r == VFGX_FD_OK)
		r = vfgx_seq_extend(&f, &st, o.seq, &o.ext_seq);
	if (r == VFGX_FD_OK)
		r = vfgx_fmt_place(&f, &o);
	if (r < 0 || r >= VFGX_FD_MAX)
		abort();
	cap = f.place == VFGX_FMT_PLACE_SLOT ? (uint64_t)f.packets * f.payload_bytes : f.chunk_bytes;
	for (uint32_t i = 0; r == VFGX_FD_OK && i < o.nseg; i++)
		if (o.seg[i].src_off + (uint64_t)o.seg[i].len > size ||
		    o.seg[i].dst_off + o.seg[i].len > cap)
			abort();
	return 0;
}
