/* chunk_consumer.c - the consumer side of vfgx/chunk.h over a chunk set
 * (chunkset.h): get and put with the ready queue, the counters summed per
 * stream, the descriptors' addresses and the CUDA stream waits; chunk.c
 * places and releases. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <vfgx/chunk.h>

#include "chunkset.h"
#include "gpu_iface.h"

/* A consumer waiting for chunks the GPU places looks this often. */
#define GPU_PULL_NS 20000

static uint64_t rd(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static size_t slot_index(const struct vfgx_chunkset *cs, uint32_t stream,
			 uint32_t slot)
{
	return vfgx_chunkset_slot(cs, stream, slot);
}

/* Stream s's counters in GPUK_K_* order: the placers' atomics, or what
 * the GPU published. */
static void stream_counters(const struct vfgx_chunkset *cs, uint32_t s,
			    uint64_t *v)
{
	struct chunk_stream *c = &cs->streams[s];

	if (cs->gpu) {
		vfgx_chunkset_gpu_counters(cs, s, v);
		return;
	}
	v[GPUK_K_COMPLETE] = rd(&c->complete);
	v[GPUK_K_CLOSED] = rd(&c->closed);
	v[GPUK_K_SKIPPED] = rd(&c->skipped);
	v[GPUK_K_PLACED] = rd(&c->placed);
	v[GPUK_K_MISSING] = rd(&c->missing);
	v[GPUK_K_LATE] = rd(&c->late);
	v[GPUK_K_DUPLICATES] = rd(&c->duplicates);
	v[GPUK_K_OUT_OF_RANGE] = rd(&c->out_of_range);
	v[GPUK_K_BACKPRESSURE] = rd(&c->backpressure);
	v[GPUK_K_BP_DROPS] = rd(&c->backpressure_drops);
	v[GPUK_K_GAPS] = rd(&c->gaps);
}

uint64_t vfgx_chunkset_gaps(struct vfgx_chunkset *cs)
{
	uint64_t g = 0, v[GPUK_K_NCNT];

	for (uint32_t s = 0; s < cs->conf.streams; s++) {
		stream_counters(cs, s, v);
		g += v[GPUK_K_GAPS];
	}
	return g;
}

uint64_t vfgx_chunkset_order_errors(struct vfgx_chunkset *cs)
{
	uint64_t n;

	pthread_mutex_lock(&cs->lock);
	n = cs->order_errors;
	pthread_mutex_unlock(&cs->lock);
	return n;
}

/* --- consumer API ---------------------------------------------------------- */

static struct vfgx_chunkset *chunkset_of(vfgx_pipeline *pl)
{
	return pl ? vfgx_pipeline_chunkset(pl) : NULL;
}

int vfgx_chunkset_get(struct vfgx_chunkset *cs, int timeout_ms,
		      struct vfgx_chunk **out)
{
	struct timespec until = { 0, 0 };
	int ret = 0;

	*out = NULL;
	if (!cs)
		return -ENOTSUP;
	/* a polling consumer must not contend with the placers' lock */
	if (timeout_ms == 0 && !cs->gpu &&
	    !atomic_load_explicit(&cs->q_ready, memory_order_acquire) &&
	    !atomic_load_explicit(&cs->finished_flag, memory_order_acquire))
		return -EAGAIN;
	if (timeout_ms > 0) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&cs->lock);
	/* a pull reads a pinned word per stream the GPU writes (a cache miss
	 * each): only when nothing is queued */
	if (cs->gpu && !cs->q_len)
		vfgx_chunkset_gpu_pull(cs);
	while (!cs->q_len) {
		if (cs->finished) {
			/* the engine is done: what it made ready is all there */
			if (cs->gpu && (vfgx_chunkset_gpu_pull(cs), cs->q_len))
				break;
			ret = -ENODATA;
			break;
		}
		if (timeout_ms == 0) {
			ret = -EAGAIN;
			break;
		}
		if (cs->gpu) {
			/* the GPU rings no bell: look again shortly */
			struct timespec nap, now;

			clock_gettime(CLOCK_REALTIME, &now);
			if (timeout_ms > 0 && (now.tv_sec > until.tv_sec ||
					       (now.tv_sec == until.tv_sec &&
						now.tv_nsec >= until.tv_nsec))) {
				ret = -ETIMEDOUT;
				break;
			}
			nap = now;
			nap.tv_nsec += GPU_PULL_NS;
			if (nap.tv_nsec >= 1000000000L) {
				nap.tv_sec++;
				nap.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&cs->ready_cv, &cs->lock, &nap);
			vfgx_chunkset_gpu_pull(cs);
			continue;
		}
		if (timeout_ms < 0) {
			pthread_cond_wait(&cs->ready_cv, &cs->lock);
		} else if (pthread_cond_timedwait(&cs->ready_cv, &cs->lock, &until) ==
			   ETIMEDOUT && !cs->q_len) {
			ret = cs->finished ? -ENODATA : -ETIMEDOUT;
			break;
		}
	}
	if (!ret) {
		struct vfgx_chunk *d = cs->queue[cs->q_head];
		struct chunk_stream *st = &cs->streams[d->stream];

		cs->q_head = (cs->q_head + 1) % cs->q_cap;
		cs->q_len--;
		atomic_store_explicit(&cs->q_ready, cs->q_len, memory_order_relaxed);
		cs->handed_out++;
		/* per stream, chunks leave in index order */
		if (d->index < st->next_out)
			cs->order_errors++;
		st->next_out = d->index + 1;
		atomic_store_explicit(&st->state[d->ring_slot], CHUNK_HELD,
				      memory_order_relaxed);
		*out = d;
	}
	pthread_mutex_unlock(&cs->lock);
	return ret;
}

