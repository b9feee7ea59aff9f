/* format_rules.cu - the format rules (vfgx/format.h) compiled by nvcc as
 * device code on their own: a kernel that decodes, extends and places one
 * packet per thread, by the plan (vfgx_fmt_plan_make: every built-in
 * profile's decoder, vfgx/format_kinds.h) and by the generic reading
 * (vfgx_fmt_decode).  Built with the library (a compile check of the
 * header alone), linked into nothing: the gpu engine's kernels
 * (gpu_proc.cu) include format.h and call the same rules. */
#include <vfgx/format.h>

__global__ void vfgx_fmt_rules_check_kernel(const struct vfgx_format *f,
					    const uint8_t *pkts, const uint32_t *lens,
					    uint32_t stride, uint32_t n,
					    struct vfgx_seq_state *st,
					    struct vfgx_fmt_pkt *out, int *why)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	struct vfgx_fmt_plan c;
	struct vfgx_fmt_pkt o, g;
	int r;

	if (i >= n)
		return;
	vfgx_fmt_plan_make(f, &c);
	r = vfgx_fmt_decode_plan(f, &c, pkts + (size_t)i * stride, lens[i], &o);
	/* the generic reading answers the same (vfgx/format_kinds.h) */
	if (vfgx_fmt_decode(f, pkts + (size_t)i * stride, lens[i], &g) != r)
		r = VFGX_FD_MAX;
	if (r == VFGX_FD_OK)
		r = vfgx_seq_extend(f, &st[o.stream % 64], o.seq, &o.ext_seq);
	if (r == VFGX_FD_OK)
		r = vfgx_fmt_place(f, &o);
	out[i] = o;
	why[i] = r;
}
