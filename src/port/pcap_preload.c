/* pcap_preload.c - the pcap port's preload mode (pcap.preload: true): the
 * whole file is read once at open into queue 0's pool, record i into
 * buffer i, in host, pinned or GPU memory, and rx hands those buffers out
 * without reading or copying anything, as a NIC leaves frames in GPU
 * memory for the rx thread to hand on.  A replay that measures the
 * pipeline, not libpcap and memcpy.  Loops hand the same buffers out
 * again, each once it is released; sequences are rewritten in place
 * (host and pinned memory) or kept (GPU memory, which the CPU cannot
 * write: loops with sequences: rewrite are refused there). */
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

/* Buffers [first, last) of the stage into the pool (GPU memory). */
static int pre_flush(vfgx_region *rg, struct pc_priv *pp, const uint8_t *stage,
		     uint64_t first, uint64_t last)
{
	if (last == first)
		return 0;
	return vfgx_region_copy_in(rg, pp->pre_base + first * pp->pre_cap, stage,
				   (last - first) * pp->pre_cap);
}

/* The second read of the file: every record into its buffer (directly, or
 * through the stage), its timestamp and lengths noted. */
static int pre_read(struct vfgx_port *port, struct pc_priv *pp, vfgx_region *rg)
{
	uint64_t nrec = pp->info.records, i = 0, first = 0;
	uint64_t per = PC_STAGE_BYTES / pp->pre_cap ? PC_STAGE_BYTES / pp->pre_cap : 1;
	uint8_t *stage = NULL;
	struct pcap_pkthdr *h;
	const u_char *d;
	char *vbuf = NULL;
	pcap_t *p;
	int ret;

	if (pp->pre_gpu && !(stage = calloc(per, pp->pre_cap)))
		return -ENOMEM;
	if ((ret = vfgx_pc_open_file(port, pp, &p, &vbuf))) {
		free(stage);
		return ret;
	}
	while (!ret && i < nrec && pcap_next_ex(p, &h, &d) == 1) {
		uint32_t len = h->caplen <= pp->pre_cap ? h->caplen : 0; /* too big: at rx */

		pp->pre[i] = (struct pc_rec){ vfgx_pc_ts_ns(h), h->caplen, h->len };
		if (!pp->pre_gpu) {
			memcpy(pp->pre_base + i * pp->pre_cap, d, len);
		} else {
			memcpy(stage + (i - first) * pp->pre_cap, d, len);
			if (i + 1 - first == per) {
				ret = pre_flush(rg, pp, stage, first, i + 1);
				first = i + 1;
			}
		}
		i++;
	}
	if (!ret && pp->pre_gpu)
		ret = pre_flush(rg, pp, stage, first, i);
	/* the scan read nrec: fewer now, or more, is another file */
	if (!ret && (i != nrec || pcap_next_ex(p, &h, &d) != PCAP_ERROR_BREAK))
		ret = vfgx_set_error(port->ctx, -EINVAL,
				     "%s: pcap file %s changed while it was opened (%llu records at the scan, not the same at the preload)",
				     port->name, pp->file, (unsigned long long)nrec);
	pcap_close(p);
	free(vbuf);
	free(stage);
	return ret;
}

int vfgx_pc_preload(struct vfgx_port *port, struct pc_priv *pp)
{
	vfgx_pool *pool = port->rx_pools[0];
	vfgx_region *rg = vfgx_pool_region(pool);
	uint64_t nrec = pp->info.records;
	uint32_t cap = vfgx_pool_buf_size(pool), avail = vfgx_pool_available(pool);
	void **bufs;
	int ret;

	if (!nrec)
		return 0; /* nothing to hand out: rx ends at once */
	pp->pre_gpu = vfgx_region_info(rg)->kind == VFGX_MEM_GPU;
	if (pp->pre_gpu && pp->o.loops > 1 && pp->o.sequences == VFGX_PCAP_REWRITE &&
	    pp->info.span)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: pcap.preload into GPU memory hands the same frames out every lap and the CPU cannot rewrite their sequences: with loops above 1 set pcap.sequences: keep (or use host or pinned memory)",
				      port->name);
	if (nrec > avail)
		return vfgx_set_error(port->ctx, -EINVAL,
				      "%s: pcap.preload: %s holds %llu records, a buffer each; queue 0's pool has %u free (raise its num_bufs)",
				      port->name, pp->file, (unsigned long long)nrec, avail);
	if (!(bufs = malloc(nrec * sizeof(*bufs))))
		return -ENOMEM;
	if (vfgx_pool_alloc_bulk(pool, bufs, (uint32_t)nrec) < 0) {
		free(bufs);
		return -ENOBUFS;
	}
	/* a fresh pool hands its buffers out lowest first, one after another */
	pp->pre_base = bufs[0];
	pp->pre_cap = cap;
	ret = (uintptr_t)bufs[nrec - 1] - (uintptr_t)bufs[0] != (nrec - 1) * cap ?
		      vfgx_set_error(port->ctx, -EINVAL,
				     "%s: pcap.preload: queue 0's buffers are not one after another (a fresh pool's are)",
				     port->name) :
		      0;
	free(bufs);
	if (ret)
		return ret;
	pp->pre = calloc(nrec, sizeof(*pp->pre));
	pp->held = calloc(nrec, 1);
	if (!pp->pre || !pp->held)
		ret = -ENOMEM;
	if (!ret)
		ret = pre_read(port, pp, rg);
	if (ret)
		vfgx_pc_pre_free(pp);
	return ret;
}

bool vfgx_pc_pre_next(struct pc_priv *pp)
{
	uint64_t i = pp->info.read % pp->info.records;

	if (i == 0) {
		if (pp->info.laps == pp->o.loops)
			return false;
		pp->info.laps++;
	}
	pp->cur = pp->pre[i];
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
