/* run_chunks.c - `vfgx run`'s side of chunks and user code: load the user
 * module (dlopen, vfgx/user.h), run its init, set its per-record stage,
 * consume every ready chunk on a thread of its own (the module's chunk
 * callback, then the recorder, then give it back), and report what chunks
 * did. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliopt.h"
#include "run_chunks.h"

/* The module's name as text that is safe to print (it is the module's). */
static const char *mod_name(const struct run_chunks *rc)
{
	return rc->mod && rc->mod->name ? cli_esc(rc->mod->name) : "?";
}

/* A path (with a slash; a bare name is dlopen's search of the system
 * library directories) must be a regular file: dlopen of a FIFO blocks in
 * open(2) where SIGINT and SIGTERM cannot end it.  Opened O_NONBLOCK to
 * look, so a FIFO does not block here either.  0, or 2 after one line. */
static int check_regular(const struct vfgx_config *cfg, const char *path)
{
	struct stat st;
	int fd;

	if (!strchr(path, '/'))
		return 0;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0; /* dlopen says why, as it always has */
	if (fstat(fd, &st)) {
		fprintf(stderr, "vfgx: %s: pipeline.user.library: %s: %s\n",
			cli_esc(cfg->source), cli_esc(path), strerror(errno));
		close(fd);
		return 2;
	}
	close(fd);
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "vfgx: %s: pipeline.user.library: %s is not a regular file (a %s; name the module's .so file)\n",
			cli_esc(cfg->source), cli_esc(path),
			S_ISFIFO(st.st_mode) ? "FIFO" : S_ISDIR(st.st_mode) ? "directory" :
			S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device" :
			S_ISSOCK(st.st_mode) ? "socket" : "special file");
		return 2;
	}
	return 0;
}

/* vfgx_user_module must be data of the struct's size, aligned: a function
 * (or a smaller object) of that name would be read as the struct, past
 * its end and misaligned.  The ELF symbol says which it is. */
static int check_symbol(const struct vfgx_config *cfg, const char *path, const void *sym)
{
	const ElfW(Sym) *es = NULL;
	Dl_info info;

	if (!dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) || !es) {
		fprintf(stderr, "vfgx: %s: pipeline.user.library %s: %s has no ELF symbol entry (define it as const struct vfgx_user_module; see include/vfgx/user.h)\n",
			cli_esc(cfg->source), cli_esc(path), VFGX_USER_MODULE_SYMBOL);
		return 2;
	}
	if (ELF64_ST_TYPE(es->st_info) != STT_OBJECT ||
	    es->st_size < sizeof(struct vfgx_user_module) ||
	    (uintptr_t)sym % _Alignof(struct vfgx_user_module)) {
		fprintf(stderr, "vfgx: %s: pipeline.user.library %s: %s is %s of %zu bytes, not a struct vfgx_user_module (%zu bytes; define it as const struct vfgx_user_module, see include/vfgx/user.h)\n",
			cli_esc(cfg->source), cli_esc(path), VFGX_USER_MODULE_SYMBOL,
			ELF64_ST_TYPE(es->st_info) == STT_FUNC ? "a function" :
			ELF64_ST_TYPE(es->st_info) == STT_OBJECT ? "an object" : "a symbol",
			(size_t)es->st_size, sizeof(struct vfgx_user_module));
		return 2;
	}
	return 0;
}

int run_chunks_load(struct run_chunks *rc, const struct vfgx_config *cfg)
{
	const char *path = cfg->user_library;
	void *sym;
	int ret;

	memset(rc, 0, sizeof(*rc));
	rc->user_arg = cfg->user_arg ? cfg->user_arg : "";
	if ((ret = run_gpu_user_load(&rc->gpu, cfg)))
		return ret;
	if (!path || !path[0])
		return 0;
	if ((ret = check_regular(cfg, path)))
		return ret;
	rc->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!rc->dl) {
		/* dlerror's text quotes the file and its contents' names */
		fprintf(stderr, "vfgx: %s: pipeline.user.library: %s\n",
			cli_esc(cfg->source), cli_esc(dlerror()));
		return 2;
	}
	sym = dlsym(rc->dl, VFGX_USER_MODULE_SYMBOL);
	if (!sym) {
		fprintf(stderr, "vfgx: %s: pipeline.user.library %s defines no %s (see include/vfgx/user.h)\n",
			cli_esc(cfg->source), cli_esc(path), VFGX_USER_MODULE_SYMBOL);
		return 2;
	}
	if ((ret = check_symbol(cfg, path, sym)))
		return ret;
	rc->mod = sym;
	if (rc->mod->abi_version != VFGX_USER_ABI_VERSION) {
		fprintf(stderr, "vfgx: %s: pipeline.user.library %s: module ABI version %u, this vfgx runs version %u (rebuild the module against this include/vfgx/user.h)\n",
			cli_esc(cfg->source), cli_esc(path), rc->mod->abi_version,
			VFGX_USER_ABI_VERSION);
		rc->mod = NULL;
		return 2;
	}
	return 0;
}

