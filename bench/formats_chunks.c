/* formats_chunks.c - `vfgx bench formats`' gpu rows into chunks
 * (formats.h): the GPU processor placing a pass of frames in GPU memory
 * into chunks, a consumer thread taking and giving back each, pass after
 * pass. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <vfgx/bench.h>
#include <vfgx/gpu.h>
#include <vfgx/vfgx.h>

#include "formats.h"
#include "vfgx_build.h"

#if VFGX_HAVE_CUDA
/* The consumer a user runs: a thread taking and giving back every chunk
 * (vfgx_chunkset_get polling, as a consumer owning a core); between
 * passes it pauses while the chunk rings start over. */
struct chunk_taker {
	struct vfgx_chunkset *cs;
	pthread_t t;
	atomic_uint_fast64_t complete, incomplete;
	atomic_uint pause_req, pause_ack; /* odd req: pause; ack: the req seen */
	atomic_bool quit;
};

static void *taker_main(void *arg)
{
	struct chunk_taker *k = arg;
	struct vfgx_chunk *c;

	while (!atomic_load(&k->quit)) {
		unsigned g = atomic_load(&k->pause_req);

		if (g & 1) {
			atomic_store(&k->pause_ack, g);
			sched_yield();
			continue;
		}
		if (vfgx_chunkset_get(k->cs, 0, &c))
			continue;
		if ((c->flags & VFGX_CHUNK_COMPLETE) && c->missing_bytes == 0)
			atomic_fetch_add(&k->complete, 1);
		else
			atomic_fetch_add(&k->incomplete, 1);
		vfgx_chunkset_put(k->cs, c->stream, c->index);
	}
	return NULL;
}

/* The consumer out of the chunk set (it waits at the top of its loop)
 * while fn runs, e.g. vfgx_chunkset_reset. */
static void taker_pause(struct chunk_taker *k)
{
	unsigned g = atomic_fetch_add(&k->pause_req, 1) + 1;

	while (atomic_load(&k->pause_ack) != g)
		sched_yield();
}

static void taker_resume(struct chunk_taker *k)
{
	atomic_fetch_add(&k->pause_req, 1);
}

/* Until the consumer took `want` chunks in all (or 5 s passed): 0 or -1. */
static int taker_wait(struct chunk_taker *k, uint64_t want)
{
	uint64_t t0 = vfgx_now_ns();

	while (atomic_load(&k->complete) + atomic_load(&k->incomplete) < want) {
		if (vfgx_now_ns() - t0 > 5000000000ull)
			return -1;
		sched_yield();
	}
	return 0;
}

