/* gpu_kernel.h - what `vfgx bench e2e` takes from `vfgx bench gpu`: the
 * kernel-only throughput (pre-staged bursts of 1024 packets straight into
 * the GPU processor, bench/gpu.c) as the reference of the same run. */
#ifndef VFGX_BENCH_GPU_KERNEL_H
#define VFGX_BENCH_GPU_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vfgx/gpu.h>

struct tput {
	double mpps, gbps, gbytes_s;
	uint64_t packets, delivered;
	bool complete; /* every packet delivered (impaired input: accounted) */
};

/* Frames of 64 flows built once (UDP checksums on) in GPU memory (on_gpu)
 * or pinned host memory; parse + checksum + filter + reorder (window 1024),
 * verify off; passes for `seconds`.  Each burst's descriptors copied into
 * the comm list (vfgx_gpu_proc_submit, `vfgx bench gpu`'s figure) or, with
 * staged, records built once in pinned memory handed over where they lie
 * (the runner's way).  queues 0: the flows round-robin over the whole
 * pass (`vfgx bench gpu`'s rows); else each 1024-packet item holds one rx
 * queue's flows (flow % queues), as `vfgx run` with a port of that many
 * queues hands items over (a divisor of 64).  0 or -errno. */
int bench_gpu_kernel_only(vfgx_ctx *ctx, uint32_t size, bool on_gpu, enum vfgx_gpu_mode mode,
			  bool staged, uint32_t queues, double seconds, struct tput *res);
/* The first line of /proc/driver/nvidia/version. */
void bench_gpu_driver_version(char *buf, size_t len);
/* `vfgx bench NAME` in a build without CUDA: says so, returns 77. */
int bench_gpu_no_cuda(const char *name);

#endif