static void *consume(void *arg)
{
	struct run_chunks *rc = arg;
	struct vfgx_chunk *c;
	int ret;

	uint32_t held = 0;

	/* chunks the recorder holds: look at their writes every ms */
	while ((ret = vfgx_chunk_get(rc->pl, held ? 1 : 200, &c)) != -ENODATA) {
		uint32_t stream;
		uint64_t index;

		if (ret) {
			held = rc->rec ? run_record_poll(rc->rec) : 0;
			continue; /* -ETIMEDOUT: look again */
		}
		/* which chunk to give back, before user code sees the
		 * descriptor */
		stream = c->stream;
		index = c->index;
		rc->chunks++;
		if (c->flags & VFGX_CHUNK_COMPLETE)
			rc->complete++;
		if (rc->mod && rc->mod->chunk && rc->mod->chunk(rc->state, c))
			rc->user_errors++;
		if (rc->gpu.loaded && !atomic_load(&rc->failed) &&
		    run_gpu_user_chunk(&rc->gpu, c)) {
			rc->user_errors++;
			atomic_store(&rc->failed, true);
		}
		/* the user code saw the chunk; then it is recorded as it
		 * is now, then given back */
		if (rc->rec && run_record_chunk(rc->rec, c)) {
			held = run_record_poll(rc->rec);
			continue; /* the recorder gives it back once written */
		}
		vfgx_chunk_put(rc->pl, stream, index);
	}
	return NULL;
}

int run_chunks_start(struct run_chunks *rc, vfgx_ctx *ctx, vfgx_pipeline *pl)
{
	int ret;

	rc->pl = pl;
	if (rc->mod && rc->mod->chunk && !vfgx_chunk_conf(pl)) {
		fprintf(stderr, "vfgx: user module %s has a chunk callback but the pipeline has no chunks (add pipeline.chunks)\n",
			mod_name(rc));
		return 2;
	}
	if (rc->mod && rc->mod->init) {
		errno = 0;
		if (rc->mod->init(rc->user_arg, &rc->state)) {
			fprintf(stderr, "vfgx: user module %s: init failed%s%s\n",
				mod_name(rc),
				errno ? ": " : "", errno ? strerror(errno) : "");
			return 1;
		}
	}
	rc->inited = true;
	if (rc->mod && rc->mod->stage &&
	    (ret = vfgx_pipeline_set_user_stage(pl, rc->mod->stage, rc->state))) {
		fprintf(stderr, "vfgx: user module %s: %s\n",
			mod_name(rc), vfgx_last_error(ctx));
		return 2;
	}
	if (!vfgx_chunk_conf(pl))
		return 0;
	ret = pthread_create(&rc->thread, NULL, consume, rc);
	if (ret) {
		fprintf(stderr, "vfgx: chunk consumer: %s\n", strerror(ret));
		return 1;
	}
	rc->running = true;
	return 0;
}

bool run_chunks_failed(struct run_chunks *rc)
{
	return atomic_load(&rc->failed);
}

void run_chunks_stop(struct run_chunks *rc)
{
	if (rc->running)
		pthread_join(rc->thread, NULL);
	if (rc->running && run_gpu_user_finish(&rc->gpu))
		atomic_store(&rc->failed, true);
	rc->running = false;
	if (rc->inited && rc->mod && rc->mod->fini)
		rc->fini_ret = rc->mod->fini(rc->state);
	rc->inited = false;
}

bool run_chunks_report(const struct run_chunks *rc)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };

	if (rc->pl && vfgx_chunk_stats(rc->pl, &cs) == 0) {
		printf("chunks: %" PRIu64 " handed out (%" PRIu64 " complete, %" PRIu64
		       " closed with %" PRIu64 " slots missing), %" PRIu64 " skipped; records placed %" PRIu64
		       ", late %" PRIu64 ", duplicates %" PRIu64 ", out of range %" PRIu64 "\n",
		       cs.handed_out, cs.complete, cs.closed, cs.missing, cs.skipped,
		       cs.placed, cs.late, cs.duplicates, cs.out_of_range);
		printf("chunks: backpressure %" PRIu64 " waits, %" PRIu64 " records dropped while stopping; %.1f MiB of chunk memory\n",
		       cs.backpressure, cs.backpressure_drops,
		       (double)cs.chunk_bytes / (1 << 20));
	}
	if (rc->mod)
		printf("user module %s: %" PRIu64 " chunks, %" PRIu64 " user errors%s\n",
		       mod_name(rc), rc->chunks, rc->user_errors,
		       rc->fini_ret ? ", fini FAILED" : "");
	if (rc->gpu.loaded)
		printf("user gpu module %s: %" PRIu64 " kernel launches%s%s\n", cli_esc(rc->gpu.path),
		       rc->gpu.launches, rc->gpu.error[0] ? "; FAILED: " : "", cli_esc(rc->gpu.error));
	return rc->fini_ret == 0 && rc->user_errors == 0 && !rc->gpu.error[0];
}

json_object *run_chunks_json(const struct run_chunks *rc)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	json_object *o;

	if (!rc->pl || vfgx_chunk_stats(rc->pl, &cs))
		return NULL;
	o = json_object_new_object();
#define J(f) json_object_object_add(o, #f, json_object_new_uint64(cs.f))
	J(handed_out);
	J(complete);
	J(closed);
	J(missing);
	J(skipped);
	J(placed);
	J(late);
	J(duplicates);
	J(out_of_range);
	J(backpressure);
	J(backpressure_drops);
	J(chunk_bytes);
#undef J
	json_object_object_add(o, "user_errors", json_object_new_uint64(rc->user_errors));
	return o;
}

void run_chunks_close(struct run_chunks *rc)
{
	run_gpu_user_close(&rc->gpu);
	if (rc->dl)
		dlclose(rc->dl);
	memset(rc, 0, sizeof(*rc));
}