double fchunks_gpu_side(vfgx_ctx *ctx, const struct vfgx_pipeline_config *pc,
			const struct vfgx_pkt *pkts, uint32_t n, double seconds, char *why,
			size_t wlen)
{
	const struct vfgx_chunk_config *cc = pc->chunks;
	struct vfgx_pipeline_stats st0, st;
	struct chunk_taker k;
	struct vfgx_gpu_opts o;
	vfgx_gpu_proc *gp = NULL;
	uint64_t passes = 0, t0 = 0, ns, per = n / cc->packets, ta;
	/* where a timed pass's time went: submitting the frames and the
	 * flush, the chunks coming out, the reset items, the rings' reset */
	uint64_t t_sub = 0, t_out = 0, t_reset = 0, t_rings = 0;
	bool taker = false;
	double mpps = NAN;
	int64_t r = 0;

	memset(&k, 0, sizeof(k));
	vfgx_gpu_opts_default(&o);
	o.mode = VFGX_GPU_PERSISTENT;
	o.burst = 1024;
	o.items = 256;
	o.timeout_ms = 20000;
	if (vfgx_chunkset_create_fmt(ctx, cc, pc->format, &k.cs) ||
	    vfgx_gpu_proc_create_chunks(ctx, pc, &o, k.cs, &gp)) {
		snprintf(why, wlen, "%s", vfgx_last_error(ctx));
		goto out;
	}
	if (pthread_create(&k.t, NULL, taker_main, &k))
		goto out;
	taker = true;
	/* pass 0 untimed (first touch); then whole passes for `seconds` */
	for (;;) {
		ta = vfgx_now_ns();
		for (uint32_t i = 0; i < n && r >= 0; i += o.burst)
			r = vfgx_gpu_proc_submit(gp, pkts + i,
						 n - i < o.burst ? n - i : o.burst);
		if (r < 0 || vfgx_gpu_proc_flush(gp))
			goto out;
		t_sub += t0 ? vfgx_now_ns() - ta : 0;
		ta = vfgx_now_ns();
		if (taker_wait(&k, (passes + 1) * per)) {
			snprintf(why, wlen, "pass %llu: %llu of %llu chunks came out in 5 s",
				 (unsigned long long)passes,
				 (unsigned long long)(atomic_load(&k.complete) +
						      atomic_load(&k.incomplete) - passes * per),
				 (unsigned long long)per);
			goto out;
		}
		t_out += t0 ? vfgx_now_ns() - ta : 0;
		ta = vfgx_now_ns();
		if (vfgx_gpu_proc_reset(gp) || vfgx_gpu_proc_sync(gp))
			goto out;
		t_reset += t0 ? vfgx_now_ns() - ta : 0;
		ta = vfgx_now_ns();
		taker_pause(&k);
		vfgx_chunkset_reset(k.cs);
		taker_resume(&k);
		t_rings += t0 ? vfgx_now_ns() - ta : 0;
		if (passes == 0 && !t0) {
			/* the counters after the untimed pass */
			if (vfgx_gpu_proc_stats(gp, &st0, NULL))
				goto out;
			atomic_store(&k.complete, 0);
			atomic_store(&k.incomplete, 0);
			t0 = vfgx_now_ns();
			continue;
		}
		passes++;
		if (vfgx_now_ns() - t0 >= (uint64_t)(seconds * 1e9))
			break;
	}
	ns = vfgx_now_ns() - t0;
	printf("gpu chunks %s side: %llu timed passes of %u frames: submit and flush %.3f ms, chunks out %.3f ms, reset and sync %.3f ms, rings reset %.3f ms a pass\n",
	       pc->format ? pc->format->name : "vfgx", (unsigned long long)passes, n,
	       (double)t_sub / 1e6 / (double)passes, (double)t_out / 1e6 / (double)passes,
	       (double)t_reset / 1e6 / (double)passes, (double)t_rings / 1e6 / (double)passes);
	{
		/* -Dgpu_item_stamps: where the side's items spent their time */
		char sb[640];

		if (!vfgx_gpu_proc_item_stamps(gp, sb, sizeof(sb)))
			printf("gpu chunks %s side: %s\n",
			       pc->format ? pc->format->name : "vfgx", sb);
	}
	if (vfgx_gpu_proc_stats(gp, &st, NULL))
		goto out;
	st.packets -= st0.packets;
	bool exact = st.packets == passes * n && atomic_load(&k.incomplete) == 0 &&
		     atomic_load(&k.complete) == passes * per;

	for (int i = 0; i < VFGX_DROP_MAX; i++)
		exact = exact && st.drops[i] == st0.drops[i];
	if (exact)
		mpps = (double)st.packets / (double)ns * 1e3;
	else
		snprintf(why, wlen, "a pass was not exact: offered %llu of %llu, chunks complete %llu of %llu, incomplete %llu",
			 (unsigned long long)st.packets, (unsigned long long)(passes * n),
			 (unsigned long long)atomic_load(&k.complete),
			 (unsigned long long)(passes * per),
			 (unsigned long long)atomic_load(&k.incomplete));
out:
	if (isnan(mpps) && !why[0])
		snprintf(why, wlen, "%s", vfgx_last_error(ctx));
	if (taker) {
		atomic_store(&k.quit, true);
		pthread_join(k.t, NULL);
	}
	/* the processor (its persistent kernel) before the rings it places into */
	vfgx_gpu_proc_destroy(gp);
	vfgx_chunkset_destroy(k.cs);
	return mpps;
}
#endif
