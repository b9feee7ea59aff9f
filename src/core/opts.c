/* opts.c - the table-driven option reader behind every backend's typed
 * options (opts.h): defaults, the YAML adapter and the typed check. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/argsz.h"
#include "core/opts.h"

/* A STRN option's default: names[0], or "". */
static const char *str_default(const struct vfgx_opt *o)
{
	return o->names && o->names[0] ? o->names[0] : "";
}

void vfgx_opts_default(const struct vfgx_opt *tab, size_t n, void *s,
		       size_t size)
{
	if (size) {
		memset(s, 0, size);
		*(uint32_t *)s = (uint32_t)size;
	}
	for (size_t i = 0; i < n; i++) {
		void *f = (char *)s + tab[i].off;

		switch (tab[i].type) {
		case VFGX_OPT_U32:
		case VFGX_OPT_ENUM:
			*(uint32_t *)f = (uint32_t)tab[i].def;
			break;
		case VFGX_OPT_U16:
			*(uint16_t *)f = (uint16_t)tab[i].def;
			break;
		case VFGX_OPT_U64:
			*(uint64_t *)f = (uint64_t)tab[i].def;
			break;
		case VFGX_OPT_DOUBLE:
			*(double *)f = tab[i].def;
			break;
		case VFGX_OPT_BOOL:
			*(bool *)f = tab[i].def != 0;
			break;
		case VFGX_OPT_STR:
			*(const char **)f = NULL;
			break;
		case VFGX_OPT_TRI:
			*(int8_t *)f = (int8_t)tab[i].def;
			break;
		case VFGX_OPT_LIST:
			*(void **)f = NULL;
			*(uint16_t *)((char *)s + tab[i].count_off) = 0;
			break;
		case VFGX_OPT_WHERE:
			*(const char **)f = NULL;
			break;
		case VFGX_OPT_STRN:
			*(const char **)f = str_default(&tab[i]);
			break;
		case VFGX_OPT_BACKEND:
			*(const char **)f = tab[i].key;
			break;
		case VFGX_OPT_SKIP:
			break;
		}
	}
}

/* A U64 option's bounds as integers: exact, where the table's doubles
 * round (2^63 - 1 is 2^63 as a double). */
static uint64_t u64_max(const struct vfgx_opt *o)
{
	if (o->max_u64)
		return o->max_u64;
	return o->max >= 1.8e19 ? UINT64_MAX : (uint64_t)o->max;
}


static int read_one(const struct vfgx_cfg_node *map, const struct vfgx_opt *o,
		    void *f)
{
	struct vfgx_cfg_node c;
	uint32_t v32;
	bool b;
	int e, ret;

	switch (o->type) {
	case VFGX_OPT_U32:
		return vfgx_cfg_u32(map, o->key, (uint32_t)o->def, (uint32_t)o->min,
				    (uint32_t)o->max, f);
	case VFGX_OPT_U16:
		ret = vfgx_cfg_u32(map, o->key, (uint32_t)o->def, (uint32_t)o->min,
				   (uint32_t)o->max, &v32);
		*(uint16_t *)f = (uint16_t)v32;
		return ret;
	case VFGX_OPT_U64:
		return vfgx_cfg_u64(map, o->key, (uint64_t)o->def, (uint64_t)o->min,
				    u64_max(o), f);
	case VFGX_OPT_DOUBLE:
		return vfgx_cfg_double(map, o->key, o->def, o->min, o->max, f);
	case VFGX_OPT_BOOL:
		ret = vfgx_cfg_bool(map, o->key, o->def != 0, &b);
		*(bool *)f = b;
		return ret;
	case VFGX_OPT_ENUM:
		ret = vfgx_cfg_enum(map, o->key, o->names, (int)o->def, &e);
		*(uint32_t *)f = (uint32_t)e;
		return ret;
	case VFGX_OPT_SKIP:
		return 0;
	case VFGX_OPT_WHERE:
		*(const char **)f = vfgx_cfg_where(map);
		return 0;
	case VFGX_OPT_BACKEND:
		*(const char **)f = o->key;
		return 0;
	case VFGX_OPT_LIST:
		return -EINVAL; /* read_list: it needs the whole struct */
	case VFGX_OPT_TRI:
		if (vfgx_cfg_child(map, o->key, &c) == 0) {
			ret = vfgx_cfg_bool(map, o->key, false, &b);
			*(int8_t *)f = b;
			return ret;
		}
		return 0;
	case VFGX_OPT_STRN: {
		/* a copy that lives as long as the document, checked by
		 * vfgx_cfg_str (its "value is too long" error) */
		char *buf = vfgx_cfg_alloc(map, (size_t)o->max);

		*(const char **)f = "";
		if (!buf)
			return vfgx_cfg_error(map, "%s: out of memory", o->key);
		ret = vfgx_cfg_str(map, o->key, str_default(o), buf, (size_t)o->max);
		*(const char **)f = buf;
		return ret;
	}
	case VFGX_OPT_STR:
		if (vfgx_cfg_child(map, o->key, &c) == 0) {
			*(const char **)f = vfgx_cfg_scalar(&c);
			if (!*(const char **)f)
				return vfgx_cfg_error(&c, "must be a string");
		}
		return 0;
	}
	return -EINVAL;
}

