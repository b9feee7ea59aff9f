/* hwscan.h - what `vfgx devices` and `vfgx doctor` know about a machine:
 * network interfaces, RDMA devices, NVIDIA GPUs and GPU-NIC PCIe distance,
 * all read through a sysroot (plus CUDA/NVML on the live system). */
#ifndef VFGX_CLI_HWSCAN_H
#define VFGX_CLI_HWSCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "sysroot.h"

#define HW_MAX_NICS 256
#define HW_MAX_RDMA 32
#define HW_MAX_GPUS 16
#define HW_MAX_PORTS 4
#define HW_MAX_GIDS 16
#define HW_MAX_DEPTH 12

struct hw_pci {
	char bdf[16];
	char host[32];                     /* host bridge, "pci0000:16" */
	int depth;                         /* PCI devices from root port to this one */
	char chain[HW_MAX_DEPTH][16];      /* root port ... this device */
	int numa;                          /* -1 unknown */
	uint32_t vendor, device, class_code;
	char driver[32];
};

struct hw_nic {
	char name[32];
	bool pci;
	struct hw_pci dev;
	int64_t speed_mbps;                /* -1 unknown or link down */
	char operstate[16];
	int ifindex;
	const char *xdp;                   /* "native" or "generic" */
	bool xdp_zerocopy;
	const char *xdp_source;            /* "kernel" (netdev netlink) or "driver table" */
	char rdma[32];                     /* RDMA device on the same function */
};

struct hw_gid {
	int index;
	char gid[48];
	char type[24];
	char ndev[32];
};

struct hw_rdma_port {
	int port;
	char state[24];
	char link_layer[16];
	int nb_gids;
	struct hw_gid gids[HW_MAX_GIDS];
};

struct hw_rdma {
	char name[32];
	bool pci;
	struct hw_pci dev;
	char netdev[32];
	int nb_ports;
	struct hw_rdma_port ports[HW_MAX_PORTS];
};

struct hw_gpu {
	struct hw_pci dev;
	char name[96];
	uint64_t mem_bytes;                /* 0 unknown */
	uint64_t bar1_bytes;               /* 0 unknown */
	const char *source;                /* "sysfs", "sysfs+cuda", "sysfs+nvml", ... */
	char iommu_group[16];
};

enum hw_dist {
	HW_SAME_SWITCH = 0,
	HW_SAME_ROOT_PORT = 1,
	HW_SAME_SOCKET = 2,
	HW_CROSS_SOCKET = 3,
};

struct hw_pair {
	int gpu, nic;                      /* indexes into gpus[] and nics[] */
	enum hw_dist dist;
	int shared;                        /* PCI bridges both paths share */
};

struct hw_scan {
	const struct sysroot *sr;
	int nb_nics, nb_rdma, nb_gpus, nb_pairs;
	struct hw_nic nics[HW_MAX_NICS];
	struct hw_rdma rdma[HW_MAX_RDMA];
	struct hw_gpu gpus[HW_MAX_GPUS];
	struct hw_pair pairs[HW_MAX_GPUS * HW_MAX_NICS];
	/* NVIDIA software stack */
	char nv_driver[32];                /* /sys/module/nvidia/version */
	bool nv_open;                      /* open GPU kernel modules */
	int cuda_version;                  /* cuDriverGetVersion, e.g. 12040; 0 unknown */
	bool have_libcuda, have_nvml;
	char gpu_note[160];                /* why CUDA/NVML were not used */
};

/* Scan everything; never fails for missing parts (they are left empty). */
int hw_scan(const struct sysroot *sr, struct hw_scan *s);

/* PCI facts of one function (bdf under /sys/bus/pci/devices). */
int hw_pci_read(const struct sysroot *sr, const char *bdf, struct hw_pci *p);

const char *hw_dist_name(enum hw_dist d);

/* XDP features of s->nics from the kernel (live system, Linux >= 6.3);
 * xdpfeat.c.  Returns the number of interfaces it set, or -errno. */
int hw_xdp_features(struct hw_scan *s);

/* Fill names, memory and BAR1 of s->gpus from libcuda/libnvidia-ml when
 * they load (live system only); gpulib.c. */
void hw_gpu_runtime(struct hw_scan *s);

#endif
