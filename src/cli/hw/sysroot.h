/* sysroot.h - read /sys, /proc and /dev below one root prefix, so
 * `vfgx devices` and `vfgx doctor` run unchanged against fixture trees. */
#ifndef VFGX_CLI_SYSROOT_H
#define VFGX_CLI_SYSROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYSROOT_PATH_MAX 4096

struct sysroot {
	char root[SYSROOT_PATH_MAX]; /* "" for the real system, else a resolved dir */
	bool real;                   /* true when root is "/" (live hardware) */
};

/* root NULL, "" or "/" means the running system.  -ENOENT when DIR is not
 * a directory. */
int sysroot_init(struct sysroot *sr, const char *root);

/* Full path of a path inside the root.  Paths given to every function
 * below are absolute inside the root ("/sys/class/net"). */
int sysroot_path(const struct sysroot *sr, char *buf, size_t len,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

bool sysroot_exists(const struct sysroot *sr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Read a text file, trailing whitespace stripped.  Returns its length or
 * -errno. */
int sysroot_read(const struct sysroot *sr, char *buf, size_t len,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Read a file holding one integer (decimal, or 0x hex).  -errno, or
 * -EINVAL when it is not a number. */
int sysroot_read_s64(const struct sysroot *sr, int64_t *out,
		     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Resolve every symlink of a path, staying inside the root; the result is
 * the path inside the root ("/sys/devices/pci0000:00/..."). */
int sysroot_resolve(const struct sysroot *sr, char *buf, size_t len,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Last component of a symlink's target (a driver's or a group's name). */
int sysroot_link_name(const struct sysroot *sr, char *buf, size_t len,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Names in a directory, sorted, "." and ".." left out.  *names is one
 * malloc'd block (free it); returns the count or -errno. */
int sysroot_list(const struct sysroot *sr, char ***names, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));

/* PCI configuration space of a device: the binary sysfs `config`, or in a
 * fixture tree `config.lspci`, the text `lspci -xxxx` prints.  Returns the
 * number of bytes read (64 for an unprivileged reader) or -errno. */
int sysroot_pci_config(const struct sysroot *sr, const char *bdf,
		       uint8_t *buf, size_t len);

/* True when s looks like a PCI address "DDDD:BB:DD.F". */
bool sysroot_is_bdf(const char *s);

/* Capability walks over a config-space copy of len bytes (what
 * sysroot_pci_config returned): the offset of capability id (standard or
 * extended) when its first need bytes, all a caller reads, lie within len;
 * 0 when absent or cut off by the end of what was read.
 */
unsigned sysroot_pci_cap(const uint8_t *c, int len, unsigned id,
			 unsigned need);
unsigned sysroot_pci_ext_cap(const uint8_t *c, int len, unsigned id,
			     unsigned need);

#endif
