/* run_capture.c - `vfgx run`'s verdict on its capture files (the session
 * wrote them: --capture, pipeline.capture) and --expect-sent (a `vfgx send --json` report as the run's source of
 * expectations, so a two-process run is checked as exactly as a loopback
 * one). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliopt.h"
#include "run_capture.h"

/* What the capture's mode chose and is not in the files: dropped with
 * the ring full, left in GPU memory, or after a write error. */
static uint64_t not_captured(const struct vfgx_capture_stats *st)
{
	return st->ring_full + st->skipped_gpu + st->failed;
}

/* The share of what the mode chose that is not in the files, in percent. */
static double not_captured_pct(const struct vfgx_capture_stats *st)
{
	uint64_t chosen = st->selected + st->skipped_gpu;

	return chosen ? 100.0 * (double)not_captured(st) / (double)chosen : 0;
}

bool run_capture_verdict(const struct vfgx_capture_stats *st, bool closed_ok, char *d,
			 size_t len)
{
	uint64_t miss = not_captured(st);

	if (!miss && closed_ok) {
		snprintf(d, len, "every one of %" PRIu64 " selected packets written", st->selected);
		return true;
	}
	snprintf(d, len,
		 "%" PRIu64 " of %" PRIu64 " chosen packets not captured (%.1f%%: %" PRIu64
		 " ring full, %" PRIu64 " in GPU memory, %" PRIu64 " failed)%s%s",
		 miss, st->selected + st->skipped_gpu, not_captured_pct(st), st->ring_full,
		 st->skipped_gpu, st->failed, st->error ? ": " : "",
		 st->error ? strerror(-st->error) : "");
	return false;
}

json_object *run_capture_json(const struct vfgx_capture_stats *st, const char *path)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "seen", json_object_new_uint64(st->seen));
	json_object_object_add(o, "selected", json_object_new_uint64(st->selected));
	json_object_object_add(o, "written", json_object_new_uint64(st->written));
	json_object_object_add(o, "bytes", json_object_new_uint64(st->bytes));
	json_object_object_add(o, "files", json_object_new_uint64(st->files));
	json_object_object_add(o, "ring_full", json_object_new_uint64(st->ring_full));
	json_object_object_add(o, "skipped_gpu", json_object_new_uint64(st->skipped_gpu));
	json_object_object_add(o, "failed", json_object_new_uint64(st->failed));
	json_object_object_add(o, "not_captured", json_object_new_uint64(not_captured(st)));
	json_object_object_add(o, "error", st->error ? json_object_new_string(strerror(-st->error)) : NULL);
	return o;
}

/* One counter of the report's source: a whole number, 0 .. 2^63 - 1
 * (json-c keeps larger numbers as UINT64_MAX, a negative one as itself:
 * both refused). */
static int sent_count(json_object *src, const char *key, uint64_t *v, char *why, size_t len)
{
	json_object *o;
	int64_t i;

	if (!json_object_object_get_ex(src, key, &o) || !json_object_is_type(o, json_type_int)) {
		snprintf(why, len, "source.%s is %s, not a whole number", key,
			 !json_object_object_get_ex(src, key, &o) ? "missing" :
			 json_type_to_name(json_object_get_type(o)));
		return -1;
	}
	i = json_object_get_int64(o);
	if (i < 0 || json_object_get_uint64(o) != (uint64_t)i) {
		/* a number past 2^64 reads as UINT64_MAX: not said as that */
		snprintf(why, len, "source.%s %s is out of range (must be 0..%" PRId64 ")", key,
			 json_object_get_uint64(o) == UINT64_MAX && i >= 0 ?
				 "(2^64 - 1 or more)" : json_object_to_json_string(o),
			 INT64_MAX);
		return -1;
	}
	*v = (uint64_t)i;
	return 0;
}

/* What a sender's generator can report: a sequence is lost, or sent
 * once, duplicated or corrupted (never both), and reordered among what
 * was sent (src/port/loopback.c). */
static int sent_consistent(const struct vfgx_source_report *r, char *why, size_t len)
{
	uint64_t sent = r->generated - r->lost;

	if (r->lost > r->generated)
		snprintf(why, len, "source.lost %" PRIu64 " is more than source.generated %" PRIu64,
			 r->lost, r->generated);
	else if (r->duplicated + r->corrupted > sent)
		snprintf(why, len,
			 "source.duplicated %" PRIu64 " and corrupted %" PRIu64
			 " are more than the %" PRIu64 " sequences sent (generated - lost)",
			 r->duplicated, r->corrupted, sent);
	else if (r->reordered > sent + r->duplicated)
		snprintf(why, len,
			 "source.reordered %" PRIu64 " is more than the %" PRIu64 " packets sent",
			 r->reordered, sent + r->duplicated);
	else
		return 0;
	return -1;
}

