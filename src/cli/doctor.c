/* doctor.c - `vfgx doctor [--root DIR]`: checks what GPUDirect networking
 * needs, prints pass / warn / fail (and skip where a check does not apply)
 * with the fix for every non-pass; exit 0 all pass, 1 warnings, 2 failures. */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cliopt.h"
#include "commands.h"
#include "hwscan.h"

enum verdict { PASS = 0, SKIP, WARN, FAIL };

/* 2 MiB pages to reserve: 512 MiB, what DPDK's no-hugepage warning asks for */
#define HUGEPAGES_2M "256"

struct doctor {
	const struct sysroot *sr;
	struct hw_scan *s;
	int worst;               /* 0, 1 (warn), 2 (fail) */
	json_object *checks;     /* --json: the checks, instead of text */
};

static void report(struct doctor *d, enum verdict v, const char *check,
		   const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void report(struct doctor *d, enum verdict v, const char *check,
		   const char *fix, const char *fmt, ...)
{
	static const char *const names[] = { "pass", "skip", "warn", "fail" };
	va_list ap;

	if (v == WARN && d->worst < 1)
		d->worst = 1;
	if (v == FAIL)
		d->worst = 2;
	if (d->checks) {
		json_object *o = json_object_new_object();
		char msg[1024];

		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		json_object_object_add(o, "check", json_object_new_string(check));
		json_object_object_add(o, "verdict", json_object_new_string(names[v]));
		json_object_object_add(o, "message", json_object_new_string(msg));
		json_object_object_add(o, "fix", v >= WARN && fix ? json_object_new_string(fix) : NULL);
		json_object_array_add(d->checks, o);
		return;
	}
	printf("%-4s  %-12s ", names[v], check);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (v >= WARN && fix)
		printf("      fix: %s\n", fix);
}

/* Best (closest) pair of GPU g, or NULL when no PCI NIC exists. */
static const struct hw_pair *best_pair(const struct hw_scan *s, int g)
{
	for (int i = 0; i < s->nb_pairs; i++)
		if (s->pairs[i].gpu == g)
			return &s->pairs[i];
	return NULL;
}

static int driver_major(const char *v)
{
	return atoi(v);
}

static void check_gpu(struct doctor *d)
{
	struct hw_scan *s = d->s;

	if (!s->nb_gpus) {
		/* a CPU-only node is a supported set-up, not a fault */
		report(d, SKIP, "gpu", NULL,
		       "no NVIDIA GPU (PCI vendor 0x10de, display class): the pipeline runs on CPU cores; GPU checks skipped");
		return;
	}
	if (!sysroot_exists(d->sr, "/sys/module/nvidia")) {
		report(d, FAIL, "gpu",
		       "install the NVIDIA driver (open kernel modules, >= 515) and run `modprobe nvidia`",
		       "%d NVIDIA GPU(s), first %s, but the nvidia kernel module is not loaded",
		       s->nb_gpus, s->gpus[0].dev.bdf);
		return;
	}
	report(d, PASS, "gpu", NULL, "%d NVIDIA GPU(s), first %s; driver %s (%s kernel modules)",
	       s->nb_gpus, s->gpus[0].dev.bdf, s->nv_driver[0] ? s->nv_driver : "unknown",
	       s->nv_open ? "open" : "proprietary");
}

static int kernel_version(const struct sysroot *sr, char *rel, size_t len)
{
	unsigned maj = 0, min = 0;

	if (sysroot_read(sr, rel, len, "/proc/sys/kernel/osrelease") < 0 ||
	    sscanf(rel, "%u.%u", &maj, &min) != 2)
		return 0;
	return (int)(maj * 1000 + min);
}

static void check_gpudirect(struct doctor *d)
{
	struct hw_scan *s = d->s;
	char rel[128], why[256] = "";
	int kv, drv;
	bool kv_ok, drv_ok, cuda_ok;

	if (!s->nb_gpus) {
		report(d, SKIP, "gpudirect", NULL, "no GPU");
		return;
	}
	kv = kernel_version(d->sr, rel, sizeof(rel));
	drv = driver_major(s->nv_driver);
	kv_ok = kv >= 5012;
	drv_ok = s->nv_open && drv >= 515;
	/* driver 515 ships CUDA 11.7; without libcuda the driver decides */
	cuda_ok = s->cuda_version ? s->cuda_version >= 11070 : drv >= 515;
	if (sysroot_exists(d->sr, "/sys/module/nvidia_peermem") ||
	    sysroot_exists(d->sr, "/sys/module/nv_peer_mem")) {
		report(d, PASS, "gpudirect", NULL, "nvidia-peermem loaded%s",
		       kv_ok && drv_ok && cuda_ok ? "; dma-buf also possible" : "");
		return;
	}
	if (kv_ok && drv_ok && cuda_ok) {
		report(d, PASS, "gpudirect", NULL,
		       "dma-buf: kernel %s, open GPU kernel modules %s, CUDA >= 11.7", rel,
		       s->nv_driver);
		return;
	}
	if (!kv_ok)
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "; kernel %s < 5.12",
			 rel[0] ? rel : "unknown");
	if (!s->nv_open)
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 "; proprietary GPU kernel modules (dma-buf needs the open ones)");
	else if (drv < 515)
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 "; driver %s < 515", s->nv_driver[0] ? s->nv_driver : "unknown");
	if (!cuda_ok)
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "; CUDA < 11.7");
	report(d, FAIL, "gpudirect",
	       "`modprobe nvidia-peermem` (needs the RDMA stack: MOFED/DOCA-OFED or inbox rdma-core), or install the open GPU kernel modules >= 515 on kernel >= 5.12 for dma-buf",
	       "no GPUDirect RDMA path: nvidia-peermem not loaded and no dma-buf%s", why);
}

