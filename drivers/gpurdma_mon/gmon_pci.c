// SPDX-License-Identifier: GPL-2.0
/*
 * gmon_pci.c - the GPU and the NIC: found by module parameter or by vendor,
 * their PCIe link registers read, NUMA and switch affinity worked out.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/pci.h>

#include "gmon.h"

#define PCI_CLASS_SERIAL_IB	0x0c06

/* Mb/s per lane for the Current/Supported Link Speed encodings 1..6. */
static const u32 lane_mbps[] = { 0, 2500, 5000, 8000, 16000, 32000, 64000 };

static u32 speed_mbps(u32 code)
{
	return code < ARRAY_SIZE(lane_mbps) ? lane_mbps[code] : 0;
}

/* Usable bandwidth after line encoding: 8b/10b up to 5 GT/s, 128b/130b up
 * to 32 GT/s, FLIT (242 of 256 bytes) at 64 GT/s.
 */
static u64 link_bw(u32 mbps, u32 width)
{
	u64 raw = (u64)mbps * width;

	if (mbps <= 5000)
		return raw * 8 / 10;
	if (mbps <= 32000)
		return raw * 128 / 130;
	return raw * 242 / 256;
}

static void read_link(struct pci_dev *pdev, struct gpurdma_mon_link *l)
{
	u32 lnkcap = 0;
	u16 lnksta = 0;

	memset(l, 0, sizeof(*l));
	if (!pdev)
		return;
	l->present = 1;
	l->domain = pci_domain_nr(pdev->bus);
	l->bus = pdev->bus->number;
	l->devfn = pdev->devfn;
	l->vendor = pdev->vendor;
	l->device = pdev->device;
	l->numa_node = dev_to_node(&pdev->dev);
	if (!pci_is_pcie(pdev))
		return;
	pcie_capability_read_dword(pdev, PCI_EXP_LNKCAP, &lnkcap);
	pcie_capability_read_word(pdev, PCI_EXP_LNKSTA, &lnksta);
	l->cur_speed = speed_mbps(lnksta & PCI_EXP_LNKSTA_CLS);
	l->cur_width = (lnksta & PCI_EXP_LNKSTA_NLW) >> PCI_EXP_LNKSTA_NLW_SHIFT;
	l->max_speed = speed_mbps(lnkcap & PCI_EXP_LNKCAP_SLS);
	l->max_width = (lnkcap & PCI_EXP_LNKCAP_MLW) >> 4;
	/* a link that is down (width 0) is not "trained below" anything */
	l->degraded = l->cur_width && l->max_width &&
		      (l->cur_speed < l->max_speed ||
		       l->cur_width < l->max_width);
	l->bw_mbps = link_bw(l->cur_speed, l->cur_width);
}

/* True when one is the other's upstream port, or both sit below a common
 * bridge (a switch or a root port) rather than only the root complex.
 */
static bool share_switch(struct pci_dev *a, struct pci_dev *b)
{
	struct pci_dev *ua, *ub;

	for (ua = a; ua; ua = pci_upstream_bridge(ua)) {
		for (ub = b; ub; ub = pci_upstream_bridge(ub)) {
			if (ua == ub)
				return ua != a || ub != b;
		}
	}
	return false;
}

u64 gmon_est_bw(void)
{
	const struct gpurdma_mon_link *g = &gmon.gpu_link, *n = &gmon.nic_link;

	if (!g->present || !n->present)
		return 0;
	return min(g->bw_mbps, n->bw_mbps);
}

static void link_event(u32 source, const struct gpurdma_mon_link *l)
{
	gmon_raise(GPURDMA_MON_EV_LINK_DEGRADED, GPURDMA_MON_SEV_WARN, source,
		   (u64)l->cur_speed * l->cur_width,
		   (u64)l->max_speed * l->max_width,
		   "%04x:%02x:%02x.%u x%u@%u of x%u@%u", l->domain, l->bus,
		   PCI_SLOT(l->devfn), PCI_FUNC(l->devfn), l->cur_width,
		   l->cur_speed, l->max_width, l->max_speed);
}

/* Re-read both links; raise LINK_DEGRADED when a link goes from full to
 * degraded (or is degraded at the first check).
 */
void gmon_link_check(bool first)
{
	struct gpurdma_mon_link gpu, nic;
	bool gpu_new, nic_new;

	mutex_lock(&gmon.lock);
	gpu_new = !gmon.gpu_link.degraded || first;
	nic_new = !gmon.nic_link.degraded || first;
	read_link(gmon.gpu, &gmon.gpu_link);
	read_link(gmon.nic, &gmon.nic_link);
	gpu = gmon.gpu_link;
	nic = gmon.nic_link;
	gmon.link_checks++;
	mutex_unlock(&gmon.lock);

	if (gpu.degraded && gpu_new)
		link_event(GPURDMA_MON_SRC_GPU, &gpu);
	if (nic.degraded && nic_new)
		link_event(GPURDMA_MON_SRC_NIC, &nic);
}

