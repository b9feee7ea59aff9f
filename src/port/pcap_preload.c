/* pcap_preload.c - the pcap port's preload mode (pcap.preload: true): the
 * whole file is read once at open into queue 0's pool, record i into
 * buffer i, in host, pinned or GPU memory, and rx hands those buffers out
 * without reading or copying anything, as a NIC leaves frames in GPU
 * memory for the rx thread to hand on.  A replay that measures the
 * pipeline, not libpcap and memcpy.  With a queue's memory region the
 * records go in during the scan (one read of the file); the port's own
 * pool is sized by the scan, then filled by a second read.  Loops hand
 * the same buffers out again, each once it is released; sequences are
 * rewritten in place (host and pinned memory) or kept (GPU memory, which
 * the CPU cannot write: loops with sequences: rewrite are refused
 * there). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem/region_copy.h"
#include "pcap_priv.h"

/* GPU memory: records staged in host memory and copied this many bytes at
 * a time (one buffer at least). */
#define PC_STAGE_BYTES (64u << 20)

void vfgx_pc_pre_free(struct pc_priv *pp)
{
	free(pp->pre);
	pp->pre = NULL;
	free(pp->held);
	pp->held = NULL;
}

int vfgx_pc_pre_begin(struct vfgx_port *port, struct pc_priv *pp, struct pc_load *ld)
{
	vfgx_pool *pool = port->rx_pools[0];

	memset(ld, 0, sizeof(*ld));
	ld->pool = pool;
	ld->region = vfgx_pool_region(pool);
	ld->avail = vfgx_pool_available(pool);
	pp->pre_gpu = vfgx_region_info(ld->region)->kind == VFGX_MEM_GPU;
	pp->pre_cap = vfgx_pool_buf_size(pool);
	ld->per = PC_STAGE_BYTES / pp->pre_cap ? PC_STAGE_BYTES / pp->pre_cap : 1;
	if (pp->pre_gpu && !(ld->stage = calloc(ld->per, pp->pre_cap)))
		return -ENOMEM;
	return 0;
}

/* Buffers [ld->first, last) of the stage into the pool (GPU memory). */
static int pre_flush(struct pc_priv *pp, struct pc_load *ld, uint64_t last)
{
	int ret = 0;

	if (last > ld->first)
		ret = vfgx_region_copy_in(ld->region, pp->pre_base + ld->first * pp->pre_cap,
					  ld->stage, (last - ld->first) * pp->pre_cap);
	ld->first = last;
	return ret;
}

int vfgx_pc_pre_add(struct vfgx_port *port, struct pc_priv *pp, struct pc_load *ld,
		    const struct pcap_pkthdr *h, const uint8_t *d)
{
	uint64_t i = ld->n;
	uint32_t len = h->caplen <= pp->pre_cap ? h->caplen : 0; /* too big: at rx */
	void *b;

	if (ld->over || i >= ld->avail) {
		ld->over = true; /* counted on: the error names the records */
		return 0;
	}
	if (i == ld->cap) {
		uint64_t c = ld->cap ? 2 * ld->cap : 4096;
		struct pc_rec *r = realloc(pp->pre, c * sizeof(*r));

		if (!r)
			return -ENOMEM;
		pp->pre = r;
		ld->cap = c;
	}
	if (vfgx_pool_alloc_bulk(ld->pool, &b, 1) < 0)
		return -ENOBUFS;
	if (i == 0)
		pp->pre_base = b;
	else if ((uintptr_t)b - (uintptr_t)pp->pre_base != i * pp->pre_cap)
		/* a fresh pool hands its buffers out lowest first */
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: pcap.preload: queue 0's buffers are not one after another (a fresh pool's are)",
				      port->name);
	pp->pre[i] = (struct pc_rec){ vfgx_pc_ts_ns(h), h->caplen, h->len };
	ld->n++;
	if (!pp->pre_gpu) {
		memcpy(b, d, len);
		return 0;
	}
	memcpy(ld->stage + (i - ld->first) * pp->pre_cap, d, len);
	return ld->n - ld->first == ld->per ? pre_flush(pp, ld, ld->n) : 0;
}

int vfgx_pc_pre_end(struct vfgx_port *port, struct pc_priv *pp, struct pc_load *ld, int ret)
{
	if (!ret && pp->pre_gpu)
		ret = pre_flush(pp, ld, ld->n);
	free(ld->stage);
	ld->stage = NULL;
	if (!ret && ld->over)
		ret = vfgx_set_error(port->ctx, -EINVAL,
				     "%s: pcap.preload: %s holds %llu records, a buffer each; queue 0's pool has %llu free (raise its num_bufs)",
				     port->name, pp->file, (unsigned long long)pp->info.records,
				     (unsigned long long)ld->avail);
	if (!ret && ld->n != pp->info.records)
		ret = vfgx_set_error(port->ctx, -EINVAL,
				     "%s: pcap file %s changed while it was opened (%llu records at the scan, %llu at the preload)",
				     port->name, pp->file, (unsigned long long)pp->info.records,
				     (unsigned long long)ld->n);
	if (!ret && pp->pre_gpu && pp->o.loops > 1 && pp->o.sequences == VFGX_PCAP_REWRITE &&
	    pp->info.span)
		ret = vfgx_set_error(port->ctx, -EINVAL,
				     "%s: pcap.preload into GPU memory hands the same frames out every lap and the CPU cannot rewrite their sequences: with loops above 1 set pcap.sequences: keep (or use host or pinned memory)",
				     port->name);
	if (!ret && ld->n && !(pp->held = calloc(ld->n, 1)))
		ret = -ENOMEM;
	/* no record: nothing to hand out, rx ends at once (pc_next) */
	if (ret || !ld->n)
		vfgx_pc_pre_free(pp);
	return ret;
}

int vfgx_pc_preload(struct vfgx_port *port, struct pc_priv *pp)
{
	struct pc_load ld;
	struct pcap_pkthdr *h;
	const u_char *d;
	char *vbuf = NULL;
	pcap_t *p;
	int ret = vfgx_pc_pre_begin(port, pp, &ld);

	if (!ret && !(ret = vfgx_pc_open_file(port, pp, &p, &vbuf))) {
		while (!ret && pcap_next_ex(p, &h, &d) == 1)
			ret = vfgx_pc_pre_add(port, pp, &ld, h, d);
		pcap_close(p);
		free(vbuf);
	}
	return vfgx_pc_pre_end(port, pp, &ld, ret);
}

bool vfgx_pc_pre_next(struct pc_priv *pp)
{
	uint64_t i = pp->pre_next;

	if (i == 0) {
		if (pp->info.laps == pp->o.loops)
			return false;
		pp->info.laps++;
	}
	pp->cur = pp->pre[i];
	pp->pre_cur = i;
	/* no division a record: the lap's index wraps by a compare */
	pp->pre_next = i + 1 == pp->info.records ? 0 : i + 1;
	return true;
}

void vfgx_pc_pre_release(struct vfgx_port *port, uint16_t q, struct vfgx_pkt *pkts,
			 uint16_t n)
{
	struct pc_priv *pp = port->priv;
	uint64_t end = pp->info.records * pp->pre_cap;

	(void)q;
	for (uint16_t i = 0; i < n; i++) {
		uintptr_t off = (uintptr_t)pkts[i].handle - (uintptr_t)pp->pre_base;

		/* a handle not of this lap's buffers is not ours: left alone */
		if (off < end && off % pp->pre_cap == 0)
			__atomic_store_n(&pp->held[off / pp->pre_cap], 0, __ATOMIC_RELEASE);
	}
}
