/* struct_layout.c - the parts of libvfgx.so.2's ABI that the symbol list
 * cannot see: the sizes of public structs without argsz (a program
 * compiled against them passes them by pointer to the library) and the
 * enum counts that size their arrays (docs/api.md, "No fixed-size arrays
 * in public structs").  A change here is an ABI break: bump the soname
 * (meson.build) and record the new values in the same commit.  Sizes are
 * those of LP64 (x86_64, aarch64). */
#include <stdio.h>
#include <string.h>

#include <vfgx/vfgx.h>

struct recorded {
	const char *what;
	size_t got, want;
};

#define S(T, N) { "sizeof(struct " #T ")", sizeof(struct T), N }
#define C(E, N) { #E, (size_t)(E), N }

int main(void)
{
	static const struct recorded rec[] = {
		C(VFGX_DROP_MAX, 23), /* + the format reasons and user_place (#38) */
		C(VFGX_LAT_BUCKETS, 40),
		C(VFGX_EBA_FRAME_MAX_DESCS, 16),
		C(VFGX_RDMA_REG_HOST + 1, 3), /* vfgx_rdma_mr_info.step_err */
		S(vfgx_pipeline_stats, 600),
		S(vfgx_queue_stats, 216),
		S(vfgx_queue_snap, 224),
		S(vfgx_pkt, 40),
		S(vfgx_pkt_spec, 56),
		S(vfgx_source_report, 48),
		S(vfgx_eba_desc, 80),
		S(vfgx_eba_frame, 1296),
		S(vfgx_rdma_mr_info, 48),
		S(vfgx_gpu_delivery, 32),
		S(vfgx_pool_stats, 32),
		S(vfgx_region_info, 48),
		S(vfgx_afxdp_info, 40),
		S(vfgx_socket_info, 56),
		S(vfgx_metrics_queue, 240),
		/* per-call descriptors filled by the caller: no argsz by design (docs/api.md) */
		S(vfgx_rdma_write_wr, 56),
		S(vfgx_ring_transport, 40),
		S(vfgx_discovery_stats, 104),
		S(vfgx_rdma_endpoint, 56),
		S(vfgx_rdma_wc, 32),
		S(vfgx_mon_queue_snap, 48),
	};
	int failed = 0;

	if (sizeof(void *) != 8 || sizeof(long) != 8) {
		printf("skip: sizes are recorded for LP64 only\n");
		return 77;
	}
	for (size_t i = 0; i < sizeof(rec) / sizeof(rec[0]); i++) {
		if (rec[i].got == rec[i].want) {
			printf("ok   %s = %zu\n", rec[i].what, rec[i].got);
			continue;
		}
		printf("FAIL %s = %zu, libvfgx.so.2 has %zu: an ABI change (bump the soname in meson.build, then record %zu in tests/abi/struct_layout.c)\n",
		       rec[i].what, rec[i].got, rec[i].want, rec[i].got);
		failed = 1;
	}
	return failed;
}