int vfgx_chunkset_put(struct vfgx_chunkset *cs, uint32_t stream, uint64_t index)
{
	struct chunk_stream *st;
	uint32_t r;
	int ret = -ESTALE;

	if (!cs)
		return -ENOTSUP;
	if (stream >= cs->conf.streams)
		return vfgx_set_error(cs->ctx, -EINVAL,
				      "chunks: put of stream %u, the pipeline has streams 0..%u",
				      stream, cs->conf.streams - 1);
	st = &cs->streams[stream];
	r = (uint32_t)(index % cs->conf.in_flight);
	pthread_mutex_lock(&cs->lock);
	/* the exact chunk, not only its slot: a repeated or stale put must
	 * not free the slot under the consumer that holds its newer chunk
	 * (the descriptor's index is the placer's while the slot is not
	 * HELD, and HELD is set under this lock) */
	if (atomic_load_explicit(&st->state[r], memory_order_relaxed) == CHUNK_HELD &&
	    st->desc[r].index == index) {
		cs->returned++;
		/* for a GPU placer: the slot may be written again */
		atomic_store_explicit(&cs->returned_word[slot_index(cs, stream, r)],
				      index + 1, memory_order_release);
		/* release: the consumer's reads finish before the slot is
		 * written again */
		atomic_store_explicit(&st->state[r], CHUNK_FREE, memory_order_release);
		pthread_cond_broadcast(&cs->free_cv);
		ret = 0;
	}
	pthread_mutex_unlock(&cs->lock);
	if (ret)
		vfgx_set_error(cs->ctx, ret,
			       "chunks: put of stream %u chunk %llu, which is not held (given back already, or never handed out); nothing changed",
			       stream, (unsigned long long)index);
	return ret;
}

int vfgx_chunk_get(vfgx_pipeline *pl, int timeout_ms, struct vfgx_chunk **out)
{
	return vfgx_chunkset_get(chunkset_of(pl), timeout_ms, out);
}

int vfgx_chunk_put(vfgx_pipeline *pl, uint32_t stream, uint64_t index)
{
	return vfgx_chunkset_put(chunkset_of(pl), stream, index);
}