static void check_iommu(struct doctor *d)
{
	struct hw_scan *s = d->s;
	char **groups, type[32];
	int n = sysroot_list(d->sr, &groups, "/sys/kernel/iommu_groups");

	free(groups);
	if (n <= 0) {
		report(d, PASS, "iommu", NULL, "IOMMU off (no IOMMU groups): PCIe peer-to-peer is not translated");
		return;
	}
	if (!s->nb_gpus) {
		report(d, SKIP, "iommu", NULL, "IOMMU on (%d groups); no GPU to check", n);
		return;
	}
	for (int i = 0; i < s->nb_gpus; i++) {
		const struct hw_gpu *g = &s->gpus[i];

		if (!g->iommu_group[0] ||
		    sysroot_read(d->sr, type, sizeof(type), "/sys/kernel/iommu_groups/%s/type",
				 g->iommu_group) < 0) {
			report(d, WARN, "iommu", "check that the kernel command line has iommu=pt",
			       "IOMMU on, but the domain type of GPU %s is unreadable", g->dev.bdf);
			return;
		}
		if (strcmp(type, "identity")) {
			report(d, FAIL, "iommu",
			       "add iommu=pt (Intel: intel_iommu=on iommu=pt; AMD: amd_iommu=on iommu=pt) to the kernel command line, or disable the IOMMU in the BIOS, and reboot",
			       "IOMMU translates DMA for GPU %s (group %s, type %s): NIC-to-GPU peer-to-peer needs passthrough or off",
			       g->dev.bdf, g->iommu_group, type);
			return;
		}
	}
	report(d, PASS, "iommu", NULL, "IOMMU in passthrough (identity) mode for all %d GPU(s)", s->nb_gpus);
}

/* Reads inside a capability that sysroot_pci_*cap checked is within len. */
static unsigned cfg16(const uint8_t *c, unsigned off)
{
	return c[off] | (unsigned)c[off + 1] << 8;
}

