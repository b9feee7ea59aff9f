/* gpu_bw.h - the floors `vfgx bench gpu` compares against: device-memory
 * bandwidth (a large device-to-device copy, and a kernel only reading) and
 * the GPU's read bandwidth of pinned host memory over PCIe (a kernel
 * reading it in place). */
#ifndef VFGX_BENCH_GPU_BW_H
#define VFGX_BENCH_GPU_BW_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GB/s counting bytes read plus bytes written (best of reps). */
int gpubw_d2d(int gpu, size_t bytes, int reps, double *gbs, char *err, size_t len);
/* GB/s of a kernel on all SMs only reading a device-memory buffer, bytes
 * read (best of reps): the floor of a read-only workload. */
int gpubw_dev_read(int gpu, size_t bytes, int reps, double *gbs, char *err, size_t len);
/* GB/s of a kernel on all SMs reading a pinned host buffer (best of reps). */
int gpubw_pinned_read(int gpu, size_t bytes, int reps, double *gbs, char *err,
		      size_t len);
/* Round trip CPU -> polling GPU thread -> CPU through two pinned words,
 * median and p99 in us; flags add what the persistent kernel does. */
#define PP_ACQUIRE 1   /* GPU polls with ld.acquire.sys (else volatile) */
#define PP_FENCE 2     /* __threadfence_system() before answering */
#define PP_RELEASE 4   /* answer with st.release.sys (else volatile) */
#define PP_SPINNERS 8  /* one more block per SM spinning on a GPU word */
#define PP_HOSTQUIT 16 /* ...which reads a host word every 256 spins */
#define PP_STAMP 32    /* weak %globaltimer store to host memory first */
#define PP_CPUFENCE 64 /* the CPU runs a full fence (mfence) after its store */
int gpubw_pingpong(int gpu, int flags, int iters, double *p50_us, double *p99_us,
		   char *err, size_t len);
/* %globaltimer against CLOCK_MONOTONIC (vfgx_now_ns): iters ping-pongs,
 * each bounding offset = globaltimer - monotonic to [g - t1, g + tick - t0]
 * (g read by the GPU between the CPU's t0 and t1); the intersection of all
 * bounds gives *off_ns (its middle) and *width_ns (its width); *tick_ns is
 * the smallest step of %globaltimer seen, *at_ns the CPU time of the
 * middle of the calibration.  Needs <stdint.h>. */
int gpubw_clock_cal(int gpu, int iters, long long *off_ns, double *width_ns,
		    double *tick_ns, unsigned long long *at_ns, char *err,
		    size_t len);
/* Copy into / out of device memory for the benchmark's packet buffers. */
int gpubw_copy_to_device(void *dst, const void *src, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
