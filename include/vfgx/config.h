/* vfgx/config.h - YAML configuration: typed core keys plus a node API that
 * backends and the GPU runner use to read their own sections with the same
 * precise errors (file:line:col: key.path: what is allowed). */
#ifndef VFGX_CONFIG_H
#define VFGX_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "mem.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

#define VFGX_NAME_MAX 64
#define VFGX_ADDR_MAX 256
#define VFGX_PATH_MAX 160
#define VFGX_MAX_REGIONS 16
#define VFGX_MAX_IFACES 8
#define VFGX_MAX_QUEUES 64
#define VFGX_MAX_PORT_RANGES 16
/* Limits checked before a config is built: size in bytes, nesting of
 * mappings and lists, and values (scalars, lists, mappings) in all. */
#define VFGX_CONFIG_MAX_BYTES (1 << 20)
#define VFGX_CONFIG_MAX_DEPTH 64
#define VFGX_CONFIG_MAX_NODES 65536

struct vfgx_cfg_doc; /* a loaded YAML document; owned by a vfgx_config */
struct vfgx_gpu_opts; /* vfgx/gpu.h */
struct vfgx_chunk_config;
struct vfgx_format;
struct vfgx_capture_conf; /* vfgx/chunk.h */
struct vfgx_record_conf; /* vfgx/record.h */

/*
 * A position in a loaded document.  index 0 means "absent": every getter on
 * an absent mapping returns the default, so a backend opened without YAML
 * reads its defaults through the same code.
 */
struct vfgx_cfg_node {
	const struct vfgx_cfg_doc *doc;
	int index;
	/* key path for messages, e.g. interfaces[0].afxdp, in memory of the
	 * document; NULL (the top, or a node built by hand) reads as "" */
	const char *path;
};

bool vfgx_cfg_present(const struct vfgx_cfg_node *n);
/* Fail on any key of the mapping not in allowed (NULL-terminated). */
int vfgx_cfg_check_keys(const struct vfgx_cfg_node *map,
			const char *const *allowed);
/* 0 and *out set when present, -ENOENT when absent, -EINVAL when not a map. */
int vfgx_cfg_child(const struct vfgx_cfg_node *map, const char *key,
		   struct vfgx_cfg_node *out);
int vfgx_cfg_u64(const struct vfgx_cfg_node *map, const char *key,
		 uint64_t def, uint64_t min, uint64_t max, uint64_t *out);
int vfgx_cfg_u32(const struct vfgx_cfg_node *map, const char *key,
		 uint32_t def, uint32_t min, uint32_t max, uint32_t *out);
int vfgx_cfg_double(const struct vfgx_cfg_node *map, const char *key,
		    double def, double min, double max, double *out);
int vfgx_cfg_bool(const struct vfgx_cfg_node *map, const char *key, bool def,
		  bool *out);
/* Copies the scalar; -EINVAL (with a message) when longer than len-1. */
int vfgx_cfg_str(const struct vfgx_cfg_node *map, const char *key,
		 const char *def, char *buf, size_t len);
/* names is NULL-terminated; *out is the index of the matching name. */
int vfgx_cfg_enum(const struct vfgx_cfg_node *map, const char *key,
		  const char *const *names, int def, int *out);
/* Sequence access; an absent node is an empty sequence. */
int vfgx_cfg_seq_len(const struct vfgx_cfg_node *seq);
int vfgx_cfg_seq_item(const struct vfgx_cfg_node *seq, int i,
		      struct vfgx_cfg_node *out);
/* Scalar value of a node itself (for sequences of scalars). */
const char *vfgx_cfg_scalar(const struct vfgx_cfg_node *n);
/* A sequence item that must be a decimal whole number min..max, parsed by
 * the same strict rules as vfgx_cfg_u32. */
int vfgx_cfg_item_u32(const struct vfgx_cfg_node *item, uint32_t min,
		      uint32_t max, uint32_t *out);
/* Report "file:line:col: path: message" on the document's context; returns
 * -EINVAL. */
