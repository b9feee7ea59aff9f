/* record.c - record the loopback generator's chunks to a file with the
 * recorder's own consumer thread (vfgx_record_start), then say what was
 * written; show.py prints or plots the file with h5py.
 *
 *     record FILE.h5|FILE.raw      (HDF5 for .h5, raw files otherwise)
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <vfgx/vfgx.h>

static const char yaml[] =
	"interfaces:\n"
	"  - backend: loopback\n"
	"    loopback: { packets: 100000, flows: 2, loss: 0.01 }\n"
	"pipeline:\n"
	"  device: cpu\n"
	"  chunks: { payload_bytes: 512, packets: 256, streams: 2, in_flight: 8 }\n";

int main(int argc, char **argv)
{
	struct vfgx_record_stats st = { 0 };
	struct vfgx_record_conf rc;
	struct vfgx_config *cfg = NULL;
	vfgx_record *rec = NULL;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port = NULL;
	size_t n = argc > 1 ? strlen(argv[1]) : 0;
	vfgx_ctx *ctx;
	int ret = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: record FILE.h5|FILE.raw\n");
		return 2;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_record_conf_default(&rc);
	rc.path = argv[1];
	rc.format = n > 3 && !strcmp(argv[1] + n - 3, ".h5") ? VFGX_RECORD_HDF5 : VFGX_RECORD_RAW;
	rc.config_text = yaml;
	/* the recorder needs the pipeline (its chunks' shape), and must be
	 * consuming before the pipeline starts filling its rings */
	if (vfgx_config_load_string(ctx, yaml, sizeof(yaml) - 1, "record", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl) ||
	    vfgx_record_open(ctx, &rc, pl, &rec) || vfgx_record_start(rec) ||
	    vfgx_pipeline_start(pl)) {
		fprintf(stderr, "record: %s\n", vfgx_last_error(ctx));
		goto out;
	}
	while (!vfgx_pipeline_done(pl)) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	vfgx_pipeline_stop(pl);
	ret = vfgx_record_close(rec, &st) != 0;
	rec = NULL;
	printf("%s: %llu chunks recorded, %llu not recorded, %u files%s%s\n", argv[1],
	       (unsigned long long)st.recorded, (unsigned long long)st.not_recorded,
	       st.files, st.error ? "; stopped: " : "", st.message);
out:
	vfgx_record_close(rec, NULL);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	return ret;
}
