// SPDX-License-Identifier: GPL-2.0
/*
 * gmon_main.c - /dev/gpurdma_mon: module parameters, the misc device and its
 * file operations (per-open event queues, read/poll/ioctl), the periodic
 * link check, sysfs telemetry attributes, load and unload.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gmon.h"

static char *gpu;
module_param(gpu, charp, 0444);
MODULE_PARM_DESC(gpu, "PCI address of the GPU (default: first display device of gpu_vendor)");
static char *nic;
module_param(nic, charp, 0444);
MODULE_PARM_DESC(nic, "PCI address of the NIC (default: first network or InfiniBand device of nic_vendor)");
static unsigned int gpu_vendor = PCI_VENDOR_ID_NVIDIA;
module_param(gpu_vendor, uint, 0444);
MODULE_PARM_DESC(gpu_vendor, "PCI vendor auto-detected as the GPU when gpu is unset (default 0x10de)");
static unsigned int nic_vendor = PCI_VENDOR_ID_MELLANOX;
module_param(nic_vendor, uint, 0444);
MODULE_PARM_DESC(nic_vendor, "PCI vendor auto-detected as the NIC when nic is unset (default 0x15b3)");
static unsigned int check_ms = 1000;
module_param(check_ms, uint, 0444);
MODULE_PARM_DESC(check_ms, "period of the PCIe link check in ms (100..60000, default 1000)");
static unsigned int queue_len = 256;
module_param(queue_len, uint, 0444);
MODULE_PARM_DESC(queue_len, "events queued per open file, rounded up to a power of two (8..65536, default 256)");
static unsigned int pressure_pct = 90;
module_param(pressure_pct, uint, 0444);
MODULE_PARM_DESC(pressure_pct, "initial pool occupancy threshold in percent (1..100, default 90)");
static unsigned int mode = 0644;
module_param(mode, uint, 0444);
MODULE_PARM_DESC(mode, "permissions of /dev/gpurdma_mon (default 0644: every user reads telemetry and events; SET_THRESHOLD and PUBLISH need CAP_NET_ADMIN whatever the mode)");
static unsigned int max_clients = 64;
module_param(max_clients, uint, 0444);
MODULE_PARM_DESC(max_clients, "open files allowed while the opener lacks CAP_NET_ADMIN (1..4096, default 64)");

struct gmon_dev gmon;

/* Read at most this many events per copy to user space. */
#define READ_BATCH	16

static int gmon_open(struct inode *inode, struct file *file)
{
	struct gmon_client *c;
	int ret;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	/* noaudit: lacking the capability is no denial here, only a bound */
	ret = gmon_client_open(c, ns_capable_noaudit(&init_user_ns,
						     CAP_NET_ADMIN));
	if (ret) {
		kfree(c);
		return ret;
	}
	file->private_data = c;
	gmon_replay_conditions(c);
	return stream_open(inode, file);
}

static int gmon_release(struct inode *inode, struct file *file)
{
	struct gmon_client *c = file->private_data;

	gmon_client_close(c);
	kfree(c);
	return 0;
}

static ssize_t gmon_read(struct file *file, char __user *buf, size_t count,
			 loff_t *ppos)
{
	struct gmon_client *c = file->private_data;
	struct gpurdma_mon_event *ev;
	size_t want = count / sizeof(*ev), done = 0;
	ssize_t ret = 0;
	int n;

	if (!want)
		return -EINVAL;
	ev = kmalloc_array(READ_BATCH, sizeof(*ev), GFP_KERNEL);
	if (!ev)
		return -ENOMEM;
	while (done < want) {
		n = gmon_client_pop(c, ev,
				    min_t(size_t, want - done, READ_BATCH));
		if (!n) {
			if (done)
				break;
			/* another reader of this file may have emptied it
			 * between the wake-up and the pop: wait again
			 */
			if (file->f_flags & O_NONBLOCK) {
				ret = -EAGAIN;
				goto out;
			}
			ret = wait_event_interruptible(c->wq,
						       gmon_client_ready(c));
			if (ret)
				goto out;
			continue;
		}
		if (copy_to_user(buf + done * sizeof(*ev), ev,
				 n * sizeof(*ev))) {
			/* the popped events are lost, as for a full queue */
			ret = done ? 0 : -EFAULT;
			break;
		}
		done += n;
	}
	if (done)
		ret = done * sizeof(*ev);
out:
	kfree(ev);
	return ret;
}

