/* sysroot.c - file access below a root prefix for the device and doctor
 * commands (sysfs text files, symlinks, directories, PCI config space). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysroot.h"

int sysroot_init(struct sysroot *sr, const char *root)
{
	char buf[PATH_MAX];
	struct stat st;

	memset(sr, 0, sizeof(*sr));
	if (!root || !root[0] || !strcmp(root, "/")) {
		sr->real = true;
		return 0;
	}
	if (!realpath(root, buf) || stat(buf, &st) || !S_ISDIR(st.st_mode))
		return -ENOENT;
	if (!strcmp(buf, "/")) {
		sr->real = true;
		return 0;
	}
	snprintf(sr->root, sizeof(sr->root), "%s", buf);
	return 0;
}

static int vpath(const struct sysroot *sr, char *buf, size_t len,
		 const char *fmt, va_list ap)
{
	char rel[SYSROOT_PATH_MAX];
	int n = vsnprintf(rel, sizeof(rel), fmt, ap);

	if (n < 0 || (size_t)n >= sizeof(rel))
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s%s", sr->root, rel);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int sysroot_path(const struct sysroot *sr, char *buf, size_t len,
		 const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vpath(sr, buf, len, fmt, ap);
	va_end(ap);
	return ret;
}

bool sysroot_exists(const struct sysroot *sr, const char *fmt, ...)
{
	char p[SYSROOT_PATH_MAX];
	struct stat st;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vpath(sr, p, sizeof(p), fmt, ap);
	va_end(ap);
	return ret == 0 && stat(p, &st) == 0;
}

/* Opens p for reading only if it is a regular file, as every sysfs and
 * procfs file read here is: O_NONBLOCK so that a FIFO planted in a --root
 * tree cannot hang the open, and -EINVAL for a FIFO, device or socket.
 */
