/* config.c - the core of config load: a YAML document read within its
 * limits (size, depth, values) with file:line:col syntax errors, the
 * generic section reader a program uses (vfgx_config_section) and struct
 * vfgx_config's lookup and teardown.  The loader that knows every section
 * sits above the layers it reads (src/session/config_load.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <vfgx/config.h>

#include "cfgdoc.h"
#include "opts.h"

/* Where the parser stopped: its mark, or for reader errors (bad UTF-8, a
 * NUL byte), which carry only a byte offset, the line and column of it.
 */
static void error_position(const yaml_parser_t *parser, const char *yaml,
			   size_t len, size_t *line, size_t *col)
{
	size_t off = parser->problem_offset, start = 0;

	*line = parser->problem_mark.line + 1;
	*col = parser->problem_mark.column + 1;
	if (parser->error != YAML_READER_ERROR)
		return;
	*line = 1;
	for (size_t i = 0; i < off && i < len; i++)
		if (yaml[i] == '\n') {
			(*line)++;
			start = i + 1;
		}
	*col = off - start + 1;
}

static int syntax_error(vfgx_ctx *ctx, const yaml_parser_t *parser,
			const char *yaml, size_t len, const char *name)
{
	size_t line, col;

	error_position(parser, yaml, len, &line, &col);
	if (parser->error == YAML_READER_ERROR)
		return vfgx_set_error(ctx, -EINVAL, "%s:%zu:%zu: YAML: %s (byte %zu)",
				      name, line, col,
				      parser->problem ? parser->problem : "unreadable input",
				      parser->problem_offset);
	return vfgx_set_error(ctx, -EINVAL, "%s:%zu:%zu: YAML syntax: %s%s%s",
			      name, line, col,
			      parser->problem ? parser->problem : "error",
			      parser->context ? " " : "",
			      parser->context ? parser->context : "");
}

/* One pass over the parser's events before the document is built: libyaml
 * takes time quadratic in flow nesting and about a hundred bytes per node,
 * so depth and node count are refused here, where stopping is cheap.
 */
static int prescan(vfgx_ctx *ctx, const char *yaml, size_t len,
		   const char *name)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	size_t depth = 0, nodes = 0;
	int ret = 0;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	for (bool done = false; !done && !ret;) {
		if (!yaml_parser_parse(&parser, &ev)) {
			ret = syntax_error(ctx, &parser, yaml, len, name);
			break;
		}
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > VFGX_CONFIG_MAX_DEPTH)
				ret = vfgx_set_error(ctx, -EINVAL, "%s:%zu:%zu: nested deeper than %d levels",
						     name, ev.start_mark.line + 1,
						     ev.start_mark.column + 1,
						     VFGX_CONFIG_MAX_DEPTH);
			/* a collection is a node too */
			__attribute__((fallthrough));
		case YAML_SCALAR_EVENT:
		case YAML_ALIAS_EVENT:
			if (!ret && ++nodes > VFGX_CONFIG_MAX_NODES)
				ret = vfgx_set_error(ctx, -EINVAL, "%s:%zu:%zu: more than %d values in one config",
						     name, ev.start_mark.line + 1,
						     ev.start_mark.column + 1,
						     VFGX_CONFIG_MAX_NODES);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return ret;
}

int vfgx_cfg_doc_load(vfgx_ctx *ctx, const char *yaml, size_t len,
		      const char *name, struct vfgx_cfg_doc **out)
{
	struct vfgx_cfg_doc *doc;
	yaml_parser_t parser;
	int ret;

	*out = NULL;
	if (len > VFGX_CONFIG_MAX_BYTES)
		return vfgx_set_error(ctx, -EFBIG, "%s: config of %zu bytes; at most %d",
				      name, len, VFGX_CONFIG_MAX_BYTES);
	if ((ret = prescan(ctx, yaml, len, name)))
		return ret;
	if (!(doc = calloc(1, sizeof(*doc))))
		return -ENOMEM;
	snprintf(doc->name, sizeof(doc->name), "%s", name);
	doc->ctx = ctx;
	if (!yaml_parser_initialize(&parser)) {
		free(doc);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &doc->doc)) {
		ret = syntax_error(ctx, &parser, yaml, len, name);
		yaml_parser_delete(&parser);
		free(doc);
		return ret;
	}
	yaml_parser_delete(&parser);
	*out = doc;
	return 0;
}

