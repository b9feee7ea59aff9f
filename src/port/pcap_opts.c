/* pcap_opts.c - the options of the pcap port and of capture files, typed
 * or from YAML, checked the same way (built with or without libpcap). */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <vfgx/capture.h>
#include <vfgx/pcap.h>

#include "backend.h"
#include "core/argsz.h"
#include "core/opts.h"
#include "pcap_opts.h"
#include "vfgx_build.h"

#define PC_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_pcap_opts, F, __VA_ARGS__)
static const char *const pc_seq_names[] = { "rewrite", "keep", "auto", NULL };
static const char *const pc_timing_names[] = { "fast", "recorded", "rate", NULL };
static const struct vfgx_opt pc_opts[] = {
	{ "pcap", VFGX_OPT_BACKEND, offsetof(struct vfgx_pcap_opts, hdr.backend) },
	PC_OPT(STR, file, 0),
	PC_OPT(U64, loops, 1, 1, (double)(1ull << 40)),
	PC_OPT(ENUM, sequences, VFGX_PCAP_AUTO, 0, 0, pc_seq_names),
	PC_OPT(ENUM, timing, VFGX_PCAP_FAST, 0, 0, pc_timing_names),
	PC_OPT(DOUBLE, speed, 1, 0.001, 1e6),
	PC_OPT(DOUBLE, rate_pps, 0, 0, 1e10),
	PC_OPT(U32, buf_size, 16384, 64, 1u << 20),
	PC_OPT(U32, num_bufs, 4096, 64, 1u << 22),
	PC_OPT(BOOL, preload, 0),
};
#define PC_NOPTS (sizeof(pc_opts) / sizeof(pc_opts[0]))

void vfgx_pcap_opts_default(struct vfgx_pcap_opts *o)
{
	vfgx_opts_default(pc_opts, PC_NOPTS, o, sizeof(*o));
}

int vfgx_pcap_opts_from_yaml(const struct vfgx_cfg_node *map,
			     struct vfgx_pcap_opts *o)
{
	return vfgx_opts_from_yaml(map, pc_opts, PC_NOPTS, o, sizeof(*o));
}

int vfgx_pcap_opts_parse(const struct vfgx_cfg_node *map, const struct vfgx_iface_config *ifc,
			 struct vfgx_backend_opts *out)
{
	(void)ifc;
	return vfgx_pcap_opts_from_yaml(map, (struct vfgx_pcap_opts *)out);
}

/* A recorded frame in one buffer: buf_size, the port's own or the pool's. */
uint32_t vfgx_pcap_frame_max(const struct vfgx_backend_opts *bo, const char *address,
			     uint32_t buf_size, const char **key)
{
	struct vfgx_pcap_opts d;

	(void)address;
	if (!bo)
		vfgx_pcap_opts_default(&d);
	*key = buf_size ? NULL : "pcap.buf_size";
	return buf_size ? buf_size : bo ? ((const struct vfgx_pcap_opts *)bo)->buf_size :
					  d.buf_size;
}

/* The struct before preload: a program built against it still opens
 * pcap ports (preload off). */
#define PC_OPTS_V1 offsetof(struct vfgx_pcap_opts, preload)

int vfgx_pcap_opts_get(vfgx_ctx *ctx, const char *name,
		       const struct vfgx_port_conf *conf, struct vfgx_pcap_opts *o)
{
	const struct vfgx_backend_opts *u = conf->backend_opts;
	struct vfgx_pcap_opts v1;

	if (u && u->argsz == PC_OPTS_V1) {
		memset(&v1, 0, sizeof(v1));
		memcpy(&v1, u, PC_OPTS_V1);
		v1.hdr.argsz = sizeof(v1);
		u = &v1.hdr;
	}
	return vfgx_opts_get(ctx, name, "pcap", pc_opts, PC_NOPTS, u, o, sizeof(*o));
}

#define CAP_OPT(T, F, ...) VFGX_OPT(T, struct vfgx_capture_conf, F, __VA_ARGS__)
static const char *const cap_mode_names[] = { "all", "drops", "sample", NULL };
static const char *const cap_format_names[] = { "auto", "pcap", "pcapng", NULL };
static const struct vfgx_opt cap_opts[] = {
	CAP_OPT(STR, path, 0),
	CAP_OPT(ENUM, mode, VFGX_CAPTURE_ALL, 0, 0, cap_mode_names),
	CAP_OPT(U32, sample_every, 100, 1, 1u << 30),
	CAP_OPT(U32, snaplen, 65535, 64, 262144),
	CAP_OPT(U64, rotate_bytes, 0, 0, (double)(1ull << 50)),
	CAP_OPT(U32, rotate_files, 0, 0, 1u << 20),
	CAP_OPT(U32, ring_bytes, 8u << 20, 64u << 10, 1u << 30),
	CAP_OPT(ENUM, format, VFGX_CAPTURE_FORMAT_AUTO, 0, 0, cap_format_names),
};
#define CAP_NOPTS (sizeof(cap_opts) / sizeof(cap_opts[0]))

void vfgx_capture_conf_default(struct vfgx_capture_conf *c)
{
	vfgx_opts_default(cap_opts, CAP_NOPTS, c, sizeof(*c));
}

int vfgx_capture_conf_from_yaml(const struct vfgx_cfg_node *map,
				struct vfgx_capture_conf *c)
{
	int ret = vfgx_opts_from_yaml(map, cap_opts, CAP_NOPTS, c, sizeof(*c));

	if (!ret && !VFGX_HAVE_PCAPNG && c->format == VFGX_CAPTURE_FORMAT_PCAPNG) {
		struct vfgx_cfg_node n;

		vfgx_cfg_child(map, "format", &n);
		return vfgx_cfg_error(&n, "pcapng: this build has no libwiretap (install libwiretap-dev and rebuild, or use pcap)");
	}
	return ret;
}

/* The size of the first struct vfgx_capture_conf (up to ring_bytes): a
 * program built against it still opens captures. */
#define CAP_CONF_V1 (offsetof(struct vfgx_capture_conf, ring_bytes) + sizeof(uint32_t))

int vfgx_capture_conf_check(vfgx_ctx *ctx, const struct vfgx_capture_conf *user,
			    struct vfgx_capture_conf *out)
{
	if (vfgx_argsz_copy(out, sizeof(*out), user, CAP_CONF_V1))
		return vfgx_set_error(ctx, -EINVAL,
				      "capture: struct vfgx_capture_conf argsz %" PRIu32 " not understood by libvfgx %s (use vfgx_capture_conf_default)",
				      user->argsz, VFGX_VERSION_STRING);
	return vfgx_opts_check(ctx, "capture", "capture", cap_opts, CAP_NOPTS, out);
}