static __poll_t gmon_poll(struct file *file, poll_table *wait)
{
	struct gmon_client *c = file->private_data;

	poll_wait(file, &c->wq, wait);
	return gmon_client_ready(c) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations gmon_fops = {
	.owner = THIS_MODULE,
	.open = gmon_open,
	.release = gmon_release,
	.read = gmon_read,
	.poll = gmon_poll,
	.unlocked_ioctl = gmon_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

/* --- sysfs: /sys/class/misc/gpurdma_mon/ ------------------------------ */

static ssize_t show_address(char *buf, const struct gpurdma_mon_link *l)
{
	if (!l->present)
		return sysfs_emit(buf, "absent\n");
	return sysfs_emit(buf, "%04x:%02x:%02x.%u\n", l->domain, l->bus,
			  PCI_SLOT(l->devfn), PCI_FUNC(l->devfn));
}

static ssize_t show_link(char *buf, const struct gpurdma_mon_link *l)
{
	if (!l->present)
		return sysfs_emit(buf, "absent\n");
	return sysfs_emit(buf, "x%u %u Mb/s of x%u %u Mb/s%s\n", l->cur_width,
			  l->cur_speed, l->max_width, l->max_speed,
			  l->degraded ? " degraded" : "");
}

#define GMON_ATTR(name, expr)						\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	ssize_t ret;							\
									\
	mutex_lock(&gmon.lock);						\
	ret = expr;							\
	mutex_unlock(&gmon.lock);					\
	return ret;							\
}									\
static DEVICE_ATTR_RO(name)

GMON_ATTR(gpu_address, show_address(buf, &gmon.gpu_link));
GMON_ATTR(nic_address, show_address(buf, &gmon.nic_link));
GMON_ATTR(gpu_link, show_link(buf, &gmon.gpu_link));
GMON_ATTR(nic_link, show_link(buf, &gmon.nic_link));
GMON_ATTR(gpu_numa_node, sysfs_emit(buf, "%d\n", gmon.gpu_link.numa_node));
GMON_ATTR(nic_numa_node, sysfs_emit(buf, "%d\n", gmon.nic_link.numa_node));
GMON_ATTR(same_switch, sysfs_emit(buf, "%d\n", gmon.same_switch));
GMON_ATTR(numa_mismatch, sysfs_emit(buf, "%d\n", gmon.numa_mismatch));
GMON_ATTR(est_bw_mbps, sysfs_emit(buf, "%llu\n", gmon_est_bw()));
GMON_ATTR(link_checks, sysfs_emit(buf, "%llu\n", gmon.link_checks));
GMON_ATTR(publishes, sysfs_emit(buf, "%llu\n", gmon.publishes));
GMON_ATTR(pressure_pct, sysfs_emit(buf, "%u\n", gmon.pressure_pct));
GMON_ATTR(rx_mbps, sysfs_emit(buf, "%llu\n", gmon.rx_mbps));

static ssize_t clients_show(struct device *dev,
			    struct device_attribute *attr, char *buf)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&gmon.ev_lock, flags);
	n = gmon.nr_clients;
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
	return sysfs_emit(buf, "%u\n", n);
}
static DEVICE_ATTR_RO(clients);

static ssize_t events_show(struct device *dev,
			   struct device_attribute *attr, char *buf)
{
	unsigned long flags;
	u64 n;

	spin_lock_irqsave(&gmon.ev_lock, flags);
	n = gmon.seq;
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
	return sysfs_emit(buf, "%llu\n", n);
}
static DEVICE_ATTR_RO(events);

