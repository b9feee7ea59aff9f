/* pool_bytes.h - the memory a pool of num_bufs buffers of buf_size bytes
 * takes from its region: buffers are laid out 64 bytes apart (a cache
 * line), so the stride is buf_size rounded up to 64.  pool.c lays them out
 * so; whoever sizes a region for a pool (ports, the config's checks) asks
 * here. */
#ifndef VFGX_POOL_BYTES_H
#define VFGX_POOL_BYTES_H

#include <stdint.h>

static inline uint32_t vfgx_pool_stride(uint32_t buf_size)
{
	return (buf_size + 63u) & ~63u;
}

static inline uint64_t vfgx_pool_bytes(uint32_t buf_size, uint32_t num_bufs)
{
	return (uint64_t)vfgx_pool_stride(buf_size) * num_bufs;
}

#endif
