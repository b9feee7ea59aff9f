/* report.c - a stopped session's report: the numbers
 * (vfgx_session_report) and the lines `vfgx run` prints of them
 * (vfgx_session_report_print); what a run expected of them is the
 * program's (vfgx run's expect: section). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <vfgx/format.h>
#include <vfgx/socket.h>

#include "core/argsz.h"
#include "core/escape.h"
#include "session_priv.h"

static void fill(vfgx_session *s, struct vfgx_session_report *r)
{
	struct vfgx_source_report src = { .known = true };
	bool any_known = false;

	memset(r, 0, sizeof(*r));
	r->argsz = sizeof(*r);
	r->secs = s->t1 > s->t0 && s->started ? (double)(s->t1 - s->t0) / 1e9 : 0;
	if (s->pl) {
		vfgx_pipeline_stats(s->pl, &r->pipeline);
		r->pipeline_error = vfgx_pipeline_error(s->pl);
	}
	for (uint16_t i = 0; i < s->nb_ports; i++) {
		struct vfgx_socket_info si;

		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(s->ports[i]); q++) {
			struct vfgx_queue_stats qs;
			struct vfgx_source_report sr;

			vfgx_port_stats(s->ports[i], q, &qs);
			vfgx_port_source_report(s->ports[i], q, &sr);
			r->rx_packets += qs.rx_packets;
			for (int k = VFGX_DROP_NOBUFS + 1; k < VFGX_DROP_MAX; k++)
				r->port_drops += qs.drops[k];
			if (sr.known) {
				any_known = true;
				src.generated += sr.generated;
				src.lost += sr.lost;
				src.duplicated += sr.duplicated;
				src.corrupted += sr.corrupted;
				src.reordered += sr.reordered;
			} else {
				src.known = false;
			}
		}
		if (!vfgx_socket_info(s->ports[i], &si) && si.tcp)
			r->conns_refused += si.refused;
	}
	src.known = src.known && any_known;
	r->source = src;
	r->user_module = s->user.mod != NULL;
	r->user_module_name = s->user.name;
	r->chunks = s->user.chunks;
	r->complete = s->user.complete;
	r->user_errors = s->user.user_errors;
	r->user_fini = s->user.fini_ret;
	r->gpu_module = s->user.gpu.loaded;
	r->gpu_module_path = s->gpu_path;
	r->gpu_launches = s->user.gpu.launches;
	r->gpu_error = s->user.gpu.error;
	r->capture = s->capture_path != NULL;
	r->capture_path = s->capture_path;
	r->capture_closed = s->capture_closed;
	r->capture_stats = s->cap_st;
	r->record = s->rec.on;
	r->record_path = s->rec.path;
	r->record_stats = s->rec.st;
	r->record_stats.not_recorded += s->rec.refused;
}

int vfgx_session_report(vfgx_session *s, struct vfgx_session_report *rep)
{
	struct vfgx_session_report r;

	if (!s || !rep)
		return -EINVAL;
	fill(s, &r);
	return vfgx_argsz_fill(rep, &r, sizeof(r));
}

/* What the capture's mode chose and is not in the files: dropped with
 * the ring full, left in GPU memory, or after a write error. */
static uint64_t not_captured(const struct vfgx_capture_stats *st)
{
	return st->ring_full + st->skipped_gpu + st->failed;
}

static void print_ports(vfgx_session *s, FILE *f)
{
	for (uint16_t i = 0; i < s->nb_ports; i++) {
		vfgx_port *p = s->ports[i];

		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(p); q++) {
			struct vfgx_queue_stats qs;

			vfgx_port_stats(p, q, &qs);
			fprintf(f, "port %s (%s) rx queue %u: %" PRIu64 " packets, %" PRIu64
				" bytes, no-buffer events %" PRIu64 "\n",
				vfgx_port_name(p), vfgx_port_backend(p), q,
				qs.rx_packets, qs.rx_bytes, qs.drops[VFGX_DROP_NOBUFS]);
			/* what the backend dropped before the pipeline saw it;
			 * no_bufs (pool exhausted) is printed above as events:
			 * backpressure on loopback and socket (the source or
			 * the kernel keeps the packet); NIC drops it counts on
			 * afxdp and dpdk show as gaps */
			for (int k = VFGX_DROP_NOBUFS + 1; k < VFGX_DROP_MAX; k++) {
				if (!qs.drops[k])
					continue;
				fprintf(f, "port %s rx queue %u drop %-12s %" PRIu64 "\n",
					vfgx_port_name(p), q,
					vfgx_drop_reason_name((enum vfgx_drop_reason)k),
					qs.drops[k]);
			}
		}
	}
	for (uint16_t i = 0; i < s->nb_ports; i++) {
		struct vfgx_socket_tcp_stats ts = { .argsz = sizeof(ts) };
		struct vfgx_socket_info si;

		if (vfgx_socket_info(s->ports[i], &si) || !si.tcp ||
		    vfgx_socket_tcp_stats(s->ports[i], &ts))
			continue;
		fprintf(f, "port %s (socket) connections: %u open, %u closed, %" PRIu64
			" refused (max_conns), %" PRIu64 " closed idle, %" PRIu64
			" closed slow (record_timeout_ms)\n",
			vfgx_port_name(s->ports[i]), si.conns, si.closed, si.refused,
			si.idle_closed, ts.slow_closed);
	}
}