static struct pci_dev *by_address(const char *what, const char *addr)
{
	unsigned int domain = 0, bus, slot, fn;
	struct pci_dev *pdev;

	if (sscanf(addr, "%x:%x:%x.%x", &domain, &bus, &slot, &fn) != 4) {
		domain = 0;
		if (sscanf(addr, "%x:%x.%x", &bus, &slot, &fn) != 3) {
			pr_err("%s=%s: not a PCI address; use DDDD:BB:SS.F as lspci -D prints it\n",
			       what, addr);
			return ERR_PTR(-EINVAL);
		}
	}
	if (bus > 0xff || slot > 0x1f || fn > 7) {
		pr_err("%s=%s: bus, slot or function out of range\n", what,
		       addr);
		return ERR_PTR(-EINVAL);
	}
	pdev = pci_get_domain_bus_and_slot(domain, bus, PCI_DEVFN(slot, fn));
	if (!pdev) {
		pr_err("%s=%s: no such PCI device (see lspci -D, or leave %s unset to auto-detect)\n",
		       what, addr, what);
		return ERR_PTR(-ENODEV);
	}
	return pdev;
}

static bool is_gpu(const struct pci_dev *pdev)
{
	return (pdev->class >> 16) == PCI_BASE_CLASS_DISPLAY;
}

static bool is_nic(const struct pci_dev *pdev)
{
	return (pdev->class >> 16) == PCI_BASE_CLASS_NETWORK ||
	       (pdev->class >> 8) == PCI_CLASS_SERIAL_IB;
}

/* First device of vendor that match() accepts, with a reference held. */
static struct pci_dev *by_vendor(unsigned int vendor,
				 bool (*match)(const struct pci_dev *pdev))
{
	struct pci_dev *pdev = NULL;

	while ((pdev = pci_get_device(vendor, PCI_ANY_ID, pdev))) {
		if (match(pdev))
			return pdev;
	}
	return NULL;
}

int gmon_pci_find(const char *gpu_param, const char *nic_param,
		  unsigned int gpu_vendor, unsigned int nic_vendor)
{
	struct pci_dev *gpu, *nic;

	if (gpu_param && *gpu_param)
		gpu = by_address("gpu", gpu_param);
	else
		gpu = by_vendor(gpu_vendor, is_gpu);
	if (IS_ERR(gpu))
		return PTR_ERR(gpu);
	if (nic_param && *nic_param)
		nic = by_address("nic", nic_param);
	else
		nic = by_vendor(nic_vendor, is_nic);
	if (IS_ERR(nic)) {
		pci_dev_put(gpu);
		return PTR_ERR(nic);
	}

	mutex_lock(&gmon.lock);
	gmon.gpu = gpu;
	gmon.nic = nic;
	read_link(gpu, &gmon.gpu_link);
	read_link(nic, &gmon.nic_link);
	gmon.same_switch = gpu && nic && share_switch(gpu, nic);
	gmon.numa_mismatch = gpu && nic && gmon.gpu_link.numa_node >= 0 &&
			     gmon.nic_link.numa_node >= 0 &&
			     gmon.gpu_link.numa_node != gmon.nic_link.numa_node;
	mutex_unlock(&gmon.lock);

	if (gpu)
		pci_info(gpu, "gpurdma_mon: GPU, link x%u@%u Mb/s of x%u@%u, node %d\n",
			 gmon.gpu_link.cur_width, gmon.gpu_link.cur_speed,
			 gmon.gpu_link.max_width, gmon.gpu_link.max_speed,
			 gmon.gpu_link.numa_node);
	else
		pr_info("no GPU of vendor %#06x (set gpu=DDDD:BB:SS.F to choose one)\n",
			gpu_vendor);
	if (nic)
		pci_info(nic, "gpurdma_mon: NIC, link x%u@%u Mb/s of x%u@%u, node %d\n",
			 gmon.nic_link.cur_width, gmon.nic_link.cur_speed,
			 gmon.nic_link.max_width, gmon.nic_link.max_speed,
			 gmon.nic_link.numa_node);
	else
		pr_info("no NIC of vendor %#06x (set nic=DDDD:BB:SS.F to choose one)\n",
			nic_vendor);
	if (gmon.numa_mismatch) {
		pr_warn("GPU on NUMA node %d, NIC on node %d: traffic crosses the socket interconnect\n",
			gmon.gpu_link.numa_node, gmon.nic_link.numa_node);
		gmon_raise(GPURDMA_MON_EV_NUMA_WARN, GPURDMA_MON_SEV_WARN,
			   GPURDMA_MON_SRC_NIC, gmon.nic_link.numa_node,
			   gmon.gpu_link.numa_node,
			   "GPU on node %d, NIC on node %d",
			   gmon.gpu_link.numa_node, gmon.nic_link.numa_node);
	}
	return 0;
}

void gmon_pci_put(void)
{
	pci_dev_put(gmon.gpu);
	pci_dev_put(gmon.nic);
	gmon.gpu = NULL;
	gmon.nic = NULL;
}