/* A list item that is a scalar: the element's entries have no key and
 * read the item itself. */
static int read_item(const struct vfgx_cfg_node *item,
		     const struct vfgx_opt *tab, size_t n, void *e)
{
	for (size_t i = 0; i < n; i++) {
		void *f = (char *)e + tab[i].off;
		uint32_t v;
		int ret;

		switch (tab[i].type) {
		case VFGX_OPT_U32:
		case VFGX_OPT_U16:
			if ((ret = vfgx_cfg_item_u32(item, (uint32_t)tab[i].min,
						     (uint32_t)tab[i].max, &v)))
				return ret;
			if (tab[i].type == VFGX_OPT_U32)
				*(uint32_t *)f = v;
			else
				*(uint16_t *)f = (uint16_t)v;
			break;
		case VFGX_OPT_STR:
			if (!(*(const char **)f = vfgx_cfg_scalar(item)))
				return vfgx_cfg_error(item, "must be a string");
			break;
		case VFGX_OPT_WHERE:
			*(const char **)f = vfgx_cfg_where(item);
			break;
		default:
			return vfgx_cfg_error(item, "a list of this kind of value is not readable");
		}
	}
	return 0;
}

int vfgx_opts_read_list(const struct vfgx_cfg_node *map,
			const struct vfgx_opt *o, void *s)
{
	struct vfgx_cfg_node seq, item;
	void *arr;
	int n = vfgx_cfg_list_alloc(map, o->key, (int)o->max, o->key,
				    o->elem_size, &seq, &arr);

	if (n < 0)
		return n == -ENOMEM ? vfgx_cfg_error(map, "%s: out of memory", o->key) : n;
	*(void **)((char *)s + o->off) = arr;
	*(uint16_t *)((char *)s + o->count_off) = (uint16_t)n;
	for (int i = 0; i < n; i++) {
		void *e = (char *)arr + (size_t)i * o->elem_size;
		int ret;

		vfgx_cfg_seq_item(&seq, i, &item);
		ret = o->nb_elem && !o->elem[0].key ?
			      read_item(&item, o->elem, o->nb_elem, e) :
			      vfgx_opts_from_yaml(&item, o->elem, o->nb_elem, e, 0);
		if (ret)
			return ret;
	}
	return 0;
}

int vfgx_opts_from_yaml(const struct vfgx_cfg_node *map,
			const struct vfgx_opt *tab, size_t n, void *s,
			size_t size)
{
	const char *keys[64];
	size_t k = 0;
	int ret;

	if (n >= 64)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (tab[i].type != VFGX_OPT_WHERE && tab[i].type != VFGX_OPT_BACKEND)
			keys[k++] = tab[i].key;
	keys[k] = NULL;
	vfgx_opts_default(tab, n, s, size);
	if ((ret = vfgx_cfg_check_keys(map, keys)))
		return ret;
	for (size_t i = 0; i < n; i++)
		if ((ret = tab[i].type == VFGX_OPT_LIST ?
				   vfgx_opts_read_list(map, &tab[i], s) :
				   read_one(map, &tab[i], (char *)s + tab[i].off)))
			return ret;
	return 0;
}

/* Backend options: the header (at least hdr.argsz bytes of s) names the
 * backend they are for; 0 when it names tab's. */
