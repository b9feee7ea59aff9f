/* capture_tap.h - the hooks an rx queue calls when a capture taps it
 * (capture.c), all on the queue's own thread: vfgx_port_rx_burst hands it
 * every burst the backend returned (and first lets it give back what the
 * writer has written), vfgx_port_release every release. */
#ifndef VFGX_CAPTURE_TAP_H
#define VFGX_CAPTURE_TAP_H

#include <vfgx/port.h>

struct vfgx_capture_tap;

/* Packets captured by reference carry this flag until released: the
 * capture reads their buffers until its writer has written them. */
#define VFGX_PKT_CAP_REF 0x8000
/* and their reference's tag (capture.c's ref_match) */
#define VFGX_PKT_CAP_TAG 0x7f00

void vfgx_capture_tap_burst(struct vfgx_capture_tap *t, struct vfgx_pkt *pkts, uint16_t n);
/* The backend release of pkts, less those the writer has still to write
 * (held, and given back by a later call once it has). */
void vfgx_capture_tap_release(struct vfgx_capture_tap *t, struct vfgx_pkt *pkts, uint16_t n);
/* Give back the held packets the writer has written. */
void vfgx_capture_tap_reclaim(struct vfgx_capture_tap *t);
/* The queue received nothing: copy out the frames that hold packets back
 * and give those back. */
void vfgx_capture_tap_rescue(struct vfgx_capture_tap *t);

#endif
