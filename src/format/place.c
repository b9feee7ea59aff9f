/* place.c - pipeline.format.user_place: its keys from YAML, and the cpu
 * engine's function loaded from the user's shared object (dlopen, the
 * way pipeline.user.library is), checked to be a function. */
#include <dlfcn.h>
#include <errno.h>
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
	for (const char *c = pc->symbol; *c; c++)
		if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (c != pc->symbol && *c >= '0' && *c <= '9')))
			return vfgx_cfg_error(&m, "symbol '%s': not a C identifier", pc->symbol);
	if (!pc->library[0] && !pc->gpu_module[0])
		return vfgx_cfg_error(&m, "library or gpu_module: required (the shared object for the cpu engine, the relocatable device code for the gpu engine)");
	*present = true;
	return 0;
}

/* A path must be a regular file: dlopen of a FIFO would block in open(2)
 * (user_cpu.c's rule for pipeline.user.library). */
static int check_regular(vfgx_ctx *ctx, const char *path)
{
	struct stat st;

	if (!strchr(path, '/') || stat(path, &st))
		return 0; /* dlopen says why */
	if (!S_ISREG(st.st_mode))
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place.library: %s is not a regular file (name the function's .so file)",
			path);
	return 0;
}

int vfgx_place_load(vfgx_ctx *ctx, const struct vfgx_place_conf *pc, void **dl,
		    vfgx_place_fn **fn)
{
	const ElfW(Sym) *es = NULL;
	Dl_info info;
	void *h, *sym;
	int ret;

	*dl = NULL;
	*fn = pc->fn;
	if (pc->fn)
		return 0;
	if (!pc->library || !pc->library[0])
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place: the cpu engine needs library (a shared object with %s), or pipeline.device: gpu",
			pc->symbol ? pc->symbol : "the function");
	if ((ret = check_regular(ctx, pc->library)))
		return ret;
	h = dlopen(pc->library, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return vfgx_set_error(ctx, -EINVAL, "pipeline.format.user_place.library: %s",
				      dlerror());
	sym = dlsym(h, pc->symbol);
	if (!sym) {
		dlclose(h);
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place: %s defines no %s (define it with VFGX_PLACE_FUNC, see include/vfgx/place.h)",
			pc->library, pc->symbol);
	}
	/* a function, not data of that name */
	if (dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) && es &&
	    ELF64_ST_TYPE(es->st_info) != STT_FUNC) {
		dlclose(h);
		return vfgx_set_error(ctx, -EINVAL,
			"pipeline.format.user_place: %s in %s is not a function (a vfgx_place_fn, see include/vfgx/place.h)",
			pc->symbol, pc->library);
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
