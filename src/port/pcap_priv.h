/* pcap_priv.h - the pcap port's state, shared by the port (pcap.c) and
 * its preload mode (pcap_preload.c).  Internal. */
#ifndef VFGX_PCAP_PRIV_H
#define VFGX_PCAP_PRIV_H

#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <vfgx/pcap.h>

#include "backend.h"
#include "pcap_opts.h"
#include <vfgx/mem.h>

/* A record of the file: the one being handed out (pc_priv.cur), or one of
 * the preloaded lap (pc_priv.pre). */
struct pc_rec {
	uint64_t ts;     /* ns */
	uint32_t caplen; /* bytes in the file */
	uint32_t len;    /* bytes on the wire */
};

struct pc_priv {
	struct vfgx_pcap_opts o;
	const char *file;
	pcap_t *rd;              /* the lap being read */
	char *rd_buf;            /* its stdio buffer (PC_STDIO_BUF) */
	bool own_pool;
	bool done;
	/* the record read but not yet due (timing) */
	bool have_pending;
	struct pc_rec cur;
	const u_char *pdata;     /* its bytes (not preloaded) */
	uint64_t rec;            /* records read this lap */
	uint64_t t0_ns;          /* first rx_burst */
	uint64_t ts_first, ts_last; /* file timestamps, ns */
	uint64_t lap_ns;         /* recorded timing: one lap's duration */
	struct stat file_st;     /* the file as last opened (device, inode) */
	struct vfgx_pcap_info info;
	struct vfgx_queue_stats st;
	/* preload (pcap_preload.c): record i in buffer i of the pool */
	struct pc_rec *pre;      /* the lap's records; NULL: not preloaded */
	uint8_t *held;           /* record i handed out, not yet released */
	uint8_t *pre_base;       /* buffer 0 (GPU memory: a device address) */
	uint32_t pre_cap;        /* buffer stride */
	uint64_t pre_cur;        /* pp->cur's record (its buffer) */
	uint64_t pre_next;       /* the record after it, 0 past the lap's last */
	bool pre_gpu;            /* the buffers are GPU memory */
};

/* Open the file as a stream for libpcap (pcap.c). */
int vfgx_pc_open_file(struct vfgx_port *port, struct pc_priv *pp, pcap_t **out,
		      char **vbuf);
/* A record's timestamp in ns (pcap.c). */
uint64_t vfgx_pc_ts_ns(const struct pcap_pkthdr *h);

/* pcap.preload: the records going into queue 0's pool, one by one
 * (begin, add a record, end), during the scan (a queue's memory region)
 * or in a read of their own after it (vfgx_pc_preload: the port's own
 * pool, sized by the scan). */
struct pc_load {
	vfgx_pool *pool;
	vfgx_region *region;
	uint64_t avail;  /* the pool's free buffers at the start */
	uint64_t n;      /* records added */
	uint64_t cap;    /* pc_priv.pre's room */
	uint64_t first;  /* GPU memory: the first record of the stage */
	uint64_t per;    /* records the stage holds */
	uint8_t *stage;  /* GPU memory: records on their way */
	bool over;       /* more records than buffers */
};
int vfgx_pc_pre_begin(struct vfgx_port *port, struct pc_priv *pp, struct pc_load *ld);
int vfgx_pc_pre_add(struct vfgx_port *port, struct pc_priv *pp, struct pc_load *ld,
		    const struct pcap_pkthdr *h, const uint8_t *d);
/* ret: the reading's result; the load's own checks follow when it is 0.
 * On an error pp->pre is freed. */
int vfgx_pc_pre_end(struct vfgx_port *port, struct pc_priv *pp, struct pc_load *ld, int ret);
/* The port's own pool, after the scan: begin, a read adding every record,
 * end. */
int vfgx_pc_preload(struct vfgx_port *port, struct pc_priv *pp);
/* The next preloaded record into pp->cur (a new lap when one ends);
 * false when the last lap ended.  Its buffer is pre_cur's. */
bool vfgx_pc_pre_next(struct pc_priv *pp);
/* Release op of a preloaded port: the buffers may go out again. */
void vfgx_pc_pre_release(struct vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
			 uint16_t n);
void vfgx_pc_pre_free(struct pc_priv *pp);

#endif
