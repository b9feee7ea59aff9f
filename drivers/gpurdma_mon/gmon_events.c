// SPDX-License-Identifier: GPL-2.0
/*
 * gmon_events.c - event fan-out: every event is copied into the kfifo of
 * every open client under one spinlock; a full fifo counts the event as
 * lost for that client, so producers never block or sleep.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "gmon.h"

static void fill_event(struct gpurdma_mon_event *ev, u32 type, u32 severity,
		       u32 source, u64 value, u64 threshold)
{
	ev->timestamp_ns = ktime_get_ns();
	ev->type = type;
	ev->severity = severity;
	ev->source = source;
	ev->value = value;
	ev->threshold = threshold;
}

/* Queue ev (seq taken here) for one client; caller holds ev_lock. */
static void push_locked(struct gmon_client *c, struct gpurdma_mon_event *ev)
{
	if (kfifo_is_full(&c->fifo)) {
		c->lost++;
		return;
	}
	ev->lost = c->lost;
	kfifo_put(&c->fifo, *ev);
	wake_up_interruptible(&c->wq);
}

void gmon_raise(u32 type, u32 severity, u32 source, u64 value,
		u64 threshold, const char *fmt, ...)
{
	struct gpurdma_mon_event ev = { 0 };
	struct gmon_client *c;
	unsigned long flags;
	va_list args;

	fill_event(&ev, type, severity, source, value, threshold);
	va_start(args, fmt);
	vsnprintf(ev.detail, sizeof(ev.detail), fmt, args);
	va_end(args);

	spin_lock_irqsave(&gmon.ev_lock, flags);
	ev.seq = ++gmon.seq;
	list_for_each_entry(c, &gmon.clients, node)
		push_locked(c, &ev);
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
}

/* One event for one client only: the conditions in force when it opened. */
static void raise_one(struct gmon_client *c, u32 type, u32 severity,
		      u32 source, u64 value, u64 threshold, const char *detail)
{
	struct gpurdma_mon_event ev = { 0 };
	unsigned long flags;

	fill_event(&ev, type, severity, source, value, threshold);
	strscpy(ev.detail, detail, sizeof(ev.detail));
	spin_lock_irqsave(&gmon.ev_lock, flags);
	ev.seq = ++gmon.seq;
	push_locked(c, &ev);
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
}

static void replay_link(struct gmon_client *c, u32 source,
			const struct gpurdma_mon_link *l)
{
	char detail[GPURDMA_MON_DETAIL_LEN];

	if (!l->present || !l->degraded)
		return;
	snprintf(detail, sizeof(detail), "%04x:%02x:%02x.%u x%u@%u of x%u@%u",
		 l->domain, l->bus, PCI_SLOT(l->devfn), PCI_FUNC(l->devfn),
		 l->cur_width, l->cur_speed, l->max_width, l->max_speed);
	raise_one(c, GPURDMA_MON_EV_LINK_DEGRADED, GPURDMA_MON_SEV_WARN,
		  source, (u64)l->cur_speed * l->cur_width,
		  (u64)l->max_speed * l->max_width, detail);
}

/* A new client learns the conditions in force (degraded links, a NUMA
 * mismatch) as its first events, since it missed when they were raised.
 */
void gmon_replay_conditions(struct gmon_client *c)
{
	struct gpurdma_mon_link gpu, nic;
	char detail[GPURDMA_MON_DETAIL_LEN];
	bool numa;

	mutex_lock(&gmon.lock);
	gpu = gmon.gpu_link;
	nic = gmon.nic_link;
	numa = gmon.numa_mismatch;
	mutex_unlock(&gmon.lock);

	replay_link(c, GPURDMA_MON_SRC_GPU, &gpu);
	replay_link(c, GPURDMA_MON_SRC_NIC, &nic);
	if (numa) {
		snprintf(detail, sizeof(detail), "GPU on node %d, NIC on node %d",
			 gpu.numa_node, nic.numa_node);
		raise_one(c, GPURDMA_MON_EV_NUMA_WARN, GPURDMA_MON_SEV_WARN,
			  GPURDMA_MON_SRC_NIC, nic.numa_node, gpu.numa_node,
			  detail);
	}
}

/* Each client pins queue_len events of kernel memory, so an opener without
 * CAP_NET_ADMIN gets a slot only while fewer than max_clients are open; a
 * privileged one always does, so local users cannot lock the library or the
 * administrator out.  The slot is taken before the fifo is allocated.
 */
int gmon_client_open(struct gmon_client *c, bool privileged)
{
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&gmon.ev_lock, flags);
	if (!privileged && gmon.nr_clients >= gmon.max_clients) {
		spin_unlock_irqrestore(&gmon.ev_lock, flags);
		return -EUSERS;
	}
	gmon.nr_clients++;
	spin_unlock_irqrestore(&gmon.ev_lock, flags);

	ret = kfifo_alloc(&c->fifo, gmon.queue_len, GFP_KERNEL);
	if (ret) {
		spin_lock_irqsave(&gmon.ev_lock, flags);
		gmon.nr_clients--;
		spin_unlock_irqrestore(&gmon.ev_lock, flags);
		return ret;
	}
	init_waitqueue_head(&c->wq);
	c->lost = 0;
	spin_lock_irqsave(&gmon.ev_lock, flags);
	list_add_tail(&c->node, &gmon.clients);
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
	return 0;
}

void gmon_client_close(struct gmon_client *c)
{
	unsigned long flags;

	spin_lock_irqsave(&gmon.ev_lock, flags);
	list_del(&c->node);
	gmon.nr_clients--;
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
	kfifo_free(&c->fifo);
}

/* Take up to max whole events; returns how many. */
int gmon_client_pop(struct gmon_client *c, struct gpurdma_mon_event *ev,
		    unsigned int max)
{
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&gmon.ev_lock, flags);
	n = kfifo_out(&c->fifo, ev, max);
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
	return n;
}

bool gmon_client_ready(struct gmon_client *c)
{
	unsigned long flags;
	bool ready;

	spin_lock_irqsave(&gmon.ev_lock, flags);
	ready = !kfifo_is_empty(&c->fifo);
	spin_unlock_irqrestore(&gmon.ev_lock, flags);
	return ready;
}
