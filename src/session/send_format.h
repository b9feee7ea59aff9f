/* send_format.h - send.format for the sender (sender.c): the profile the
 * generator's packets go out in, resolved once, and the burst rewrite
 * that writes each packet's UDP payload in it (send_format.c). */
#ifndef VFGX_SEND_FORMAT_H
#define VFGX_SEND_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include <vfgx/format.h>
#include <vfgx/send.h>

struct send_format {
	bool on;                 /* a profile other than vfgx: packets rewritten */
	struct vfgx_format f;    /* name "vfgx" when off */
	struct vfgx_fmt_send hdr;
	uint8_t *buf;            /* burst x SEND_FORMAT_SLOT bytes */
	uint32_t burst;
};

/* Resolve o's format (format_desc, else format_profile and send.format,
 * else vfgx) and header values, and check them against the generator's
 * packet size; 0, or -EINVAL with one line in vfgx_last_error. */
int send_format_open(vfgx_ctx *ctx, const struct vfgx_config *cfg,
		     const struct vfgx_send_opts *o, struct send_format *sf);
/* The n generator frames of pk rewritten into out (frames in sf's
 * buffer, or their UDP payloads when payload_only); the frames not
 * parsed as UDP counted in *not_udp, those without a generator header
 * in *encode_drops.  Returns how many are in out. */
uint16_t send_format_burst(struct send_format *sf, const struct vfgx_pkt *pk, uint16_t n,
			   struct vfgx_pkt *out, bool payload_only, uint64_t *not_udp,
			   uint64_t *encode_drops);
void send_format_close(struct send_format *sf);
/* send.header (map; absent: the defaults): header_tab's keys and ranges,
 * numbers in hex as well; file:line:col errors. */
struct vfgx_cfg_node;
int send_header_from_yaml(const struct vfgx_cfg_node *map, struct vfgx_fmt_send *h);
#endif
