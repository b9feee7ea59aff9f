/* pipeline.c - vfgx_pipeline: resolves pipeline.device to an engine
 * (engine_cpu.c, engine_gpu.c), dispatches to its table, and starts and
 * stops the observers the application attached around the engine. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/format.h>
#include <vfgx/gpu.h>
#include <vfgx/pipeline.h>

#include "chunkset.h"
#include "core/argsz.h"
#include "engine.h"
#include "format/place_priv.h"
#include "rx_memory.h"

struct vfgx_pipeline {
	vfgx_ctx *ctx;
	const struct vfgx_engine_ops *ops;
	void *engine;
	uint32_t nb_queues;
	vfgx_port **ports; /* the caller's, in the order given */
	uint16_t nb_ports;
	struct vfgx_observer *obs;
	uint32_t nb_obs;
	uint32_t nb_obs_started;
	bool stopped;
	struct vfgx_chunkset *chunks; /* pipeline.chunks, or NULL */
	void *place_dl; /* pipeline.format.user_place's shared object */
	char desc[512]; /* the engine's line, then what it lacks */
};

/*
 * What an engine lacks of the pipeline's features, said by
 * vfgx_pipeline_describe and logged at create, so that a program (and
 * `vfgx run`) learns it before calling what fails.  Kept with the engine
 * table: an engine that gains a feature drops it here.
 */
static const struct {
	const char *engine;
	const char *lacks;
} engine_gaps[] = {
	{ "gpu", "a host user stage (vfgx_pipeline_set_user_stage: -ENOTSUP; "
		 "pipeline.gpu.user_stage runs on the GPU), pipeline.workers "
		 "(its rx threads are pipeline.gpu.rx_threads) and per-queue "
		 "snapshots while running "
		 "(vfgx_pipeline_queue_snap: -ENOTSUP)" },
};

static const char *engine_lacks(const char *engine)
{
	for (size_t i = 0; i < sizeof(engine_gaps) / sizeof(engine_gaps[0]); i++)
		if (!strcmp(engine_gaps[i].engine, engine))
			return engine_gaps[i].lacks;
	return NULL;
}

/* The engine pipeline.device names, with the messages `vfgx run` has always
 * printed; NULL with -ENODEV/-EINVAL in *err when gpu cannot be had. */
/* auto with a GPU: the rx queue whose packets are in GPU memory (only the
 * gpu engine reads them), else -1 */
static int gpu_memory_queue(vfgx_port *const *ports, uint16_t nb_ports, uint16_t *port)
{
	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			vfgx_pool *pool = vfgx_port_rx_pool(ports[i], q);

			if (pool && vfgx_pool_region(pool) &&
			    vfgx_region_info(vfgx_pool_region(pool))->kind == VFGX_MEM_GPU) {
				*port = i;
				return q;
			}
		}
	return -1;
}

