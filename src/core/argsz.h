/* argsz.h - copying a caller's option struct that starts with its own size
 * (the argsz pattern of drivers/gpurdma_mon/uapi): an older caller's
 * shorter struct gets the new fields zeroed (their defaults); a newer
 * caller's longer one is accepted only when the fields this library does
 * not know are zero; and filling a caller's out struct of any size. */
#ifndef VFGX_ARGSZ_H
#define VFGX_ARGSZ_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* dst gets size bytes; src says its own size in its first uint32_t.
 * min: the size of the first version.  -EINVAL when argsz < min or the
 * unknown tail is not zero. */
static inline int vfgx_argsz_copy(void *dst, size_t size, const void *src,
				  size_t min)
{
	uint32_t argsz;

	memcpy(&argsz, src, sizeof(argsz));
	if (argsz < min)
		return -EINVAL;
	for (size_t i = size; i < argsz; i++)
		if (((const uint8_t *)src)[i])
			return -EINVAL;
	memset(dst, 0, size);
	memcpy(dst, src, argsz < size ? argsz : size);
	return 0;
}

/* The other way: the caller's out struct (its size in its first uint32_t)
 * may be older (shorter) or newer than ours (size bytes): fill what both
 * know and zero the rest of theirs; argsz is left as the caller set it.
 * -EINVAL when argsz is below two words. */
static inline int vfgx_argsz_fill(void *out, const void *ours, size_t size)
{
	uint32_t argsz;

	memcpy(&argsz, out, sizeof(argsz));
	if (argsz < sizeof(uint32_t) * 2)
		return -EINVAL;
	memset((char *)out + sizeof(uint32_t), 0, argsz - sizeof(uint32_t));
	memcpy((char *)out + sizeof(uint32_t), (const char *)ours + sizeof(uint32_t),
	       (argsz < size ? argsz : size) - sizeof(uint32_t));
	return 0;
}

#endif
