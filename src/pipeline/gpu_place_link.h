/* gpu_place_link.h - pipeline.format.user_place on the gpu engine: the
 * persistent kernel's relocatable image linked with the user's
 * __device__ function at run time (gpu_place_link.c, nvJitLink). */
#ifndef VFGX_GPU_PLACE_LINK_H
#define VFGX_GPU_PLACE_LINK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Link the kernel built for user_place (gpu_proc.cu with
 * VFGX_USER_PLACE_LINK), an entry that calls symbol, and module (the
 * user's relocatable device code: cubin, fatbin, PTX, LTO-IR, an object
 * or a library, by its file name's extension) for a GPU of compute
 * capability major.minor.  *cubin (malloc'd, *size bytes) on success;
 * else -errno with the linker's first error line in err. */
int vfgx_place_link(const char *module, const char *symbol, int major, int minor,
		    void **cubin, size_t *size, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
