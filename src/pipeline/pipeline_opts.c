/* pipeline_opts.c - the pipeline's own keys as option tables
 * (pipeline_opts.h): the defaults a program gets from
 * vfgx_pipeline_config_default and the config loader's YAML reading come
 * from these tables alone. */
#include <stddef.h>
#include <string.h>

#include <vfgx/pipeline.h>

#include "pipeline_opts.h"

static const char *const pipeline_devices[] = { "auto", "cpu", "gpu", NULL };

#define PL_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_pipeline_config, F, __VA_ARGS__)
/* A key read by its own reader (a nested section): in the table for the
 * key check only. */
#define SUB_OPT(T, K) { #K, VFGX_OPT_##T, 0, 0, 0, 0, NULL, 0, NULL, 0, 0, 0 }
const struct vfgx_opt vfgx_pipeline_opts[] = {
	PL_OPT(ENUM, device, 0, 0, 0, pipeline_devices),
	PL_OPT(U16, workers, 1, 1, 64),
	SUB_OPT(SKIP, filter),
	SUB_OPT(SKIP, reorder),
	PL_OPT(BOOL, verify_payload, 0),
	PL_OPT(DOUBLE, duration_s, 0, 0, 86400 * 365),
	SUB_OPT(SKIP, gpu),
	SUB_OPT(SKIP, chunks),
	SUB_OPT(SKIP, user),
	SUB_OPT(SKIP, capture),
	PL_OPT(U64, max_in_flight_bytes, 0, 0, 1ull << 40),
	SUB_OPT(SKIP, format),
};
const size_t vfgx_pipeline_nopts = sizeof(vfgx_pipeline_opts) / sizeof(vfgx_pipeline_opts[0]);

#define RO_OPT(T, K, DEF, LO, HI, F) \
	{ #K, VFGX_OPT_##T, offsetof(struct vfgx_pipeline_config, F), DEF, LO, HI }
const struct vfgx_opt vfgx_reorder_opts[] = {
	RO_OPT(BOOL, enabled, 1, 0, 0, reorder),
	RO_OPT(U32, window, 1024, 2, 1u << 20, reorder_window),
	RO_OPT(U32, slot_size, 2048, 16, 1u << 16, reorder_slot),
	RO_OPT(U32, max_streams, 64, 1, 65536, max_streams),
	RO_OPT(U64, max_memory, 1073741824, 1u << 20, 1ull << 40, reorder_max_memory),
};
/* the literal is for the docs check (tests/tools/test-config-doc.py) */
_Static_assert(VFGX_REORDER_MAX_MEMORY == 1073741824, "reorder.max_memory's default");
const size_t vfgx_reorder_nopts = sizeof(vfgx_reorder_opts) / sizeof(vfgx_reorder_opts[0]);

void vfgx_pipeline_config_default(struct vfgx_pipeline_config *conf)
{
	memset(conf, 0, sizeof(*conf));
	vfgx_opts_default(vfgx_pipeline_opts, vfgx_pipeline_nopts, conf, sizeof(*conf));
	vfgx_opts_default(vfgx_reorder_opts, vfgx_reorder_nopts, conf, 0);
	conf->argsz = sizeof(*conf);
}