static int open_regular(const char *p)
{
	struct stat st;
	int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int read_path(const char *p, char *buf, size_t len)
{
	ssize_t n;
	size_t got = 0;
	int fd = open_regular(p);

	if (fd < 0)
		return fd;
	while (got + 1 < len) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			int err = -errno;

			close(fd);
			return err;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	while (got > 0 && isspace((unsigned char)buf[got - 1]))
		got--;
	buf[got] = '\0';
	return (int)got;
}

int sysroot_read(const struct sysroot *sr, char *buf, size_t len,
		 const char *fmt, ...)
{
	char p[SYSROOT_PATH_MAX];
	va_list ap;
	int ret;

	if (len)
		buf[0] = '\0';
	va_start(ap, fmt);
	ret = vpath(sr, p, sizeof(p), fmt, ap);
	va_end(ap);
	return ret ? ret : read_path(p, buf, len);
}

int sysroot_read_s64(const struct sysroot *sr, int64_t *out,
		     const char *fmt, ...)
{
	char p[SYSROOT_PATH_MAX], buf[64], *end;
	long long v;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vpath(sr, p, sizeof(p), fmt, ap);
	va_end(ap);
	if (ret || (ret = read_path(p, buf, sizeof(buf))) < 0)
		return ret;
	errno = 0;
	v = strtoll(buf, &end, 0);
	if (end == buf || *end || errno)
		return -EINVAL;
	*out = v;
	return 0;
}

int sysroot_resolve(const struct sysroot *sr, char *buf, size_t len,
		    const char *fmt, ...)
{
	char p[SYSROOT_PATH_MAX], r[PATH_MAX];
	size_t rl = strlen(sr->root);
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vpath(sr, p, sizeof(p), fmt, ap);
	va_end(ap);
	if (ret)
		return ret;
	if (!realpath(p, r))
		return -errno;
	if (strncmp(r, sr->root, rl) || (r[rl] != '/' && r[rl] != '\0'))
		return -EXDEV; /* a link that leaves the fixture tree */
	if ((size_t)snprintf(buf, len, "%s", r[rl] ? r + rl : "/") >= len)
		return -ENAMETOOLONG;
	return 0;
}

int sysroot_link_name(const struct sysroot *sr, char *buf, size_t len,
		      const char *fmt, ...)
{
	char p[SYSROOT_PATH_MAX], t[PATH_MAX];
	const char *base;
	va_list ap;
	ssize_t n;
	int ret;

	if (len)
		buf[0] = '\0';
	va_start(ap, fmt);
	ret = vpath(sr, p, sizeof(p), fmt, ap);
	va_end(ap);
	if (ret)
		return ret;
	n = readlink(p, t, sizeof(t) - 1);
	if (n < 0)
		return -errno;
	t[n] = '\0';
	base = strrchr(t, '/');
	base = base ? base + 1 : t;
	if ((size_t)snprintf(buf, len, "%s", base) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int sysroot_list(const struct sysroot *sr, char ***names, const char *fmt, ...)
{
	char p[SYSROOT_PATH_MAX];
	struct dirent *de;
	size_t n = 0, bytes = 0, off;
	char **v, *s;
	va_list ap;
	DIR *d;
	int ret;

	*names = NULL;
	va_start(ap, fmt);
	ret = vpath(sr, p, sizeof(p), fmt, ap);
	va_end(ap);
	if (ret)
		return ret;
	d = opendir(p);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		bytes += strlen(de->d_name) + 1;
	}
	v = malloc((n + 1) * sizeof(*v) + bytes);
	if (!v) {
		closedir(d);
		return -ENOMEM;
	}
	rewinddir(d);
	s = (char *)(v + n + 1);
	off = 0;
	size_t i = 0;

	while ((de = readdir(d)) && i < n) {
		size_t l = strlen(de->d_name) + 1;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (off + l > bytes)
			break;
		memcpy(s + off, de->d_name, l);
		v[i++] = s + off;
		off += l;
	}
	closedir(d);
	n = i;
	v[n] = NULL;
	qsort(v, n, sizeof(*v), cmp_names);
	*names = v;
	return (int)n;
}

/* `lspci -xxxx` text: lines "off: hh hh ...", offsets in hex. */
static int parse_lspci_hex(const char *text, uint8_t *buf, size_t len)
{
	size_t top = 0;
	const char *line = text;

	memset(buf, 0, len);
	while (*line) {
		const char *nl = strchr(line, '\n');
		const char *c = strchr(line, ':');
		char *end;
		unsigned long off;

		if (c && (!nl || c < nl)) {
			off = strtoul(line, &end, 16);
			if (end == c) {
				const char *q = c + 1;

				for (;;) {
					unsigned long v;

					while (*q == ' ' || *q == '\t')
						q++;
					if (!isxdigit((unsigned char)*q))
						break;
					v = strtoul(q, &end, 16);
					if (end == q || v > 0xff)
						break;
					if (off < len)
						buf[off] = (uint8_t)v;
					off++;
					if (off > top)
						top = off;
					q = end;
				}
			}
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return top ? (int)(top < len ? top : len) : -EINVAL;
}

int sysroot_pci_config(const struct sysroot *sr, const char *bdf,
		       uint8_t *buf, size_t len)
{
	char p[SYSROOT_PATH_MAX];
	char *text;
	ssize_t n;
	int fd, ret;

	if ((ret = sysroot_path(sr, p, sizeof(p), "/sys/bus/pci/devices/%s/config", bdf)))
		return ret;
	fd = open_regular(p);
	if (fd == -EINVAL)
		return fd;
	if (fd >= 0) {
		n = pread(fd, buf, len, 0);
		ret = n < 0 ? -errno : (int)n;
		close(fd);
		return ret;
	}
	if ((ret = sysroot_path(sr, p, sizeof(p), "/sys/bus/pci/devices/%s/config.lspci", bdf)))
		return ret;
	text = malloc(65536);
	if (!text)
		return -ENOMEM;
	ret = read_path(p, text, 65536);
	if (ret >= 0)
		ret = parse_lspci_hex(text, buf, len);
	free(text);
	return ret;
}

bool sysroot_is_bdf(const char *s)
{
	unsigned dom, bus, dev, fn;
	int n = 0;

	return sscanf(s, "%4x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &n) == 4 &&
	       n == 12 && s[n] == '\0';
}

static unsigned le16(const uint8_t *c, unsigned off)
{
	return c[off] | (unsigned)c[off + 1] << 8;
}

unsigned sysroot_pci_cap(const uint8_t *c, int len, unsigned id,
			 unsigned need)
{
	unsigned pos;

	if (len < 64 || !(le16(c, 0x06) & 0x10))
		return 0;
	pos = c[0x34] & 0xfc;
	for (int guard = 0; pos >= 0x40 && pos + 2 <= (unsigned)len && guard < 48; guard++) {
		if (c[pos] == id)
			return pos + need <= (unsigned)len ? pos : 0;
		pos = c[pos + 1] & 0xfc;
	}
	return 0;
}

unsigned sysroot_pci_ext_cap(const uint8_t *c, int len, unsigned id,
			     unsigned need)
{
	unsigned pos = 0x100;

	for (int guard = 0; pos >= 0x100 && pos + 4 <= (unsigned)len && guard < 256; guard++) {
		uint32_t h = le16(c, pos) | (uint32_t)le16(c, pos + 2) << 16;

		if (!h)
			return 0;
		if ((h & 0xffff) == id)
			return pos + need <= (unsigned)len ? pos : 0;
		pos = (h >> 20) & 0xffc;
	}
	return 0;
}
