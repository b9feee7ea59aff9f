// SPDX-License-Identifier: GPL-2.0
/*
 * gmon_ioctl.c - the ioctls: version, telemetry, thresholds, and PUBLISH,
 * through which the library pushes its counters (pool pressure and rx
 * bandwidth are judged here and raise events for every client).  The
 * reads are open to whoever may open the device; SET_THRESHOLD and PUBLISH
 * change what every client sees and need CAP_NET_ADMIN.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gmon.h"

/* Copy a struct whose first __u32 is argsz from user space and check that
 * argsz is exactly the size this driver knows.
 */
static int get_sized(void *dst, const void __user *src, size_t size)
{
	u32 argsz;

	if (get_user(argsz, (const u32 __user *)src))
		return -EFAULT;
	if (argsz != size)
		return -EINVAL;
	if (copy_from_user(dst, src, size))
		return -EFAULT;
	return 0;
}

static int get_telemetry(void __user *arg)
{
	struct gpurdma_mon_telemetry t;
	unsigned long flags;
	int ret;

	ret = get_sized(&t, arg, sizeof(t));
	if (ret)
		return ret;
	memset(&t, 0, sizeof(t));
	t.argsz = sizeof(t);
	t.version = GPURDMA_MON_ABI_VERSION;
	mutex_lock(&gmon.lock);
	t.gpu = gmon.gpu_link;
	t.nic = gmon.nic_link;
	t.same_switch = gmon.same_switch;
	t.numa_mismatch = gmon.numa_mismatch;
	t.est_bw_mbps = gmon_est_bw();
	t.link_checks = gmon.link_checks;
	t.publishes = gmon.publishes;
	t.pressure_pct = gmon.pressure_pct;
	t.rx_mbps = gmon.rx_mbps;
	mutex_unlock(&gmon.lock);
	spin_lock_irqsave(&gmon.ev_lock, flags);
	t.events = gmon.seq;
	t.clients = gmon.nr_clients;
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
	return copy_to_user(arg, &t, sizeof(t)) ? -EFAULT : 0;
}

static int set_threshold(const void __user *arg)
{
	struct gpurdma_mon_threshold thr;
	int ret;

	ret = get_sized(&thr, arg, sizeof(thr));
	if (ret)
		return ret;
	if (thr.pressure_pct < 1 || thr.pressure_pct > 100)
		return -EINVAL;
	mutex_lock(&gmon.lock);
	gmon.thr = thr;
	/* judge the next PUBLISH against the new values afresh */
	gmon.over_pressure = false;
	gmon.over_bw = false;
	mutex_unlock(&gmon.lock);
	return 0;
}

static int get_threshold(void __user *arg)
{
	struct gpurdma_mon_threshold thr;
	int ret;

	ret = get_sized(&thr, arg, sizeof(thr));
	if (ret)
		return ret;
	mutex_lock(&gmon.lock);
	thr = gmon.thr;
	mutex_unlock(&gmon.lock);
	return copy_to_user(arg, &thr, sizeof(thr)) ? -EFAULT : 0;
}

static u64 rx_bytes(const struct gpurdma_mon_publish *p)
{
	u64 sum = 0;
	u32 i;

	for (i = 0; i < p->nr_queues; i++)
		sum += p->q[i].rx_bytes;
	return sum;
}

/* Rate between two publishes in Mb/s; 0 when counters went backwards (a
 * new publisher) or no time passed.
 */
static u64 rate_mbps(const struct gpurdma_mon_publish *prev,
		     const struct gpurdma_mon_publish *cur)
{
	u64 dt = cur->timestamp_ns - prev->timestamp_ns;
	u64 b0 = rx_bytes(prev), b1 = rx_bytes(cur);

	if (!prev->timestamp_ns || !dt || b1 < b0 || prev->pid != cur->pid)
		return 0;
	/* bits * 1000 / ns = Mb/s; bytes * 8000 fits u64 below 2 EiB */
	return div64_u64((b1 - b0) * 8000, dt);
}

