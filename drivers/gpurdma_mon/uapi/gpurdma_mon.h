/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * gpurdma_mon.h - the user/kernel interface of /dev/gpurdma_mon: event
 * records returned by read(), and the ioctls for telemetry, thresholds and
 * the library's published counters.  Fixed-width types, explicit padding.
 */
#ifndef _UAPI_GPURDMA_MON_H
#define _UAPI_GPURDMA_MON_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* ABI version returned by GPURDMA_MON_IOC_GET_VERSION and carried in
 * struct gpurdma_mon_telemetry; bumped on any incompatible change.
 */
#define GPURDMA_MON_ABI_VERSION		1

#define GPURDMA_MON_DEVNAME		"gpurdma_mon"
#define GPURDMA_MON_DETAIL_LEN		64
#define GPURDMA_MON_MAX_QUEUES		16

enum gpurdma_mon_event_type {
	GPURDMA_MON_EV_LINK_DEGRADED	= 1, /* link trained below its max */
	GPURDMA_MON_EV_NUMA_WARN	= 2, /* GPU and NIC on different nodes */
	GPURDMA_MON_EV_PRESSURE		= 3, /* pool occupancy over threshold */
	GPURDMA_MON_EV_BW_HIGH		= 4, /* rx bandwidth over threshold */
	GPURDMA_MON_EV_TEST		= 5, /* injected through debugfs */
	GPURDMA_MON_EV_MAX		= 6
};

enum gpurdma_mon_severity {
	GPURDMA_MON_SEV_INFO		= 0,
	GPURDMA_MON_SEV_WARN		= 1,
	GPURDMA_MON_SEV_CRIT		= 2
};

/* What an event is about. */
enum gpurdma_mon_source {
	GPURDMA_MON_SRC_NONE		= 0,
	GPURDMA_MON_SRC_GPU		= 1,
	GPURDMA_MON_SRC_NIC		= 2,
	GPURDMA_MON_SRC_LIB		= 3  /* counters from PUBLISH */
};

/*
 * One event; read() returns a whole number of these (at least one: a
 * buffer smaller than one record fails with -EINVAL).  seq counts every
 * event the device raised; lost is how many this client missed so far
 * because its queue was full (producers never block).
 */
struct gpurdma_mon_event {
	__u64 seq;
	__u64 timestamp_ns;	/* CLOCK_MONOTONIC */
	__u32 type;		/* enum gpurdma_mon_event_type */
	__u32 severity;		/* enum gpurdma_mon_severity */
	__u32 source;		/* enum gpurdma_mon_source */
	__u32 lost;
	__u64 value;		/* what was measured (percent, Mb/s, ...) */
	__u64 threshold;	/* what it was compared with */
	char detail[GPURDMA_MON_DETAIL_LEN]; /* NUL-terminated text */
};

/*
 * PCIe link of one device.  Speeds are in Mb/s per lane (2500, 5000, 8000,
 * 16000, 32000, 64000), 0 when unknown.
 */
struct gpurdma_mon_link {
	__u32 present;		/* 0: no such device, the rest is zero */
	__u32 domain;
	__u8 bus;
	__u8 devfn;
	__u16 vendor;
	__u16 device;
	__u16 pad0;
	__s32 numa_node;	/* -1: none */
	__u32 cur_speed;
	__u32 cur_width;
	__u32 max_speed;
	__u32 max_width;
	__u32 degraded;		/* current below maximum */
	__u64 bw_mbps;		/* usable bandwidth of the current link */
};

/*
 * argsz is the size the caller passes (sizeof the struct): any other value
 * fails with -EINVAL, so a caller built against another layout is refused
 * rather than misread.
 */
struct gpurdma_mon_telemetry {
	__u32 argsz;
	__u32 version;		/* GPURDMA_MON_ABI_VERSION */
	struct gpurdma_mon_link gpu;
	struct gpurdma_mon_link nic;
	__u32 same_switch;	/* both below one PCIe switch or root port */
	__u32 numa_mismatch;
	__u64 est_bw_mbps;	/* GPU<->NIC peer-to-peer estimate */
	__u64 link_checks;	/* periodic checks run so far */
	__u64 events;		/* events raised so far */
	__u64 publishes;	/* PUBLISH calls accepted */
	__u32 clients;		/* open file descriptors */
	__u32 pressure_pct;	/* last published pool occupancy */
	__u64 rx_mbps;		/* rx rate between the last two publishes */
};

struct gpurdma_mon_threshold {
	__u32 argsz;
	__u32 pressure_pct;	/* 1..100; PRESSURE when occupancy crosses it */
	__u64 bw_mbps;		/* BW_HIGH when the rx rate crosses it; 0: off */
};

struct gpurdma_mon_queue_counters {
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 tx_packets;
	__u64 tx_bytes;
	__u64 drops;
};

/* The library's counters, cumulative since it started. */
struct gpurdma_mon_publish {
	__u32 argsz;
	__u32 nr_queues;	/* 0..GPURDMA_MON_MAX_QUEUES */
	__u32 pool_used;	/* buffers in use, all pools */
	__u32 pool_total;	/* buffers, all pools; pool_used <= pool_total */
	__u32 pid;		/* publisher, filled in by the driver */
	__u32 pad0;
	__u64 timestamp_ns;	/* filled in by the driver */
	struct gpurdma_mon_queue_counters q[GPURDMA_MON_MAX_QUEUES];
};

#define GPURDMA_MON_IOC_MAGIC		0xb7
#define GPURDMA_MON_IOC_GET_VERSION	_IOR(GPURDMA_MON_IOC_MAGIC, 0x00, __u32)
#define GPURDMA_MON_IOC_GET_TELEMETRY	\
	_IOWR(GPURDMA_MON_IOC_MAGIC, 0x01, struct gpurdma_mon_telemetry)
#define GPURDMA_MON_IOC_SET_THRESHOLD	\
	_IOW(GPURDMA_MON_IOC_MAGIC, 0x02, struct gpurdma_mon_threshold)
#define GPURDMA_MON_IOC_PUBLISH		\
	_IOW(GPURDMA_MON_IOC_MAGIC, 0x03, struct gpurdma_mon_publish)
/* The last PUBLISH (argsz set by the caller; all zero before any). */
#define GPURDMA_MON_IOC_GET_COUNTERS	\
	_IOWR(GPURDMA_MON_IOC_MAGIC, 0x04, struct gpurdma_mon_publish)
#define GPURDMA_MON_IOC_GET_THRESHOLD	\
	_IOWR(GPURDMA_MON_IOC_MAGIC, 0x05, struct gpurdma_mon_threshold)

#endif /* _UAPI_GPURDMA_MON_H */