static const struct vfgx_engine_ops *
choose_engine(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
	      vfgx_port *const *ports, uint16_t nb_ports, int *err)
{
	uint16_t gp = 0;
	int gq;
	struct vfgx_gpu_opts go;
	char desc[256];
	int ret;

	if (conf->device == VFGX_DEVICE_CPU)
		return &vfgx_engine_cpu;
	go = *conf->gpu; /* typed once, in vfgx_pipeline_create */
	ret = vfgx_gpu_probe(ctx, go.gpu_id, desc, sizeof(desc));
	if (conf->device == VFGX_DEVICE_GPU) {
		if (ret == -ENOTSUP) {
			/* the probe's own line carries advice: say it once */
			*err = vfgx_set_error(ctx, -ENODEV,
					      "pipeline.device: gpu, but this build has no CUDA (install the CUDA toolkit so meson finds nvcc and rebuild, or use device: cpu or auto)");
			return NULL;
		}
		if (ret) {
			char why[256];

			snprintf(why, sizeof(why), "%s", vfgx_last_error(ctx));
			*err = vfgx_set_error(ctx, -ENODEV,
					      "pipeline.device: gpu, but %s (use device: cpu or auto)",
					      why);
			return NULL;
		}
		vfgx_info(ctx, "pipeline.device gpu: using %s", desc);
		return &vfgx_engine_gpu;
	}
	if (ret) {
		/* without CUDA in the build, auto can only mean the CPU: no news */
		vfgx_log(ctx, ret == -ENOTSUP ? VFGX_LOG_DEBUG : VFGX_LOG_INFO,
			 "pipeline.device auto: using the CPU pipeline (%s)",
			 vfgx_last_error(ctx));
		vfgx_clear_error(ctx);
		return &vfgx_engine_cpu;
	}
	/* auto with a GPU: the engine that is faster for where the packets
	 * are.  In GPU memory only the gpu engine reads them, at the memory's
	 * rate; in host or pinned memory the cpu engine delivers each packet
	 * in microseconds where the gpu engine's items take milliseconds at
	 * the rates a host source gives (docs/gpu.md, "device: auto"). */
	gq = gpu_memory_queue(ports, nb_ports, &gp);
	if (gq >= 0) {
		vfgx_info(ctx, "pipeline.device auto: using %s: %s rx queue %d's packets are in GPU memory, which only the gpu engine reads",
			  desc, vfgx_port_name(ports[gp]), gq);
		return &vfgx_engine_gpu;
	}
	if (go.user != VFGX_GPU_USER_NONE) {
		vfgx_info(ctx, "pipeline.device auto: using %s: pipeline.gpu.user_stage runs on the GPU",
			  desc);
		return &vfgx_engine_gpu;
	}
	vfgx_info(ctx, "pipeline.device auto: using the CPU pipeline: the packets are in host or pinned memory, where its latency is lower (pipeline.device: gpu runs them on %s)",
		  desc);
	return &vfgx_engine_cpu;
}

int vfgx_rx_memory_check(vfgx_ctx *ctx, enum vfgx_device_choice device,
			 const char *who, const struct vfgx_rx_memory *m)
{
	char fix[160];

	/* cpu workers parse every header with the CPU: GPU memory faults */
	if (device == VFGX_DEVICE_CPU && m->kind == VFGX_MEM_GPU)
		return vfgx_set_error(ctx, -EINVAL,
				      "%s: GPU memory, which the cpu engine cannot read (pipeline.device: cpu reads packets with the CPU; use memory_regions[].kind: pinned, or pipeline.device: gpu)",
				      who);
	if (device != VFGX_DEVICE_GPU ||
	    (m->kind != VFGX_MEM_HOST && m->kind != VFGX_MEM_HUGEPAGE) ||
	    m->frame_max <= VFGX_GPU_BOUNCE_SLOT)
		return 0;
	if (m->key)
		snprintf(fix, sizeof(fix), "%s: %u or less", m->key, VFGX_GPU_BOUNCE_SLOT);
	else if (m->buf_size)
		snprintf(fix, sizeof(fix), "buf_size: %u or less", VFGX_GPU_BOUNCE_SLOT);
	else
		snprintf(fix, sizeof(fix), "a region of buf_size %u or less", VFGX_GPU_BOUNCE_SLOT);
	return vfgx_set_error(ctx, -EINVAL,
			      "%s: host memory with frames of up to %u bytes, but the gpu engine copies host-memory frames through %u-byte slots (use memory_regions[].kind: pinned, or %s)",
			      who, m->frame_max, VFGX_GPU_BOUNCE_SLOT, fix);
}

/* Every rx queue of the ports against the engine chosen: the ports a
 * program opened itself meet here the rule a config met at load (those of
 * a config meet it again, with the same answer). */
static int check_ports_memory(vfgx_ctx *ctx, const struct vfgx_engine_ops *ops,
			      vfgx_port *const *ports, uint16_t nb_ports)
{
	enum vfgx_device_choice dev = ops == &vfgx_engine_cpu ? VFGX_DEVICE_CPU : VFGX_DEVICE_GPU;

	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			vfgx_pool *pool = vfgx_port_rx_pool(ports[i], q);
			struct vfgx_rx_memory m = {
				.kind = pool && vfgx_pool_region(pool) ?
						vfgx_region_info(vfgx_pool_region(pool))->kind :
						VFGX_MEM_HOST,
				.buf_size = pool ? vfgx_pool_buf_size(pool) : 0,
				.frame_max = vfgx_port_rx_frame_max(ports[i], q),
			};
			char who[96];
			int ret;

			snprintf(who, sizeof(who), "%s rx queue %u", vfgx_port_name(ports[i]), q);
			if ((ret = vfgx_rx_memory_check(ctx, dev, who, &m)))
				return ret;
		}
	return 0;
}