static void add_unique(char (*list)[16], int *n, int max, const char *bdf)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(list[i], bdf))
			return;
	if (*n < max)
		snprintf(list[(*n)++], 16, "%s", bdf);
}

static void check_acs(struct doctor *d)
{
	struct hw_scan *s = d->s;
	char ports[32][16];
	int np = 0;

	if (!s->nb_gpus || !s->nb_pairs) {
		report(d, SKIP, "acs", NULL, s->nb_gpus ? "no PCI NIC" : "no GPU");
		return;
	}
	for (int g = 0; g < s->nb_gpus; g++) {
		const struct hw_pair *p = best_pair(s, g);
		const struct hw_pci *ends[2] = { &s->gpus[g].dev, &s->nics[p->nic].dev };

		if (p->dist != HW_SAME_SWITCH)
			continue;
		/* switch ports below the root port on both paths */
		for (int e = 0; e < 2; e++)
			for (int k = 1; k < ends[e]->depth - 1; k++)
				add_unique(ports, &np, 32, ends[e]->chain[k]);
	}
	if (!np) {
		report(d, PASS, "acs", NULL, "no PCIe switch shared by a GPU and its closest NIC (nothing to redirect)");
		return;
	}
	for (int i = 0; i < np; i++) {
		uint8_t cfg[4096];
		int len = sysroot_pci_config(d->sr, ports[i], cfg, sizeof(cfg));
		unsigned acs, ctl;

		if (len < 0x108) {
			report(d, WARN, "acs", "run vfgx doctor as root (extended config space is root-only)",
			       "cannot read the extended config space of switch port %s", ports[i]);
			return;
		}
		acs = sysroot_pci_ext_cap(cfg, len, 0x000d, 8);
		if (!acs)
			continue;
		ctl = cfg16(cfg, acs + 6);
		if (ctl & 0x2c) {
			char fix[160];

			snprintf(fix, sizeof(fix),
				 "disable ACS in the BIOS, or `setpci -s %s ECAP_ACS+0x6.w=0000` (after every boot)",
				 ports[i]);
			report(d, FAIL, "acs", fix,
			       "ACS redirect on switch port %s (ACSCtl 0x%04x): GPU-NIC peer-to-peer is sent up to the root complex",
			       ports[i], ctl);
			return;
		}
	}
	report(d, PASS, "acs", NULL, "no ACS redirect on %d switch port(s) between GPU and NIC", np);
}

static void check_pcie(struct doctor *d)
{
	struct hw_scan *s = d->s;
	char devs[2 * HW_MAX_GPUS][16];
	int nd = 0;

	if (!s->nb_gpus || !s->nb_pairs) {
		report(d, SKIP, "pcie", NULL, s->nb_gpus ? "no PCI NIC" : "no GPU");
		return;
	}
	for (int g = 0; g < s->nb_gpus; g++) {
		add_unique(devs, &nd, 2 * HW_MAX_GPUS, s->gpus[g].dev.bdf);
		add_unique(devs, &nd, 2 * HW_MAX_GPUS, s->nics[best_pair(s, g)->nic].dev.bdf);
	}
	for (int i = 0; i < nd; i++) {
		uint8_t cfg[4096];
		int len = sysroot_pci_config(d->sr, devs[i], cfg, sizeof(cfg));
		unsigned cap = len > 0 ? sysroot_pci_cap(cfg, len, 0x10, 10) : 0;
		unsigned ctl, mps, mrrs;
		char fix[160];

		if (!cap || cap + 10 > (unsigned)len) {
			report(d, WARN, "pcie", "run vfgx doctor as root (config space beyond 64 bytes is root-only)",
			       "cannot read the PCI Express capability of %s", devs[i]);
			return;
		}
		ctl = cfg16(cfg, cap + 8);
		mps = 128u << ((ctl >> 5) & 7);
		mrrs = 128u << ((ctl >> 12) & 7);
		if (mrrs < 512) {
			snprintf(fix, sizeof(fix), "`setpci -s %s CAP_EXP+8.w=5000:7000` (MaxReadReq 4096)",
				 devs[i]);
			report(d, WARN, "pcie", fix,
			       "%s: MaxReadReq %u bytes (< 512) limits DMA read throughput", devs[i], mrrs);
			return;
		}
		if (mps < 256) {
			report(d, WARN, "pcie", "boot with pci=pcie_bus_perf or raise MaxPayload in the BIOS",
			       "%s: MaxPayload %u bytes (< 256) halves large-transfer efficiency", devs[i], mps);
			return;
		}
	}
	report(d, PASS, "pcie", NULL, "MaxPayload >= 256 and MaxReadReq >= 512 on %d GPU/NIC function(s)", nd);
}

