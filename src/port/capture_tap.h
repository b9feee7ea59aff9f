/* capture_tap.h - the hook an rx queue calls when a capture taps it
 * (capture.c): vfgx_port_rx_burst hands it every burst the backend
 * returned, on the queue's own thread. */
#ifndef VFGX_CAPTURE_TAP_H
#define VFGX_CAPTURE_TAP_H

#include <vfgx/port.h>

struct vfgx_capture_tap;

void vfgx_capture_tap_burst(struct vfgx_capture_tap *t, const struct vfgx_pkt *pkts,
			    uint16_t n);

#endif
