/* gpu_start.h - how a GPU test starts: a context, and unless the test runs
 * its cpu half alone, a GPU (its description in desc) or exit status 77
 * (skipped) with the reason in one line. */
#ifndef VFGX_TEST_GPU_START_H
#define VFGX_TEST_GPU_START_H

#include <stdbool.h>
#include <stdio.h>

#include <vfgx/gpu.h>
#include <vfgx/vfgx.h>

/* 0 and *ctx; else the status main returns (1: no context, 77: no GPU). */
static inline int gpu_test_start(bool cpu_only, char *desc, size_t n, vfgx_ctx **ctx)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (vfgx_ctx_create(ctx))
		return 1;
	if (!cpu_only && vfgx_gpu_probe(*ctx, 0, desc, n)) {
		printf("SKIP: no GPU: %s\n", vfgx_last_error(*ctx));
		vfgx_ctx_destroy(*ctx);
		return 77;
	}
	return 0;
}

#endif
