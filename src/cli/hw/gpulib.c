/* gpulib.c - GPU facts from the CUDA driver API (libcuda.so.1) and NVML
 * (libnvidia-ml.so.1), loaded at run time so vfgx runs where neither is
 * installed.  Only the handful of entry points used here are declared. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "hwscan.h"

typedef int cu_result;      /* CUresult: 0 is CUDA_SUCCESS */
typedef int cu_device;      /* CUdevice */
typedef int nvml_return;    /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef void *nvml_device;  /* nvmlDevice_t */

struct nvml_memory {        /* nvmlMemory_t */
	unsigned long long total, free, used;
};
struct nvml_bar1 {          /* nvmlBAR1Memory_t */
	unsigned long long total, free, used;
};

struct cuda_api {
	cu_result (*init)(unsigned int);
	cu_result (*driver_version)(int *);
	cu_result (*count)(int *);
	cu_result (*get)(cu_device *, int);
	cu_result (*name)(char *, int, cu_device);
	cu_result (*total_mem)(size_t *, cu_device);
	cu_result (*bus_id)(char *, int, cu_device);
};

struct nvml_api {
	nvml_return (*init)(void);
	nvml_return (*shutdown)(void);
	nvml_return (*by_bus_id)(const char *, nvml_device *);
	nvml_return (*name)(nvml_device, char *, unsigned int);
	nvml_return (*memory)(nvml_device, struct nvml_memory *);
	nvml_return (*bar1)(nvml_device, struct nvml_bar1 *);
	nvml_return (*driver_version)(char *, unsigned int);
};

#define SYM(lib, dst, name) (*(void **)&(dst) = dlsym((lib), (name)))

static struct hw_gpu *find_gpu(struct hw_scan *s, const char *bus_id)
{
	unsigned dom, bus, dev, fn;
	char bdf[16];

	if (sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return NULL;
	snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", dom & 0xffff, bus, dev, fn);
	for (int i = 0; i < s->nb_gpus; i++)
		if (!strcmp(s->gpus[i].dev.bdf, bdf))
			return &s->gpus[i];
	return NULL;
}

static void from_cuda(struct hw_scan *s, void *lib)
{
	struct cuda_api c;
	int n = 0;

	if (!SYM(lib, c.init, "cuInit") || !SYM(lib, c.driver_version, "cuDriverGetVersion") ||
	    !SYM(lib, c.count, "cuDeviceGetCount") || !SYM(lib, c.get, "cuDeviceGet") ||
	    !SYM(lib, c.name, "cuDeviceGetName") ||
	    !SYM(lib, c.total_mem, "cuDeviceTotalMem_v2") ||
	    !SYM(lib, c.bus_id, "cuDeviceGetPCIBusId"))
		return;
	c.driver_version(&s->cuda_version);
	if (c.init(0) || c.count(&n))
		return;
	for (int i = 0; i < n; i++) {
		char bus[32], name[96];
		struct hw_gpu *g;
		size_t mem = 0;
		cu_device d;

		if (c.get(&d, i) || c.bus_id(bus, sizeof(bus), d) || !(g = find_gpu(s, bus)))
			continue;
		if (!c.name(name, sizeof(name), d))
			snprintf(g->name, sizeof(g->name), "%s", name);
		if (!c.total_mem(&mem, d))
			g->mem_bytes = mem;
		g->source = "sysfs+cuda";
	}
}

static void from_nvml(struct hw_scan *s, void *lib)
{
	struct nvml_api v;
	char drv[80];

	if (!SYM(lib, v.init, "nvmlInit_v2") || !SYM(lib, v.shutdown, "nvmlShutdown") ||
	    !SYM(lib, v.by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
	    !SYM(lib, v.name, "nvmlDeviceGetName") ||
	    !SYM(lib, v.memory, "nvmlDeviceGetMemoryInfo") ||
	    !SYM(lib, v.bar1, "nvmlDeviceGetBAR1MemoryInfo") ||
	    !SYM(lib, v.driver_version, "nvmlSystemGetDriverVersion"))
		return;
	if (v.init())
		return;
	if (!s->nv_driver[0] && !v.driver_version(drv, sizeof(drv)))
		snprintf(s->nv_driver, sizeof(s->nv_driver), "%s", drv);
	for (int i = 0; i < s->nb_gpus; i++) {
		struct hw_gpu *g = &s->gpus[i];
		struct nvml_memory m;
		struct nvml_bar1 b;
		nvml_device d;
		char name[96];

		if (v.by_bus_id(g->dev.bdf, &d))
			continue;
		if (!v.name(d, name, sizeof(name)))
			snprintf(g->name, sizeof(g->name), "%s", name);
		if (!v.memory(d, &m))
			g->mem_bytes = m.total;
		if (!v.bar1(d, &b))
			g->bar1_bytes = b.total;
		g->source = !strcmp(g->source, "sysfs+cuda") ? "sysfs+cuda+nvml" : "sysfs+nvml";
	}
	v.shutdown();
}

void hw_gpu_runtime(struct hw_scan *s)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);

	s->have_libcuda = cuda != NULL;
	s->have_nvml = nvml != NULL;
	if (cuda)
		from_cuda(s, cuda);
	if (nvml)
		from_nvml(s, nvml);
	if (!cuda || !nvml)
		snprintf(s->gpu_note, sizeof(s->gpu_note), "%s%s%s",
			 cuda ? "" : "libcuda.so.1 not found",
			 !cuda && !nvml ? ", " : "",
			 nvml ? "" : "libnvidia-ml.so.1 not found");
	/* libcuda keeps threads and state; unloading it is not supported */
	if (nvml)
		dlclose(nvml);
}
