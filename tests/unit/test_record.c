/* test_record.c - the recorder's library contract (vfgx/record.h): the
 * record: section's table (defaults, errors with file:line:col), the
 * refusals of vfgx_record_open (no chunks, no path, a FIFO, a symlink, an
 * existing file without overwrite, raw with deflate), the recorder's own
 * consumer thread (every chunk handed out is recorded; a second start is
 * -EBUSY; raw writes the chunks' own ring slots, each given back once; record.ring
 * not below in_flight: one line) and a program's own consumer calling
 * vfgx_record_chunk, or vfgx_record_take / vfgx_record_poll.  The
 * bytes on file are checked by tests/cli/test_record.py. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

#include "vfgx_build.h"

static vfgx_ctx *ctx;
static char dir[64];

static const char chunked[] =
	"interfaces:\n"
	"  - backend: loopback\n"
	"    loopback: { packets: 20000, flows: 2 }\n"
	"pipeline:\n"
	"  device: cpu\n"
	"  chunks: { payload_bytes: 512, packets: 128, streams: 2, in_flight: 8 }\n";

struct rig {
	struct vfgx_config *cfg;
	vfgx_port *port;
	vfgx_pipeline *pl;
};

static void rig_open(struct rig *g, const char *yaml)
{
	memset(g, 0, sizeof(*g));
	assert_int_equal(vfgx_config_load_string(ctx, yaml, strlen(yaml), "t", &g->cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, g->cfg, &g->cfg->ifaces[0], &g->port), 0);
	assert_int_equal(vfgx_pipeline_create(ctx, &g->cfg->pipeline, &g->port, 1, &g->pl), 0);
}

static void rig_close(struct rig *g)
{
	vfgx_pipeline_destroy(g->pl);
	vfgx_port_close(g->port);
	vfgx_config_destroy(g->cfg);
}

static void path_in_dir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
	unlink(buf);
}

static void test_conf_yaml(void **state)
{
	static const char bad_format[] = "record: { path: x, format: csv }\n";
	static const char raw_deflate[] = "record: { path: x, format: raw, compression: deflate }\n";
	static const char good[] = "record: { path: x.h5, rotate_seconds: 2.5 }\n";
	struct vfgx_config *cfg;
	struct vfgx_record_conf c;

	(void)state;
	vfgx_record_conf_default(&c);
	assert_int_equal(c.argsz, sizeof(c));
	assert_int_equal(c.format, VFGX_RECORD_HDF5);
	assert_int_equal(c.compression, VFGX_RECORD_COMPRESSION_OFF);
	assert_int_equal(c.ring, 4);
	assert_int_equal(c.max_wait_ms, 10000);
	assert_false(c.overwrite);
	assert_null(c.path);
	assert_int_equal(vfgx_config_load_string(ctx, bad_format, strlen(bad_format), "t.yaml", &cfg),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "t.yaml:1:"));
	assert_non_null(strstr(vfgx_last_error(ctx), "format"));
	assert_int_equal(vfgx_config_load_string(ctx, raw_deflate, strlen(raw_deflate), "t.yaml", &cfg),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "record.compression"));
	assert_int_equal(vfgx_config_load_string(ctx, good, strlen(good), "t.yaml", &cfg), 0);
	assert_non_null(cfg->record);
	assert_string_equal(cfg->record->path, "x.h5");
	assert_true(cfg->record->rotate_seconds == 2.5);
	vfgx_config_destroy(cfg);
}

static void test_open_refusals(void **state)
{
	static const char plain[] = "interfaces: [{backend: loopback, loopback: {packets: 100}}]\n";
	struct vfgx_record_conf c;
	vfgx_record *rec = NULL;
	char p[128], t[128], buf[8] = { 0 };
	struct rig g;
	int fd;

	(void)state;
	vfgx_record_conf_default(&c);
	c.format = VFGX_RECORD_RAW;
	rig_open(&g, plain);
	path_in_dir(p, sizeof(p), "nochunks.raw");
	c.path = p;
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), -ENOTSUP);
	assert_non_null(strstr(vfgx_last_error(ctx), "pipeline.chunks"));
	assert_int_equal(access(p, F_OK), -1);
	rig_close(&g);

	rig_open(&g, chunked);
	c.path = NULL;
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), -EINVAL);
	path_in_dir(p, sizeof(p), "fifo");
	assert_int_equal(mkfifo(p, 0600), 0);
	c.path = p;
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), -EEXIST);
	assert_non_null(strstr(vfgx_last_error(ctx), "FIFO"));
	assert_non_null(strstr(vfgx_last_error(ctx), p));
	unlink(p);
	path_in_dir(t, sizeof(t), "target");
	fd = open(t, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	path_in_dir(p, sizeof(p), "link");
	assert_int_equal(symlink(t, p), 0);
	c.path = p;
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), -ELOOP);
	c.path = t;
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), -EEXIST);
	assert_non_null(strstr(vfgx_last_error(ctx), "overwrite"));
	fd = open(t, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 4);
	close(fd);
	assert_string_equal(buf, "keep");
	c.compression = VFGX_RECORD_COMPRESSION_DEFLATE;
	path_in_dir(p, sizeof(p), "deflate.raw");
	c.path = p;
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), -EINVAL);
	assert_null(rec);
	unlink(t);
	path_in_dir(p, sizeof(p), "link");
	rig_close(&g);
}

static void wait_done(vfgx_pipeline *pl)
{
	while (!vfgx_pipeline_done(pl)) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

static size_t count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int ch;

	assert_non_null(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static char warned[512];
static int nwarned;

static void sink(void *user, enum vfgx_log_level level, const char *line)
{
	(void)user;
	if (level == VFGX_LOG_WARN && strstr(line, "record.ring")) {
		snprintf(warned, sizeof(warned), "%s", line);
		nwarned++;
	}
}

/* ring: record.ring; the pipeline's in_flight is 8.  Raw on the
 * recorder's own thread writes the chunks' own ring slots and gives each
 * back once written: every chunk handed out is recorded and returned. */
