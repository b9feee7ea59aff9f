/* vfgx/vfgx.h - the whole public API of libvfgx. */
#ifndef VFGX_H
#define VFGX_H

#include "core.h"
#include "mem.h"
#include "config.h"
#include "port.h"
#include "pipeline.h"
#include "metrics.h"

#endif
