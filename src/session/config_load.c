/* config_load.c - load a YAML file into struct vfgx_config, validating
 * every key: the loader that knows every section, above the layers it
 * reads.  The document and its limits are core's (src/core/config.c);
 * memory_regions, interfaces (each backend's section by its backend's
 * parse entry, port/port_opts.h), pipeline (gpu, chunks, format, capture
 * by their tables) and record are read here, and what the engine cannot
 * read is refused here, before any region or port is made. */
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/capture.h>
#include <vfgx/chunk.h>
#include <vfgx/port.h>
#include <vfgx/format.h>
#include <vfgx/place.h>
#include <vfgx/record.h>

#include "core/cfgdoc.h"
#include "core/hostmem.h"
#include "core/numparse.h"
#include "core/opts.h"
#include "format/format_opts.h"
#include "format/place_priv.h"
#include "mem/pool_bytes.h"
#include "pipeline/chunk_opts.h"
#include "pipeline/gpu_opts.h"
#include "pipeline/pipeline_opts.h"
#include "pipeline/rx_memory.h"
#include "port/pcap_opts.h"
#include "port/port_opts.h"
#include "record/record_opts.h"

extern const char vfgx_default_config_yaml[];
extern const unsigned long vfgx_default_config_yaml_len;

/* send: is `vfgx send`'s (vfgx_send_opts_from_config reads it); expect:,
 * metrics: and ranks: are `vfgx run`'s (src/cli/run_config.c): passed
 * over here. */
static const char *const top_keys[] = { "log_level", "memory_regions",
					"interfaces", "pipeline", "expect",
					"metrics", "name", "send", "ranks",
					"record", NULL };

/* A list section under key in map: its node in seq and its length, at
 * most max items ("at most MAX WHAT"). */
static int seq_of(const struct vfgx_cfg_node *map, const char *key, int max,
		  const char *what, struct vfgx_cfg_node *seq)
{
	int n;

	vfgx_cfg_child(map, key, seq);
	n = vfgx_cfg_seq_len(seq);
	if (n >= 0 && n > max)
		return vfgx_cfg_error(seq, "at most %d %s", max, what);
	return n;
}

/* An entry for key K read into field F of struct S (VFGX_OPT: K is F). */
#define KEY_OPT(T, K, S, F, ...) { #K, VFGX_OPT_##T, offsetof(S, F), __VA_ARGS__ }
/* A key read by its own reader (a nested section or a list): in the
 * table for the key check only. */
#define SUB_OPT(T, K, READER) { #K, VFGX_OPT_##T, 0, 0, 0, 0, NULL, 0, NULL, 0, 0, 0 }

static const char *const region_kinds[] = { "host", "hugepage", "pinned",
					    "gpu", NULL };
static const char *const region_fallbacks[] = { "host", "fail", NULL };

#define RG_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_region_config, F, __VA_ARGS__)
/* memory_regions[i] */
static const struct vfgx_opt region_opts[] = {
	RG_OPT(STRN, name, 0, 0, VFGX_NAME_MAX),
	RG_OPT(ENUM, kind, 0, 0, 0, region_kinds),
	RG_OPT(U32, buf_size, 2048, 64, 1u << 20),
	RG_OPT(U32, num_bufs, 8192, 1, 1u << 24),
	RG_OPT(U32, gpu_id, 0, 0, 63), /* an int, 0..63 */
	RG_OPT(ENUM, fallback, 0, 0, 0, region_fallbacks),
};

/* A queue's id when the item does not give one: its position. */
#define QUEUE_ID_POSITION 0xffff

#define QU_OPT(T, K, DEF, LO, HI, F) \
	KEY_OPT(T, K, struct vfgx_queue_config, F, DEF, LO, HI)
/* interfaces[i].rx|tx.queues[j] */
static const struct vfgx_opt queue_opts[] = {
	QU_OPT(U16, id, QUEUE_ID_POSITION, 0, VFGX_MAX_QUEUES - 1, id),
	QU_OPT(STRN, memory_region, 0, 0, VFGX_NAME_MAX, region),
	QU_OPT(U16, batch_size, 64, 1, VFGX_BATCH_MAX, batch_size),
};

