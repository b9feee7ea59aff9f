/* vfgx/mem.h - memory regions (host, hugepage, pinned, gpu), fixed-size
 * buffer pools with bulk alloc/free, and the single-producer/single-consumer
 * ring used between threads. */
#ifndef VFGX_MEM_H
#define VFGX_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

/* enum vfgx_mem_kind: vfgx/config.h (a region's kind is part of the
 * config document) */

const char *vfgx_mem_kind_name(enum vfgx_mem_kind kind);
int vfgx_mem_kind_parse(const char *name, enum vfgx_mem_kind *out);

typedef struct vfgx_region vfgx_region;

struct vfgx_region_info {
	enum vfgx_mem_kind kind;      /* the kind actually obtained */
	enum vfgx_mem_kind requested; /* differs after a fallback */
	void *addr;                   /* CPU address (NULL for GPU memory) */
	void *dev_addr;               /* GPU address (pinned: mapped pointer) */
	size_t size;
	size_t align;
	int gpu_id;
};

/*
 * Allocate size bytes of the given kind.  HUGEPAGE falls back to HOST with a
 * warning when no huge pages are free.  PINNED and GPU need a CUDA build and
 * a GPU; without them the call fails with -ENODEV unless allow_fallback is
 * set, in which case HOST memory is returned with a warning.
 * Not thread-safe with respect to the context.
 */
int vfgx_region_create(vfgx_ctx *ctx, enum vfgx_mem_kind kind, size_t size,
		       int gpu_id, bool allow_fallback, vfgx_region **out);
void vfgx_region_destroy(vfgx_region *r);
const struct vfgx_region_info *vfgx_region_info(const vfgx_region *r);

/*
 * Fixed-size buffer pool over a region.  Buffers are addressed by their CPU
 * address, or for GPU regions by their device address (buffers in GPU
 * memory are handed around, never dereferenced on the CPU).
 *
 * Thread-safety: a pool is used by one thread at a time (one pool per
 * queue); hand buffers between threads through a vfgx_ring.
 */
typedef struct vfgx_pool vfgx_pool;

struct vfgx_pool_stats {
	uint32_t num_bufs;
	uint32_t available;
	uint64_t alloc_ok;  /* buffers handed out */
	uint64_t alloc_fail; /* bulk requests refused with -ENOBUFS */
	uint64_t double_free; /* frees of buffers not out (ignored) */
};

/* Create a pool carving region into num_bufs buffers of buf_size bytes
 * (rounded up to 64).  region may be NULL: the pool allocates host memory
 * of its own.  The pool does not own a passed region. */
int vfgx_pool_create(vfgx_ctx *ctx, vfgx_region *region, uint32_t buf_size,
		     uint32_t num_bufs, vfgx_pool **out);
void vfgx_pool_destroy(vfgx_pool *p);
/* All or nothing: returns n, or -ENOBUFS (counted) leaving nothing taken. */
int vfgx_pool_alloc_bulk(vfgx_pool *p, void **bufs, uint32_t n);
void vfgx_pool_free_bulk(vfgx_pool *p, void *const *bufs, uint32_t n);
uint32_t vfgx_pool_buf_size(const vfgx_pool *p);
uint32_t vfgx_pool_available(const vfgx_pool *p);
void vfgx_pool_stats(const vfgx_pool *p, struct vfgx_pool_stats *st);
/* The region the buffers live in (the pool's own one when created with
 * NULL). */
vfgx_region *vfgx_pool_region(const vfgx_pool *p);
/* Index of a buffer (0..num_bufs-1), or -1 if it is not one of ours. */
int64_t vfgx_pool_index(const vfgx_pool *p, const void *buf);

#ifndef __cplusplus /* C11 atomics: C only (C++ programs use std::atomic) */
#include <stdatomic.h>

/*
 * Single-producer/single-consumer ring of pointers.
 *
 * Memory ordering: the producer writes slots, then publishes them with a
 * store-release of prod; the consumer load-acquires prod, so it sees the
 * slot contents, reads them, then store-releases cons; the producer
 * load-acquires cons before reusing slots.  Each side caches the other's
 * index and only reloads it when the cached value says "full" / "empty",
 * which keeps the shared cache line traffic to one transfer per burst.
 * Exactly one producer thread and one consumer thread.
 */
struct vfgx_ring {
	_Alignas(64) _Atomic uint32_t prod;
	uint32_t cons_cache; /* producer's private copy of cons */
	_Alignas(64) _Atomic uint32_t cons;
	uint32_t prod_cache; /* consumer's private copy of prod */
	_Alignas(64) uint32_t mask;
	uint32_t size;
	void **slots;
};

/* size must be a power of two >= 2. */
int vfgx_ring_init(struct vfgx_ring *r, uint32_t size);
void vfgx_ring_fini(struct vfgx_ring *r);

static inline uint32_t vfgx_ring_enqueue_burst(struct vfgx_ring *r,
					       void *const *objs, uint32_t n)
{
	uint32_t prod = atomic_load_explicit(&r->prod, memory_order_relaxed);
	uint32_t free_slots = r->size - (prod - r->cons_cache);

	if (free_slots < n) {
		/* acquire: the consumer finished reading the slots it freed */
		r->cons_cache =
			atomic_load_explicit(&r->cons, memory_order_acquire);
		free_slots = r->size - (prod - r->cons_cache);
	}
	if (n > free_slots)
		n = free_slots;
	for (uint32_t i = 0; i < n; i++)
		r->slots[(prod + i) & r->mask] = objs[i];
	/* release: slot writes become visible before the new prod */
	atomic_store_explicit(&r->prod, prod + n, memory_order_release);
	return n;
}

static inline uint32_t vfgx_ring_dequeue_burst(struct vfgx_ring *r,
					       void **objs, uint32_t n)
{
	uint32_t cons = atomic_load_explicit(&r->cons, memory_order_relaxed);
	uint32_t avail = r->prod_cache - cons;

	if (avail < n) {
		/* acquire: pairs with the producer's release of prod */
		r->prod_cache =
			atomic_load_explicit(&r->prod, memory_order_acquire);
		avail = r->prod_cache - cons;
	}
	if (n > avail)
		n = avail;
	for (uint32_t i = 0; i < n; i++)
		objs[i] = r->slots[(cons + i) & r->mask];
	/* release: our slot reads complete before the producer reuses them */
	atomic_store_explicit(&r->cons, cons + n, memory_order_release);
	return n;
}

static inline uint32_t vfgx_ring_count(struct vfgx_ring *r)
{
	return atomic_load_explicit(&r->prod, memory_order_acquire) -
	       atomic_load_explicit(&r->cons, memory_order_acquire);
}
#endif /* !__cplusplus */

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
