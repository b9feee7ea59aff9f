/* cfgnode.c - typed access to a libyaml document with precise errors:
 * every failure names file:line:col, the key path, and what is allowed. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfgdoc.h"
#include "opts.h"
#include "numparse.h"

static yaml_node_t *node_get(const struct vfgx_cfg_node *n)
{
	if (!n || !n->doc || n->index <= 0)
		return NULL;
	return yaml_document_get_node((yaml_document_t *)&n->doc->doc,
				      n->index);
}

bool vfgx_cfg_present(const struct vfgx_cfg_node *n)
{
	return node_get(n) != NULL;
}

/* A node's key path; "" for the top and for nodes built by hand. */
static const char *pathof(const struct vfgx_cfg_node *n)
{
	return n && n->path ? n->path : "";
}

/* A key path in memory of the document (a node outlives this call). */
static const char *path_make(const struct vfgx_cfg_node *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *path_make(const struct vfgx_cfg_node *n, const char *fmt, ...)
{
	char buf[VFGX_PATH_MAX];
	va_list ap;
	char *p;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	p = vfgx_cfg_alloc(n, strlen(buf) + 1);
	if (!p)
		return ""; /* no document (an absent node) or no memory */
	memcpy(p, buf, strlen(buf) + 1);
	return p;
}

static int node_verror(const struct vfgx_cfg_doc *doc, const yaml_node_t *yn,
		       const char *path, const char *fmt, va_list ap)
{
	char msg[384];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!doc)
		return -EINVAL;
	if (yn)
		return vfgx_set_error(doc->ctx, -EINVAL, "%s:%zu:%zu: %s: %s",
				      doc->name, yn->start_mark.line + 1,
				      yn->start_mark.column + 1,
				      path[0] ? path : "(top)", msg);
	return vfgx_set_error(doc->ctx, -EINVAL, "%s: %s: %s", doc->name,
			      path[0] ? path : "(top)", msg);
}

const char *vfgx_cfg_where(const struct vfgx_cfg_node *n)
{
	const yaml_node_t *yn = node_get(n);

	if (!yn)
		return "";
	return path_make(n, "%s:%zu:%zu: %s", n->doc->name,
			 yn->start_mark.line + 1, yn->start_mark.column + 1,
			 pathof(n)[0] ? pathof(n) : "(top)");
}

int vfgx_cfg_error(const struct vfgx_cfg_node *n, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = node_verror(n->doc, node_get(n), pathof(n), fmt, ap);
	va_end(ap);
	return ret;
}

/* Error on a node that has no vfgx_cfg_node of its own (a map key). */
static int yerror(const struct vfgx_cfg_node *parent, const yaml_node_t *yn,
		  const char *key, const char *fmt, ...)
{
	char path[VFGX_PATH_MAX];
	va_list ap;
	int ret;

	snprintf(path, sizeof(path), "%s%s%s", pathof(parent),
		 pathof(parent)[0] ? "." : "", key);
	va_start(ap, fmt);
	ret = node_verror(parent->doc, yn, path, fmt, ap);
	va_end(ap);
	return ret;
}

static const char *scalar_of(const yaml_node_t *yn)
{
	if (!yn || yn->type != YAML_SCALAR_NODE)
		return NULL;
	return (const char *)yn->data.scalar.value;
}

const char *vfgx_cfg_scalar(const struct vfgx_cfg_node *n)
{
	return scalar_of(node_get(n));
}

static int expect_map(const struct vfgx_cfg_node *map, yaml_node_t **out)
{
	yaml_node_t *yn = node_get(map);

	*out = yn;
	if (yn && yn->type != YAML_MAPPING_NODE)
		return vfgx_cfg_error(map, "must be a mapping of keys");
	return 0;
}

/* Finds key in a mapping; *val NULL when absent. */
static int map_lookup(const struct vfgx_cfg_node *map, const char *key,
		      yaml_node_t **val)
{
	yaml_node_t *yn;
	int ret = expect_map(map, &yn);

	*val = NULL;
	if (ret || !yn)
		return ret;
	for (yaml_node_pair_t *p = yn->data.mapping.pairs.start;
	     p < yn->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(
			(yaml_document_t *)&map->doc->doc, p->key);
		const char *ks = scalar_of(k);

		if (ks && strcmp(ks, key) == 0) {
			*val = yaml_document_get_node(
				(yaml_document_t *)&map->doc->doc, p->value);
			return 0;
		}
	}
	return 0;
}