/* interfaces[i].rx|tx */
static const struct vfgx_opt queue_dir_opts[] = {
	SUB_OPT(SKIP, queues, parse_queues),
};

static const char *const iface_backends[] = { "loopback", "socket", "afxdp",
					      "dpdk", "rdma", "pcap", NULL };

/* interfaces[i], read into this, then its struct vfgx_iface_config */
struct iface_yaml {
	const char *name, *address;
	uint32_t backend;
};

#define IF_OPT(T, F, ...) VFGX_OPT(T, struct iface_yaml, F, __VA_ARGS__)
static const struct vfgx_opt iface_opts[] = {
	IF_OPT(STRN, name, 0, 0, VFGX_NAME_MAX), /* absent: BACKEND<i> */
	IF_OPT(ENUM, backend, 0, 0, 0, iface_backends),
	IF_OPT(STRN, address, 0, 0, VFGX_ADDR_MAX),
	SUB_OPT(SKIP, rx, parse_queues),
	SUB_OPT(SKIP, tx, parse_queues),
	/* the backend's section, by its parse entry (port/port_opts.h) */
	SUB_OPT(SKIP, loopback, vfgx_port_opts_from_yaml),
	SUB_OPT(SKIP, socket, vfgx_port_opts_from_yaml),
	SUB_OPT(SKIP, afxdp, vfgx_port_opts_from_yaml),
	SUB_OPT(SKIP, dpdk, vfgx_port_opts_from_yaml),
	SUB_OPT(SKIP, rdma, vfgx_port_opts_from_yaml),
	SUB_OPT(SKIP, pcap, vfgx_port_opts_from_yaml),
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int parse_regions(struct vfgx_config *cfg,
			 const struct vfgx_cfg_node *root)
{
	struct vfgx_cfg_node seq, it;
	uint64_t bytes;
	int n, ret;

	if ((n = seq_of(root, "memory_regions", VFGX_MAX_REGIONS, "regions", &seq)) < 0)
		return n;
	cfg->regions = calloc((size_t)n + 1, sizeof(*cfg->regions));
	if (!cfg->regions)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct vfgx_region_config *r = &cfg->regions[i];

		vfgx_cfg_seq_item(&seq, i, &it);
		if ((ret = vfgx_opts_from_yaml(&it, region_opts,
					       ARRAY_LEN(region_opts), r, 0)))
			return ret;
		if (!r->name[0])
			return vfgx_cfg_error(&it, "name: required (a name the queues refer to)");
		for (int j = 0; j < i; j++)
			if (strcmp(cfg->regions[j].name, r->name) == 0)
				return vfgx_cfg_error(&it, "name: '%s' is used twice", r->name);
		bytes = vfgx_pool_bytes(r->buf_size, r->num_bufs);
		if (r->kind != VFGX_MEM_GPU && bytes > vfgx_host_ram_bytes())
			return vfgx_cfg_error(&it, "num_bufs %u x buf_size %u is %llu bytes, more than this machine's memory (%llu bytes)",
					      r->num_bufs, r->buf_size,
					      (unsigned long long)bytes,
					      (unsigned long long)vfgx_host_ram_bytes());
	}
	cfg->nb_regions = (uint16_t)n;
	return 0;
}

static int parse_queues(struct vfgx_config *cfg, const struct vfgx_cfg_node *dir,
			struct vfgx_queue_config *qs, uint16_t *nq, uint16_t def_n)
{
	struct vfgx_cfg_node seq, it;
	char none; /* the table has keys only */
	int n, ret;