static void print_pipeline(const struct vfgx_pipeline_stats *st, double secs, FILE *f)
{
	fprintf(f, "pipeline: %" PRIu64 " packets in %.3f s (%.3f Mpps, %.3f Gbps), passed %" PRIu64
		", delivered %" PRIu64 " (%" PRIu64 " payload bytes), gaps %" PRIu64
		", verify errors %" PRIu64 "\n",
		st->packets, secs, secs > 0 ? (double)st->packets / secs / 1e6 : 0,
		secs > 0 ? (double)st->bytes * 8 / secs / 1e9 : 0, st->passed,
		st->delivered, st->delivered_bytes, st->gaps, st->verify_errors);
	if (st->handed_over || st->streams_refused)
		fprintf(f, "reorder: %" PRIu64 " packets handed to their stream's worker, %" PRIu64
			" streams refused a window (pipeline.reorder.max_memory), %.1f MiB of windows\n",
			st->handed_over, st->streams_refused,
			(double)st->reorder_bytes / (1 << 20));
	fprintf(f, "latency (rx to processed): p50 <= %" PRIu64 " ns, p99 <= %" PRIu64 " ns\n",
		vfgx_stats_lat_pct(st, 50), vfgx_stats_lat_pct(st, 99));
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		if (st->drops[i])
			fprintf(f, "drop %-12s %" PRIu64 "\n",
				vfgx_drop_reason_name((enum vfgx_drop_reason)i), st->drops[i]);
}

static void print_capture(const struct vfgx_session_report *r, const char *path, FILE *f)
{
	const struct vfgx_capture_stats *st = &r->capture_stats;
	uint64_t chosen = st->selected + st->skipped_gpu;

	fprintf(f, "capture %s: %" PRIu64 " packets seen, %" PRIu64 " selected, %" PRIu64
		" written (%" PRIu64 " bytes, %u files), %" PRIu64 " dropped (ring full), %" PRIu64
		" in GPU memory not copied, %" PRIu64 " failed; %" PRIu64
		" not captured (%.1f%%)%s%s\n",
		path, st->seen, st->selected, st->written, st->bytes, st->files, st->ring_full,
		st->skipped_gpu, st->failed, not_captured(st),
		chosen ? 100.0 * (double)not_captured(st) / (double)chosen : 0,
		st->error ? ": " : "", st->error ? strerror(-st->error) : "");
}

static void print_user(vfgx_session *s, const struct vfgx_session_report *r, FILE *f)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	char err[512];

	if (s->pl && vfgx_chunk_stats(s->pl, &cs) == 0) {
		const struct vfgx_format *fmt = vfgx_chunk_format(s->pl);
		/* chunks by bytes (a frame, a heap) miss bytes, not slots */
		bool by_bytes = fmt && fmt->place != VFGX_FMT_PLACE_SLOT;

		fprintf(f, "chunks: %" PRIu64 " handed out (%" PRIu64 " complete, %" PRIu64
			" closed with %" PRIu64 " %s missing), %" PRIu64 " skipped; records placed %" PRIu64
			", late %" PRIu64 ", duplicates %" PRIu64 ", out of range %" PRIu64 "\n",
			cs.handed_out, cs.complete, cs.closed,
			by_bytes ? cs.missing_bytes : cs.missing, by_bytes ? "bytes" : "slots",
			cs.skipped, cs.placed, cs.late, cs.duplicates, cs.out_of_range);
		fprintf(f, "chunks: backpressure %" PRIu64 " waits, %" PRIu64 " records dropped while stopping; %.1f MiB of chunk memory\n",
			cs.backpressure, cs.backpressure_drops,
			(double)cs.chunk_bytes / (1 << 20));
	}
	if (r->user_module)
		fprintf(f, "user module %s: %" PRIu64 " chunks, %" PRIu64 " user errors%s\n",
			r->user_module_name, r->chunks, r->user_errors,
			r->user_fini ? ", fini FAILED" : "");
	if (r->gpu_module) {
		vfgx_escape(err, sizeof(err), r->gpu_error);
		fprintf(f, "user gpu module %s: %" PRIu64 " kernel launches%s%s\n",
			r->gpu_module_path, r->gpu_launches, r->gpu_error[0] ? "; FAILED: " : "", err);
	}
	if (r->record)
		fprintf(f, "record: %s: %" PRIu64 " chunks recorded, %" PRIu64 " not recorded, %u files, %.1f MiB%s%s\n",
			s->record_path, r->record_stats.recorded, r->record_stats.not_recorded,
			r->record_stats.files, (double)r->record_stats.bytes / (1 << 20),
			r->record_stats.error ? "; stopped: " : "",
			r->record_stats.error ? r->record_stats.message : "");
}

int vfgx_session_report_print(vfgx_session *s, const struct vfgx_source_report *sent, FILE *f)
{
	struct vfgx_session_report r;
	struct vfgx_source_report src;

	if (!s || !f)
		return -EINVAL;
	fill(s, &r);
	print_ports(s, f);
	print_pipeline(&r.pipeline, r.secs, f);
	if (r.capture)
		print_capture(&r, s->capture_path_esc, f);
	src = sent ? *sent : r.source; /* the sender's account replaces the ports' */
	if (src.known)
		fprintf(f, "%s: %" PRIu64 " sequences generated, injected: %" PRIu64
			" lost, %" PRIu64 " duplicated, %" PRIu64 " corrupted, %" PRIu64
			" reordered\n", sent ? "sender" : "source",
			src.generated, src.lost, src.duplicated, src.corrupted, src.reordered);
	print_user(s, &r, f);
	return 0;
}
