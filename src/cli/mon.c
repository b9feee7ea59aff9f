/* mon.c - `vfgx mon`: print the gpurdma_mon driver's telemetry and the
 * library's last published counters, then follow its events live. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <vfgx/mon.h>

#include "cliopt.h"
#include "commands.h"

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

static const struct cli_opt mon_opts[] = {
	{ "once", '1', NULL, "telemetry only, no events" },
	{ "count", 'n', "N", "exit after N events" },
	{ "timeout", 't', "SECONDS", "give up waiting for --count events (status 1)" },
	{ "pressure", 'p', "PCT", "set the pool pressure threshold (1..100) for every client" },
	{ "bw", 'b', "MBPS", "set the bandwidth threshold for every client" },
	{ "device", 'd', "PATH", "device node (default /dev/gpurdma_mon)" },
	{ "json", 'j', NULL, "telemetry, counters and events as one JSON document at exit (docs/json.md)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

const struct cli_cmd vfgx_cli_mon = {
	.name = "mon",
	.summary = "gpurdma_mon driver: telemetry, then events live",
	.more = "  prints the driver's telemetry, then follows its events until Ctrl-C\n",
	.opts = mon_opts,
};

static json_object *jlink(const struct gpurdma_mon_link *l)
{
	json_object *o;
	char bdf[32];

	if (!l->present)
		return NULL;
	o = json_object_new_object();
	snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%u", l->domain, l->bus,
		 (l->devfn >> 3) & 0x1f, l->devfn & 7);
	json_object_object_add(o, "pci", json_object_new_string(bdf));
	json_object_object_add(o, "vendor", json_object_new_int(l->vendor));
	json_object_object_add(o, "device", json_object_new_int(l->device));
	json_object_object_add(o, "numa_node", json_object_new_int(l->numa_node));
	json_object_object_add(o, "width", json_object_new_int64(l->cur_width));
	json_object_object_add(o, "max_width", json_object_new_int64(l->max_width));
	json_object_object_add(o, "lane_speed_mbps", json_object_new_int64(l->cur_speed));
	json_object_object_add(o, "max_lane_speed_mbps", json_object_new_int64(l->max_speed));
	json_object_object_add(o, "degraded", json_object_new_boolean(l->degraded));
	json_object_object_add(o, "bw_mbps", json_object_new_uint64(l->bw_mbps));
	return o;
}

static json_object *mon_json(const struct gpurdma_mon_telemetry *t,
			     const struct gpurdma_mon_threshold *thr,
			     const struct gpurdma_mon_publish *p)
{
	json_object *root = json_object_new_object(), *te = json_object_new_object();
	json_object *th = json_object_new_object();

	json_object_object_add(root, "schema", json_object_new_string("vfgx.mon/1"));
	json_object_object_add(te, "abi", json_object_new_int64(t->version));
	json_object_object_add(te, "gpu", jlink(&t->gpu));
	json_object_object_add(te, "nic", jlink(&t->nic));
	json_object_object_add(te, "same_switch", json_object_new_boolean(t->same_switch));
	json_object_object_add(te, "numa_mismatch", json_object_new_boolean(t->numa_mismatch));
	json_object_object_add(te, "est_bw_mbps", json_object_new_uint64(t->est_bw_mbps));
	json_object_object_add(te, "link_checks", json_object_new_uint64(t->link_checks));
	json_object_object_add(te, "events", json_object_new_uint64(t->events));
	json_object_object_add(te, "publishes", json_object_new_uint64(t->publishes));
	json_object_object_add(te, "clients", json_object_new_int64(t->clients));
	json_object_object_add(te, "pressure_pct", json_object_new_int64(t->pressure_pct));
	json_object_object_add(te, "rx_mbps", json_object_new_uint64(t->rx_mbps));
	json_object_object_add(root, "telemetry", te);
	json_object_object_add(th, "pressure_pct", json_object_new_int64(thr->pressure_pct));
	json_object_object_add(th, "bw_mbps", json_object_new_uint64(thr->bw_mbps));
	json_object_object_add(root, "thresholds", th);
	if (t->publishes) {
		json_object *c = json_object_new_object(), *qs = json_object_new_array();

		json_object_object_add(c, "pid", json_object_new_int64(p->pid));
		json_object_object_add(c, "pool_used", json_object_new_int64(p->pool_used));
		json_object_object_add(c, "pool_total", json_object_new_int64(p->pool_total));
		for (uint32_t i = 0; i < p->nr_queues; i++) {
			json_object *q = json_object_new_object();

			json_object_object_add(q, "rx_packets", json_object_new_uint64(p->q[i].rx_packets));
			json_object_object_add(q, "rx_bytes", json_object_new_uint64(p->q[i].rx_bytes));
			json_object_object_add(q, "tx_packets", json_object_new_uint64(p->q[i].tx_packets));
			json_object_object_add(q, "drops", json_object_new_uint64(p->q[i].drops));
			json_object_array_add(qs, q);
		}
		json_object_object_add(c, "queues", qs);
		json_object_object_add(root, "counters", c);
	} else {
		json_object_object_add(root, "counters", NULL);
	}
	json_object_object_add(root, "events", json_object_new_array());
	return root;
}

static void mon_json_event(json_object *root, const struct gpurdma_mon_event *ev)
{
	json_object *o = json_object_new_object(), *a;

	json_object_object_add(o, "seq", json_object_new_uint64(ev->seq));
	json_object_object_add(o, "timestamp_ns", json_object_new_uint64(ev->timestamp_ns));
	json_object_object_add(o, "type", json_object_new_string(vfgx_mon_event_name(ev->type)));
	json_object_object_add(o, "severity", json_object_new_string(vfgx_mon_severity_name(ev->severity)));
	json_object_object_add(o, "source", json_object_new_string(vfgx_mon_source_name(ev->source)));
	json_object_object_add(o, "lost", json_object_new_int64(ev->lost));
	json_object_object_add(o, "value", json_object_new_uint64(ev->value));
	json_object_object_add(o, "threshold", json_object_new_uint64(ev->threshold));
	json_object_object_add(o, "detail", json_object_new_string(ev->detail));
	if (json_object_object_get_ex(root, "events", &a))
		json_object_array_add(a, o);
}

int vfgx_cmd_mon(int argc, char **argv)
{
	struct gpurdma_mon_telemetry t;
	struct gpurdma_mon_threshold thr;
	struct gpurdma_mon_publish p;
	struct gpurdma_mon_event ev[16];
	uint64_t count = 0, timeout = 0, pressure = 0, bw = 0, seen = 0;
	bool once = false, set_pressure = false, set_bw = false, json = false;
	json_object *doc = NULL;
	const char *path = NULL;
	vfgx_mon *m;
	vfgx_ctx *ctx;
	uint64_t deadline;
	int c, rc = 0;

	optind = 1;
	while ((c = cli_getopt(argc, argv, &vfgx_cli_mon)) != -1) {
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
		case 'j':
			json = true;
			break;
		case 'h':
			cli_usage(stdout, &vfgx_cli_mon);
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc)
		return cli_bad_operands(&vfgx_cli_mon, "unexpected operand");
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
	if (json)
		doc = mon_json(&t, &thr, &p);
	else
		print_telemetry(&t, &thr, &p);
	fflush(stdout);
	if (once)
		goto out;

	signal(SIGINT, mon_on_signal);
	signal(SIGTERM, mon_on_signal);
	if (!json)
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

			if (doc) {
				mon_json_event(doc, &ev[i]);
				continue;
			}
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
	if (doc) {
		json_object_object_add(doc, "exit_code", json_object_new_int(rc));
		printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
								JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(doc);
	}
	vfgx_mon_close(m);
	vfgx_ctx_destroy(ctx);
	return rc;
}