/* The largest UDP payload every rx queue can receive: its pool's buffers
 * less Ethernet, IPv4 and UDP headers; 65507 where the backend keeps its
 * own buffers (the socket backend's datagrams). */
static uint32_t ports_max_payload(vfgx_port *const *ports, uint16_t nb_ports)
{
	uint32_t m = 65507;

	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			vfgx_pool *pool = vfgx_port_rx_pool(ports[i], q);
			uint32_t b = pool ? vfgx_pool_buf_size(pool) : 0;

			if (b > 42 && b - 42 < m)
				m = b - 42;
		}
	return m;
}

/* pipeline.format, typed: the program's copied (argsz), checked against
 * what the rx queues can receive (one line); *fmt NULL for vfgx's header. */
static int format_resolve(vfgx_ctx *ctx, struct vfgx_pipeline_config *c,
			  vfgx_port *const *ports, uint16_t nb_ports,
			  struct vfgx_format *store)
{
	uint32_t maxp;
	int ret;

	if (!c->format)
		return 0;
	if (vfgx_argsz_copy(store, sizeof(*store), c->format, sizeof(*store)))
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline: struct vfgx_format argsz %u not understood by libvfgx %s (use vfgx_format_profile)",
				      c->format->argsz, VFGX_VERSION_STRING);
	store->argsz = sizeof(*store);
	c->format = vfgx_format_is_vfgx(store) ? NULL : store;
	if (!c->format)
		return 0;
	maxp = ports_max_payload(ports, nb_ports);
	ret = vfgx_format_check(ctx, store, maxp, maxp);
	if (ret)
		return ret;
	return vfgx_pipeline_check(ctx, c);
}

/* pipeline.format.user_place (vfgx/place.h), typed: the program's copied
 * (argsz), checked against the format and the engine; the cpu engine's
 * function loaded (*dl). */
static int place_resolve(vfgx_ctx *ctx, struct vfgx_pipeline_config *c, bool cpu,
			 struct vfgx_place_conf *store, void **dl)
{
	int ret;

	*dl = NULL;
	if (!c->place)
		return 0;
	if (vfgx_argsz_copy(store, sizeof(*store), c->place, sizeof(*store)))
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline: struct vfgx_place_conf argsz %u not understood by libvfgx %s",
				      c->place->argsz, VFGX_VERSION_STRING);
	store->argsz = sizeof(*store);
	c->place = store;
	if (!c->format)
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline.format.user_place: the vfgx profile places by its own header; name the producer's header (a profile, or layout: fixed and header_len)");
	if (c->format->place != VFGX_FMT_PLACE_SLOT && c->format->place != VFGX_FMT_PLACE_USER)
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline.format %s: a user placement function places by slot or by itself; set place: slot or place: user",
				      c->format->name);
	if (c->format->place == VFGX_FMT_PLACE_USER && !c->chunks)
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline.format %s: place user puts packets into chunks; add pipeline.chunks",
				      c->format->name);
	if (!cpu) {
		if (!store->gpu_module || !store->gpu_module[0] || !store->symbol)
			return vfgx_set_error(ctx, -EINVAL,
					      "pipeline.format.user_place: the gpu engine needs gpu_module (relocatable device code with %s; nvcc -rdc=true) and symbol, or pipeline.device: cpu",
					      store->symbol ? store->symbol : "the function");
		return 0;
	}
	if ((ret = vfgx_place_load(ctx, store, dl, &store->fn)))
		return ret;
	return 0;
}