static int backend_named(vfgx_ctx *ctx, const char *name,
			 const struct vfgx_opt *tab, size_t n, const void *s)
{
	for (size_t i = 0; i < n; i++) {
		const char *b = NULL;

		if (tab[i].type != VFGX_OPT_BACKEND)
			continue;
		if (*(const uint32_t *)s >= tab[i].off + sizeof(b))
			b = *(const char *const *)((const char *)s + tab[i].off);
		if (!b || strcmp(b, tab[i].key))
			return vfgx_set_error(ctx, -EINVAL,
					      "%s: backend_opts are not struct vfgx_%s_opts (their header names backend '%s'; fill them with vfgx_%s_opts_default)",
					      name, tab[i].key, b ? b : "(none)",
					      tab[i].key);
	}
	return 0;
}

int vfgx_opts_from_user(vfgx_ctx *ctx, const char *name, const char *backend,
			const struct vfgx_opt *tab, size_t n, const void *user,
			void *out, size_t size)
{
	int ret;

	/* another backend's struct (of another size) is named as what it is
	 * before its size is judged; one too short for the header is judged
	 * by its size */
	if (*(const uint32_t *)user >= sizeof(struct vfgx_backend_opts) &&
	    (ret = backend_named(ctx, name, tab, n, user)))
		return ret;
	if (vfgx_argsz_copy(out, size, user, size))
		return vfgx_set_error(ctx, -EINVAL,
				      "%s: struct vfgx_%s_opts argsz %" PRIu32 " not understood by libvfgx %s (use vfgx_%s_opts_default)",
				      name, backend, *(const uint32_t *)user,
				      VFGX_VERSION_STRING, backend);
	if ((ret = backend_named(ctx, name, tab, n, out)))
		return ret;
	return vfgx_opts_check(ctx, name, backend, tab, n, out);
}

int vfgx_opts_get(vfgx_ctx *ctx, const char *name, const char *backend,
		  const struct vfgx_opt *tab, size_t n, const void *user,
		  void *out, size_t size)
{
	if (user)
		return vfgx_opts_from_user(ctx, name, backend, tab, n, user, out, size);
	vfgx_opts_default(tab, n, out, size);
	return 0;
}

int vfgx_opts_check(vfgx_ctx *ctx, const char *name, const char *backend,
		    const struct vfgx_opt *tab, size_t n, const void *out)
{
	for (size_t i = 0; i < n; i++) {
		const void *f = (const char *)out + tab[i].off;
		double v;

		switch (tab[i].type) {
		case VFGX_OPT_U32:
			v = *(const uint32_t *)f;
			break;
		case VFGX_OPT_U16:
			v = *(const uint16_t *)f;
			break;
		case VFGX_OPT_U64: {
			uint64_t u = *(const uint64_t *)f;

			if (u < (uint64_t)tab[i].min || u > u64_max(&tab[i]))
				return vfgx_set_error(ctx, -EINVAL, "%s: %s options: %s: %" PRIu64 " is out of range (must be %" PRIu64 "..%" PRIu64 ")",
						      name, backend, tab[i].key, u,
						      (uint64_t)tab[i].min,
						      u64_max(&tab[i]));
			continue;
		}
		case VFGX_OPT_DOUBLE:
			v = *(const double *)f;
			break;
		case VFGX_OPT_TRI:
			v = *(const int8_t *)f;
			break;
		case VFGX_OPT_STRN: {
			const char *str = *(const char *const *)f;

			if (!str || strlen(str) >= (size_t)tab[i].max)
				return vfgx_set_error(ctx, -EINVAL, "%s: %s options: %s: %s (at most %zu characters)",
						      name, backend, tab[i].key,
						      str ? "is too long" : "is NULL",
						      (size_t)tab[i].max - 1);
			continue;
		}
		case VFGX_OPT_ENUM: {
			uint32_t k = 0;

			while (tab[i].names[k])
				k++;
			if (*(const uint32_t *)f >= k)
				return vfgx_set_error(ctx, -EINVAL, "%s: %s options: %s: %" PRIu32 " is not one of the %" PRIu32 " values",
						      name, backend, tab[i].key,
						      *(const uint32_t *)f, k);
			continue;
		}
		default:
			continue;
		}
		if (!(v >= tab[i].min && v <= tab[i].max))
			return vfgx_set_error(ctx, -EINVAL, "%s: %s options: %s: %g is out of range (must be %g..%g)",
					      name, backend, tab[i].key, v,
					      tab[i].min, tab[i].max);
	}
	return 0;
}
