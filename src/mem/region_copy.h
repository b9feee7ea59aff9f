/* region_copy.h - host bytes copied into a region of any kind (region.c):
 * a CPU copy for host, hugepage and pinned memory, a copy waited for on a
 * stream of its own for GPU memory.  Internal. */
#ifndef VFGX_MEM_REGION_COPY_H
#define VFGX_MEM_REGION_COPY_H

#include <stddef.h>

#include <vfgx/mem.h>

/* len bytes from src to dst, an address inside r as its pools hand them
 * out (the CPU address; GPU memory: the device address).  The copy has
 * landed when this returns 0; a CUDA error is set on r's ctx. */
int vfgx_region_copy_in(vfgx_region *r, void *dst, const void *src, size_t len);

#endif