int vfgx_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *user_conf,
			 vfgx_port *const *ports, uint16_t nb_ports,
			 vfgx_pipeline **out)
{
	struct vfgx_pipeline_config c, *conf = &c;
	struct vfgx_gpu_opts gopts;
	struct vfgx_format fmt;
	struct vfgx_place_conf place;
	struct vfgx_pipeline *pl;
	int ret = 0;

	*out = NULL;
	if (vfgx_argsz_copy(&c, sizeof(c), user_conf,
			    offsetof(struct vfgx_pipeline_config, max_in_flight_bytes)))
		return vfgx_set_error(ctx, -EINVAL,
				      "pipeline: struct vfgx_pipeline_config argsz %u not understood by libvfgx %s (use vfgx_pipeline_config_default)",
				      user_conf->argsz, VFGX_VERSION_STRING);
	/* pipeline.gpu, typed (a loaded config parsed it at load): the
	 * program's argsz-checked, or the defaults; the engine choice and the
	 * gpu runner read conf->gpu alone */
	if (c.gpu) {
		if (vfgx_argsz_copy(&gopts, sizeof(gopts), c.gpu, sizeof(gopts)))
			return vfgx_set_error(ctx, -EINVAL,
					      "pipeline: struct vfgx_gpu_opts argsz %u not understood by libvfgx %s (use vfgx_gpu_opts_default)",
					      c.gpu->argsz, VFGX_VERSION_STRING);
	} else {
		vfgx_gpu_opts_default(&gopts);
	}
	c.gpu = &gopts;
	if (conf->nb_port_ranges > VFGX_MAX_PORT_RANGES)
		return vfgx_set_error(ctx, -EINVAL, "pipeline: %u port ranges; at most %d",
				      conf->nb_port_ranges, VFGX_MAX_PORT_RANGES);
	if ((ret = format_resolve(ctx, &c, ports, nb_ports, &fmt)))
		return ret;
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	pl->ctx = ctx;
	pl->ops = choose_engine(ctx, conf, ports, nb_ports, &ret);
	if (!pl->ops || (ret = check_ports_memory(ctx, pl->ops, ports, nb_ports)) ||
	    (ret = place_resolve(ctx, &c, pl->ops == &vfgx_engine_cpu, &place, &pl->place_dl))) {
		free(pl);
		return ret;
	}
	for (uint16_t i = 0; i < nb_ports; i++)
		pl->nb_queues += vfgx_port_nb_rx_queues(ports[i]);
	pl->ports = calloc(nb_ports ? nb_ports : 1, sizeof(*pl->ports));
	if (!pl->ports) {
		free(pl);
		return -ENOMEM;
	}
	memcpy(pl->ports, ports, nb_ports * sizeof(*pl->ports));
	pl->nb_ports = nb_ports;
	if (c.chunks && !(ret = vfgx_chunkset_create_fmt(ctx, c.chunks, c.format, &pl->chunks)))
		c.chunks = &pl->chunks->conf;
	if (!ret)
		ret = pl->ops->create(ctx, conf, ports, nb_ports, pl->chunks, &pl->engine);
	if (ret) {
		vfgx_chunkset_destroy(pl->chunks);
		vfgx_place_unload(pl->place_dl);
		free(pl->ports);
		free(pl);
		return ret;
	}
	const char *lacks = engine_lacks(pl->ops->name);

	snprintf(pl->desc, sizeof(pl->desc), "%s%s%s",
		 pl->ops->describe(pl->engine), lacks ? "; lacks " : "",
		 lacks ? lacks : "");
	if (lacks)
		vfgx_info(ctx, "pipeline: the %s engine lacks %s", pl->ops->name, lacks);
	*out = pl;
	return 0;
}

const char *vfgx_pipeline_engine(const vfgx_pipeline *pl)
{
	return pl->ops->name;
}

const char *vfgx_pipeline_describe(const vfgx_pipeline *pl)
{
	return pl->desc;
}

int vfgx_pipeline_item_stamps(const vfgx_pipeline *pl, char *buf, size_t len)
{
	if (!pl->ops->item_stamps)
		return -ENOTSUP;
	return pl->ops->item_stamps(pl->engine, buf, len);
}

int vfgx_pipeline_set_user_stage(vfgx_pipeline *pl, vfgx_user_stage_fn fn,
				 void *user)
{
	return pl->ops->set_user_stage(pl->engine, fn, user);
}

