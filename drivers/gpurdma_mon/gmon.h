/* SPDX-License-Identifier: GPL-2.0 */
/* gmon.h - shared state of the gpurdma_mon driver's source files. */
#ifndef GMON_H
#define GMON_H

#include <linux/kfifo.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "uapi/gpurdma_mon.h"

/* One open file: its own queue of events. */
struct gmon_client {
	struct list_head node;
	DECLARE_KFIFO_PTR(fifo, struct gpurdma_mon_event);
	wait_queue_head_t wq;
	u32 lost;
};

struct gmon_dev {
	struct miscdevice misc;
	struct dentry *debugfs;
	struct delayed_work link_work;
	unsigned long check_jiffies;
	unsigned int queue_len;
	/* open files allowed to users without CAP_NET_ADMIN */
	u32 max_clients;

	/* clients, their fifos and lost counts, and seq */
	spinlock_t ev_lock;
	struct list_head clients;
	u32 nr_clients;
	u64 seq;

	/* everything below */
	struct mutex lock;
	struct pci_dev *gpu;
	struct pci_dev *nic;
	struct gpurdma_mon_link gpu_link;
	struct gpurdma_mon_link nic_link;
	bool same_switch;
	bool numa_mismatch;
	u64 link_checks;
	struct gpurdma_mon_threshold thr;
	struct gpurdma_mon_publish last;
	u64 publishes;
	u32 pressure_pct;
	u64 rx_mbps;
	bool over_pressure;
	bool over_bw;
};

extern struct gmon_dev gmon;
extern const struct attribute_group *gmon_groups[];

/* events */
void gmon_raise(u32 type, u32 severity, u32 source, u64 value,
		u64 threshold, const char *fmt, ...) __printf(6, 7);
int gmon_client_open(struct gmon_client *c, bool privileged);
void gmon_client_close(struct gmon_client *c);
int gmon_client_pop(struct gmon_client *c, struct gpurdma_mon_event *ev,
		    unsigned int max);
bool gmon_client_ready(struct gmon_client *c);
void gmon_replay_conditions(struct gmon_client *c);

/* PCI devices and links */
int gmon_pci_find(const char *gpu_param, const char *nic_param,
		  unsigned int gpu_vendor, unsigned int nic_vendor);
void gmon_pci_put(void);
void gmon_link_check(bool first);
u64 gmon_est_bw(void);

/* ioctls */
long gmon_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* debugfs injection */
void gmon_debugfs_init(void);
void gmon_debugfs_exit(void);

#endif /* GMON_H */
