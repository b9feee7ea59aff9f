/* mon.c - `vfgx mon`: print the gpurdma_mon driver's telemetry and the
 * library's last published counters, then follow its events live. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/mon.h>

#include "commands.h"
#include "core/numparse.h"

static volatile sig_atomic_t mon_interrupted;

static void mon_on_signal(int sig)
{
	(void)sig;
	mon_interrupted = 1;
}

static void print_link(const char *what, const struct gpurdma_mon_link *l)
{
	if (!l->present) {
		printf("%-4s absent\n", what);
		return;
	}
	printf("%-4s %04x:%02x:%02x.%u [%04x:%04x] node %d  link x%u %.1f GT/s of x%u %.1f GT/s%s  %" PRIu64
	       " Mb/s\n",
	       what, l->domain, l->bus, (l->devfn >> 3) & 0x1f, l->devfn & 7,
	       l->vendor, l->device, l->numa_node, l->cur_width,
	       l->cur_speed / 1000.0, l->max_width, l->max_speed / 1000.0,
	       l->degraded ? "  DEGRADED" : "", (uint64_t)l->bw_mbps);
}

static void print_telemetry(const struct gpurdma_mon_telemetry *t,
			    const struct gpurdma_mon_threshold *thr,
			    const struct gpurdma_mon_publish *p)
{
	uint64_t rx = 0, drops = 0;

	printf("gpurdma_mon ABI %u\n", t->version);
	print_link("gpu", &t->gpu);
	print_link("nic", &t->nic);
	printf("affinity: %s, %s; estimated GPU<->NIC bandwidth %" PRIu64 " Mb/s\n",
	       t->same_switch ? "same PCIe switch" : "no shared PCIe switch",
	       t->numa_mismatch ? "NUMA MISMATCH" : "NUMA ok",
	       (uint64_t)t->est_bw_mbps);
	printf("link checks %" PRIu64 ", events %" PRIu64 ", clients %u\n",
	       (uint64_t)t->link_checks, (uint64_t)t->events, t->clients);
	printf("thresholds: pressure %u%%, bandwidth %" PRIu64 " Mb/s%s\n",
	       thr->pressure_pct, (uint64_t)thr->bw_mbps,
	       thr->bw_mbps ? "" : " (90% of the estimate)");
	if (!t->publishes) {
		printf("library counters: none published yet\n");
		return;
	}
	for (uint32_t i = 0; i < p->nr_queues; i++) {
		rx += p->q[i].rx_packets;
		drops += p->q[i].drops;
	}
	printf("library counters (pid %u, %" PRIu64 " publishes): %u queues, rx %" PRIu64
	       " packets, drops %" PRIu64 ", pool %u/%u in use (%u%%), rx %" PRIu64 " Mb/s\n",
	       p->pid, (uint64_t)t->publishes, p->nr_queues, rx, drops,
	       p->pool_used, p->pool_total, t->pressure_pct,
	       (uint64_t)t->rx_mbps);
	for (uint32_t i = 0; i < p->nr_queues; i++)
		printf("  queue %2u: rx %" PRIu64 " packets %" PRIu64 " bytes, tx %" PRIu64
		       " packets, drops %" PRIu64 "\n",
		       i, (uint64_t)p->q[i].rx_packets,
		       (uint64_t)p->q[i].rx_bytes,
		       (uint64_t)p->q[i].tx_packets, (uint64_t)p->q[i].drops);
}

static void mon_usage(FILE *f)
{
	fprintf(f,
		"usage: vfgx mon [--once] [--count N] [--timeout SECONDS]\n"
		"                [--pressure PCT] [--bw MBPS] [--device PATH]\n"
		"  prints the driver's telemetry, then follows its events until\n"
		"  Ctrl-C (--once: telemetry only; --count: exit after N events,\n"
		"  status 1 when --timeout passes first).  --pressure/--bw set the\n"
		"  thresholds for every client.\n");
}

int vfgx_cmd_mon(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, '1' },
		{ "count", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "pressure", required_argument, NULL, 'p' },
		{ "bw", required_argument, NULL, 'b' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gpurdma_mon_telemetry t;
	struct gpurdma_mon_threshold thr;
	struct gpurdma_mon_publish p;
	struct gpurdma_mon_event ev[16];
	uint64_t count = 0, timeout = 0, pressure = 0, bw = 0, seen = 0;
	bool once = false, set_pressure = false, set_bw = false;
	const char *path = NULL;
	vfgx_mon *m;
	vfgx_ctx *ctx;
	uint64_t deadline;
	int c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "1n:t:p:b:d:h", opts, NULL)) != -1) {
		switch (c) {
		case '1':
			once = true;
			break;
		case 'n':
			if (vfgx_flag_u64("mon", "--count", optarg, 0, UINT32_MAX, &count))
				return 2;
			break;
		case 't':
			if (vfgx_flag_u64("mon", "--timeout", optarg, 0, 86400, &timeout))
				return 2;
			break;
		case 'p':
			if (vfgx_flag_u64("mon", "--pressure", optarg, 1, 100, &pressure))
				return 2;
			set_pressure = true;
			break;
		case 'b':
			if (vfgx_flag_u64("mon", "--bw", optarg, 0, UINT64_MAX / 8000, &bw))
				return 2;
			set_bw = true;
			break;
		case 'd':
			path = optarg;
			break;
		case 'h':
			mon_usage(stdout);
			return 0;
		default:
			mon_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		mon_usage(stderr);
		return 2;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_mon_open(ctx, path, &m)) {
		fprintf(stderr, "vfgx mon: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 1;
	}
	if (vfgx_mon_get_threshold(m, &thr))
		goto fail;
	if (set_pressure || set_bw) {
		if (vfgx_mon_set_threshold(m, set_pressure ? (uint32_t)pressure :
							     thr.pressure_pct,
					   set_bw ? bw : thr.bw_mbps) ||
		    vfgx_mon_get_threshold(m, &thr))
			goto fail;
	}
	if (vfgx_mon_telemetry(m, &t) || vfgx_mon_counters(m, &p))
		goto fail;
	print_telemetry(&t, &thr, &p);
	fflush(stdout);
	if (once)
		goto out;

	signal(SIGINT, mon_on_signal);
	signal(SIGTERM, mon_on_signal);
	printf("events (Ctrl-C to stop):\n");
	fflush(stdout);
	deadline = timeout ? vfgx_now_ns() + timeout * 1000000000ull : 0;
	while (!mon_interrupted && (!count || seen < count)) {
		int n = vfgx_mon_read(m, ev, 16, 200);

		if (n == -EINTR)
			continue;
		if (n < 0)
			goto fail;
		for (int i = 0; i < n && (!count || seen < count); i++, seen++) {
			char line[256];

			vfgx_mon_format_event(&ev[i], line, sizeof(line));
			printf("%s\n", line);
		}
		fflush(stdout);
		if (deadline && vfgx_now_ns() >= deadline) {
			if (count && seen < count) {
				fprintf(stderr, "vfgx mon: %" PRIu64 " of %" PRIu64 " events within %" PRIu64 " s\n",
					seen, count, timeout);
				rc = 1;
			}
			break;
		}
	}
	goto out;
fail:
	fprintf(stderr, "vfgx mon: %s\n", vfgx_last_error(ctx));
	rc = 1;
out:
	vfgx_mon_close(m);
	vfgx_ctx_destroy(ctx);
	return rc;
}
