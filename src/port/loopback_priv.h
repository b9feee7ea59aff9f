/* loopback_priv.h - the loopback backend's state, shared by its files:
 * loopback.c (configuration, the generator, the port's ops) and
 * loopback_replay.c (replay mode: one lap built once, handed out again
 * and again, its sequences advanced per lap). */
#ifndef VFGX_LOOPBACK_PRIV_H
#define VFGX_LOOPBACK_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <vfgx/loopback.h>
#include <vfgx/frame.h> /* vfgx_pkt_build: the generator's frames */
#include <vfgx/port.h>
#include <vfgx/stages.h>

#include "backend.h"
#include "seqhdr.h"
#include "vfgx_build.h"
#if VFGX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define LB_DEFAULT_BUF 2048
#define LB_DEFAULT_NBUFS 4096
#define LB_TX_RING 1024
#define RP_SEGS 8       /* GPU replay: ring eighths rewritten ahead */
#define RP_WIN VFGX_SEQ_WIN /* bytes from the UDP checksum to the sequence's end */
#define RP_WSTRIDE 32   /* bytes per frame in the window shadow */

/* One frame of a replay lap: buffer index, length, stream. */
struct rp_frame {
	uint32_t idx, len, flow;
};

/* Replay state of one queue. */
struct lb_replay {
	struct vfgx_pkt *tmpl; /* the lap's frames in order (while building) */
	struct rp_frame *fr;   /* the lap's frames in order, compact */
	uint8_t *base;         /* frame i of the pool: base + i * cap */
	uint16_t pflags;       /* VFGX_PKT_GPU for GPU frames */
	void **bufs;           /* the pool buffers, address order, freed at close */
	uint32_t nb;           /* frames per lap */
	uint32_t nb_bufs;
	uint64_t period;       /* P: sequences per flow per lap */
	uint64_t handed, released, total; /* total: frames to hand out, 0 endless */
	uint32_t win_off;      /* UDP checksum offset in the frame */
	uint32_t cap;          /* bytes from one frame to the next */
	bool gpu;              /* frames in GPU memory */
	/* host frames advanced by rx, no rewriting thread
	 * (vfgx_loopback_replay_inline): the frames in hand-out order before
	 * adv_upto hold the sequences they go out with next; adv_j is
	 * adv_upto % nb */
	bool inline_adv;
	uint64_t adv_upto;
	uint32_t adv_j;
	/* frames copied out, never handed out (vfgx_loopback_replay_copy):
	 * the pool keeps lap 0, each copy gets its lap's sequences */
	bool copy;
	uint32_t len_max;      /* the lap's longest frame */
	uint32_t copy_j;       /* handed % nb */
	uint64_t copy_add;     /* handed / nb * period: the lap's sequence add */
	uint32_t copy_res;     /* its vfgx_seq_csum_residue */
	struct vfgx_source_report lap; /* what one lap injects */
	uint64_t lap_bytes;
	/* GPU: window shadow (pinned); the lap each eighth of the ring holds
	 * on the GPU, published by the rewriting thread */
	uint8_t *shadow;
	uint64_t seg_ready[RP_SEGS];
	int gpu_id, prep_err;
	bool prep_stop, prep_started;
	/* the rewriting thread asleep until released reaches wake_at;
	 * release bumps wake_seq (the futex word) and wakes it */
	uint32_t sleeping, wake_seq;
	uint64_t wake_at;
	pthread_t prep;
#if VFGX_HAVE_CUDA
	cudaStream_t stream;
#endif
};

struct lb_flow {
	uint64_t next_seq;
	uint64_t count; /* sequences this flow emits; 0 = endless */
};

struct lb_queue {
	struct lb_flow *flows; /* flows of this queue: stream = q + i*nq */
	uint32_t nb_flows;
	uint32_t cur;          /* round-robin flow index */
	uint32_t live_flows;
	uint64_t rng;
	uint64_t start_ns;
	uint64_t emitted;      /* packets built (for the rate limit) */
	/* reorder injection: one packet held back for `hold_left` packets */
	struct vfgx_pkt held;
	bool has_held;
	uint32_t hold_left;
	bool dup_pending;      /* next packet repeats the previous sequence */
	struct vfgx_pkt_spec last;
	struct vfgx_ring tx;   /* looped-back tx packets (pool buffers) */
	bool own_pool;
	struct vfgx_queue_stats st;
	struct vfgx_source_report rep;
	struct lb_replay *rp;  /* replay mode */
	bool rx_started;       /* replay: the rate limit counts from the first rx */
};

struct lb_priv {
	struct lb_queue q[VFGX_MAX_QUEUES];
	uint32_t frame_len;
	uint32_t flows;
	uint64_t packets;
	double rate_pps; /* per queue */
	double loss, reorder, duplicate, corrupt;
	uint32_t reorder_distance;
	uint16_t src_port, dst_port, vlan;
	bool udp_csum;
	bool replay;
	uint32_t replay_frames; /* per queue at most; 0: the whole pool */
	bool replay_inline;     /* host frames advanced by rx, no rewriting thread */
};

/* loopback.c: the generator's next frames into bufs (want buffers of cap
 * bytes), their records from pkts[n] on, up to max; *used_out: buffers
 * used */
uint16_t vfgx_lb_gen(struct vfgx_port *port, struct lb_priv *lp, struct lb_queue *lq,
		     uint16_t q, void **bufs, uint32_t want, uint32_t cap,
		     struct vfgx_pkt *pkts, uint16_t n, uint16_t max, uint32_t *used_out);

/* loopback_replay.c */
int vfgx_lb_rp_build(struct vfgx_port *port, struct lb_priv *lp, uint16_t q);
void vfgx_lb_rp_free(struct vfgx_port *port, uint16_t q, struct lb_replay *rp);
int vfgx_lb_rp_rx_burst(struct vfgx_port *port, struct lb_priv *lp, struct lb_queue *lq,
			struct vfgx_pkt *pkts, uint16_t max);
/* release of n frames, in the order handed out */
void vfgx_lb_rp_release(struct lb_replay *rp, uint16_t n);

#endif