int vfgx_cfg_error(const struct vfgx_cfg_node *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

enum vfgx_mem_fallback {
	VFGX_FALLBACK_HOST = 0, /* use host memory, with a warning */
	VFGX_FALLBACK_FAIL = 1,
};

/* The loaded config's strings (names, addresses) live in it: valid until
 * vfgx_config_destroy; at most VFGX_NAME_MAX-1 / VFGX_ADDR_MAX-1 bytes. */
struct vfgx_region_config {
	const char *name;
	enum vfgx_mem_kind kind;
	uint32_t buf_size;
	uint32_t num_bufs;
	int gpu_id;
	enum vfgx_mem_fallback fallback;
};

struct vfgx_queue_config {
	uint16_t id;
	uint16_t batch_size;
	const char *region; /* memory_regions[].name; "" = backend's own */
};

struct vfgx_iface_config {
	const char *name;
	const char *backend;
	const char *address; /* netdev, PCI address, vdev or URI; "" = none */
	uint16_t nb_rx_queues;
	uint16_t nb_tx_queues;
	/* room for VFGX_MAX_QUEUES each; the first nb_*_queues are set */
	struct vfgx_queue_config *rx_queues;
	struct vfgx_queue_config *tx_queues;
	/* interfaces[i].<backend>: the backend reads and validates it. */
	struct vfgx_cfg_node opts;
};

enum vfgx_device_choice {
	VFGX_DEVICE_AUTO = 0,
	VFGX_DEVICE_CPU = 1,
	VFGX_DEVICE_GPU = 2,
};

struct vfgx_port_range {
	uint16_t lo, hi;
};

/* The pipeline's options (YAML: pipeline:).  vfgx_pipeline_config_default
 * (vfgx/pipeline.h) fills the documented defaults and argsz. */
struct vfgx_pipeline_config {
	uint32_t argsz;           /* sizeof(struct vfgx_pipeline_config) */
	enum vfgx_device_choice device;
	uint16_t workers;
	/* filter: accepted UDP destination ports (at most
	 * VFGX_MAX_PORT_RANGES); none = accept all.  Read at create. */
	uint16_t nb_port_ranges;
	const struct vfgx_port_range *port_ranges;
	bool reorder;
	uint32_t reorder_window;  /* slots, power of two */
	uint32_t reorder_slot;    /* bytes per slot (max payload kept) */
	uint32_t max_streams;     /* stream ids 0 .. max_streams-1 */
	bool verify_payload;      /* check the loopback generator's pattern */
	double duration_s;        /* 0 = until the sources end */
	/* pipeline.gpu: read by the gpu engine; absent: its defaults. */
	struct vfgx_cfg_node gpu_opts;
	/* Typed pipeline.gpu options (vfgx_gpu_opts_default), or NULL: gpu_opts. */
	const struct vfgx_gpu_opts *gpu;
	/* bytes all reorder windows may hold together; a stream past it gets
	 * none (counted in streams_refused).  0: VFGX_REORDER_MAX_MEMORY. */
	uint64_t reorder_max_memory;
	/* pipeline.chunks (vfgx/chunk.h), or NULL: no chunks.  With chunks
	 * every record goes into its chunk slot instead of a reorder window. */
	const struct vfgx_chunk_config *chunks;
	/* pipeline.format (vfgx/format.h): the producer's header the reorder,
	 * chunks and order checks read, or NULL: the vfgx profile (vfgx's own
	 * 16-byte header, as before formats existed). */
	const struct vfgx_format *format;
};

struct vfgx_config {
	const char *source; /* file name, or "<embedded>" */
	enum vfgx_log_level log_level;
	uint16_t nb_regions;
	struct vfgx_region_config *regions;  /* nb_regions (at most VFGX_MAX_REGIONS) */
	uint16_t nb_ifaces;
	struct vfgx_iface_config *ifaces;    /* nb_ifaces (at most VFGX_MAX_IFACES) */
	struct vfgx_pipeline_config pipeline;
	struct vfgx_port_range *port_ranges; /* behind pipeline.port_ranges */
	struct vfgx_cfg_doc *doc;
	/* pipeline.user: the shared object `vfgx run` loads (vfgx/user.h),
	 * "" = none, and the string its init gets */
	const char *user_library;
	const char *user_arg;
	/* pipeline.user.gpu_*: a CUDA module (cubin, fatbin or PTX) whose
	 * per-chunk kernel `vfgx run` launches on every GPU chunk */
	const char *user_gpu_module;  /* "" = none */
	const char *user_gpu_kernel;  /* entry name */
	uint32_t user_gpu_threads;    /* threads per block */
	uint64_t user_gpu_state_bytes; /* device memory the kernel keeps */
	const char *user_gpu_state_out; /* file the state is written to */
	/* pipeline.capture (vfgx/capture.h), NULL: none; its path may be NULL
	 * (given on the command line) */
	const struct vfgx_capture_conf *capture;
	/* send: the options of `vfgx send` (docs/send.md); absent: defaults */
	struct vfgx_cfg_node send_opts;
	/* record (vfgx/record.h), NULL: none; its path may be NULL (given
	 * on the command line) */
	const struct vfgx_record_conf *record;
};

/* Load and validate.  On error, vfgx_last_error(ctx) has the detail and
 * the return is -EINVAL (bad content) or -ENOENT/-EACCES (file). */
int vfgx_config_load_file(vfgx_ctx *ctx, const char *path,
			  struct vfgx_config **out);
int vfgx_config_load_string(vfgx_ctx *ctx, const char *yaml, size_t len,
			    const char *name, struct vfgx_config **out);
/* The default configuration (configs/loopback.yaml, embedded at build). */
int vfgx_config_load_default(vfgx_ctx *ctx, struct vfgx_config **out);
void vfgx_config_destroy(struct vfgx_config *cfg);
/* The document's top-level map, for a program that reads sections of its
 * own with the vfgx_cfg_* accessors: `vfgx run` reads expect:, metrics:
 * and ranks: (src/cli/run_config.c), `vfgx send` send:; the library
 * knows their names and passes them over unread. */
void vfgx_config_root(const struct vfgx_config *cfg, struct vfgx_cfg_node *out);
const struct vfgx_region_config *
vfgx_config_find_region(const struct vfgx_config *cfg, const char *name);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