int vfgx_cfg_check_keys(const struct vfgx_cfg_node *map,
			const char *const *allowed)
{
	yaml_node_t *yn;
	int ret = expect_map(map, &yn);

	if (ret || !yn)
		return ret;
	for (yaml_node_pair_t *p = yn->data.mapping.pairs.start;
	     p < yn->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(
			(yaml_document_t *)&map->doc->doc, p->key);
		const char *ks = scalar_of(k);
		char list[256] = "";
		bool ok = false;

		if (!ks)
			return yerror(map, k, "?", "keys must be plain strings");
		for (const char *const *a = allowed; *a; a++) {
			if (strcmp(*a, ks) == 0)
				ok = true;
			if (strlen(list) + strlen(*a) + 3 < sizeof(list)) {
				if (list[0])
					strcat(list, ", ");
				strcat(list, *a);
			}
		}
		if (!ok)
			return yerror(map, k, ks, "unknown key (allowed: %s)",
				      list);
		for (yaml_node_pair_t *q = yn->data.mapping.pairs.start; q < p;
		     q++) {
			const char *qs = scalar_of(yaml_document_get_node(
				(yaml_document_t *)&map->doc->doc, q->key));

			if (qs && strcmp(qs, ks) == 0)
				return yerror(map, k, ks,
					      "duplicate key (remove one)");
		}
	}
	return 0;
}

int vfgx_cfg_child(const struct vfgx_cfg_node *map, const char *key,
		   struct vfgx_cfg_node *out)
{
	yaml_node_t *val;
	int ret = map_lookup(map, key, &val);

	memset(out, 0, sizeof(*out));
	out->doc = map ? map->doc : NULL;
	out->path = path_make(out, "%s%s%s", pathof(map),
			      pathof(map)[0] ? "." : "", key);
	if (ret)
		return ret;
	if (!val)
		return -ENOENT;
	out->index = (int)(val - map->doc->doc.nodes.start) + 1;
	return 0;
}

/* The scalar for key, or NULL when absent; error when not a scalar. */
static int get_scalar(const struct vfgx_cfg_node *map, const char *key,
		      const char **s, yaml_node_t **yn)
{
	int ret = map_lookup(map, key, yn);

	*s = NULL;
	if (ret || !*yn)
		return ret;
	*s = scalar_of(*yn);
	if (!*s)
		return yerror(map, *yn, key, "must be a single value");
	return 0;
}

int vfgx_cfg_u64(const struct vfgx_cfg_node *map, const char *key,
		 uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
	char err[VFGX_NUM_ERR_MAX];
	const char *s;
	yaml_node_t *yn;
	int ret = get_scalar(map, key, &s, &yn);

	*out = def;
	if (ret || !s)
		return ret;
	if (vfgx_num_u64(s, min, max, 0, out, err, sizeof(err)))
		return yerror(map, yn, key, "%s", err);
	return 0;
}

int vfgx_cfg_u32(const struct vfgx_cfg_node *map, const char *key,
		 uint32_t def, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int ret = vfgx_cfg_u64(map, key, def, min, max, &v);

	*out = (uint32_t)v;
	return ret;
}

int vfgx_cfg_double(const struct vfgx_cfg_node *map, const char *key,
		    double def, double min, double max, double *out)
{
	char err[VFGX_NUM_ERR_MAX];
	const char *s;
	yaml_node_t *yn;
	int ret = get_scalar(map, key, &s, &yn);

	*out = def;
	if (ret || !s)
		return ret;
	if (vfgx_num_double(s, min, max, out, err, sizeof(err)))
		return yerror(map, yn, key, "%s", err);
	return 0;
}

int vfgx_cfg_item_u32(const struct vfgx_cfg_node *item, uint32_t min,
		      uint32_t max, uint32_t *out)
{
	char err[VFGX_NUM_ERR_MAX];
	const char *s = vfgx_cfg_scalar(item);
	uint64_t v;

	if (!s)
		return vfgx_cfg_error(item, "must be a single value (a number %u..%u)",
				      min, max);
	if (vfgx_num_u64(s, min, max, 0, &v, err, sizeof(err)))
		return vfgx_cfg_error(item, "%s", err);
	*out = (uint32_t)v;
	return 0;
}