static struct attribute *gmon_attrs[] = {
	&dev_attr_gpu_address.attr,
	&dev_attr_nic_address.attr,
	&dev_attr_gpu_link.attr,
	&dev_attr_nic_link.attr,
	&dev_attr_gpu_numa_node.attr,
	&dev_attr_nic_numa_node.attr,
	&dev_attr_same_switch.attr,
	&dev_attr_numa_mismatch.attr,
	&dev_attr_est_bw_mbps.attr,
	&dev_attr_link_checks.attr,
	&dev_attr_publishes.attr,
	&dev_attr_pressure_pct.attr,
	&dev_attr_rx_mbps.attr,
	&dev_attr_clients.attr,
	&dev_attr_events.attr,
	NULL,
};

static const struct attribute_group gmon_group = {
	.attrs = gmon_attrs,
};

const struct attribute_group *gmon_groups[] = {
	&gmon_group,
	NULL,
};

/* --- periodic link check -------------------------------------------- */

static void gmon_link_work(struct work_struct *work)
{
	gmon_link_check(false);
	schedule_delayed_work(&gmon.link_work, gmon.check_jiffies);
}

static int __init gmon_init(void)
{
	int ret;

	if (check_ms < 100 || check_ms > 60000) {
		pr_err("check_ms=%u: must be 100..60000\n", check_ms);
		return -EINVAL;
	}
	if (queue_len < 8 || queue_len > 65536) {
		pr_err("queue_len=%u: must be 8..65536\n", queue_len);
		return -EINVAL;
	}
	if (pressure_pct < 1 || pressure_pct > 100) {
		pr_err("pressure_pct=%u: must be 1..100\n", pressure_pct);
		return -EINVAL;
	}
	if (max_clients < 1 || max_clients > 4096) {
		pr_err("max_clients=%u: must be 1..4096\n", max_clients);
		return -EINVAL;
	}
	if (mode & ~0666) {
		pr_err("mode=%#o: only read and write bits (at most 0666)\n",
		       mode);
		return -EINVAL;
	}
	spin_lock_init(&gmon.ev_lock);
	INIT_LIST_HEAD(&gmon.clients);
	mutex_init(&gmon.lock);
	INIT_DELAYED_WORK(&gmon.link_work, gmon_link_work);
	gmon.check_jiffies = msecs_to_jiffies(check_ms);
	gmon.queue_len = roundup_pow_of_two(queue_len);
	gmon.max_clients = max_clients;
	gmon.thr.argsz = sizeof(gmon.thr);
	gmon.thr.pressure_pct = pressure_pct;

	if (gpu_vendor > 0xffff || nic_vendor > 0xffff) {
		pr_err("gpu_vendor=%#x nic_vendor=%#x: PCI vendor IDs are 16 bits\n",
		       gpu_vendor, nic_vendor);
		return -EINVAL;
	}
	ret = gmon_pci_find(gpu, nic, gpu_vendor, nic_vendor);
	if (ret)
		return ret;
	gmon_link_check(true);

	gmon.misc.minor = MISC_DYNAMIC_MINOR;
	gmon.misc.name = GPURDMA_MON_DEVNAME;
	gmon.misc.fops = &gmon_fops;
	gmon.misc.groups = gmon_groups;
	gmon.misc.mode = mode;
	ret = misc_register(&gmon.misc);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", GPURDMA_MON_DEVNAME,
		       ret);
		goto err_pci;
	}
	gmon_debugfs_init();
	schedule_delayed_work(&gmon.link_work, gmon.check_jiffies);
	return 0;

err_pci:
	gmon_pci_put();
	return ret;
}

/* Open files hold a reference on the module (fops.owner), so this runs
 * only once every client has closed: rmmod with clients open is refused
 * with -EBUSY and leaves them working.
 */
static void __exit gmon_exit(void)
{
	misc_deregister(&gmon.misc);
	gmon_debugfs_exit();
	cancel_delayed_work_sync(&gmon.link_work);
	gmon_pci_put();
}

module_init(gmon_init);
module_exit(gmon_exit);

MODULE_DESCRIPTION("GPU/NIC PCIe telemetry and memory-pressure events for VectorFlow-GX");
MODULE_LICENSE("GPL");
