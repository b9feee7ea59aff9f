/* vfgx/vfgx.h - the whole public API of libvfgx: every public header.
 * docs/api.md walks through a program's lifecycle. */
#ifndef VFGX_H
#define VFGX_H

#include "core.h"
#include "frame.h"
#include "mem.h"
#include "config.h"
#include "port.h"
#include "pipeline.h"
#include "chunk.h"
#include "chunk_device.h"
#include "user.h"
#include "stages.h"
#include "gpu.h"
#include "mon.h"
#include "capture.h"
#include "record.h"
#include "pcap.h"
#include "socket.h"
#include "afxdp.h"
#include "rdma.h"
#include "loopback.h"
#include "dpdk.h"
#include "eba.h"
#include "metrics.h"
#include "format.h"
#include "place.h"
#include "send.h"
#include "session.h"

#endif