int vfgx_pipeline_add_observer(vfgx_pipeline *pl, const struct vfgx_observer *obs)
{
	struct vfgx_observer o, *grown;

	if (vfgx_argsz_copy(&o, sizeof(o), obs, sizeof(o)) || o.flags) {
		if (obs->argsz >= offsetof(struct vfgx_observer, release) +
					  sizeof(obs->release) && obs->release)
			obs->release(obs->user);
		return vfgx_set_error(pl->ctx, -EINVAL,
				      "pipeline observer: argsz %u or flags not understood by libvfgx %s",
				      obs->argsz, VFGX_VERSION_STRING);
	}
	grown = realloc(pl->obs, (pl->nb_obs + 1) * sizeof(*pl->obs));
	if (!grown) {
		if (o.release)
			o.release(o.user);
		return -ENOMEM;
	}
	pl->obs = grown;
	pl->obs[pl->nb_obs++] = o;
	pl->ops->want_queue_snaps(pl->engine);
	return 0;
}

static void stop_observers(vfgx_pipeline *pl)
{
	/* in reverse: the last started stops first */
	while (pl->nb_obs_started) {
		struct vfgx_observer *o = &pl->obs[--pl->nb_obs_started];

		if (o->stop)
			o->stop(o->user, pl);
	}
}

int vfgx_pipeline_start(vfgx_pipeline *pl)
{
	int ret;

	for (uint32_t i = 0; i < pl->nb_obs; i++) {
		struct vfgx_observer *o = &pl->obs[i];

		if (o->start && (ret = o->start(o->user, pl))) {
			stop_observers(pl);
			return ret;
		}
		pl->nb_obs_started++;
	}
	ret = pl->ops->start(pl->engine);
	if (ret)
		stop_observers(pl);
	return ret;
}

bool vfgx_pipeline_done(vfgx_pipeline *pl)
{
	return pl->ops->done(pl->engine);
}

void vfgx_pipeline_stop(vfgx_pipeline *pl)
{
	if (pl->stopped)
		return;
	if (pl->chunks)
		vfgx_chunkset_stop(pl->chunks); /* placers waiting give up */
	pl->ops->stop(pl->engine);
	if (pl->chunks)
		vfgx_chunkset_finish(pl->chunks);
	/* after the engine: observers read its final counters */
	stop_observers(pl);
	pl->stopped = true;
}

void vfgx_pipeline_stats(vfgx_pipeline *pl, struct vfgx_pipeline_stats *st)
{
	pl->ops->stats(pl->engine, st);
	if (pl->chunks) {
		st->gaps += vfgx_chunkset_gaps(pl->chunks);
		st->order_errors += vfgx_chunkset_order_errors(pl->chunks);
	}
}

struct vfgx_chunkset *vfgx_pipeline_chunkset(vfgx_pipeline *pl)
{
	return pl->chunks;
}

void vfgx_pipeline_keep_queue_stats(vfgx_pipeline *pl)
{
	pl->ops->want_queue_snaps(pl->engine);
}

int vfgx_pipeline_error(vfgx_pipeline *pl)
{
	return pl->ops->error(pl->engine);
}

uint16_t vfgx_pipeline_nb_ports(const vfgx_pipeline *pl)
{
	return pl->nb_ports;
}

vfgx_port *vfgx_pipeline_port(const vfgx_pipeline *pl, uint16_t i)
{
	return i < pl->nb_ports ? pl->ports[i] : NULL;
}

uint32_t vfgx_pipeline_nb_queues(const vfgx_pipeline *pl)
{
	return pl->nb_queues;
}

int vfgx_pipeline_queue_snap(vfgx_pipeline *pl, uint32_t index,
			     struct vfgx_queue_snap *s)
{
	return pl->ops->queue_snap(pl->engine, index, s);
}

void vfgx_pipeline_destroy(vfgx_pipeline *pl)
{
	if (!pl)
		return;
	vfgx_pipeline_stop(pl);
	pl->ops->destroy(pl->engine);
	vfgx_chunkset_destroy(pl->chunks);
	vfgx_place_unload(pl->place_dl);
	for (uint32_t i = 0; i < pl->nb_obs; i++)
		if (pl->obs[i].release)
			pl->obs[i].release(pl->obs[i].user);
	free(pl->obs);
	free(pl->ports);
	free(pl);
}
