/* desc.c - exposed-buffer descriptors and discovery frames: fixed-layout
 * little-endian encode/decode that checks every length and field. */
#include <errno.h>
#include <string.h>

#include <vfgx/eba.h>

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int seterr(vfgx_ctx *ctx, int err, const char *what)
{
	if (ctx)
		vfgx_set_error(ctx, err, "%s", what);
	return err;
}

const char *vfgx_eba_type_name(enum vfgx_eba_type t)
{
	switch (t) {
	case VFGX_EBA_RX: return "rx";
	case VFGX_EBA_TX: return "tx";
	case VFGX_EBA_CTRL: return "ctrl";
	}
	return "?";
}

int vfgx_eba_desc_check(vfgx_ctx *ctx, const struct vfgx_eba_desc *d)
{
	if (d->type != VFGX_EBA_RX && d->type != VFGX_EBA_TX &&
	    d->type != VFGX_EBA_CTRL)
		return seterr(ctx, -EINVAL, "eba descriptor: type must be rx (1), tx (2) or ctrl (3)");
	if (d->qpn >= 1u << 24)
		return seterr(ctx, -EINVAL, "eba descriptor: qpn must be below 2^24");
	if (d->type != VFGX_EBA_CTRL && d->size == 0)
		return seterr(ctx, -EINVAL, "eba descriptor: rx/tx buffer with size 0 (only ctrl may be empty)");
	if (d->addr + d->size < d->addr)
		return seterr(ctx, -EINVAL, "eba descriptor: addr + size wraps around 2^64");
	if (d->state_off != VFGX_EBA_NO_STATE &&
	    (d->state_off % 8 || d->size < 8 || d->state_off > d->size - 8))
		return seterr(ctx, -EINVAL, "eba descriptor: state word must be 8-byte aligned and inside the buffer");
	if (d->lease_s == 0 || d->lease_s > VFGX_EBA_LEASE_MAX)
		return seterr(ctx, -EINVAL, "eba descriptor: lease must be 1..86400 s");
	return 0;
}

int vfgx_eba_desc_encode(vfgx_ctx *ctx, const struct vfgx_eba_desc *d,
			 void *buf, size_t len)
{
	uint8_t *p = buf;
	int ret;

	if (len < VFGX_EBA_DESC_LEN)
		return seterr(ctx, -ENOBUFS, "eba descriptor: encode buffer shorter than 88 bytes");
	ret = vfgx_eba_desc_check(ctx, d);
	if (ret)
		return ret;
	memset(p, 0, VFGX_EBA_DESC_LEN);
	put32(p + 0, VFGX_EBA_DESC_MAGIC);
	put16(p + 4, VFGX_EBA_DESC_VERSION);
	put16(p + 6, VFGX_EBA_DESC_LEN);
	put64(p + 8, d->node_id);
	put32(p + 16, d->buffer_id);
	p[20] = (uint8_t)d->type;
	put64(p + 24, d->addr);
	put32(p + 32, d->rkey);
	put32(p + 36, d->qpn);
	put64(p + 40, d->size);
	put64(p + 48, d->state_off);
	memcpy(p + 56, d->gid, 16);
	memcpy(p + 72, d->mac, 6);
	put32(p + 80, d->lease_s);
	return VFGX_EBA_DESC_LEN;
}

int vfgx_eba_desc_decode(vfgx_ctx *ctx, const void *buf, size_t len,
			 struct vfgx_eba_desc *d)
{
	const uint8_t *p = buf;