static void check_hugepages(struct doctor *d)
{
	char **sizes;
	uint64_t free_bytes = 0, total = 0;
	int n = sysroot_list(d->sr, &sizes, "/sys/kernel/mm/hugepages");

	for (int i = 0; i < n; i++) {
		int64_t f = 0, t = 0;
		unsigned long kb;

		if (sscanf(sizes[i], "hugepages-%lukB", &kb) != 1)
			continue;
		if (!sysroot_read_s64(d->sr, &f, "/sys/kernel/mm/hugepages/%s/free_hugepages", sizes[i]))
			free_bytes += (uint64_t)f * kb * 1024;
		if (!sysroot_read_s64(d->sr, &t, "/sys/kernel/mm/hugepages/%s/nr_hugepages", sizes[i]))
			total += (uint64_t)t * kb * 1024;
	}
	free(sizes);
	if (n <= 0) {
		report(d, WARN, "hugepages", "use a kernel with CONFIG_HUGETLBFS",
		       "no /sys/kernel/mm/hugepages: huge pages unsupported");
		return;
	}
	if (!free_bytes) {
		report(d, WARN, "hugepages",
		       "`echo " HUGEPAGES_2M " > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages` (or hugepagesz=1G hugepages=16 on the kernel command line)",
		       "no free huge pages (%" PRIu64 " MiB reserved): DPDK and hugepage regions cannot allocate",
		       total >> 20);
		return;
	}
	report(d, PASS, "hugepages", NULL, "%" PRIu64 " MiB of huge pages free (of %" PRIu64 " MiB)",
	       free_bytes >> 20, total >> 20);
}

/* CAP_IPC_LOCK in the effective set: mlock and RDMA pinning ignore the
 * locked-memory limit (ib_umem_get checks capable(CAP_IPC_LOCK)). */
static bool has_ipc_lock(const struct doctor *d)
{
	char buf[4096], *line;
	unsigned long long eff;

	return sysroot_read(d->sr, buf, sizeof(buf), "/proc/self/status") >= 0 &&
	       (line = strstr(buf, "CapEff:")) &&
	       sscanf(line + strlen("CapEff:"), " %llx", &eff) == 1 &&
	       (eff >> 14 & 1);
}

static void check_memlock(struct doctor *d)
{
	char buf[4096], *line;
	char soft[32];

	if (sysroot_read(d->sr, buf, sizeof(buf), "/proc/self/limits") < 0 ||
	    !(line = strstr(buf, "Max locked memory")) ||
	    sscanf(line + strlen("Max locked memory"), " %31s", soft) != 1) {
		report(d, WARN, "memlock", "check `ulimit -l`", "cannot read the locked-memory limit from /proc/self/limits");
		return;
	}
	if (!strcmp(soft, "unlimited")) {
		report(d, PASS, "memlock", NULL, "locked memory unlimited");
		return;
	}
	if (has_ipc_lock(d)) {
		report(d, PASS, "memlock", NULL,
		       "locked memory limited to %s bytes, but this process has CAP_IPC_LOCK, which is exempt",
		       soft);
		return;
	}
	report(d, WARN, "memlock",
	       "`ulimit -l unlimited`; persist with `* - memlock unlimited` in /etc/security/limits.conf or LimitMEMLOCK=infinity for services; or run with CAP_IPC_LOCK",
	       "locked memory limited to %s bytes and no CAP_IPC_LOCK: RDMA registration of large pools fails",
	       soft);
}

