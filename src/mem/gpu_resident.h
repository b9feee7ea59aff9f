/* gpu_resident.h - CUDA releases that wait while a persistent kernel of this
 * process is resident (see gpu_resident.c).  Internal; CUDA builds only. */
#ifndef VFGX_MEM_GPU_RESIDENT_H
#define VFGX_MEM_GPU_RESIDENT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vfgx_gpu_release {
	VFGX_GPU_FREE_DEVICE, /* cudaFree */
	VFGX_GPU_FREE_HOST,   /* cudaFreeHost */
	VFGX_GPU_UNREGISTER,  /* cudaHostUnregister, then munmap(len) */
};

/* A persistent kernel became resident (+1) or was seen to end (-1); the
 * last -1 does every release queued meanwhile. */
void vfgx_gpu_resident_add(int delta);
/* Whether a persistent kernel of this process is resident now. */
bool vfgx_gpu_resident(void);
/* Release p now, or once no persistent kernel is resident. */
void vfgx_gpu_release(enum vfgx_gpu_release how, void *p, size_t unmap_len);

#ifdef __cplusplus
}
#endif
#endif
