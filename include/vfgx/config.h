/* vfgx/config.h - YAML configuration, parsed at load into typed structs
 * (the core keys, every backend's section through its VFGX_OPT table,
 * pipeline.gpu), with precise errors (file:line:col: key.path: what is
 * allowed); a program's own sections are read by the same tables. */
#ifndef VFGX_CONFIG_H
#define VFGX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

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
struct vfgx_place_conf; /* vfgx/place.h */
struct vfgx_capture_conf; /* vfgx/chunk.h */
struct vfgx_record_conf; /* vfgx/record.h */

/*
 * A program's own config sections (vfgx run's expect:, metrics: and
 * ranks:) are described, like the library's, by a table of struct
 * vfgx_opt and read by vfgx_config_section into the program's typed
 * struct, with the library's errors (file:line:col: key.path: what is
 * allowed).  The program never walks the document.
 */
enum vfgx_opt_type {
	VFGX_OPT_U32,    /* uint32_t */
	VFGX_OPT_U16,    /* uint16_t */
	VFGX_OPT_U64,    /* uint64_t */
	VFGX_OPT_DOUBLE, /* double */
	VFGX_OPT_BOOL,   /* bool */
	VFGX_OPT_ENUM,   /* uint32_t index into names */
	VFGX_OPT_STR,    /* const char *; from YAML it points into the document */
	VFGX_OPT_TRI,    /* int8_t: -1 (def: "depends"), or a YAML bool 0/1 */
	VFGX_OPT_SKIP,   /* a key read by the backend's adapter (a list or a
			  * nested section), never by the port */
	/* a list: a pointer to elem_size-byte elements in memory of the loaded
	 * config (NULL when absent or empty), their count a uint16_t at
	 * count_off, at most max items.  Each item is a mapping read with
	 * elem (nb_elem entries), or, when elem's keys are NULL, a scalar
	 * read into the element by those entries */
	VFGX_OPT_LIST,
	/* const char *, no key: "file:line:col: key.path" of the mapping (or
	 * list item) being read, for the program's own later messages */
	VFGX_OPT_WHERE,
	/* const char *, no key read: the entry's key is the backend's name
	 * (a struct vfgx_backend_opts header, vfgx/port.h), set by the
	 * defaults and the YAML adapter; a struct a program filled must carry
	 * that name */
	VFGX_OPT_BACKEND,
	/* const char *, never NULL: a string of at most max-1 characters
	 * (longer: an error), in memory of the loaded config; absent: names[0]
	 * when names is set, else "" */
	VFGX_OPT_STRN,
};

struct vfgx_opt {
	const char *key;
	enum vfgx_opt_type type;
	size_t off;
	double def, min, max; /* numbers; bool and enum: def only; list: max items */
	const char *const *names; /* enum */
	/* U64: the largest value when a double cannot name it exactly (above
	 * 2^53, e.g. INT64_MAX, which max would round up to 2^63); 0: max,
	 * where 1.8e19 or more means UINT64_MAX */
	uint64_t max_u64;
	/* LIST */
	const struct vfgx_opt *elem;
	size_t nb_elem, elem_size, count_off;
};

#define VFGX_OPT(T, S, F, ...) \
	{ #F, VFGX_OPT_##T, offsetof(S, F), __VA_ARGS__ }

/* The header every backend's options start with (struct vfgx_loopback_opts
 * and the others: their hdr): argsz, sizeof the whole struct the caller
 * compiled against, and the backend the struct is for, which
 * vfgx_port_open (vfgx/port.h) checks against the port's.  Both are set by the
 * backend's _default and _from_yaml. */
struct vfgx_backend_opts {
	uint32_t argsz;
	const char *backend;
};

struct vfgx_config;
/* Section name of cfg's top-level mapping (absent: the defaults) into out
 * (size bytes, zeroed, then tab's defaults), by tab (n entries): a
 * mapping, or, when tab is one VFGX_OPT_LIST entry with no key, a list.
 * The library passes over the sections it does not own (vfgx run's
 * expect:, metrics:, ranks:) and refuses any other top-level key it does
 * not know.  0, or -EINVAL with the place in vfgx_last_error; strings and
 * lists live until vfgx_config_destroy. */
int vfgx_config_section(const struct vfgx_config *cfg, const char *name,
			const struct vfgx_opt *tab, size_t n, void *out,
			size_t size);

/* Where a memory region lives (vfgx/mem.h makes them). */
enum vfgx_mem_kind {
	VFGX_MEM_HOST = 0,     /* malloc'd, page aligned */
	VFGX_MEM_HUGEPAGE = 1, /* MAP_HUGETLB; falls back to host with a warning */
	VFGX_MEM_PINNED = 2,   /* host memory registered with CUDA, GPU-readable */
	VFGX_MEM_GPU = 3,      /* cudaMalloc, 64 KiB aligned; CPU cannot touch */
};

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
	/* interfaces[i].<backend>, parsed at load by the backend's VFGX_OPT
	 * table (its defaults where the section is absent): &o.hdr of the
	 * backend's struct vfgx_<backend>_opts (vfgx/loopback.h, ...), in
	 * memory of the config; NULL when the backend is not in this build
	 * (opening the port says so) or for an interface a program filled
	 * (then the defaults). */
	const struct vfgx_backend_opts *backend_opts;
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
	/* pipeline.gpu (vfgx/gpu.h; a loaded config has it parsed, its
	 * defaults where absent), or NULL: the defaults. */
	const struct vfgx_gpu_opts *gpu;
	/* bytes all reorder windows may hold together; a stream past it gets
	 * none (counted in streams_refused).  0: VFGX_REORDER_MAX_MEMORY. */
	uint64_t reorder_max_memory;
	/* pipeline.chunks (vfgx/chunk.h), or NULL: no chunks.  With chunks
	 * every record goes into its chunk slot instead of a reorder window. */
	const struct vfgx_chunk_config *chunks;
	/* pipeline.max_in_flight_bytes: packet buffer bytes (the rx queue's
	 * buf_size a packet) the engine holds between rx and release at most,
	 * all queues together; it bounds latency under load at about this
	 * over the rate (docs/config.md).  0: no bound but the pools. */
	uint64_t max_in_flight_bytes;
	/* pipeline.format (vfgx/format.h): the producer's header the reorder,
	 * chunks and order checks read, or NULL: the vfgx profile (vfgx's own
	 * 16-byte header, as before formats existed). */
	const struct vfgx_format *format;
	/* pipeline.format.user_place (vfgx/place.h): a user placement
	 * function for the format, or NULL: the description places. */
	const struct vfgx_place_conf *place;
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
const struct vfgx_region_config *
vfgx_config_find_region(const struct vfgx_config *cfg, const char *name);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