void vfgx_cfg_doc_destroy(struct vfgx_cfg_doc *doc)
{
	if (!doc)
		return;
	vfgx_cfg_doc_free_allocs(doc);
	yaml_document_delete(&doc->doc);
	free(doc);
}

int vfgx_cfg_read_file(vfgx_ctx *ctx, const char *path, char **out, size_t *out_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, len = 0;
	struct stat st;
	int ret;

	*out = NULL;
	*out_len = 0;
	if (!f)
		return vfgx_set_error(ctx, -errno, "%s: cannot open config: %s",
				      path, strerror(errno));
	/* fopen opens a directory; its read fails with EISDIR */
	if (!fstat(fileno(f), &st) && S_ISDIR(st.st_mode)) {
		fclose(f);
		return vfgx_set_error(ctx, -EISDIR, "%s: cannot open config: %s",
				      path, strerror(EISDIR));
	}
	for (;;) {
		if (len + 4096 > cap) {
			char *nb;

			cap = cap ? cap * 2 : 8192;
			if (cap > 2 * (size_t)VFGX_CONFIG_MAX_BYTES) {
				fclose(f);
				free(buf);
				return vfgx_set_error(ctx, -EFBIG, "%s: config larger than %d bytes",
						      path, VFGX_CONFIG_MAX_BYTES);
			}
			nb = realloc(buf, cap);
			if (!nb) {
				fclose(f);
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		size_t got = fread(buf + len, 1, cap - len, f);

		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		int err = errno ? errno : EIO;

		ret = vfgx_set_error(ctx, -err, "%s: cannot read config: %s", path,
				     strerror(err));
		fclose(f);
		free(buf);
		return ret;
	}
	fclose(f);
	*out = buf;
	*out_len = len;
	return 0;
}

void vfgx_config_destroy(struct vfgx_config *cfg)
{
	if (!cfg)
		return;
	vfgx_cfg_doc_destroy(cfg->doc);
	for (uint16_t i = 0; cfg->ifaces && i < VFGX_MAX_IFACES; i++) {
		if (!cfg->ifaces[i].rx_queues)
			break;
		free(cfg->ifaces[i].rx_queues);
		free(cfg->ifaces[i].tx_queues);
	}
	free(cfg->ifaces);
	free(cfg->regions);
	free(cfg->port_ranges);
	free((char *)cfg->source);
	free(cfg);
}

int vfgx_config_section(const struct vfgx_config *cfg, const char *name,
			const struct vfgx_opt *tab, size_t n, void *out,
			size_t size)
{
	struct vfgx_cfg_node root = { .doc = cfg->doc, .index = 1 }, sec = { 0 };
	int ret;

	memset(out, 0, size);
	if (n == 1 && tab[0].type == VFGX_OPT_LIST && !tab[0].key) {
		/* the section is a list: read it as the list key of the top */
		struct vfgx_opt o = tab[0];

		o.key = name;
		vfgx_opts_default(tab, n, out, 0);
		return vfgx_opts_read_list(&root, &o, out);
	}
	ret = vfgx_cfg_child(&root, name, &sec);
	if (ret && ret != -ENOENT)
		return ret;
	return vfgx_opts_from_yaml(&sec, tab, n, out, 0);
}

const struct vfgx_region_config *
vfgx_config_find_region(const struct vfgx_config *cfg, const char *name)
{
	for (uint16_t i = 0; i < cfg->nb_regions; i++)
		if (strcmp(cfg->regions[i].name, name) == 0)
			return &cfg->regions[i];
	return NULL;
}

