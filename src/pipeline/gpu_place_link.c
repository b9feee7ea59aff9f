/* gpu_place_link.c - pipeline.format.user_place on the gpu engine: link,
 * with nvJitLink, the persistent kernel built for it (gpu_proc.cu with
 * VFGX_USER_PLACE_LINK, relocatable; embedded as vfgx_place_kernel_image),
 * the entry it calls (gpu_place_shim.cu's PTX, with the user's symbol put
 * in) and the user's relocatable device code, into one cubin for the GPU
 * at hand.  gpu_proc.cu loads and launches it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvJitLink.h>

#include "gpu_place_link.h"

extern const char vfgx_place_kernel_image[];
extern const unsigned long vfgx_place_kernel_image_len;
extern const char vfgx_place_shim_ptx[];
extern const unsigned long vfgx_place_shim_ptx_len;

#define SHIM_SYMBOL "VFGX_PLACE_SYMBOL_"

static int valid_symbol(const char *s)
{
	if (!s || !s[0] || !strncmp(s, "vfgx_", 5))
		return 0;
	for (const char *c = s; *c; c++)
		if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (c != s && *c >= '0' && *c <= '9')))
			return 0;
	return 1;
}

/* The shim's PTX with every SHIM_SYMBOL replaced by symbol (malloc'd). */
static char *shim_for(const char *symbol)
{
	size_t pl = strlen(SHIM_SYMBOL), sl = strlen(symbol), n = 0;
	const char *p = vfgx_place_shim_ptx, *q;
	char *out, *o;

	for (q = p; (q = strstr(q, SHIM_SYMBOL)); q += pl)
		n++;
	out = malloc(vfgx_place_shim_ptx_len + n * sl + 1);
	if (!out)
		return NULL;
	for (o = out; (q = strstr(p, SHIM_SYMBOL)); p = q + pl) {
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, symbol, sl);
		o += sl;
	}
	strcpy(o, p);
	return out;
}

/* The linker's log, first line, after what. */
static int link_error(nvJitLinkHandle h, nvJitLinkResult r, const char *what,
		      char *err, size_t errlen)
{
	size_t n = 0;
	char *log = NULL, *nl;

	if (h && nvJitLinkGetErrorLogSize(h, &n) == NVJITLINK_SUCCESS && n > 1 &&
	    (log = malloc(n)) && nvJitLinkGetErrorLog(h, log) == NVJITLINK_SUCCESS) {
		if ((nl = strchr(log, '\n')))
			*nl = '\0';
		snprintf(err, errlen, "pipeline.format.user_place: %s: %s", what, log);
	} else {
		snprintf(err, errlen, "pipeline.format.user_place: %s: nvJitLink error %d",
			 what, (int)r);
	}
	free(log);
	return -EINVAL;
}

int vfgx_place_link(const char *module, const char *symbol, int major, int minor,
		    void **cubin, size_t *size, char *err, size_t errlen)
{
	char arch[32], what[512];
	const char *opts[] = { arch };
	nvJitLinkHandle h = NULL;
	nvJitLinkResult r;
	char *shim;
	void *out;
	size_t n = 0;
	int ret;

	*cubin = NULL;
	*size = 0;
	if (!valid_symbol(symbol)) {
		snprintf(err, errlen, "pipeline.format.user_place.symbol '%s': not a C identifier (or a vfgx_ name)",
			 symbol ? symbol : "");
		return -EINVAL;
	}
	if (!module || !module[0]) {
		snprintf(err, errlen, "pipeline.format.user_place: no gpu_module");
		return -EINVAL;
	}
	shim = shim_for(symbol);
	if (!shim)
		return -ENOMEM;
	snprintf(arch, sizeof(arch), "-arch=sm_%d%d", major, minor);
	r = nvJitLinkCreate(&h, 1, opts);
	if (r != NVJITLINK_SUCCESS) {
		free(shim);
		return link_error(NULL, r, arch, err, errlen);
	}
	if ((r = nvJitLinkAddData(h, NVJITLINK_INPUT_FATBIN, vfgx_place_kernel_image,
				  vfgx_place_kernel_image_len, "vfgx persistent kernel"))) {
		ret = link_error(h, r, "the persistent kernel's image", err, errlen);
		goto done;
	}
	if ((r = nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, shim, strlen(shim),
				  "vfgx_user_place_entry"))) {
		ret = link_error(h, r, "the entry calling the function", err, errlen);
		goto done;
	}
	if ((r = nvJitLinkAddFile(h, NVJITLINK_INPUT_ANY, module))) {
		snprintf(what, sizeof(what), "gpu_module %s", module);
		ret = link_error(h, r, what, err, errlen);
		goto done;
	}
	if ((r = nvJitLinkComplete(h))) {
		snprintf(what, sizeof(what), "linking %s from %s for %s", symbol, module,
			 arch + strlen("-arch="));
		ret = link_error(h, r, what, err, errlen);
		goto done;
	}
	if ((r = nvJitLinkGetLinkedCubinSize(h, &n))) {
		ret = link_error(h, r, "the linked image", err, errlen);
		goto done;
	}
	if (!(out = malloc(n))) {
		ret = -ENOMEM;
		goto done;
	}
	if ((r = nvJitLinkGetLinkedCubin(h, out))) {
		free(out);
		ret = link_error(h, r, "the linked image", err, errlen);
		goto done;
	}
	*cubin = out;
	*size = n;
	ret = 0;
done:
	nvJitLinkDestroy(&h);
	free(shim);
	return ret;
}
