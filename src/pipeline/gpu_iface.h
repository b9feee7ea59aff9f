/* gpu_iface.h - the plain C interface between the C side of the GPU data
 * plane (gpu_runner.c) and the CUDA side (gpu_proc.cu).  No vfgx headers
 * here: nvcc compiles it as C++ and the core headers use C11 atomics. */
#ifndef VFGX_GPU_IFACE_H
#define VFGX_GPU_IFACE_H

#include <stddef.h>
#include <stdint.h>

#include "commlist.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUK_MAX_RANGES 16
#define GPUK_GROUPS 64       /* stream groups: stream % GROUPS, one ticket each */
#define GPUK_STAGE_MAX 9216  /* stage_copy: largest packet copied */

struct gpuk_conf {
	uint32_t mode, stage_copy, items, burst, graph_items, blocks, timeout_ms;
	uint32_t user, log_records, gpu_id, queues;
	uint32_t reorder, window, slot, max_streams, verify, nb_ranges;
	uint16_t lo[GPUK_MAX_RANGES], hi[GPUK_MAX_RANGES];
	/* test seam (VFGX_GPU_TEST_WEDGE=N, persistent mode): the block that
	 * takes item N stops answering, neither finishing it nor reading the
	 * quit flag, as a kernel wedged in user code would; 0: never, else
	 * N + 1 */
	uint64_t test_wedge;
};

/* Counter indexes (reduced on the GPU, one u64 each). */
enum {
	GPUK_C_PACKETS, GPUK_C_BYTES, GPUK_C_PASSED, GPUK_C_DELIVERED,
	GPUK_C_DELIVERED_BYTES, GPUK_C_GAPS, GPUK_C_VERIFY, GPUK_C_LAST_SEEN,
	GPUK_C_ORDER, GPUK_C_DROP0, GPUK_NCNT = GPUK_C_DROP0 + 16
};

/* Same layout as struct vfgx_gpu_delivery. */
struct gpuk_delivery {
	uint32_t stream, len;
	uint64_t ordinal, seq, hash;
};

struct gpuk;

/* All return 0 or -errno with the CUDA error text in err. */
int gpuk_probe(uint32_t gpu_id, char *desc, size_t len, char *err, size_t errlen);
int gpuk_create(const struct gpuk_conf *c, struct gpuk **out,
		struct vfgx_comm_list **list, char *err, size_t errlen);
/* persistent: launch the kernel; graph: capture the two graphs. */
int gpuk_start(struct gpuk *g, char *err, size_t errlen);
/* per_burst: launch the kernels of one slot; graph: replay the graph of
 * half slot / graph_items. */
int gpuk_launch(struct gpuk *g, uint32_t slot, char *err, size_t errlen);
/* 0 while healthy, -EIO with the CUDA error, -ESRCH when the persistent
 * kernel is gone. */
int gpuk_health(struct gpuk *g, char *err, size_t errlen);
int gpuk_read_counters(struct gpuk *g, uint64_t *cnt, char *err, size_t errlen);
int gpuk_read_flow_sums(struct gpuk *g, uint64_t *sums, uint32_t n, char *err,
			size_t errlen);
/* Returns records copied (<= max), -ENOSPC when the log overflowed. */
int64_t gpuk_read_log(struct gpuk *g, struct gpuk_delivery *recs, uint64_t max,
		      char *err, size_t errlen);
const char *gpuk_device_name(const struct gpuk *g);
/* 1 when the GPU can read p in place (device or registered host memory). */
int gpuk_device_readable(const void *p);
/* Set the quit flag and wait for the kernels at most timeout_ms;
 * -ETIMEDOUT when they did not end (memory is then left to process exit). */
int gpuk_stop(struct gpuk *g, uint32_t timeout_ms);
void gpuk_destroy(struct gpuk *g);

#ifdef __cplusplus
}
#endif
#endif
