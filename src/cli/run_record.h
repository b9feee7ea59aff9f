/* run_record.h - `vfgx run`'s side of the recorder (run_record.c): the
 * record: section or --record PATH, the recorder beside the user module
 * on the chunk consumer thread, and the report's record lines. */
#ifndef VFGX_RUN_RECORD_H
#define VFGX_RUN_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>
#include <vfgx/vfgx.h>

struct run_record {
	bool on;                  /* record: or --record given */
	vfgx_record *rec;         /* NULL when off or its first file failed */
	const char *path;
	char *config_text;        /* the config file's text, owned */
	uint64_t refused;         /* chunks offered while rec is NULL */
	bool told;                /* the line that stopped it is printed */
	struct vfgx_record_stats st;
};

/* Before the pipeline starts (after create): the recorder, when the
 * config or flag asks for one.  An unusable first file stops the
 * recording with one line and the run goes on; a config without chunks,
 * or options the build or the library refuse (hdf5 without libhdf5), is
 * a usage error: one line, returns 2. */
int run_record_open(struct run_record *rr, vfgx_ctx *ctx,
		    const struct vfgx_config *cfg, const char *config_path,
		    const char *flag_path, vfgx_pipeline *pl);
/* A chunk the consumer holds: written (or counted as not recorded); the
 * consumer gives it back after. */
/* 1: the recorder keeps the chunk and gives it back once written (the
 * caller must not); 0: the caller gives it back. */
int run_record_chunk(struct run_record *rr, const struct vfgx_chunk *c);
/* Writes completed meanwhile taken; the chunks the recorder still holds. */
uint32_t run_record_poll(struct run_record *rr);
/* After the consumer stopped: finish and close the files. */
void run_record_close(struct run_record *rr);
/* The report's line; false when the recording stopped on an error. */
bool run_record_report(const struct run_record *rr);
/* The JSON report's "record" object, or NULL when off. */
json_object *run_record_json(const struct run_record *rr);
void run_record_free(struct run_record *rr);
#endif
