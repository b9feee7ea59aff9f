/* region.c - memory regions: host, hugepage (with fallback), pinned and GPU
 * (CUDA builds).  Each kind is obtained and released its own way. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vfgx/mem.h>

#include "core/ctx_once.h"
#include "core/hostmem.h"
#include "region_copy.h"
#include "vfgx_build.h"
#if VFGX_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "gpu_resident.h"
#endif

#define HUGE_2M (2u << 20)
#define GPU_ALIGN (64u << 10)

struct vfgx_region {
	vfgx_ctx *ctx;
	struct vfgx_region_info info;
	size_t map_len; /* hugepage/host mmap length */
	void *raw;      /* cudaMalloc result before alignment */
};

static const char *const kind_names[] = { "host", "hugepage", "pinned", "gpu" };

const char *vfgx_mem_kind_name(enum vfgx_mem_kind kind)
{
	return (unsigned)kind < 4 ? kind_names[kind] : "?";
}

int vfgx_mem_kind_parse(const char *name, enum vfgx_mem_kind *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, kind_names[i]) == 0) {
			*out = (enum vfgx_mem_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int host_alloc(struct vfgx_region *r, size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (size + page - 1) & ~(page - 1);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	r->info.addr = p;
	r->info.align = page;
	r->map_len = len;
	r->info.kind = VFGX_MEM_HOST;
	return 0;
}

static int huge_alloc(struct vfgx_region *r, size_t size)
{
	size_t len = (size + HUGE_2M - 1) & ~(size_t)(HUGE_2M - 1);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	r->info.addr = p;
	r->info.align = HUGE_2M;
	r->map_len = len;
	r->info.kind = VFGX_MEM_HUGEPAGE;
	return 0;
}

#if VFGX_HAVE_CUDA
static int cuda_err(struct vfgx_region *r, const char *what, cudaError_t e)
{
	return vfgx_set_error(r->ctx, -ENODEV, "%s region: %s failed: %s",
			      vfgx_mem_kind_name(r->info.requested), what,
			      cudaGetErrorString(e));
}

static int pinned_alloc(struct vfgx_region *r, size_t size)
{
	cudaError_t e;
	int ret = host_alloc(r, size);

	if (ret)
		return ret;
	e = cudaSetDevice(r->info.gpu_id);
	if (e == cudaSuccess)
		e = cudaHostRegister(r->info.addr, r->map_len,
				     cudaHostRegisterMapped |
					     cudaHostRegisterPortable);
	if (e == cudaSuccess)
		e = cudaHostGetDevicePointer(&r->info.dev_addr, r->info.addr, 0);
	if (e != cudaSuccess) {
		munmap(r->info.addr, r->map_len);
		r->info.addr = NULL;
		return cuda_err(r, "cudaHostRegister", e);
	}
	r->info.kind = VFGX_MEM_PINNED;
	return 0;
}

static int gpu_alloc(struct vfgx_region *r, size_t size)
{
	cudaError_t e = cudaSetDevice(r->info.gpu_id);
	uintptr_t p;

	if (e == cudaSuccess)
		e = cudaMalloc(&r->raw, size + GPU_ALIGN);
	if (e != cudaSuccess)
		return cuda_err(r, "cudaMalloc", e);
	p = ((uintptr_t)r->raw + GPU_ALIGN - 1) & ~(uintptr_t)(GPU_ALIGN - 1);
	r->info.dev_addr = (void *)p;
	r->info.align = GPU_ALIGN;
	r->info.kind = VFGX_MEM_GPU;
	return 0;
}
#else
static int pinned_alloc(struct vfgx_region *r, size_t size)
{
	(void)size;
	return vfgx_set_error(r->ctx, -ENOTSUP,
			      "pinned region: this build has no CUDA (install the CUDA toolkit and rebuild)");
}

static int gpu_alloc(struct vfgx_region *r, size_t size)
{
	(void)size;
	return vfgx_set_error(r->ctx, -ENOTSUP,
			      "gpu region: this build has no CUDA (install the CUDA toolkit and rebuild)");
}
#endif

int vfgx_region_create(vfgx_ctx *ctx, enum vfgx_mem_kind kind, size_t size,
		       int gpu_id, bool allow_fallback, vfgx_region **out)
{
	struct vfgx_region *r;
	int ret;

	*out = NULL;
	if (size == 0 || (unsigned)kind > VFGX_MEM_GPU)
		return vfgx_set_error(ctx, -EINVAL, "region: size must be > 0 and kind valid");
	/* mmap would succeed past RAM (overcommit) and the first pass over
	 * the buffers would get the process killed: refuse it here instead */
	if (kind != VFGX_MEM_GPU && size > vfgx_host_ram_bytes())
		return vfgx_set_error(ctx, -ENOMEM,
				      "%s region of %zu bytes is larger than this machine's memory (%llu bytes): lower num_bufs or buf_size",
				      vfgx_mem_kind_name(kind), size,
				      (unsigned long long)vfgx_host_ram_bytes());
#if VFGX_HAVE_CUDA
	/* cudaHostRegister and cudaMalloc may wait for the device like the
	 * frees do (gpu_resident.c): refuse rather than hang */
	if (kind >= VFGX_MEM_PINNED && vfgx_gpu_resident())
		return vfgx_set_error(ctx, -EBUSY,
				      "%s region: a device: gpu pipeline is running in this process and CUDA would wait for its persistent kernel; create this before starting that pipeline, or after stopping it",
				      vfgx_mem_kind_name(kind));
#endif
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ctx = ctx;
	r->info.requested = kind;
	r->info.gpu_id = gpu_id;
	r->info.size = size;
	switch (kind) {
	case VFGX_MEM_HOST:
		ret = host_alloc(r, size);
		break;
	case VFGX_MEM_HUGEPAGE:
		ret = huge_alloc(r, size);
		if (ret) {
			/* Without free huge pages the region still works, slower
			 * (more TLB misses); say how to fix it. */
			vfgx_log(ctx, vfgx_ctx_once(ctx, VFGX_ONCE_HUGEPAGE_FALLBACK) ?
					 VFGX_LOG_WARN : VFGX_LOG_DEBUG,
				 "hugepage region of %zu bytes: %s; using normal pages (echo N > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; said once a run)",
				 size, strerror(-ret));
			ret = host_alloc(r, size);
		}
		break;
	case VFGX_MEM_PINNED:
		ret = pinned_alloc(r, size);
		break;
	default:
		ret = gpu_alloc(r, size);
		break;
	}
	if (ret && kind >= VFGX_MEM_PINNED && allow_fallback) {
		/* once a run, not once a queue's region */
		vfgx_log(ctx, vfgx_ctx_once(ctx, VFGX_ONCE_MEM_FALLBACK) ?
				 VFGX_LOG_WARN : VFGX_LOG_DEBUG,
			 "%s; using host memory (memory fallback: host; said once a run)",
			 vfgx_last_error(ctx));
		ret = host_alloc(r, size);
	}
	if (ret) {
		if (ret != -ENODEV && ret != -ENOTSUP)
			vfgx_set_error(ctx, ret, "%s region of %zu bytes: %s",
				       vfgx_mem_kind_name(kind), size,
				       strerror(-ret));
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

void vfgx_region_destroy(vfgx_region *r)
{
	if (!r)
		return;
#if VFGX_HAVE_CUDA
	if (r->info.kind == VFGX_MEM_PINNED) {
		/* unmapped after the unregister, which may wait (gpu_resident.c) */
		vfgx_gpu_release(VFGX_GPU_UNREGISTER, r->info.addr, r->map_len);
		r->info.addr = NULL;
	}
	if (r->info.kind == VFGX_MEM_GPU)
		vfgx_gpu_release(VFGX_GPU_FREE_DEVICE, r->raw, 0);
#endif
	if (r->info.addr)
		munmap(r->info.addr, r->map_len);
	free(r);
}

int vfgx_region_copy_in(vfgx_region *r, void *dst, const void *src, size_t len)
{
	if (r->info.kind != VFGX_MEM_GPU) {
		memcpy(dst, src, len);
		return 0;
	}
#if VFGX_HAVE_CUDA
	{
		/* a stream of its own, waited for: a cudaMemcpy from pageable
		 * memory may return before the copy lands, and a legacy-stream
		 * wait would wait for a persistent kernel */
		cudaStream_t s;
		cudaError_t e = cudaSetDevice(r->info.gpu_id);

		if (e == cudaSuccess)
			e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
		if (e != cudaSuccess)
			return cuda_err(r, "cudaStreamCreate", e);
		e = cudaMemcpyAsync(dst, src, len, cudaMemcpyHostToDevice, s);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s);
		cudaStreamDestroy(s);
		return e == cudaSuccess ? 0 : cuda_err(r, "cudaMemcpyAsync", e);
	}
#else
	(void)dst;
	(void)src;
	(void)len;
	return -ENOTSUP; /* no GPU region without CUDA */
#endif
}

const struct vfgx_region_info *vfgx_region_info(const vfgx_region *r)
{
	return &r->info;
}