static void own_thread(uint32_t ring)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	struct vfgx_record_stats st;
	struct vfgx_record_conf c;
	vfgx_record *rec;
	char p[128], idx[160];
	struct rig g;

	rig_open(&g, chunked);
	vfgx_record_conf_default(&c);
	c.format = VFGX_RECORD_RAW;
	c.ring = ring;
	path_in_dir(p, sizeof(p), "own.raw");
	snprintf(idx, sizeof(idx), "%s.index.jsonl", p);
	unlink(idx);
	c.path = p;
	nwarned = 0;
	vfgx_log_set_sink(ctx, sink, NULL);
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), 0);
	assert_int_equal(vfgx_record_start(rec), 0);
	assert_int_equal(vfgx_record_start(rec), -EBUSY);
	assert_int_equal(vfgx_pipeline_start(g.pl), 0);
	wait_done(g.pl);
	vfgx_pipeline_stop(g.pl);
	assert_int_equal(vfgx_record_close(rec, &st), 0);
	vfgx_log_set_sink(ctx, NULL, NULL);
	assert_int_equal(vfgx_chunk_stats(g.pl, &cs), 0);
	assert_true(cs.handed_out > 0);
	assert_int_equal(st.recorded, cs.handed_out);
	assert_int_equal(cs.returned, cs.handed_out);
	assert_int_equal(st.not_recorded, 0);
	assert_int_equal(st.files, 1);
	assert_int_equal(count_lines(idx), 1 + cs.handed_out); /* header + chunks */
	if (ring >= 8) {
		/* one line: the recorder holds in_flight - 1 */
		assert_int_equal(nwarned, 1);
		assert_non_null(strstr(warned, "chunks.in_flight 8"));
		assert_null(strchr(warned, '\n'));
	} else {
		assert_int_equal(nwarned, 0);
	}
	unlink(p);
	unlink(idx);
	rig_close(&g);
}

static void test_own_thread(void **state)
{
	(void)state;
	own_thread(4);
	own_thread(8);
}

