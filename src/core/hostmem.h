/* hostmem.h - this machine's physical memory: what a host-side allocation
 * can ever touch (mmap overcommits, so a bigger one would be killed later,
 * not refused). */
#ifndef VFGX_HOSTMEM_H
#define VFGX_HOSTMEM_H

#include <stdint.h>
#include <unistd.h>

static inline uint64_t vfgx_host_ram_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
}

#endif
