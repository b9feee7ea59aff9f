/* ring.c - setup and teardown of the SPSC ring (the fast path is inline in
 * vfgx/mem.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/mem.h>

int vfgx_ring_init(struct vfgx_ring *r, uint32_t size)
{
	memset(r, 0, sizeof(*r));
	if (size < 2 || (size & (size - 1)))
		return -EINVAL;
	r->slots = calloc(size, sizeof(void *));
	if (!r->slots)
		return -ENOMEM;
	r->size = size;
	r->mask = size - 1;
	return 0;
}

void vfgx_ring_fini(struct vfgx_ring *r)
{
	free(r->slots);
	r->slots = NULL;
}
