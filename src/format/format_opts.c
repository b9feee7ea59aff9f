/* format_opts.c - pipeline.format from YAML: a profile, then any key of
 * the description over it (docs/formats.md), checked with file:line:col
 * errors; and a YAML file read on its own (vfgx format decode --config). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/core.h>
#include <vfgx/format.h>

#include "core/cfgdoc.h"
#include "core/numparse.h"
#include "format/format_opts.h"
#include "format/format_priv.h"

static const char *const fmt_keys[] = {
	"profile", "layout", "header_len", "stream", "seq", "seq_major",
	"seq_major_mult", "frames_per_second", "timestamp", "ts_frac", "end",
	"length", "match", "seq_bits", "seq_max_dropout", "seq_max_misorder",
	"streams", "stream_ids", "place", "packets", "payload_bytes",
	"chunk_bytes", "width", "height", "stride", "pgroup_bytes",
	"pgroup_pixels", "user_place", NULL
};
static const char *const layouts[] = { "fixed", "rtp", "rfc4175", "vita49", "spead", NULL };
static const char *const places[] = { "slot", "offset", "lines", "user", NULL };
static const char *const endians[] = { "big", "little", NULL };

/* A whole number, decimal or 0x hex, from a scalar node. */
static int node_u64(const struct vfgx_cfg_node *n, uint64_t max, uint64_t *out)
{
	char err[VFGX_NUM_ERR_MAX];
	const char *s = vfgx_cfg_scalar(n);

	if (!s)
		return vfgx_cfg_error(n, "must be a single value");
	if (vfgx_num_u64(s, 0, max, VFGX_NUM_HEX, out, err, sizeof(err)))
		return vfgx_cfg_error(n, "%s", err);
	return 0;
}

static int map_u64_hex(const struct vfgx_cfg_node *map, const char *key,
		       uint64_t max, uint64_t *out)
{
	struct vfgx_cfg_node it;

	if (vfgx_cfg_child(map, key, &it))
		return 0;
	return node_u64(&it, max, out);
}

/* A field's keys in map n: offset, size (1..8), endian (big|little),
 * shift and bits, or bit (one bit: size 1 unless given, shift bit, bits
 * 1); fl holds the defaults (a profile's field being changed). */
static int field_from_map(const struct vfgx_cfg_node *n, struct vfgx_fmt_field *fl)
{
	uint32_t off, size, shift, bits, bit;
	int little, ret;

	if ((ret = vfgx_cfg_u32(n, "offset", fl->offset, 0, 65535, &off)) ||
	    (ret = vfgx_cfg_u32(n, "bit", 64, 0, 63, &bit)) ||
	    (ret = vfgx_cfg_u32(n, "size", bit < 64 ? bit / 8 + 1 : fl->size, 1, 8, &size)) ||
	    (ret = vfgx_cfg_enum(n, "endian", endians, fl->little, &little)) ||
	    (ret = vfgx_cfg_u32(n, "shift", bit < 64 ? bit : fl->shift, 0, 63, &shift)) ||
	    (ret = vfgx_cfg_u32(n, "bits", bit < 64 ? 1 : fl->bits, 0, 64, &bits)))
		return ret;
	if (size == 0)
		return vfgx_cfg_error(n, "size: missing; a field is 1..8 bytes");
	if (shift >= size * 8 || shift + bits > size * 8)
		return vfgx_cfg_error(n, "shift %u, bits %u: the bits must lie inside the field's %u bytes",
				      shift, bits, size);
	fl->offset = (uint16_t)off;
	fl->size = (uint8_t)size;
	fl->little = (uint8_t)little;
	fl->shift = (uint8_t)shift;
	fl->bits = (uint8_t)bits;
	return 0;
}

/* The field under key: "none" (absent) or a map (field_from_map, plus
 * the extra keys the caller reads itself). */
static int parse_field(const struct vfgx_cfg_node *map, const char *key,
		       struct vfgx_fmt_field *fl, const char *const *extra,
		       struct vfgx_cfg_node *out)
{
	const char *keys[10] = { "offset", "size", "endian", "shift", "bits", "bit" };
	struct vfgx_cfg_node n;
	const char *s;
	int ret, k = 6;

	if (vfgx_cfg_child(map, key, &n))
		return 0;
	if (out)
		*out = n;
	s = vfgx_cfg_scalar(&n);
	if (s) {
		if (!strcmp(s, "none")) {
			memset(fl, 0, sizeof(*fl));
			return 0;
		}
		return vfgx_cfg_error(&n, "a field is none or a map of offset, size, endian, shift, bits (or bit)");
	}
	for (; extra && *extra && k < 9; extra++)
		keys[k++] = *extra;
	keys[k] = NULL;
	if ((ret = vfgx_cfg_check_keys(&n, keys)))
		return ret;
	return field_from_map(&n, fl);
}