static void test_program_consumer(void **state)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	struct vfgx_record_stats st;
	struct vfgx_record_conf c;
	struct vfgx_chunk *ch;
	vfgx_record *rec;
	uint64_t got = 0;
	char p[128];
	struct rig g;
	int ret;

	(void)state;
	if (!VFGX_HAVE_HDF5)
		skip();
	rig_open(&g, chunked);
	vfgx_record_conf_default(&c);
	path_in_dir(p, sizeof(p), "prog.h5");
	c.path = p;
	c.config_text = chunked;
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), 0);
	assert_int_equal(vfgx_pipeline_start(g.pl), 0);
	while ((ret = vfgx_chunk_get(g.pl, 200, &ch)) != -ENODATA) {
		if (ret)
			continue;
		assert_int_equal(vfgx_record_chunk(rec, ch), 0);
		vfgx_chunk_put(g.pl, ch->stream, ch->index);
		got++;
	}
	vfgx_pipeline_stop(g.pl);
	vfgx_record_stats(rec, &st);
	assert_int_equal(st.recorded, got);
	assert_int_equal(vfgx_record_close(rec, &st), 0);
	assert_int_equal(vfgx_chunk_stats(g.pl, &cs), 0);
	assert_int_equal(st.recorded, cs.handed_out);
	assert_true(st.bytes >= got * 128 * 512);
	unlink(p);
	rig_close(&g);
}

/* A program's own consumer with vfgx_record_take: raw host chunks are
 * kept by the recorder and given back once written; the program gives
 * back only those it got 0 for, polls while none is ready, and every
 * chunk handed out is recorded and returned exactly once. */
static void test_program_take(void **state)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	struct vfgx_record_stats st;
	struct vfgx_record_conf c;
	struct vfgx_chunk *ch;
	vfgx_record *rec;
	uint64_t kept = 0;
	uint32_t held = 0;
	char p[128], idx[160];
	struct rig g;
	int ret;

	(void)state;
	rig_open(&g, chunked);
	vfgx_record_conf_default(&c);
	c.format = VFGX_RECORD_RAW;
	path_in_dir(p, sizeof(p), "take.raw");
	snprintf(idx, sizeof(idx), "%s.index.jsonl", p);
	unlink(idx);
	c.path = p;
	assert_int_equal(vfgx_record_open(ctx, &c, g.pl, &rec), 0);
	assert_int_equal(vfgx_pipeline_start(g.pl), 0);
	while ((ret = vfgx_chunk_get(g.pl, held ? 1 : 200, &ch)) != -ENODATA) {
		uint32_t stream;
		uint64_t index;

		if (ret) {
			held = vfgx_record_poll(rec);
			continue;
		}
		stream = ch->stream;
		index = ch->index;
		ret = vfgx_record_take(rec, ch);
		assert_true(ret == 0 || ret == 1);
		if (ret)
			kept++;
		else
			assert_int_equal(vfgx_chunk_put(g.pl, stream, index), 0);
		held = vfgx_record_poll(rec);
		assert_true(held <= c.ring);
	}
	vfgx_pipeline_stop(g.pl);
	assert_int_equal(vfgx_record_close(rec, &st), 0);
	assert_int_equal(vfgx_chunk_stats(g.pl, &cs), 0);
	assert_true(kept > 0); /* host chunks: the slots written as they lie */
	assert_int_equal(st.recorded, cs.handed_out);
	assert_int_equal(cs.returned, cs.handed_out);
	assert_int_equal(count_lines(idx), 1 + cs.handed_out);
	unlink(p);
	unlink(idx);
	rig_close(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf_yaml),
		cmocka_unit_test(test_open_refusals),
		cmocka_unit_test(test_own_thread),
		cmocka_unit_test(test_program_consumer),
		cmocka_unit_test(test_program_take),
	};
	int ret;

	if (vfgx_ctx_create(&ctx))
		return 1;
	snprintf(dir, sizeof(dir), "/tmp/vfgx-test-record-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	vfgx_ctx_destroy(ctx);
	return ret;
}
