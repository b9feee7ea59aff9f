/* vfgx/capture.h - record received packets to capture files off the hot
 * path: each tapped rx queue records (up to the snap length of) the
 * packets it receives, by reference where they are in host memory (the
 * writer reads them from the packets' buffers, which go back to their
 * port once written) and copied into its own ring where they are in GPU
 * memory; one writer thread writes them into nanosecond pcap files
 * (libpcap) or pcapng files (libwiretap, where the build has it),
 * rotating them by size.  When the writer falls behind, what a queue may
 * hold is full and records are dropped and counted: the pipeline never
 * waits for the disk.  docs/send.md, "Capture files". */
#ifndef VFGX_CAPTURE_H
#define VFGX_CAPTURE_H

#include <stdint.h>

#include "config.h"
#include "core.h"
#include "port.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

enum vfgx_capture_mode {
	VFGX_CAPTURE_ALL = 0,    /* every received packet */
	VFGX_CAPTURE_DROPS = 1,  /* frames the parse/validate stage rejects
				  * (vfgx_parse: malformed headers, bad
				  * checksums), tested on the tap */
	VFGX_CAPTURE_SAMPLE = 2, /* one packet in sample_every per queue */
};

enum vfgx_capture_format {
	VFGX_CAPTURE_FORMAT_AUTO = 0,   /* pcapng when the path ends in
					 * ".pcapng", pcap otherwise */
	VFGX_CAPTURE_FORMAT_PCAP = 1,   /* libpcap's nanosecond pcap */
	VFGX_CAPTURE_FORMAT_PCAPNG = 2, /* pcapng, one Ethernet interface
					 * with nanosecond resolution
					 * (libwiretap; -ENOTSUP without it) */
};

/* Defaults (vfgx_capture_conf_default) in brackets.  The struct may grow
 * at the end: argsz says which version. */
struct vfgx_capture_conf {
	uint32_t argsz;        /* sizeof(struct vfgx_capture_conf) */
	const char *path;      /* [NULL: required] the first file; rotated
				* ones are STEM.N.EXT (N = 1, 2, ...) */
	uint32_t mode;         /* [all] enum vfgx_capture_mode */
	uint32_t sample_every; /* [100] sample mode: 1 in this many, 1..2^30 */
	uint32_t snaplen;      /* [65535] bytes kept of each packet, 64..262144 */
	uint64_t rotate_bytes; /* [0: never] start a new file past this size */
	uint32_t rotate_files; /* [0: keep all] files kept; the oldest goes */
	uint32_t ring_bytes;   /* [8 MiB] ring per tapped queue, 64 KiB..1 GiB:
				* GPU packets' copies, or the copies of host
				* packets past what the queue may hold by
				* reference (a burst's) */
	/* -- version 2 (a version-1 struct, argsz 48, gets the default) -- */
	uint32_t format;       /* [auto] enum vfgx_capture_format */
};

struct vfgx_capture_stats {
	uint64_t seen;        /* packets the taps were offered */
	uint64_t selected;    /* of which the mode chose */
	uint64_t written;     /* records written to files */
	uint64_t ring_full;   /* selected but dropped: the writer was behind */
	uint64_t skipped_gpu; /* in GPU memory and not copied (a build
			       * without CUDA, or a copy that failed) */
	uint64_t failed;      /* selected after a write error: not written */
	uint64_t bytes;       /* file bytes written (headers included) */
	uint32_t files;       /* files opened */
	int error;            /* 0, or the negative errno that stopped writing */
};

typedef struct vfgx_capture vfgx_capture;

void vfgx_capture_conf_default(struct vfgx_capture_conf *c);
/* Open the first file (its header written) and start the writer.  One
 * line on ctx and -errno when the path cannot be written; -ENOTSUP for
 * pcapng in a build without libwiretap. */
int vfgx_capture_open(vfgx_ctx *ctx, const struct vfgx_capture_conf *conf,
		      vfgx_capture **out);
/* Tap every rx queue of port (before its queues are polled, e.g. before
 * vfgx_pipeline_start).  -ENOTSUP for ports that hand payloads without
 * their frame headers (socket), -EBUSY when port is tapped already. */
int vfgx_capture_attach(vfgx_capture *c, vfgx_port *port);
/* Counters so far; any thread. */
void vfgx_capture_stats(vfgx_capture *c, struct vfgx_capture_stats *st);
/* Detach from the ports (after they stopped being polled), write what the
 * rings hold, give the ports back the packets held for the writer, close
 * the file.  Returns the error that stopped writing, or 0; c is freed
 * either way. */
int vfgx_capture_close(vfgx_capture *c, struct vfgx_capture_stats *st);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