int vfgx_chunk_stats(vfgx_pipeline *pl, struct vfgx_chunk_stats *out)
{
	struct vfgx_chunkset *cs = chunkset_of(pl);
	struct vfgx_chunk_stats st = { .argsz = sizeof(st) };

	if (!out || out->argsz != sizeof(st))
		return -EINVAL;
	if (!cs)
		return -ENOTSUP;
	for (uint32_t s = 0; s < cs->conf.streams; s++) {
		uint64_t v[GPUK_K_NCNT];

		stream_counters(cs, s, v);
		st.complete += v[GPUK_K_COMPLETE];
		st.closed += v[GPUK_K_CLOSED];
		st.skipped += v[GPUK_K_SKIPPED];
		st.placed += v[GPUK_K_PLACED];
		st.missing += v[GPUK_K_MISSING];
		st.late += v[GPUK_K_LATE];
		st.duplicates += v[GPUK_K_DUPLICATES];
		st.out_of_range += v[GPUK_K_OUT_OF_RANGE];
		st.backpressure += v[GPUK_K_BACKPRESSURE];
		st.backpressure_drops += v[GPUK_K_BP_DROPS];
		/* by bytes a chunk misses bytes, not slots */
		st.missing_bytes += cs->by_bytes ? rd(&cs->streams[s].missing_bytes) :
						   v[GPUK_K_MISSING] * cs->conf.payload_bytes;
	}
	pthread_mutex_lock(&cs->lock);
	st.handed_out = cs->handed_out;
	st.returned = cs->returned;
	pthread_mutex_unlock(&cs->lock);
	st.chunk_bytes = cs->total_bytes;
	*out = st;
	return 0;
}

const struct vfgx_chunk_config *vfgx_chunk_conf(vfgx_pipeline *pl)
{
	struct vfgx_chunkset *cs = chunkset_of(pl);

	return cs ? &cs->conf : NULL;
}

const struct vfgx_format *vfgx_chunk_format(vfgx_pipeline *pl)
{
	struct vfgx_chunkset *cs = chunkset_of(pl);

	return cs ? cs->fmt : NULL;
}

const struct vfgx_chunk *vfgx_chunk_slot(vfgx_pipeline *pl, uint32_t stream,
					 uint32_t slot)
{
	struct vfgx_chunkset *cs = chunkset_of(pl);

	if (!cs || stream >= cs->conf.streams || slot >= cs->conf.in_flight)
		return NULL;
	return &cs->streams[stream].desc[slot];
}

int vfgx_chunk_stream_wait(vfgx_pipeline *pl, uint32_t stream, uint64_t index,
			   void *cuda_stream)
{
	struct vfgx_chunkset *cs = chunkset_of(pl);
	size_t i;

	if (!cs)
		return -ENOTSUP;
	if (stream >= cs->conf.streams || !cs->dev_ready_word)
		return vfgx_set_error(cs->ctx, stream >= cs->conf.streams ? -EINVAL : -ENOTSUP,
				      "chunks: stream_wait needs pinned or gpu chunk memory and a stream below %u",
				      cs->conf.streams);
	atomic_store(&cs->streams[stream].cuda_consumed, true);
	i = slot_index(cs, stream, (uint32_t)(index % cs->conf.in_flight));
	return vfgx_chunk_cuda_wait_geq(cuda_stream, cs->dev_ready_word + i,
					index + 1, cs->ctx);
}

int vfgx_chunk_stream_put(vfgx_pipeline *pl, uint32_t stream, uint64_t index,
			  void *cuda_stream)
{
	struct vfgx_chunkset *cs = chunkset_of(pl);
	size_t i;

	if (!cs)
		return -ENOTSUP;
	if (stream >= cs->conf.streams || !cs->dev_returned_word)
		return vfgx_set_error(cs->ctx, stream >= cs->conf.streams ? -EINVAL : -ENOTSUP,
				      "chunks: stream_put needs pinned or gpu chunk memory and a stream below %u",
				      cs->conf.streams);
	i = slot_index(cs, stream, (uint32_t)(index % cs->conf.in_flight));
	return vfgx_chunk_cuda_write(cuda_stream, cs->dev_returned_word + i,
				     index + 1, cs->ctx);
}

void vfgx_chunkset_release_waits(struct vfgx_chunkset *cs)
{
	size_t slots = (size_t)cs->conf.streams * cs->conf.in_flight;

	for (size_t i = 0; i < slots; i++)
		atomic_store(&cs->ready_word[i], UINT64_MAX);
}