	if ((ret = vfgx_opts_from_yaml(dir, queue_dir_opts,
				       ARRAY_LEN(queue_dir_opts), &none, 0)))
		return ret;
	if ((n = seq_of(dir, "queues", VFGX_MAX_QUEUES, "queues", &seq)) < 0)
		return n;
	if (n == 0) {
		for (uint16_t i = 0; i < def_n; i++) {
			vfgx_opts_default(queue_opts, ARRAY_LEN(queue_opts), &qs[i], 0);
			qs[i].id = i;
		}
		*nq = def_n;
		return 0;
	}
	for (int i = 0; i < n; i++) {
		vfgx_cfg_seq_item(&seq, i, &it);
		if ((ret = vfgx_opts_from_yaml(&it, queue_opts,
					       ARRAY_LEN(queue_opts), &qs[i], 0)))
			return ret;
		if (qs[i].id == QUEUE_ID_POSITION)
			qs[i].id = (uint16_t)i;
		if (qs[i].id != i)
			return vfgx_cfg_error(&it, "id: queues must be listed in order 0..%d (got %u at position %d)",
					      n - 1, qs[i].id, i);
		if (qs[i].region[0] && !vfgx_config_find_region(cfg, qs[i].region))
			return vfgx_cfg_error(&it, "memory_region: '%s' is not defined under memory_regions",
					      qs[i].region);
	}
	*nq = (uint16_t)n;
	return 0;
}

static int parse_ifaces(struct vfgx_config *cfg,
			const struct vfgx_cfg_node *root)
{
	struct vfgx_cfg_node seq, it, sub;
	int n, ret;

	if ((n = seq_of(root, "interfaces", VFGX_MAX_IFACES, "interfaces", &seq)) < 0)
		return n;
	cfg->ifaces = calloc((size_t)n + 1, sizeof(*cfg->ifaces));
	if (!cfg->ifaces)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct vfgx_iface_config *f = &cfg->ifaces[i];
		struct iface_yaml y;
		uint32_t b;

		f->rx_queues = calloc(VFGX_MAX_QUEUES, sizeof(*f->rx_queues));
		f->tx_queues = calloc(VFGX_MAX_QUEUES, sizeof(*f->tx_queues));
		if (!f->rx_queues || !f->tx_queues)
			return -ENOMEM;
		/* queues a program adds past the parsed ones use the default */
		for (int q = 0; q < VFGX_MAX_QUEUES; q++)
			f->rx_queues[q].region = f->tx_queues[q].region = "";

		vfgx_cfg_seq_item(&seq, i, &it);
		if ((ret = vfgx_opts_from_yaml(&it, iface_opts, ARRAY_LEN(iface_opts),
					       &y, 0)))
			return ret;
		b = y.backend;
		f->backend = iface_backends[b];
		f->address = y.address;
		f->name = y.name;
		if (vfgx_cfg_child(&it, "name", &sub)) {
			/* absent: BACKEND<i> */
			char *defname = vfgx_cfg_alloc(&it, VFGX_NAME_MAX);

			if (!defname)
				return -ENOMEM;
			snprintf(defname, VFGX_NAME_MAX, "%s%d", iface_backends[b], i);
			f->name = defname;
		}
		vfgx_cfg_child(&it, "rx", &sub);
		if ((ret = parse_queues(cfg, &sub, f->rx_queues, &f->nb_rx_queues, 1)))
			return ret;
		vfgx_cfg_child(&it, "tx", &sub);
		if ((ret = parse_queues(cfg, &sub, f->tx_queues, &f->nb_tx_queues, 1)))
			return ret;
		for (uint32_t k = 0; iface_backends[k]; k++) {
			if (k == b)
				continue;
			if (vfgx_cfg_child(&it, iface_backends[k], &sub) == 0)
				return vfgx_cfg_error(&sub, "section for backend '%s' but this interface uses backend '%s' (remove it or change backend)",
						      iface_backends[k], iface_backends[b]);
		}
		vfgx_cfg_child(&it, iface_backends[b], &sub);
		if ((ret = vfgx_port_opts_from_yaml(&sub, f, &f->backend_opts)))
			return ret;
	}
	cfg->nb_ifaces = (uint16_t)n;
	return 0;
}