/* match: a list of fields with a value each; the list replaces the
 * profile's. */
static int parse_match(const struct vfgx_cfg_node *map, struct vfgx_format *f)
{
	static const char *const keys[] = { "offset", "size", "endian", "shift",
		"bits", "bit", "value", NULL };
	struct vfgx_cfg_node seq, it, val;
	int n, ret;

	if (vfgx_cfg_child(map, "match", &seq))
		return 0;
	n = vfgx_cfg_seq_len(&seq);
	if (n > VFGX_FMT_MAX_MATCH)
		return vfgx_cfg_error(&seq, "at most %d match fields", VFGX_FMT_MAX_MATCH);
	memset(f->match, 0, sizeof(f->match));
	memset(f->match_value, 0, sizeof(f->match_value));
	for (int i = 0; i < n; i++) {
		struct vfgx_fmt_field fl = { 0 };

		vfgx_cfg_seq_item(&seq, i, &it);
		if (vfgx_cfg_scalar(&it))
			return vfgx_cfg_error(&it, "a match is a map of offset, size, ... and value");
		if ((ret = vfgx_cfg_check_keys(&it, keys)) || (ret = field_from_map(&it, &fl)))
			return ret;
		if (vfgx_cfg_child(&it, "value", &val))
			return vfgx_cfg_error(&it, "value: missing; a match field must equal it");
		if ((ret = node_u64(&val, vfgx_fmt_mask(fl.bits ? fl.bits : fl.size * 8u),
				    &f->match_value[i])))
			return ret;
		f->match[i] = fl;
	}
	return 0;
}

static int parse_stream_ids(const struct vfgx_cfg_node *map, struct vfgx_format *f)
{
	struct vfgx_cfg_node seq, it;
	int n, ret;

	if (vfgx_cfg_child(map, "stream_ids", &seq))
		return 0;
	n = vfgx_cfg_seq_len(&seq);
	if (n > VFGX_FMT_MAX_STREAM_IDS)
		return vfgx_cfg_error(&seq, "at most %d stream ids", VFGX_FMT_MAX_STREAM_IDS);
	for (int i = 0; i < n; i++) {
		vfgx_cfg_seq_item(&seq, i, &it);
		if ((ret = node_u64(&it, UINT64_MAX, &f->stream_ids[i])))
			return ret;
		for (int j = 0; j < i; j++)
			if (f->stream_ids[j] == f->stream_ids[i])
				return vfgx_cfg_error(&it, "stream id %llu listed twice",
						      (unsigned long long)f->stream_ids[i]);
	}
	f->n_stream_ids = (uint32_t)n;
	vfgx_format_index(f);
	if (f->max_streams > (uint32_t)n)
		f->max_streams = (uint32_t)n;
	return 0;
}

/* width/height/pixel group: stride and chunk bytes of an RFC 4175 frame */
static int parse_video(const struct vfgx_cfg_node *map, struct vfgx_format *f)
{
	uint32_t w, h, stride;
	int ret;

	if ((ret = vfgx_cfg_u32(map, "pgroup_bytes", f->pgroup_bytes, 1, 64, &f->pgroup_bytes)) ||
	    (ret = vfgx_cfg_u32(map, "pgroup_pixels", f->pgroup_pixels, 1, 64, &f->pgroup_pixels)) ||
	    (ret = vfgx_cfg_u32(map, "width", 0, 1, 32767, &w)) ||
	    (ret = vfgx_cfg_u32(map, "height", 0, 1, 32767, &h)))
		return ret;
	if (w) {
		if (!f->pgroup_pixels || !f->pgroup_bytes)
			return vfgx_cfg_error(map, "width: a frame's pixel groups are unknown (profile rtp-video, or pgroup_bytes and pgroup_pixels)");
		if (w % f->pgroup_pixels)
			return vfgx_cfg_error(map, "width %u is not a whole number of %u-pixel groups",
					      w, f->pgroup_pixels);
		f->stride = w / f->pgroup_pixels * f->pgroup_bytes;
	}
	if ((ret = vfgx_cfg_u32(map, "stride", f->stride, 1, 1u << 20, &stride)))
		return ret;
	f->stride = stride;
	if (h)
		f->chunk_bytes = (uint64_t)f->stride * h;
	else if (w && f->layout == VFGX_FMT_RFC4175)
		return vfgx_cfg_error(map, "width without height: a frame is height lines");
	return 0;
}