int run_sent_parse(const char *text, size_t len, struct vfgx_source_report *rep, char *why,
		   size_t why_len)
{
	json_object *root = NULL, *schema, *src;
	enum json_tokener_error err;
	json_tokener *tok;
	const char *nul;
	size_t end;
	int ret = -1;

	memset(rep, 0, sizeof(*rep));
	if (len == 0) {
		snprintf(why, why_len, "empty (the sender writes it when it ends: did `vfgx send --json` write it?)");
		return -1;
	}
	if (len > RUN_SENT_MAX_BYTES) {
		snprintf(why, why_len, "more than %u bytes: not a `vfgx send --json` report",
			 RUN_SENT_MAX_BYTES);
		return -1;
	}
	if ((nul = memchr(text, 0, len))) {
		snprintf(why, why_len, "not JSON: a NUL byte at byte %zu", (size_t)(nul - text));
		return -1;
	}
	if (!(tok = json_tokener_new_ex(RUN_SENT_MAX_DEPTH))) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, text, (int)len);
	err = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (err == json_tokener_continue) {
		snprintf(why, why_len, "not JSON: it ends inside the document (byte %zu)", len);
		goto out;
	}
	if (err != json_tokener_success || !root) {
		snprintf(why, why_len, "not JSON: %s at byte %zu", json_tokener_error_desc(err), end);
		goto out;
	}
	for (; end < len; end++)
		if (!strchr(" \t\r\n", text[end])) {
			snprintf(why, why_len, "not one JSON document: more follows at byte %zu", end);
			goto out;
		}
	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "schema", &schema) ||
	    !json_object_is_type(schema, json_type_string) ||
	    strcmp(json_object_get_string(schema), "vfgx.send/1") != 0) {
		snprintf(why, why_len, "not a `vfgx send --json` report (schema \"vfgx.send/1\")");
		goto out;
	}
	if (!json_object_object_get_ex(root, "source", &src) ||
	    !json_object_is_type(src, json_type_object)) {
		snprintf(why, why_len, "source is %s: a report of a generated source is needed (a pcap source has no sequences to check)",
			 json_object_object_get_ex(root, "source", &src) ?
				 json_type_to_name(json_object_get_type(src)) : "missing");
		goto out;
	}
	if (sent_count(src, "generated", &rep->generated, why, why_len) ||
	    sent_count(src, "lost", &rep->lost, why, why_len) ||
	    sent_count(src, "duplicated", &rep->duplicated, why, why_len) ||
	    sent_count(src, "corrupted", &rep->corrupted, why, why_len) ||
	    sent_count(src, "reordered", &rep->reordered, why, why_len) ||
	    sent_consistent(rep, why, why_len))
		goto out;
	rep->known = true;
	ret = 0;
out:
	if (ret)
		memset(rep, 0, sizeof(*rep));
	json_object_put(root);
	return ret;
}

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" :
	       S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" :
	       S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int run_sent_check(const char *file)
{
	struct stat st;

	if (stat(file, &st)) {
		if (errno == ENOENT) /* the sender writes it during the run */
			return 0;
		fprintf(stderr, "vfgx run: --expect-sent %s: %s\n", cli_esc(file), strerror(errno));
		return 2;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "vfgx run: --expect-sent %s is %s: name the regular file `vfgx send --json` writes\n",
			cli_esc(file), kind_of(st.st_mode));
		return 2;
	}
	if (st.st_size > RUN_SENT_MAX_BYTES) {
		fprintf(stderr, "vfgx run: --expect-sent %s: %lld bytes, more than a `vfgx send --json` report (%u at most)\n",
			cli_esc(file), (long long)st.st_size, RUN_SENT_MAX_BYTES);
		return 2;
	}
	return 0;
}

int run_sent_load(const char *file, struct vfgx_source_report *rep, char *why, size_t why_len)
{
	char reason[200];
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, ret = -1;

	memset(rep, 0, sizeof(*rep));
	/* O_NONBLOCK: a FIFO put there since the start cannot hold the open */
	fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(reason, sizeof(reason), "%s", strerror(errno));
		goto out;
	}
	if (fstat(fd, &st)) {
		snprintf(reason, sizeof(reason), "%s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(reason, sizeof(reason), "%s, not a regular file", kind_of(st.st_mode));
		goto out;
	}
	if (!(buf = malloc(RUN_SENT_MAX_BYTES + 1))) {
		snprintf(reason, sizeof(reason), "out of memory");
		goto out;
	}
	/* one more byte than a report may have: a larger file is refused */
	while (got <= RUN_SENT_MAX_BYTES) {
		ssize_t n = read(fd, buf + got, RUN_SENT_MAX_BYTES + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(reason, sizeof(reason), "%s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	ret = run_sent_parse(buf, got, rep, reason, sizeof(reason));
out:
	if (ret)
		snprintf(why, why_len, "--expect-sent %s: %s", cli_esc(file), reason);
	else
		snprintf(why, why_len, "--expect-sent %s: %" PRIu64 " sequences the sender generated",
			 cli_esc(file), rep->generated);
	free(buf);
	if (fd >= 0)
		close(fd);
	return ret;
}
