/* frame_dump.c - a user module (vfgx/user.h) for the rtp-video run test:
 * every chunk `vfgx run` hands out is appended to ARG.data (its `bytes`
 * bytes, or chunk_bytes of a chunk closed short) and described by one line
 * of ARG.index: index flags bytes missing_bytes hdr_ts hdr_flags
 * first_seq present_count.  The test compares the data with what
 * GStreamer's filesink wrote; this module only copies. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/user.h>

struct dump {
	FILE *data, *index;
};

static int dump_init(const char *arg, void **state)
{
	struct dump *d = calloc(1, sizeof(*d));
	char path[4096];

	if (!d || !arg || !*arg)
		return free(d), EINVAL;
	snprintf(path, sizeof(path), "%s.data", arg);
	d->data = fopen(path, "wb");
	snprintf(path, sizeof(path), "%s.index", arg);
	d->index = fopen(path, "w");
	if (!d->data || !d->index)
		return errno ? errno : EIO;
	*state = d;
	return 0;
}

static int dump_chunk(void *state, const struct vfgx_chunk *c)
{
	struct dump *d = state;

	if (c->mem != VFGX_MEM_HOST && c->mem != VFGX_MEM_PINNED)
		return 1;
	fprintf(d->index, "%" PRIu64 " %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %u %" PRIu64 " %u\n",
		c->index, c->flags, c->bytes, c->missing_bytes, c->hdr_ts, c->hdr_flags,
		c->first_seq, c->present_count);
	return fwrite(c->data, 1, c->bytes, d->data) == c->bytes ? 0 : 1;
}

static int dump_fini(void *state)
{
	struct dump *d = state;
	int bad = fclose(d->data) | fclose(d->index);

	free(d);
	return bad;
}

const struct vfgx_user_module vfgx_user_module = {
	.abi_version = VFGX_USER_ABI_VERSION,
	.name = "frame_dump",
	.init = dump_init,
	.chunk = dump_chunk,
	.fini = dump_fini,
};
