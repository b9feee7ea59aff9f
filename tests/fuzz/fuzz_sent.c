/* fuzz_sent.c - libFuzzer target: arbitrary bytes as the `vfgx send --json`
 * report `vfgx run --expect-sent` reads (run_sent_parse, src/cli/
 * run_capture.c).  Must never crash or leak; a refusal says why in one
 * line without control characters and leaves nothing known; an accepted
 * report holds only counts a sender can give. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run_capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfgx_source_report rep;
	char why[256] = "";

	if (run_sent_parse((const char *)data, size, &rep, why, sizeof(why))) {
		if (!why[0] || rep.known || rep.generated)
			abort(); /* every refusal says why, and keeps nothing */
		for (const unsigned char *p = (const unsigned char *)why; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				abort(); /* a report cannot forge a line */
		return 0;
	}
	if (!rep.known || rep.generated > INT64_MAX || rep.lost > rep.generated ||
	    rep.duplicated + rep.corrupted > rep.generated - rep.lost ||
	    rep.reordered > rep.generated - rep.lost + rep.duplicated)
		abort();
	return 0;
}
