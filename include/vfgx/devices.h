/* vfgx/devices.h - what the machine has for the GPU-centric path: network
 * interfaces, RDMA devices, NVIDIA GPUs and the PCIe distance of each
 * GPU-NIC pair, read from sysfs/procfs (and CUDA/NVML on the live system).
 * The scan `vfgx devices` and `vfgx doctor` print. */
#ifndef VFGX_DEVICES_H
#define VFGX_DEVICES_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

typedef struct vfgx_devices vfgx_devices;

/* Scan the running system (root NULL or "/") or a tree holding sys/,
 * proc/ and dev/ (tests/fixtures).  Missing parts are left out, never an
 * error; -ENOENT when root is not a directory. */
int vfgx_devices_scan(vfgx_ctx *ctx, const char *root, vfgx_devices **out);
void vfgx_devices_free(vfgx_devices *d);

/* How far a GPU is from a NIC over PCIe, nearest first. */
enum vfgx_pcie_dist {
	VFGX_PCIE_SAME_SWITCH = 0,
	VFGX_PCIE_SAME_ROOT_PORT = 1,
	VFGX_PCIE_SAME_SOCKET = 2,
	VFGX_PCIE_CROSS_SOCKET = 3,
};
const char *vfgx_pcie_dist_name(enum vfgx_pcie_dist d);

/* The getters fill a struct whose argsz the caller set (its own sizeof);
 * strings point into d and live as long as it.  -EINVAL past the count. */
struct vfgx_device_nic {
	uint32_t argsz;
	const char *name;    /* "ens1f0np0" */
	const char *bdf;     /* PCI address, "" for virtual interfaces */
	const char *driver;
	const char *rdma;    /* RDMA device on the same function, or "" */
	const char *xdp;     /* "native", "generic", or "" unknown */
	int numa;            /* -1 unknown */
	int64_t speed_mbps;  /* -1 unknown or link down */
	bool xdp_zerocopy;
};

struct vfgx_device_gpu {
	uint32_t argsz;
	const char *name;    /* from CUDA/NVML, else the PCI id */
	const char *bdf;
	int numa;
	uint64_t mem_bytes;  /* 0 unknown */
	uint64_t bar1_bytes; /* 0 unknown */
};

struct vfgx_device_pair {
	uint32_t argsz;
	uint32_t gpu, nic;   /* indexes for vfgx_devices_gpu/nic */
	enum vfgx_pcie_dist dist;
	int shared_bridges;  /* PCI bridges both paths share */
};

uint32_t vfgx_devices_nb_nics(const vfgx_devices *d);
uint32_t vfgx_devices_nb_gpus(const vfgx_devices *d);
/* GPU-NIC pairs, nearest first. */
uint32_t vfgx_devices_nb_pairs(const vfgx_devices *d);
int vfgx_devices_nic(const vfgx_devices *d, uint32_t i, struct vfgx_device_nic *out);
int vfgx_devices_gpu(const vfgx_devices *d, uint32_t i, struct vfgx_device_gpu *out);
int vfgx_devices_pair(const vfgx_devices *d, uint32_t i, struct vfgx_device_pair *out);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
