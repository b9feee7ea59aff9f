/* gpu_place_nolink.c - vfgx_place_link where CUDA was found without
 * nvJitLink: pipeline.format.user_place says so on the gpu engine. */
#include <errno.h>
#include <stdio.h>

#include "gpu_place_link.h"

int vfgx_place_link(const char *module, const char *symbol, int major, int minor,
		    void **cubin, size_t *size, char *err, size_t errlen)
{
	(void)module, (void)symbol, (void)major, (void)minor;
	*cubin = NULL;
	*size = 0;
	snprintf(err, errlen, "pipeline.format.user_place: this build has no nvJitLink (install the CUDA toolkit's nvJitLink and rebuild, or use pipeline.device: cpu)");
	return -ENOTSUP;
}
