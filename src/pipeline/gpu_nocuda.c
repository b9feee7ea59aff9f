/* gpu_nocuda.c - the CUDA side of the GPU data plane in a build without
 * CUDA: every entry point says so, and how to fix it. */
#include <errno.h>
#include <stdio.h>

#include "gpu_iface.h"

#define NO_CUDA "this build has no CUDA (install the CUDA toolkit so meson finds nvcc, rebuild, or set pipeline.device: cpu)"

int gpuk_probe(uint32_t gpu_id, char *desc, size_t len, char *err, size_t errlen)
{
	(void)gpu_id;
	if (len)
		desc[0] = '\0';
	snprintf(err, errlen, NO_CUDA);
	return -ENOTSUP;
}

int gpuk_create(const struct gpuk_conf *c, struct gpuk **out,
		struct vfgx_comm_list **list, char *err, size_t errlen)
{
	(void)c;
	*out = NULL;
	*list = NULL;
	snprintf(err, errlen, NO_CUDA);
	return -ENOTSUP;
}

/* Unreachable without a created processor; present so one C side links in
 * both builds. */
int gpuk_start(struct gpuk *g, char *err, size_t errlen)
{
	(void)g;
	snprintf(err, errlen, NO_CUDA);
	return -ENOTSUP;
}

int gpuk_launch(struct gpuk *g, uint32_t slot, char *err, size_t errlen)
{
	(void)g;
	(void)slot;
	snprintf(err, errlen, NO_CUDA);
	return -ENOTSUP;
}

int gpuk_health(struct gpuk *g, char *err, size_t errlen)
{
	return gpuk_start(g, err, errlen);
}

int gpuk_read_counters(struct gpuk *g, uint64_t *cnt, char *err, size_t errlen)
{
	(void)cnt;
	return gpuk_start(g, err, errlen);
}

int gpuk_read_flow_sums(struct gpuk *g, uint64_t *sums, uint32_t n, char *err,
			size_t errlen)
{
	(void)sums;
	(void)n;
	return gpuk_start(g, err, errlen);
}

int64_t gpuk_read_log(struct gpuk *g, struct gpuk_delivery *recs, uint64_t max,
		      char *err, size_t errlen)
{
	(void)recs;
	(void)max;
	return gpuk_start(g, err, errlen);
}

int gpuk_device_readable(const void *p)
{
	(void)p;
	return 0;
}

const char *gpuk_device_name(const struct gpuk *g)
{
	(void)g;
	return "none";
}

int gpuk_stop(struct gpuk *g, uint32_t timeout_ms)
{
	(void)g;
	(void)timeout_ms;
	return 0;
}

void gpuk_destroy(struct gpuk *g)
{
	(void)g;
}
