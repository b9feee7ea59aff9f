/* vfgx/pcap.h - typed options of the pcap port: a capture file (pcap or
 * pcapng, read with libpcap) as a finite source, so a recorded stream runs
 * through the pipeline, or out of `vfgx send`, exactly as recorded. */
#ifndef VFGX_PCAP_H
#define VFGX_PCAP_H

#include <stdint.h>

#include "config.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

enum vfgx_pcap_timing {
	VFGX_PCAP_FAST = 0,     /* as fast as the reader takes them */
	VFGX_PCAP_RECORDED = 1, /* at the file's own timestamps (x speed) */
	VFGX_PCAP_RATE = 2,     /* at rate_pps */
};

enum vfgx_pcap_sequences {
	VFGX_PCAP_REWRITE = 0, /* lap k adds k x span to every sequence */
	VFGX_PCAP_KEEP = 1,    /* every lap as recorded */
	/* rewrite a file of vfgx's own frames, keep any other: rewrite when
	 * at least half the records whose UDP payload holds vfgx's header and
	 * a body carry its generator's payload pattern (a producer's header,
	 * RTP's say, has no sequence where vfgx's is) */
	VFGX_PCAP_AUTO = 2,
};

/* Defaults (vfgx_pcap_opts_default) in brackets.  The struct may grow at
 * the end: argsz says which version. */
struct vfgx_pcap_opts {
	struct vfgx_backend_opts hdr; /* argsz, backend "pcap": vfgx_pcap_opts_default sets both */
	const char *file;   /* [NULL: the interface's address] */
	uint64_t loops;     /* [1] times the file is read, 1..2^40 */
	uint32_t sequences; /* [auto] enum vfgx_pcap_sequences */
	uint32_t timing;    /* [fast] enum vfgx_pcap_timing */
	double speed;       /* [1] recorded timing: this many times faster */
	double rate_pps;    /* [0] timing rate: packets per second */
	uint32_t buf_size;  /* [16384] bytes per buffer of the port's own pool */
	uint32_t num_bufs;  /* [4096] buffers of the port's own pool */
	/* [false] read the whole file once at open into the queue's pool (a
	 * buffer a record; host, pinned or GPU memory) and hand those
	 * buffers out, each lap, without a copy */
	bool preload;
};

/* The defaults and the header; a loaded config has the interfaces[].pcap
 * section parsed into these at load (vfgx_iface_config.backend_opts). */
void vfgx_pcap_opts_default(struct vfgx_pcap_opts *o);

/* What the pcap port read, for the report. */
struct vfgx_pcap_info {
	uint64_t records;      /* records in the file (one lap) */
	uint64_t read;         /* records handed out, every lap */
	uint64_t too_big;      /* records larger than a buffer: dropped */
	uint64_t snapped;      /* records shorter than the packet was */
	uint64_t ts_backwards; /* records older than the one before */
	uint64_t span;         /* rewrite: sequences added per lap */
	uint64_t laps;         /* laps begun */
	int linktype;          /* DLT_ of the file */
};
/* -EINVAL when port is not a pcap port. */
int vfgx_pcap_info(vfgx_port *port, struct vfgx_pcap_info *info);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