int vfgx_cfg_bool(const struct vfgx_cfg_node *map, const char *key, bool def,
		  bool *out)
{
	static const char *const t[] = { "true", "yes", "on", "1" };
	static const char *const f[] = { "false", "no", "off", "0" };
	const char *s;
	yaml_node_t *yn;
	int ret = get_scalar(map, key, &s, &yn);

	*out = def;
	if (ret || !s)
		return ret;
	for (int i = 0; i < 4; i++) {
		if (strcasecmp(s, t[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, f[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return yerror(map, yn, key, "'%s' is not a boolean (use true or false)",
		      s);
}

int vfgx_cfg_str(const struct vfgx_cfg_node *map, const char *key,
		 const char *def, char *buf, size_t len)
{
	const char *s;
	yaml_node_t *yn;
	int ret = get_scalar(map, key, &s, &yn);

	if (!s)
		s = def ? def : "";
	if (strlen(s) >= len) {
		buf[0] = '\0';
		return yerror(map, yn, key, "value is too long (at most %zu characters)",
			      len - 1);
	}
	memcpy(buf, s, strlen(s) + 1);
	return ret;
}

int vfgx_cfg_enum(const struct vfgx_cfg_node *map, const char *key,
		  const char *const *names, int def, int *out)
{
	const char *s;
	yaml_node_t *yn;
	char list[256] = "";
	int ret = get_scalar(map, key, &s, &yn);

	*out = def;
	if (ret || !s)
		return ret;
	for (int i = 0; names[i]; i++) {
		if (strcmp(names[i], s) == 0) {
			*out = i;
			return 0;
		}
		if (strlen(list) + strlen(names[i]) + 3 < sizeof(list)) {
			if (list[0])
				strcat(list, ", ");
			strcat(list, names[i]);
		}
	}
	return yerror(map, yn, key, "'%s' is not allowed (use one of: %s)", s,
		      list);
}

int vfgx_cfg_seq_len(const struct vfgx_cfg_node *seq)
{
	yaml_node_t *yn = node_get(seq);

	if (!yn)
		return 0;
	if (yn->type != YAML_SEQUENCE_NODE)
		return vfgx_cfg_error(seq, "must be a list");
	return (int)(yn->data.sequence.items.top -
		     yn->data.sequence.items.start);
}

int vfgx_cfg_seq_item(const struct vfgx_cfg_node *seq, int i,
		      struct vfgx_cfg_node *out)
{
	yaml_node_t *yn = node_get(seq);
	int n = vfgx_cfg_seq_len(seq);

	if (n < 0)
		return n;
	if (i < 0 || i >= n)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->doc = seq->doc;
	out->index = yn->data.sequence.items.start[i];
	out->path = path_make(out, "%s[%d]", pathof(seq), i);
	return 0;
}

/* --- memory for typed options read from the document -------------------- */
struct cfg_alloc {
	struct cfg_alloc *next;
	max_align_t data[];
};

void *vfgx_cfg_alloc(const struct vfgx_cfg_node *n, size_t size)
{
	/* the document is const to readers; its allocation list is not part
	 * of what they read */
	struct vfgx_cfg_doc *doc = (struct vfgx_cfg_doc *)n->doc;
	struct cfg_alloc *a;

	if (!doc || size > SIZE_MAX - sizeof(*a) ||
	    !(a = calloc(1, sizeof(*a) + size)))
		return NULL;
	a->next = doc->allocs;
	doc->allocs = a;
	return a->data;
}

int vfgx_cfg_list_alloc(const struct vfgx_cfg_node *map, const char *key,
			int max, const char *what, size_t elem,
			struct vfgx_cfg_node *seq, void **out)
{
	int n;

	*out = NULL;
	if (vfgx_cfg_child(map, key, seq) != 0)
		return 0;
	n = vfgx_cfg_seq_len(seq);
	if (n <= 0)
		return n;
	if (n > max)
		return vfgx_cfg_error(seq, "%d items; at most %d %s", n, max, what);
	if (!(*out = vfgx_cfg_alloc(seq, (size_t)n * elem)))
		return -ENOMEM;
	return n;
}

void vfgx_cfg_doc_free_allocs(struct vfgx_cfg_doc *doc)
{
	while (doc->allocs) {
		struct cfg_alloc *a = doc->allocs;

		doc->allocs = a->next;
		free(a);
	}
}
