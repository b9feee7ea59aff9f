/* fuzz_parser.c - libFuzzer target: arbitrary bytes as a frame through the
 * stages and the processor (parse, validate, filter, app header, reorder,
 * verify).  Must never crash or read out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/vfgx.h>
#include <vfgx/stages.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static vfgx_ctx *ctx;
	static vfgx_proc *proc;
	struct vfgx_parsed p;
	struct vfgx_pkt pk;
	uint8_t *copy;

	if (!ctx) {
		struct vfgx_pipeline_config pc = {
			.reorder = true, .reorder_window = 64,
			.reorder_slot = 256, .max_streams = 8,
			.verify_payload = true,
		};

		if (vfgx_ctx_create(&ctx) || vfgx_proc_create(ctx, &pc, &proc))
			abort();
	}
	if (size > 65536)
		return 0;
	/* an exact-size heap copy so ASan sees any overread */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (vfgx_parse(copy, (uint32_t)size, &p) == VFGX_STAGE_PASS) {
		if ((size_t)p.payload_off + p.payload_len > size)
			abort(); /* the parser promised bytes it does not have */
	}
	pk = (struct vfgx_pkt){ .data = copy, .len = (uint32_t)size };
	vfgx_proc_burst(proc, &pk, 1);
	free(copy);
	return 0;
}
