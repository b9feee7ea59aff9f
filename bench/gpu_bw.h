/* gpu_bw.h - the floors `vfgx bench gpu` compares against: device-memory
 * bandwidth (a large device-to-device copy) and the GPU's read bandwidth
 * of pinned host memory over PCIe (a kernel reading it in place). */
#ifndef VFGX_BENCH_GPU_BW_H
#define VFGX_BENCH_GPU_BW_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GB/s counting bytes read plus bytes written (best of reps). */
int gpubw_d2d(int gpu, size_t bytes, int reps, double *gbs, char *err, size_t len);
/* GB/s of a kernel on all SMs reading a pinned host buffer (best of reps). */
int gpubw_pinned_read(int gpu, size_t bytes, int reps, double *gbs, char *err,
		      size_t len);
/* Copy into / out of device memory for the benchmark's packet buffers. */
int gpubw_copy_to_device(void *dst, const void *src, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
