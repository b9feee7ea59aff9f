/* place.c - pipeline.format.user_place: its keys from YAML, and the cpu
 * engine's function loaded from the user's shared object (dlopen, the
 * way pipeline.user.library is), checked to be a function. */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vfgx/core.h>
#include <vfgx/place.h>

#include "core/cfgdoc.h"
#include "core/opts.h"
#include "format/place_priv.h"

#define PLACE_PATH_MAX 4096
#define PLACE_SYMBOL_MAX 256

static int str_ref(const struct vfgx_cfg_node *map, const char *key, size_t max,
		   const char **out)
{
	char *buf = vfgx_cfg_alloc(map, max);

	*out = "";
	if (!buf)
		return -ENOMEM;
	*out = buf;
	return vfgx_cfg_str(map, key, "", buf, max);
}

/* A C identifier: what dlsym and the gpu link look up, and safe to print. */
static bool is_identifier(const char *s)
{
	if (!s || !s[0])
		return false;
	for (const char *c = s; *c; c++)
		if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (c != s && *c >= '0' && *c <= '9')))
			return false;
	return true;
}

int vfgx_place_conf_from_yaml(const struct vfgx_cfg_node *format_map,
			      struct vfgx_place_conf *pc, bool *present)
{
	static const char *const keys[] = { "library", "symbol", "gpu_module", NULL };
	struct vfgx_cfg_node m;
	int ret;

	memset(pc, 0, sizeof(*pc));
	pc->argsz = sizeof(*pc);
	*present = false;
	if (!format_map || !vfgx_cfg_present(format_map) || vfgx_cfg_scalar(format_map) ||
	    vfgx_cfg_child(format_map, "user_place", &m))
		return 0;
	if (vfgx_cfg_scalar(&m))
		return vfgx_cfg_error(&m, "user_place is a map of library, symbol and gpu_module");
	if ((ret = vfgx_cfg_check_keys(&m, keys)) ||
	    (ret = str_ref(&m, "library", PLACE_PATH_MAX, &pc->library)) ||
	    (ret = str_ref(&m, "symbol", PLACE_SYMBOL_MAX, &pc->symbol)) ||
	    (ret = str_ref(&m, "gpu_module", PLACE_PATH_MAX, &pc->gpu_module)))
		return ret;
	if (!pc->symbol[0])
		return vfgx_cfg_error(&m, "symbol: required (the placement function's name)");
	if (!is_identifier(pc->symbol))
		return vfgx_cfg_error(&m, "symbol: not a C identifier (the placement function's name)");
	if (!pc->library[0] && !pc->gpu_module[0])
		return vfgx_cfg_error(&m, "library or gpu_module: required (the shared object for the cpu engine, the relocatable device code for the gpu engine)");
	*present = true;
	return 0;
}

/* A path must be a regular file: dlopen of a FIFO would block in open(2)
 * (user_cpu.c's rule for pipeline.user.library). */
static int check_regular(vfgx_ctx *ctx, const char *path)
{
	char esc[512];
	struct stat st;

	if (!strchr(path, '/') || stat(path, &st))
		return 0; /* dlopen says why */
	if (!S_ISREG(st.st_mode)) {
		vfgx_escape(esc, sizeof(esc), path);
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place.library: %s is not a regular file (name the function's .so file)",
			esc);
	}
	return 0;
}

int vfgx_place_load(vfgx_ctx *ctx, const struct vfgx_place_conf *pc, void **dl,
		    vfgx_place_fn **fn)
{
	const ElfW(Sym) *es = NULL;
	char lib[512], why[1024];
	Dl_info info;
	void *h, *sym;
	int ret;

	*dl = NULL;
	*fn = pc->fn;
	if (pc->fn)
		return 0;
	if (!is_identifier(pc->symbol))
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place.symbol: not a C identifier (the placement function's name)");
	if (!pc->library || !pc->library[0])
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place: the cpu engine needs library (a shared object with %s), or pipeline.device: gpu",
			pc->symbol ? pc->symbol : "the function");
	if ((ret = check_regular(ctx, pc->library)))
		return ret;
	/* the path and dlerror's text (which quotes the file's contents) are
	 * printed escaped: neither can forge a line */
	vfgx_escape(lib, sizeof(lib), pc->library);
	h = dlopen(pc->library, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		vfgx_escape(why, sizeof(why), dlerror());
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format.user_place.library: %s", why);
	}
	sym = dlsym(h, pc->symbol);
	if (!sym) {
		dlclose(h);
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place: %s defines no %s (define it with VFGX_PLACE_FUNC, see include/vfgx/place.h)",
			lib, pc->symbol);
	}
	/* a function, not data of that name */
	if (dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) && es &&
	    ELF64_ST_TYPE(es->st_info) != STT_FUNC) {
		dlclose(h);
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place: %s in %s is not a function (a vfgx_place_fn, see include/vfgx/place.h)",
			pc->symbol, lib);
	}
	*dl = h;
	*fn = (vfgx_place_fn *)sym;
	return 0;
}

void vfgx_place_unload(void *dl)
{
	if (dl)
		dlclose(dl);
}