static void check_nic_driver(struct doctor *d)
{
	char **devs, drv[32], bad[128] = "";
	int n = sysroot_list(d->sr, &devs, "/sys/bus/pci/devices");
	int nics = 0, mlx = 0;

	for (int i = 0; i < n; i++) {
		struct hw_pci p;

		if (hw_pci_read(d->sr, devs[i], &p) || (p.class_code >> 16) != 0x02)
			continue;
		nics++;
		snprintf(drv, sizeof(drv), "%s", p.driver[0] ? p.driver : "none");
		if (p.vendor == 0x15b3) {
			mlx++;
			if (strcmp(drv, "mlx5_core") && !bad[0])
				snprintf(bad, sizeof(bad), "%s", devs[i]);
		}
	}
	free(devs);
	if (!nics) {
		report(d, WARN, "nic-driver", "install a NIC (ConnectX-6 Dx or newer for GPUDirect RDMA)",
		       "no PCI network controller found");
		return;
	}
	if (bad[0]) {
		char fix[256];

		snprintf(fix, sizeof(fix),
			 "`echo %s > /sys/bus/pci/devices/%s/driver/unbind; echo %s > /sys/bus/pci/drivers/mlx5_core/bind` (the mlx5 DPDK driver is bifurcated: it runs beside mlx5_core)",
			 bad, bad, bad);
		report(d, FAIL, "nic-driver", fix,
		       "Mellanox NIC %s is not on mlx5_core: DPDK, RDMA and AF_XDP need the kernel driver", bad);
		return;
	}
	report(d, PASS, "nic-driver", NULL, "%d PCI NIC function(s)%s", nics,
	       mlx ? "; Mellanox ones on mlx5_core (bifurcated, no vfio-pci needed)" : "");
}

static void check_governor(struct doctor *d)
{
	char **cpus, gov[32], first_bad[32] = "";
	int n = sysroot_list(d->sr, &cpus, "/sys/devices/system/cpu");
	int seen = 0, slow = 0;

	for (int i = 0; i < n; i++) {
		if (strncmp(cpus[i], "cpu", 3) || cpus[i][3] < '0' || cpus[i][3] > '9')
			continue;
		if (sysroot_read(d->sr, gov, sizeof(gov),
				 "/sys/devices/system/cpu/%s/cpufreq/scaling_governor", cpus[i]) < 0)
			continue;
		seen++;
		if (strcmp(gov, "performance")) {
			slow++;
			if (!first_bad[0])
				snprintf(first_bad, sizeof(first_bad), "%s", gov);
		}
	}
	free(cpus);
	if (!seen) {
		report(d, SKIP, "cpufreq", NULL, "no cpufreq interface (fixed clock or virtual machine)");
		return;
	}
	if (slow) {
		report(d, WARN, "cpufreq", "`cpupower frequency-set -g performance`",
		       "%d of %d CPUs use governor '%s': polling threads lose latency to clock ramp-up",
		       slow, seen, first_bad);
		return;
	}
	report(d, PASS, "cpufreq", NULL, "all %d CPUs use the performance governor", seen);
}

