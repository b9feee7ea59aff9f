/* pipeline_work.h - the CPU pipeline benchmark's traffic: cold buffers
 * (working set larger than the last-level cache), several interleaved
 * streams with loss, reordering and duplicates, and the independent floor
 * it is compared against (an l3fwd-style parse + IPv4/UDP checksum check). */
#ifndef VFGX_BENCH_PIPELINE_WORK_H
#define VFGX_BENCH_PIPELINE_WORK_H

#include <stddef.h>
#include <stdint.h>

#include <vfgx/vfgx.h>

#define WORK_STREAMS 8
#define WORK_PORT 5000

struct work {
	uint32_t size, stride;
	uint64_t n;                /* frames in arrival order */
	uint8_t *mem;              /* n x stride */
	struct vfgx_pkt *pkts;     /* n descriptors, also part of the working set */
	size_t bytes;              /* mem + descriptors */
	/* what a correct pipeline must report for one pass (after flush) */
	uint64_t unique, lost, dups, reordered;
};

/* Frames of `size` bytes filling about ws_bytes (frames + descriptors),
 * WORK_STREAMS streams round-robin, impairments from a fixed seed: 1%
 * lost, 0.5% sent twice (the copy 1..4 frames later), 1% swapped with a
 * frame 1..16 places later.  -1 on allocation failure. */
int work_build(struct work *w, uint32_t size, size_t ws_bytes);
void work_free(struct work *w);

/* Last-level cache size as the system reports it, 0 when unknown. */
size_t work_llc_bytes(void);

/* The floor: per frame, what an l3fwd-style receiver does before any
 * application logic: Ethernet type, IPv4 version/IHL/length, the IPv4
 * header checksum, protocol, UDP length and the UDP checksum over the
 * pseudo header and payload, destination port lookup.  Written here
 * independently of libvfgx's stages.  Returns frames accepted. */
uint64_t work_floor_pass(const struct work *w);

#endif