static int parse_port_ranges(struct vfgx_pipeline_config *p,
			     struct vfgx_port_range **store_out,
			     const struct vfgx_cfg_node *filter)
{
	struct vfgx_port_range *store;
	struct vfgx_cfg_node seq, it;
	int n;

	if ((n = seq_of(filter, "udp_dst_ports", VFGX_MAX_PORT_RANGES, "entries",
			&seq)) < 0)
		return n;
	store = calloc((size_t)n + 1, sizeof(*store));
	if (!store)
		return -ENOMEM;
	*store_out = store;
	for (int i = 0; i < n; i++) {
		char lo_s[16], err[VFGX_NUM_ERR_MAX];
		const char *s, *dash;
		uint64_t lo, hi;

		vfgx_cfg_seq_item(&seq, i, &it);
		s = vfgx_cfg_scalar(&it);
		if (!s)
			return vfgx_cfg_error(&it, "must be a port or a range 'LO-HI'");
		dash = strchr(s, '-');
		snprintf(lo_s, sizeof(lo_s), "%.*s",
			 dash ? (int)(dash - s) : (int)strlen(s), s);
		if ((dash && (size_t)(dash - s) >= sizeof(lo_s)) ||
		    vfgx_num_u64(lo_s, 1, 65535, 0, &lo, err, sizeof(err)) ||
		    (dash && vfgx_num_u64(dash + 1, lo, 65535, 0, &hi, err,
					  sizeof(err))))
			return vfgx_cfg_error(&it, "%s (a port or a range 'LO-HI', ports 1..65535 with LO <= HI)",
					      dash && (size_t)(dash - s) >= sizeof(lo_s) ?
						      "LO is too long" : err);
		if (!dash)
			hi = lo;
		store[i].lo = (uint16_t)lo;
		store[i].hi = (uint16_t)hi;
	}
	p->port_ranges = store;
	p->nb_port_ranges = (uint16_t)n;
	return 0;
}

/* pipeline.chunks: present means on. */
static int parse_chunks(struct vfgx_pipeline_config *p,
			const struct vfgx_cfg_node *pl)
{
	struct vfgx_chunk_config *c;
	struct vfgx_cfg_node sub;

	if (vfgx_cfg_child(pl, "chunks", &sub))
		return 0;
	c = vfgx_cfg_alloc(&sub, sizeof(*c));
	if (!c)
		return -ENOMEM;
	p->chunks = c;
	return vfgx_chunk_config_from_yaml(&sub, c);
}

