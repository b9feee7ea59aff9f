/* pool.c - fixed-size buffer pools: a LIFO stack of free buffer addresses
 * (hot buffers are reused first, good for caches), bulk alloc/free, and a
 * per-buffer "out" bit that catches double frees. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/mem.h>

#include "pool_bytes.h"

struct vfgx_pool {
	vfgx_ctx *ctx;
	vfgx_region *region;
	bool own_region;
	uint8_t *base;      /* first buffer (CPU or device address) */
	uint32_t buf_size;
	uint32_t num_bufs;
	uint32_t top;       /* number of free entries in stack */
	void **stack;
	uint8_t *out;       /* 1 when the buffer is allocated */
	struct vfgx_pool_stats st;
};

int vfgx_pool_create(vfgx_ctx *ctx, vfgx_region *region, uint32_t buf_size,
		     uint32_t num_bufs, vfgx_pool **out)
{
	struct vfgx_pool *p;
	const struct vfgx_region_info *ri;
	size_t need;
	int ret;

	*out = NULL;
	if (buf_size == 0 || num_bufs == 0 || buf_size > (1u << 24))
		return vfgx_set_error(ctx, -EINVAL,
				      "pool: buf_size (1..16M) and num_bufs (>0) required");
	need = (size_t)vfgx_pool_bytes(buf_size, num_bufs);
	buf_size = vfgx_pool_stride(buf_size);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (!region) {
		ret = vfgx_region_create(ctx, VFGX_MEM_HOST, need, 0, false, &region);
		if (ret) {
			free(p);
			return ret;
		}
		p->own_region = true;
	}
	ri = vfgx_region_info(region);
	if (ri->size < need) {
		ret = vfgx_set_error(ctx, -EINVAL,
				     "pool: region of %zu bytes cannot hold %u buffers of %u bytes (%zu needed)",
				     ri->size, num_bufs, buf_size, need);
		goto err;
	}
	p->ctx = ctx;
	p->region = region;
	p->base = ri->kind == VFGX_MEM_GPU ? ri->dev_addr : ri->addr;
	p->buf_size = buf_size;
	p->num_bufs = num_bufs;
	p->stack = malloc(sizeof(void *) * num_bufs);
	p->out = calloc(num_bufs, 1);
	if (!p->stack || !p->out) {
		ret = -ENOMEM;
		goto err;
	}
	/* Lowest addresses on top so allocation starts at the region start. */
	for (uint32_t i = 0; i < num_bufs; i++)
		p->stack[i] = p->base + (size_t)(num_bufs - 1 - i) * buf_size;
	p->top = num_bufs;
	p->st.num_bufs = num_bufs;
	*out = p;
	return 0;
err:
	free(p->stack);
	free(p->out);
	if (p->own_region)
		vfgx_region_destroy(region);
	free(p);
	return ret;
}

void vfgx_pool_destroy(vfgx_pool *p)
{
	if (!p)
		return;
	if (p->own_region)
		vfgx_region_destroy(p->region);
	free(p->stack);
	free(p->out);
	free(p);
}

int64_t vfgx_pool_index(const vfgx_pool *p, const void *buf)
{
	uintptr_t b = (uintptr_t)buf, s = (uintptr_t)p->base;

	if (b < s || b >= s + (uintptr_t)p->buf_size * p->num_bufs)
		return -1;
	if ((b - s) % p->buf_size)
		return -1;
	return (int64_t)((b - s) / p->buf_size);
}

int vfgx_pool_alloc_bulk(vfgx_pool *p, void **bufs, uint32_t n)
{
	if (n > p->top) {
		p->st.alloc_fail++;
		return -ENOBUFS;
	}
	for (uint32_t i = 0; i < n; i++) {
		void *b = p->stack[--p->top];

		p->out[(size_t)((uint8_t *)b - p->base) / p->buf_size] = 1;
		bufs[i] = b;
	}
	p->st.alloc_ok += n;
	return (int)n;
}

void vfgx_pool_free_bulk(vfgx_pool *p, void *const *bufs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int64_t idx = vfgx_pool_index(p, bufs[i]);

		/* A foreign or already free buffer would corrupt the stack:
		 * count it and leave the pool intact. */
		if (idx < 0 || !p->out[idx]) {
			p->st.double_free++;
			continue;
		}
		p->out[idx] = 0;
		p->stack[p->top++] = bufs[i];
	}
}

uint32_t vfgx_pool_buf_size(const vfgx_pool *p)
{
	return p->buf_size;
}

uint32_t vfgx_pool_available(const vfgx_pool *p)
{
	return p->top;
}

void vfgx_pool_stats(const vfgx_pool *p, struct vfgx_pool_stats *st)
{
	*st = p->st;
	st->available = p->top;
}

vfgx_region *vfgx_pool_region(const vfgx_pool *p)
{
	return p->region;
}
