/* user_cpu.c - a session's user code: load the user module of
 * pipeline.user.library (dlopen, vfgx/user.h), run its init, set its
 * per-record stage, and consume every ready chunk on a thread of its own
 * (the program's callback, the module's chunk callback, the CUDA module's
 * kernel, then the recorder, then give it back). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/escape.h"
#include "session_priv.h"

/* A path (with a slash; a bare name is dlopen's search of the system
 * library directories) must be a regular file: dlopen of a FIFO blocks in
 * open(2) where SIGINT and SIGTERM cannot end it.  Opened O_NONBLOCK to
 * look, so a FIFO does not block here either. */
static int check_regular(vfgx_ctx *ctx, const struct vfgx_config *cfg, const char *path)
{
	struct stat st;
	int fd;

	if (!strchr(path, '/'))
		return 0;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0; /* dlopen says why, as it always has */
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return vfgx_set_error(ctx, -EINVAL, "%s: pipeline.user.library: %s: %s",
				      cfg->source, path, strerror(e));
	}
	close(fd);
	if (!S_ISREG(st.st_mode))
		return vfgx_set_error(ctx, -EINVAL,
			"%s: pipeline.user.library: %s is not a regular file (a %s; name the module's .so file)",
			cfg->source, path,
			S_ISFIFO(st.st_mode) ? "FIFO" : S_ISDIR(st.st_mode) ? "directory" :
			S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device" :
			S_ISSOCK(st.st_mode) ? "socket" : "special file");
	return 0;
}

/* vfgx_user_module must be data of the struct's size, aligned: a function
 * (or a smaller object) of that name would be read as the struct, past
 * its end and misaligned.  The ELF symbol says which it is. */
static int check_symbol(vfgx_ctx *ctx, const struct vfgx_config *cfg, const char *path,
			const void *sym)
{
	const ElfW(Sym) *es = NULL;
	Dl_info info;

	if (!dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) || !es)
		return vfgx_set_error(ctx, -EINVAL,
			"%s: pipeline.user.library %s: %s has no ELF symbol entry (define it as const struct vfgx_user_module; see include/vfgx/user.h)",
			cfg->source, path, VFGX_USER_MODULE_SYMBOL);
	if (ELF64_ST_TYPE(es->st_info) != STT_OBJECT ||
	    es->st_size < sizeof(struct vfgx_user_module) ||
	    (uintptr_t)sym % _Alignof(struct vfgx_user_module))
		return vfgx_set_error(ctx, -EINVAL,
			"%s: pipeline.user.library %s: %s is %s of %zu bytes, not a struct vfgx_user_module (%zu bytes; define it as const struct vfgx_user_module, see include/vfgx/user.h)",
			cfg->source, path, VFGX_USER_MODULE_SYMBOL,
			ELF64_ST_TYPE(es->st_info) == STT_FUNC ? "a function" :
			ELF64_ST_TYPE(es->st_info) == STT_OBJECT ? "an object" : "a symbol",
			(size_t)es->st_size, sizeof(struct vfgx_user_module));
	return 0;
}

int session_user_load(struct session_user *u, vfgx_ctx *ctx, const struct vfgx_config *cfg)
{
	const char *path = cfg->user_library;
	void *sym;
	int ret;

	u->ctx = ctx;
	u->user_arg = cfg->user_arg ? cfg->user_arg : "";
	snprintf(u->name, sizeof(u->name), "?");
	if ((ret = session_gpu_user_load(&u->gpu, ctx, cfg)))
		return ret;
	if (!path || !path[0])
		return 0;
	if ((ret = check_regular(ctx, cfg, path)))
		return ret;
	u->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!u->dl) /* dlerror's text quotes the file and its contents' names */
		return vfgx_set_error(ctx, -EINVAL, "%s: pipeline.user.library: %s",
				      cfg->source, dlerror());
	sym = dlsym(u->dl, VFGX_USER_MODULE_SYMBOL);
	if (!sym)
		return vfgx_set_error(ctx, -EINVAL,
			"%s: pipeline.user.library %s defines no %s (see include/vfgx/user.h)",
			cfg->source, path, VFGX_USER_MODULE_SYMBOL);
	if ((ret = check_symbol(ctx, cfg, path, sym)))
		return ret;
	u->mod = sym;
	if (u->mod->abi_version != VFGX_USER_ABI_VERSION) {
		ret = vfgx_set_error(ctx, -EINVAL,
			"%s: pipeline.user.library %s: module ABI version %u, this vfgx runs version %u (rebuild the module against this include/vfgx/user.h)",
			cfg->source, path, u->mod->abi_version, VFGX_USER_ABI_VERSION);
		u->mod = NULL;
		return ret;
	}
	/* the module's name as text that is safe to print (it is the
	 * module's) */
	if (u->mod->name)
		vfgx_escape(u->name, sizeof(u->name), u->mod->name);
	return 0;
}