static int publish(const void __user *arg)
{
	struct gpurdma_mon_publish *p;
	u64 pct, mbps, bw_thr;
	bool pressure, bw_high;
	u32 pct_thr;
	int ret;

	p = kmalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = get_sized(p, arg, sizeof(*p));
	if (ret)
		goto out;
	ret = -EINVAL;
	if (p->nr_queues > GPURDMA_MON_MAX_QUEUES ||
	    p->pool_used > p->pool_total)
		goto out;
	ret = 0;
	p->pid = task_tgid_nr(current);
	p->pad0 = 0;
	p->timestamp_ns = ktime_get_ns();
	memset(&p->q[p->nr_queues], 0,
	       sizeof(p->q[0]) * (GPURDMA_MON_MAX_QUEUES - p->nr_queues));
	pct = p->pool_total ? div_u64((u64)p->pool_used * 100, p->pool_total) : 0;

	mutex_lock(&gmon.lock);
	mbps = rate_mbps(&gmon.last, p);
	bw_thr = gmon.thr.bw_mbps ? gmon.thr.bw_mbps :
		 div_u64(gmon_est_bw() * 9, 10);
	pct_thr = gmon.thr.pressure_pct;
	pressure = pct >= pct_thr;
	bw_high = bw_thr && mbps >= bw_thr;
	/* raise on crossing only: a pool that stays full is one event */
	if (pressure == gmon.over_pressure)
		pressure = false;
	else
		gmon.over_pressure = pressure;
	if (bw_high == gmon.over_bw)
		bw_high = false;
	else
		gmon.over_bw = bw_high;
	gmon.last = *p;
	gmon.publishes++;
	gmon.pressure_pct = pct;
	gmon.rx_mbps = mbps;
	mutex_unlock(&gmon.lock);

	if (pressure)
		gmon_raise(GPURDMA_MON_EV_PRESSURE,
			   pct >= 100 ? GPURDMA_MON_SEV_CRIT : GPURDMA_MON_SEV_WARN,
			   GPURDMA_MON_SRC_LIB, pct, pct_thr,
			   "pool %u of %u buffers in use (pid %u)",
			   p->pool_used, p->pool_total, p->pid);
	if (bw_high)
		gmon_raise(GPURDMA_MON_EV_BW_HIGH, GPURDMA_MON_SEV_WARN,
			   GPURDMA_MON_SRC_LIB, mbps, bw_thr,
			   "rx %llu Mb/s over %llu Mb/s (pid %u)", mbps,
			   bw_thr, p->pid);
out:
	kfree(p);
	return ret;
}

static int get_counters(void __user *arg)
{
	struct gpurdma_mon_publish *p;
	int ret;

	p = kmalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = get_sized(p, arg, sizeof(*p));
	if (!ret) {
		mutex_lock(&gmon.lock);
		*p = gmon.last;
		mutex_unlock(&gmon.lock);
		p->argsz = sizeof(*p);
		ret = copy_to_user(arg, p, sizeof(*p)) ? -EFAULT : 0;
	}
	kfree(p);
	return ret;
}

long gmon_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case GPURDMA_MON_IOC_GET_VERSION:
		return put_user((u32)GPURDMA_MON_ABI_VERSION, (u32 __user *)uarg);
	case GPURDMA_MON_IOC_GET_TELEMETRY:
		return get_telemetry(uarg);
	case GPURDMA_MON_IOC_SET_THRESHOLD:
		if (!capable(CAP_NET_ADMIN))
			return -EPERM;
		return set_threshold(uarg);
	case GPURDMA_MON_IOC_GET_THRESHOLD:
		return get_threshold(uarg);
	case GPURDMA_MON_IOC_PUBLISH:
		if (!capable(CAP_NET_ADMIN))
			return -EPERM;
		return publish(uarg);
	case GPURDMA_MON_IOC_GET_COUNTERS:
		return get_counters(uarg);
	default:
		return -ENOTTY;
	}
}
