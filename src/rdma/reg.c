/* reg.c - memory registration: the GPUDirect chain (dma-buf, then
 * nvidia-peermem, then a host fallback) for regions and plain memory. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <vfgx/rdma.h>

#include "vfgx_build.h"
#include "rdma_internal.h"

/* ---------------------------------------------------------- registration */

static const char *const path_names[] = { "dma-buf", "peermem", "host" };

const char *vfgx_rdma_reg_path_name(enum vfgx_rdma_reg_path p)
{
	return (unsigned)p < 3 ? path_names[p] : "?";
}

static int ibv_access(unsigned access)
{
	int a = IBV_ACCESS_LOCAL_WRITE;

	if (access & VFGX_RDMA_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (access & VFGX_RDMA_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (access & VFGX_RDMA_ACCESS_REMOTE_ATOMIC)
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	return a;
}

/* cuMemGetHandleForAddressRange from the driver library, looked up at run
 * time so the library does not link libcuda. */
typedef int (*cu_get_handle_fn)(void *handle, uint64_t dptr, size_t size,
				int type, unsigned long long flags);
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1

static int reg_dmabuf(vfgx_rdma_mr *m, uint64_t daddr, size_t len, int access)
{
	static const char *const libs[] = { "libcuda.so.1", "libcuda.so" };
	cu_get_handle_fn get = NULL;
	void *lib = NULL;
	int fd = -1, cr;

	for (size_t i = 0; i < 2 && !lib; i++)
		lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (lib)
		get = (cu_get_handle_fn)dlsym(lib, "cuMemGetHandleForAddressRange");
	if (!get) {
		if (lib)
			dlclose(lib);
		return -ENODEV; /* no CUDA driver, or one before 11.7 */
	}
	cr = get(&fd, daddr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	dlclose(lib);
	if (cr != 0 || fd < 0)
		return -EOPNOTSUPP; /* driver refused the export (CUresult cr) */
	m->mr = ibv_reg_dmabuf_mr(m->dev->pd, 0, len, daddr, fd, access);
	if (!m->mr) {
		int err = -errno;

		close(fd);
		return err ? err : -EIO;
	}
	m->dmabuf_fd = fd;
	return 0;
}

static int reg_fail(vfgx_rdma_mr *m, enum vfgx_rdma_reg_path p, int err,
		    uint64_t addr, size_t len)
{
	m->info.step_err[p] = err;
	vfgx_warn(m->dev->ctx, "%s: %s registration of %zu bytes at 0x%llx failed: %s (errno %d)%s",
		  m->dev->name, path_names[p], len, (unsigned long long)addr,
		  strerror(-err), -err,
		  p == VFGX_RDMA_REG_DMABUF ? "; trying nvidia-peermem" :
					      "; trying pinned host memory");
	return err;
}

static int reg_host(vfgx_rdma_mr *m, void *addr, size_t len, int access)
{
	m->mr = ibv_reg_mr(m->dev->pd, addr, len, access);
	if (!m->mr)
		return -errno ? -errno : -EIO;
	m->cpu = addr;
	m->info.path = VFGX_RDMA_REG_HOST;
	return 0;
}

static void mr_fill(vfgx_rdma_mr *m)
{
	m->info.addr = (uint64_t)(uintptr_t)m->mr->addr;
	m->info.len = m->mr->length;
	m->info.lkey = m->mr->lkey;
	m->info.rkey = m->mr->rkey;
}

int vfgx_rdma_reg_region(vfgx_rdma_dev *dev, vfgx_region *region,
			 unsigned access, bool host_fallback,
			 vfgx_rdma_mr **out)
{
	const struct vfgx_region_info *ri = vfgx_region_info(region);
	int acc = ibv_access(access), ret;
	bool gpu = ri->kind == VFGX_MEM_GPU || dev->reg_fail;
	uint64_t daddr;
	vfgx_rdma_mr *m;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->dev = dev;
	m->dmabuf_fd = -1;
	if (!gpu) {
		ret = reg_host(m, ri->addr, ri->size, acc);
		if (ret) {
			free(m);
			return vfgx_set_error(dev->ctx, ret,
					      "%s: cannot register %zu bytes of %s memory: %s (check `ulimit -l`)",
					      dev->name, ri->size,
					      vfgx_mem_kind_name(ri->kind),
					      strerror(-ret));
		}
		goto done;
	}
	daddr = (uint64_t)(uintptr_t)(ri->kind == VFGX_MEM_GPU ? ri->dev_addr :
								  ri->addr);
	/* 1. dma-buf */
	ret = dev->reg_fail & (1u << VFGX_RDMA_REG_DMABUF) ?
		      -EOPNOTSUPP : reg_dmabuf(m, daddr, ri->size, acc);
	if (!ret) {
		m->info.path = VFGX_RDMA_REG_DMABUF;
		goto done;
	}
	reg_fail(m, VFGX_RDMA_REG_DMABUF, ret, daddr, ri->size);
	/* 2. nvidia-peermem: the NIC driver resolves the device pointer */
	if (dev->reg_fail & (1u << VFGX_RDMA_REG_PEERMEM)) {
		ret = -EOPNOTSUPP;
	} else {
		m->mr = ibv_reg_mr(dev->pd, (void *)(uintptr_t)daddr, ri->size,
				   acc);
		ret = m->mr ? 0 : (errno ? -errno : -EIO);
	}
	if (!ret) {
		m->info.path = VFGX_RDMA_REG_PEERMEM;
		m->cpu = ri->kind == VFGX_MEM_GPU ? NULL : ri->addr;
		goto done;
	}
	reg_fail(m, VFGX_RDMA_REG_PEERMEM, ret, daddr, ri->size);
	/* 3. pinned host memory */
	if (!host_fallback) {
		ret = vfgx_set_error(dev->ctx, -ENODEV,
				     "%s: GPU memory cannot be registered: dma-buf: %s, peermem: %s (load nvidia-peermem, or set memory.fallback: host)",
				     dev->name, strerror(-m->info.step_err[0]),
				     strerror(-m->info.step_err[1]));
		free(m);
		return ret;
	}
	if (posix_memalign(&m->own_host, 4096, ri->size)) {
		free(m);
		return -ENOMEM;
	}
	memset(m->own_host, 0, ri->size);
	ret = reg_host(m, m->own_host, ri->size, acc);
	if (ret) {
		free(m->own_host);
		free(m);
		return vfgx_set_error(dev->ctx, ret,
				      "%s: host fallback registration of %zu bytes failed: %s (check `ulimit -l`)",
				      dev->name, ri->size, strerror(-ret));
	}
	vfgx_warn(dev->ctx, "%s: GPU region registered through pinned host memory (no GPUDirect); data lands in host memory",
		  dev->name);
done:
	mr_fill(m);
	*out = m;
	return 0;
}

int vfgx_rdma_reg_mem(vfgx_rdma_dev *dev, void *addr, size_t len,
		      unsigned access, vfgx_rdma_mr **out)
{
	vfgx_rdma_mr *m;
	int ret;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->dev = dev;
	m->dmabuf_fd = -1;
	ret = reg_host(m, addr, len, ibv_access(access));
	if (ret) {
		free(m);
		return vfgx_set_error(dev->ctx, ret,
				      "%s: cannot register %zu bytes at %p: %s (check `ulimit -l`)",
				      dev->name, len, addr, strerror(-ret));
	}
	mr_fill(m);
	*out = m;
	return 0;
}

void vfgx_rdma_dereg(vfgx_rdma_mr *m)
{
	if (!m)
		return;
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->dmabuf_fd >= 0)
		close(m->dmabuf_fd);
	free(m->own_host);
	free(m);
}

const struct vfgx_rdma_mr_info *vfgx_rdma_mr_info(const vfgx_rdma_mr *m)
{
	return &m->info;
}

void *vfgx_rdma_mr_cpu_addr(const vfgx_rdma_mr *m) { return m->cpu; }
struct ibv_mr *vfgx_rdma_mr_ibv(const vfgx_rdma_mr *m) { return m->mr; }