static void *consume(void *arg)
{
	struct session_user *u = arg;
	struct vfgx_chunk *c;
	uint32_t held = 0;
	int ret;

	/* chunks the recorder holds: look at their writes every ms */
	while ((ret = vfgx_chunk_get(u->pl, held ? 1 : 200, &c)) != -ENODATA) {
		uint32_t stream;
		uint64_t index;

		if (ret) {
			held = u->rec ? session_record_poll(u->rec) : 0;
			continue; /* -ETIMEDOUT: look again */
		}
		/* which chunk to give back, before user code sees the
		 * descriptor */
		stream = c->stream;
		index = c->index;
		u->chunks++;
		if (c->flags & VFGX_CHUNK_COMPLETE)
			u->complete++;
		if (u->on_chunk && u->on_chunk(u->on_chunk_user, c))
			u->user_errors++;
		if (u->mod && u->mod->chunk && u->mod->chunk(u->state, c))
			u->user_errors++;
		if (u->gpu.loaded && !atomic_load(&u->failed) &&
		    session_gpu_user_chunk(&u->gpu, c)) {
			u->user_errors++;
			atomic_store(&u->failed, true);
		}
		/* the user code saw the chunk; then it is recorded as it
		 * is now, then given back */
		if (u->rec && session_record_chunk(u->rec, u->ctx, c)) {
			held = session_record_poll(u->rec);
			continue; /* the recorder gives it back once written */
		}
		vfgx_chunk_put(u->pl, stream, index);
	}
	return NULL;
}

int session_user_start(struct session_user *u, vfgx_pipeline *pl, bool consume_chunks)
{
	vfgx_ctx *ctx = u->ctx;
	int ret;

	u->pl = pl;
	if (u->mod && u->mod->chunk && !vfgx_chunk_conf(pl))
		return vfgx_set_error(ctx, -EINVAL,
			"user module %s has a chunk callback but the pipeline has no chunks (add pipeline.chunks)",
			u->name);
	if (!consume_chunks && ((u->mod && u->mod->chunk) || u->gpu.loaded || u->rec || u->on_chunk))
		return vfgx_set_error(ctx, -EINVAL,
			"session: no_consumer, but user code or the recorder takes chunks (drop no_consumer)");
	if (u->mod && u->mod->init) {
		errno = 0;
		if (u->mod->init(u->user_arg, &u->state)) {
			int e = errno;

			return vfgx_set_error(ctx, -ECANCELED, "user module %s: init failed%s%s",
					      u->name, e ? ": " : "", e ? strerror(e) : "");
		}
	}
	u->inited = true;
	if (u->mod && u->mod->stage &&
	    (ret = vfgx_pipeline_set_user_stage(pl, u->mod->stage, u->state))) {
		char why[256];

		snprintf(why, sizeof(why), "%s", vfgx_last_error(ctx));
		return vfgx_set_error(ctx, -EINVAL, "user module %s: %s", u->name, why);
	}
	if (!vfgx_chunk_conf(pl) || !consume_chunks)
		return 0;
	ret = pthread_create(&u->thread, NULL, consume, u);
	if (ret)
		return vfgx_set_error(ctx, -ret, "chunk consumer: %s", strerror(ret));
	u->running = true;
	return 0;
}

bool session_user_failed(struct session_user *u)
{
	return atomic_load(&u->failed);
}

void session_user_stop(struct session_user *u)
{
	if (u->running)
		pthread_join(u->thread, NULL);
	if (u->running && session_gpu_user_finish(&u->gpu))
		atomic_store(&u->failed, true);
	u->running = false;
	if (u->inited && u->mod && u->mod->fini)
		u->fini_ret = u->mod->fini(u->state);
	u->inited = false;
}

void session_user_close(struct session_user *u)
{
	session_gpu_user_close(&u->gpu);
	if (u->dl)
		dlclose(u->dl);
	u->dl = NULL;
	u->mod = NULL;
}