	if (len < 8)
		return seterr(ctx, -EMSGSIZE, "eba descriptor: truncated header (under 8 bytes)");
	if (get32(p) != VFGX_EBA_DESC_MAGIC)
		return seterr(ctx, -EBADMSG, "eba descriptor: wrong magic (not a VectorFlow-GX descriptor)");
	if (get16(p + 4) != VFGX_EBA_DESC_VERSION)
		return seterr(ctx, -EPROTONOSUPPORT, "eba descriptor: unknown version (this build reads version 1)");
	if (get16(p + 6) != VFGX_EBA_DESC_LEN)
		return seterr(ctx, -EINVAL, "eba descriptor: length field is not 88 for version 1");
	if (len < VFGX_EBA_DESC_LEN)
		return seterr(ctx, -EMSGSIZE, "eba descriptor: truncated (under 88 bytes)");
	if (p[21] || get16(p + 22) || get16(p + 78) || get32(p + 84))
		return seterr(ctx, -EINVAL, "eba descriptor: reserved bytes not zero");
	memset(d, 0, sizeof(*d));
	d->node_id = get64(p + 8);
	d->buffer_id = get32(p + 16);
	d->type = (enum vfgx_eba_type)p[20];
	d->addr = get64(p + 24);
	d->rkey = get32(p + 32);
	d->qpn = get32(p + 36);
	d->size = get64(p + 40);
	d->state_off = get64(p + 48);
	memcpy(d->gid, p + 56, 16);
	memcpy(d->mac, p + 72, 6);
	d->lease_s = get32(p + 80);
	if (vfgx_eba_desc_check(ctx, d))
		return -EINVAL;
	return VFGX_EBA_DESC_LEN;
}

int vfgx_eba_frame_encode(vfgx_ctx *ctx, const struct vfgx_eba_frame *f,
			  void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t need = VFGX_EBA_FRAME_HDR_LEN + (size_t)f->count * VFGX_EBA_DESC_LEN;

	if (f->count == 0 || f->count > VFGX_EBA_FRAME_MAX_DESCS)
		return seterr(ctx, -EINVAL, "eba frame: 1..16 descriptors per frame");
	if (len < need)
		return seterr(ctx, -ENOBUFS, "eba frame: encode buffer too short");
	put32(p, VFGX_EBA_FRAME_MAGIC);
	put16(p + 4, VFGX_EBA_FRAME_VERSION);
	put16(p + 6, f->count);
	put64(p + 8, f->node_id);
	put32(p + 16, f->seq);
	put32(p + 20, 0);
	for (uint16_t i = 0; i < f->count; i++) {
		int ret;

		if (f->desc[i].node_id != f->node_id)
			return seterr(ctx, -EINVAL, "eba frame: descriptor node id differs from the frame's");
		ret = vfgx_eba_desc_encode(ctx, &f->desc[i],
					   p + VFGX_EBA_FRAME_HDR_LEN + (size_t)i * VFGX_EBA_DESC_LEN,
					   VFGX_EBA_DESC_LEN);
		if (ret < 0)
			return ret;
	}
	return (int)need;
}

int vfgx_eba_frame_decode(vfgx_ctx *ctx, const void *buf, size_t len,
			  struct vfgx_eba_frame *f)
{
	const uint8_t *p = buf;
	uint16_t count;

	if (len < 8)
		return seterr(ctx, -EMSGSIZE, "eba frame: truncated header (under 8 bytes)");
	if (get32(p) != VFGX_EBA_FRAME_MAGIC)
		return seterr(ctx, -EBADMSG, "eba frame: wrong magic (not a VectorFlow-GX discovery frame)");
	if (get16(p + 4) != VFGX_EBA_FRAME_VERSION)
		return seterr(ctx, -EPROTONOSUPPORT, "eba frame: unknown version (this build reads version 1)");
	count = get16(p + 6);
	if (count == 0 || count > VFGX_EBA_FRAME_MAX_DESCS)
		return seterr(ctx, -EINVAL, "eba frame: descriptor count must be 1..16");
	if (len < VFGX_EBA_FRAME_HDR_LEN + (size_t)count * VFGX_EBA_DESC_LEN)
		return seterr(ctx, -EMSGSIZE, "eba frame: truncated (fewer bytes than the descriptor count needs)");
	if (get32(p + 20))
		return seterr(ctx, -EINVAL, "eba frame: reserved bytes not zero");
	f->node_id = get64(p + 8);
	f->seq = get32(p + 16);
	f->count = count;
	for (uint16_t i = 0; i < count; i++) {
		int ret = vfgx_eba_desc_decode(ctx, p + VFGX_EBA_FRAME_HDR_LEN +
					       (size_t)i * VFGX_EBA_DESC_LEN,
					       VFGX_EBA_DESC_LEN, &f->desc[i]);

		if (ret < 0)
			return ret;
		if (f->desc[i].node_id != f->node_id)
			return seterr(ctx, -EINVAL, "eba frame: descriptor node id differs from the frame's");
	}
	return (int)(VFGX_EBA_FRAME_HDR_LEN + (size_t)count * VFGX_EBA_DESC_LEN);
}