static void check_numa(struct doctor *d)
{
	struct hw_scan *s = d->s;

	if (!s->nb_gpus || !s->nb_pairs) {
		report(d, SKIP, "numa", NULL, s->nb_gpus ? "no PCI NIC" : "no GPU");
		return;
	}
	for (int g = 0; g < s->nb_gpus; g++) {
		const struct hw_pair *p = best_pair(s, g);
		const struct hw_nic *n = &s->nics[p->nic];

		if (p->dist == HW_CROSS_SOCKET) {
			report(d, FAIL, "numa",
			       "put the NIC in a slot on the GPU's socket, or use a NIC/GPU pair that `vfgx devices` ranks same-socket or closer",
			       "GPU %s (node %d) and its closest NIC %s %s (node %d) are on different sockets: peer-to-peer crosses the inter-socket link",
			       s->gpus[g].dev.bdf, s->gpus[g].dev.numa, n->name, n->dev.bdf, n->dev.numa);
			return;
		}
	}
	{
		const struct hw_pair *p = best_pair(s, 0);

		report(d, PASS, "numa", NULL, "every GPU has a NIC on its socket (GPU %s - %s: %s)",
		       s->gpus[0].dev.bdf, s->nics[p->nic].name, hw_dist_name(p->dist));
	}
}

static void check_mon(struct doctor *d)
{
	if (sysroot_exists(d->sr, "/sys/module/gpurdma_mon") ||
	    sysroot_exists(d->sr, "/dev/gpurdma_mon")) {
		report(d, PASS, "gpurdma_mon", NULL, "gpurdma_mon loaded");
		return;
	}
	report(d, WARN, "gpurdma_mon",
	       "`make -C drivers/gpurdma_mon install && modprobe gpurdma_mon` (needs the running kernel's headers)",
	       "gpurdma_mon not loaded: no kernel PCIe/NUMA telemetry");
}

static const struct cli_opt doctor_opts[] = {
	{ "root", 'r', "DIR", "read sys/, proc/ and dev/ below DIR (a fixture tree)" },
	{ "json", 'j', NULL, "the checks as one JSON document (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_cli_doctor = {
	.name = "doctor",
	.summary = "check the system for GPUDirect networking; prints the fixes",
	.more = "each check prints pass, warn, fail or skip (does not apply here), and a fix\n"
		"for every warn and fail; exit status: 0 all pass, 1 warnings, 2 failures\n",
	.opts = doctor_opts,
};

static void doctor_json(struct doctor *d)
{
	json_object *root = json_object_new_object();

	json_object_object_add(root, "schema", json_object_new_string("vfgx.doctor/1"));
	json_object_object_add(root, "checks", d->checks);
	json_object_object_add(root, "result", json_object_new_string(
		d->worst == 2 ? "failures" : d->worst == 1 ? "warnings" : "all pass"));
	json_object_object_add(root, "exit_code", json_object_new_int(d->worst));
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
	d->checks = NULL;
}

int vfgx_cmd_doctor(int argc, char **argv)
{
	struct doctor d = { 0 };
	bool json = false;
	const char *root = NULL;
	struct sysroot sr;
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_cli_doctor)) != -1) {
		switch (c) {
		case 'r':
			root = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_cli_doctor);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vfgx doctor: unexpected argument '%s' (vfgx doctor -h)\n", cli_esc(argv[optind]));
		return 2;
	}
	if (sysroot_init(&sr, root)) {
		fprintf(stderr, "vfgx doctor: --root %s: not a directory (give a tree holding sys/ and proc/)\n",
			cli_esc(root));
		return 2;
	}
	d.sr = &sr;
	d.s = malloc(sizeof(*d.s));
	if (!d.s)
		return 2;
	hw_scan(&sr, d.s);
	if (json)
		d.checks = json_object_new_array();
	check_gpu(&d);
	check_gpudirect(&d);
	check_iommu(&d);
	check_acs(&d);
	check_pcie(&d);
	check_hugepages(&d);
	check_memlock(&d);
	check_nic_driver(&d);
	check_governor(&d);
	check_numa(&d);
	check_mon(&d);
	if (d.checks)
		doctor_json(&d);
	else
		printf("result: %s\n", d.worst == 2 ? "failures" : d.worst == 1 ? "warnings" : "all pass");
	free(d.s);
	return d.worst;
}