/* pipeline.format: a profile name, or a map (docs/formats.md). */
static int parse_format(struct vfgx_pipeline_config *p,
			const struct vfgx_cfg_node *pl)
{
	struct vfgx_format *f;
	struct vfgx_place_conf *pc;
	struct vfgx_cfg_node sub;
	bool present;
	int ret;

	if (vfgx_cfg_child(pl, "format", &sub))
		return 0;
	f = vfgx_cfg_alloc(&sub, sizeof(*f));
	if (!f)
		return -ENOMEM;
	p->format = f;
	if ((ret = vfgx_format_from_yaml(&sub, f)))
		return ret;
	/* its user placement function (vfgx/place.h), if any */
	pc = vfgx_cfg_alloc(&sub, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	if ((ret = vfgx_place_conf_from_yaml(&sub, pc, &present)))
		return ret;
	p->place = present ? pc : NULL;
	return 0;
}

/* pipeline.gpu: typed once, here (absent: the defaults). */
static int parse_gpu(struct vfgx_pipeline_config *p, const struct vfgx_cfg_node *pl)
{
	struct vfgx_gpu_opts *g;
	struct vfgx_cfg_node sub;

	vfgx_cfg_child(pl, "gpu", &sub);
	g = vfgx_cfg_alloc(&sub, sizeof(*g));
	if (!g)
		return -ENOMEM;
	p->gpu = g;
	return vfgx_gpu_opts_from_yaml(&sub, g);
}

/* pipeline.filter */
static const struct vfgx_opt filter_opts[] = {
	SUB_OPT(SKIP, udp_dst_ports, parse_port_ranges),
};

static const char *const user_gpu_kernel_def[] = { "vfgx_chunk_kernel", NULL };

#define US_OPT(T, K, DEF, LO, HI, F) \
	KEY_OPT(T, K, struct vfgx_config, F, DEF, LO, HI)
/* pipeline.user */
static const struct vfgx_opt user_opts[] = {
	US_OPT(STRN, library, 0, 0, VFGX_PATH_MAX, user_library),
	US_OPT(STRN, arg, 0, 0, VFGX_PATH_MAX, user_arg),
	US_OPT(STRN, gpu_module, 0, 0, VFGX_PATH_MAX, user_gpu_module),
	/* default: user_gpu_kernel_def */
	KEY_OPT(STRN, gpu_kernel, struct vfgx_config, user_gpu_kernel, 0, 0,
		VFGX_NAME_MAX, user_gpu_kernel_def),
	US_OPT(U32, gpu_threads, 256, 32, 1024, user_gpu_threads),
	US_OPT(U64, gpu_state_bytes, 0, 0, 1ull << 32, user_gpu_state_bytes),
	US_OPT(STRN, gpu_state_out, 0, 0, VFGX_PATH_MAX, user_gpu_state_out),
};

static int parse_pipeline(struct vfgx_config *cfg,
			  const struct vfgx_cfg_node *root)
{
	struct vfgx_pipeline_config *p = &cfg->pipeline;
	struct vfgx_cfg_node pl, sub;
	char none; /* filter's table has keys only */
	int ret;

	vfgx_cfg_child(root, "pipeline", &pl);
	if ((ret = vfgx_opts_from_yaml(&pl, vfgx_pipeline_opts, vfgx_pipeline_nopts,
				       p, sizeof(*p))))
		return ret;
	vfgx_cfg_child(&pl, "filter", &sub);
	if ((ret = vfgx_opts_from_yaml(&sub, filter_opts, ARRAY_LEN(filter_opts),
				       &none, 0)) ||
	    (ret = parse_port_ranges(p, &cfg->port_ranges, &sub)))
		return ret;
	vfgx_cfg_child(&pl, "reorder", &sub);
	if ((ret = vfgx_opts_from_yaml(&sub, vfgx_reorder_opts, vfgx_reorder_nopts,
				       p, 0)))
		return ret;
	if (p->reorder_window & (p->reorder_window - 1)) {
		struct vfgx_cfg_node w;

		vfgx_cfg_child(&sub, "window", &w);
		return vfgx_cfg_error(&w, "%u is not a power of two (e.g. 1024)",
				      p->reorder_window);
	}
	if ((ret = parse_gpu(p, &pl)))
		return ret;
	vfgx_cfg_child(&pl, "user", &sub);
	if ((ret = vfgx_opts_from_yaml(&sub, user_opts, ARRAY_LEN(user_opts), cfg, 0)))
		return ret;
	vfgx_cfg_child(&pl, "capture", &sub);
	if (vfgx_cfg_present(&sub)) {
		struct vfgx_capture_conf *cc = vfgx_cfg_alloc(&sub, sizeof(*cc));

		if (!cc)
			return -ENOMEM;
		if ((ret = vfgx_capture_conf_from_yaml(&sub, cc)))
			return ret;
		cfg->capture = cc;
	}
	if ((ret = parse_format(p, &pl)))
		return ret;
	return parse_chunks(p, &pl);
}

/* Every rx queue against pipeline.device, at load: before any region or
 * port is made, so also on a host without the GPU.  The queue's memory is
 * its memory_region's kind, or host memory (the backend's own buffers);
 * its largest frame what the backend's parsed options allow in those
 * buffers.  The rule is src/pipeline/rx_memory.h's, the one
 * vfgx_pipeline_create applies to ports a program opened itself. */
static int check_rx_memory(struct vfgx_config *cfg)
{
	for (uint16_t i = 0; i < cfg->nb_ifaces; i++) {
		const struct vfgx_iface_config *f = &cfg->ifaces[i];

		for (uint16_t q = 0; q < f->nb_rx_queues; q++) {
			const struct vfgx_region_config *r = NULL;
			struct vfgx_rx_memory m;
			char who[1024];
			int ret;

			if (f->rx_queues[q].region[0] &&
			    !(r = vfgx_config_find_region(cfg, f->rx_queues[q].region)))
				continue;
			m.kind = r ? r->kind : VFGX_MEM_HOST;
			m.buf_size = r ? r->buf_size : 0;
			m.frame_max = vfgx_port_conf_frame_max(f, m.buf_size, &m.key);
			if (r)
				snprintf(who, sizeof(who), "%s: interface %s rx queue %u: memory_region %s",
					 cfg->source, f->name, f->rx_queues[q].id, r->name);
			else
				snprintf(who, sizeof(who), "%s: interface %s rx queue %u: the %s backend's own buffers",
					 cfg->source, f->name, f->rx_queues[q].id, f->backend);
			ret = vfgx_rx_memory_check(cfg->doc->ctx, cfg->pipeline.device, who, &m);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* record: present means on (its path may come from the command line). */
static int parse_record(struct vfgx_config *cfg,
			const struct vfgx_cfg_node *root)
{
	struct vfgx_record_conf *rc;
	struct vfgx_cfg_node sub;

	vfgx_cfg_child(root, "record", &sub);
	if (!vfgx_cfg_present(&sub))
		return 0;
	rc = vfgx_cfg_alloc(&sub, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	cfg->record = rc;
	return vfgx_record_conf_from_yaml(&sub, rc);
}

static int parse_all(struct vfgx_config *cfg)
{
	static const char *const levels[] = { "error", "warn", "info", "debug",
					      NULL };
	struct vfgx_cfg_node root = { .doc = cfg->doc, .index = 1 };
	int ret, lvl;

	if (!yaml_document_get_root_node(&cfg->doc->doc))
		return vfgx_set_error(cfg->doc->ctx, -EINVAL,
				      "%s: empty configuration (see configs/loopback.yaml)",
				      cfg->source);
	if ((ret = vfgx_cfg_check_keys(&root, top_keys)) ||
	    (ret = vfgx_cfg_enum(&root, "log_level", levels, VFGX_LOG_INFO,
				 &lvl)))
		return ret;
	cfg->log_level = (enum vfgx_log_level)lvl;
	if ((ret = parse_regions(cfg, &root)) || (ret = parse_ifaces(cfg, &root)) ||
	    (ret = parse_pipeline(cfg, &root)) ||
	    (ret = parse_record(cfg, &root)) || (ret = check_rx_memory(cfg)))
		return ret;
	return 0;
}


int vfgx_config_load_string(vfgx_ctx *ctx, const char *yaml, size_t len,
			    const char *name, struct vfgx_config **out)
{
	struct vfgx_config *cfg;
	int ret;

	*out = NULL;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return -ENOMEM;
	if (!(cfg->source = strdup(name))) {
		free(cfg);
		return -ENOMEM;
	}
	ret = vfgx_cfg_doc_load(ctx, yaml, len, name, &cfg->doc);
	if (!ret)
		ret = parse_all(cfg);
	if (ret) {
		vfgx_config_destroy(cfg);
		return ret;
	}
	*out = cfg;
	return 0;
}

int vfgx_config_load_file(vfgx_ctx *ctx, const char *path,
			  struct vfgx_config **out)
{
	char *buf;
	size_t len;
	int ret;

	*out = NULL;
	if ((ret = vfgx_cfg_read_file(ctx, path, &buf, &len)))
		return ret;
	ret = vfgx_config_load_string(ctx, buf ? buf : "", len, path, out);
	free(buf);
	return ret;
}

int vfgx_config_load_default(vfgx_ctx *ctx, struct vfgx_config **out)
{
	return vfgx_config_load_string(ctx, vfgx_default_config_yaml,
				       vfgx_default_config_yaml_len,
				       "<embedded configs/loopback.yaml>", out);
}