/* The rules the keys alone cannot say, at the format's own node (a
 * profile named alone too: `format: vdif` has no frames_per_second); no
 * packet size is known here, so only the header's own bounds. */
static int format_rules_check(const struct vfgx_cfg_node *map, const struct vfgx_format *f)
{
	vfgx_ctx *ctx = map->doc ? map->doc->ctx : NULL;
	char msg[512];

	if (!vfgx_format_check(ctx, f, 65507, 0))
		return 0;
	snprintf(msg, sizeof(msg), "%s", ctx ? vfgx_last_error(ctx) : "invalid");
	return vfgx_cfg_error(map, "%s", msg);
}

int vfgx_format_from_yaml(const struct vfgx_cfg_node *map, struct vfgx_format *f)
{
	char prof[VFGX_FMT_NAME_MAX];
	struct vfgx_cfg_node it;
	uint64_t v;
	int ret, e;

	vfgx_format_profile("vfgx", f);
	if (!map || !vfgx_cfg_present(map))
		return 0;
	if (vfgx_cfg_scalar(map)) {
		/* `format: rtp-video`: a profile as it is */
		snprintf(prof, sizeof(prof), "%s", vfgx_cfg_scalar(map));
	} else if ((ret = vfgx_cfg_check_keys(map, fmt_keys)) ||
		   (ret = vfgx_cfg_str(map, "profile", "vfgx", prof, sizeof(prof)))) {
		return ret;
	}
	if (vfgx_format_profile(prof, f)) {
		char names[256] = "";

		for (unsigned i = 0; vfgx_format_profile_name(i); i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", vfgx_format_profile_name(i));
		if (vfgx_cfg_scalar(map))
			return vfgx_cfg_error(map, "unknown profile '%s'; built in: %s", prof, names);
		vfgx_cfg_child(map, "profile", &it);
		return vfgx_cfg_error(&it, "unknown profile '%s'; built in: %s", prof, names);
	}
	if (vfgx_cfg_scalar(map))
		return format_rules_check(map, f);
	if ((ret = vfgx_cfg_enum(map, "layout", layouts, (int)f->layout, &e)))
		return ret;
	f->layout = (uint32_t)e;
	if ((ret = vfgx_cfg_enum(map, "place", places, (int)f->place, &e)))
		return ret;
	f->place = (uint32_t)e;
	if ((ret = vfgx_cfg_u32(map, "header_len", f->header_len, 0, 65535, &f->header_len)) ||
	    (ret = parse_field(map, "stream", &f->stream, NULL, NULL)) ||
	    (ret = parse_field(map, "seq", &f->seq, NULL, NULL)) ||
	    (ret = parse_field(map, "seq_major", &f->seq_major, NULL, NULL)) ||
	    (ret = parse_field(map, "timestamp", &f->timestamp, NULL, NULL)) ||
	    (ret = parse_field(map, "ts_frac", &f->ts_frac, NULL, NULL)) ||
	    (ret = parse_field(map, "end", &f->end, NULL, NULL)) ||
	    (ret = parse_match(map, f)))
		return ret;
	{
		static const char *const lextra[] = { "unit", "add", NULL };
		struct vfgx_cfg_node ln = { 0 };
		uint32_t add_abs;

		if ((ret = parse_field(map, "length", &f->length, lextra, &ln)))
			return ret;
		if (vfgx_cfg_present(&ln) && !vfgx_cfg_scalar(&ln)) {
			if ((ret = vfgx_cfg_u32(&ln, "unit", f->length_unit, 1, 65536, &f->length_unit)) ||
			    (ret = vfgx_cfg_u32(&ln, "add", (uint32_t)(f->length_add < 0 ? 0 : f->length_add),
						0, 65535, &add_abs)))
				return ret;
			f->length_add = (int32_t)add_abs;
		}
	}
	if ((ret = vfgx_cfg_u64(map, "seq_major_mult", f->seq_major_mult, 1, UINT32_MAX,
				&f->seq_major_mult)) ||
	    (ret = vfgx_cfg_u64(map, "frames_per_second", f->seq_major_mult, 1, UINT32_MAX,
				&f->seq_major_mult)))
		return ret;
	/* a new width moves the extension limits to that width's defaults */
	if (!vfgx_cfg_child(map, "seq_bits", &it)) {
		if ((ret = vfgx_cfg_u32(map, "seq_bits", 64, 1, 64, &f->seq_bits)))
			return ret;
		if (f->seq_bits == 16 && f->layout == VFGX_FMT_RFC4175) {
			f->seq_max_dropout = 1u << 15;
			f->seq_max_misorder = 1u << 15;
		} else if (f->seq_bits == 16) {
			f->seq_max_dropout = 3000;
			f->seq_max_misorder = 100;
		} else if (f->seq_bits < 64) {
			f->seq_max_dropout = 1ull << (f->seq_bits - 1);
			f->seq_max_misorder = 1ull << (f->seq_bits - 1);
		} else {
			f->seq_max_dropout = 1ull << 62;
			f->seq_max_misorder = 1ull << 62;
		}
	}
	if ((ret = map_u64_hex(map, "seq_max_dropout", 1ull << 63, &f->seq_max_dropout)) ||
	    (ret = map_u64_hex(map, "seq_max_misorder", 1ull << 63, &f->seq_max_misorder)) ||
	    (ret = vfgx_cfg_u32(map, "streams", f->max_streams, 1, UINT32_MAX, &f->max_streams)) ||
	    (ret = parse_stream_ids(map, f)) ||
	    (ret = vfgx_cfg_u32(map, "packets", f->packets, 1, 1u << 24, &f->packets)) ||
	    (ret = vfgx_cfg_u32(map, "payload_bytes", f->payload_bytes, 1, 1u << 20, &f->payload_bytes)) ||
	    (ret = vfgx_cfg_u64(map, "chunk_bytes", f->chunk_bytes, 1, 1ull << 36, &v)))
		return ret;
	f->chunk_bytes = v;
	if ((ret = parse_video(map, f)))
		return ret;
	/* a user placement function (vfgx/place.h; its keys are read by
	 * vfgx_place_conf_from_yaml) places by slot or by itself */
	if (f->place == VFGX_FMT_PLACE_USER && vfgx_cfg_child(map, "user_place", &it)) {
		vfgx_cfg_child(map, "place", &it);
		return vfgx_cfg_error(&it, "place user: the chunk and offsets come from a user placement function; add user_place: {library, symbol}");
	}
	if (!vfgx_cfg_child(map, "user_place", &it) &&
	    f->place != VFGX_FMT_PLACE_SLOT && f->place != VFGX_FMT_PLACE_USER)
		return vfgx_cfg_error(&it, "a user placement function places by slot or by itself; set place: slot or place: user");
	/* without stream_ids the engines learn RTP's SSRCs, the gpu engine
	 * only in phase B, after the function: it could not give the stream */
	if (!vfgx_cfg_child(map, "user_place", &it) && vfgx_fmt_learns(f))
		return vfgx_cfg_error(&it, "a user placement function gives the stream, which RTP without stream_ids learns from its SSRCs; list the SSRCs in stream_ids");
	return format_rules_check(map, f);
}

/* The format section of a parsed document: pipeline.format, format:, or
 * the keys at its top. */
static int format_of_doc(vfgx_ctx *ctx, struct vfgx_cfg_doc *doc, const char *name,
			 struct vfgx_format *f)
{
	struct vfgx_cfg_node root = { .doc = doc, .index = 1, .path = NULL }, pl, fm;

	if (!yaml_document_get_root_node(&doc->doc))
		return vfgx_set_error(ctx, -EINVAL, "%s: empty document", name);
	if (!vfgx_cfg_child(&root, "pipeline", &pl)) {
		if (vfgx_cfg_child(&pl, "format", &fm))
			return vfgx_set_error(ctx, -EINVAL, "%s: no pipeline.format section", name);
		return vfgx_format_from_yaml(&fm, f);
	}
	if (!vfgx_cfg_child(&root, "format", &fm))
		return vfgx_format_from_yaml(&fm, f);
	return vfgx_format_from_yaml(&root, f);
}

int vfgx_format_load_string(vfgx_ctx *ctx, const char *name, const char *yaml,
			    size_t len, struct vfgx_format *f)
{
	struct vfgx_cfg_doc *doc;
	int ret;

	/* the config's document, within the same limits */
	if ((ret = vfgx_cfg_doc_load(ctx, yaml, len, name, &doc)))
		return ret;
	ret = format_of_doc(ctx, doc, name, f);
	vfgx_cfg_doc_destroy(doc);
	return ret;
}

int vfgx_format_load_file(vfgx_ctx *ctx, const char *path, struct vfgx_format *f)
{
	char *buf;
	size_t len;
	int ret;

	if ((ret = vfgx_cfg_read_file(ctx, path, &buf, &len)))
		return ret;
	ret = vfgx_format_load_string(ctx, path, buf ? buf : "", len, f);
	free(buf);
	return ret;
}
