/* chunk_opts.h - pipeline.chunks options: they live in core
 * (src/core/chunk_opts.h); this name stays for the pipeline's sources. */
#include "core/chunk_opts.h"
