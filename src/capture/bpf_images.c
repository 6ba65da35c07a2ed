/* bpf_images.c: the saved JIT images file, written and read; see
 * bpf_images.h. */
#include "capture/bpf_images.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 16
#define ENTRY_FIXED  32
#define VERSION	     1
/* Larger files are not ours: a program's image is at most some MiB. */
#define MAX_FILE_BYTES (1ull << 32)

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int rv_bpf_images_append(int fd, const char *path, bool header, const struct rv_bpf_image *image,
			 struct rv_error *err)
{
	size_t name_bytes = strnlen(image->name, RV_BPF_NAME_BYTES - 1) + 1;
	size_t size = ENTRY_FIXED + pad8(name_bytes) + pad8(image->len);
	uint8_t *buf = calloc(1, size + HEADER_BYTES);
	uint8_t *p = buf;
	uint16_t u16;
	uint32_t u32;
	int ret;

	if (!buf)
		return rv_error_set(err, ENOMEM, "out of memory saving a BPF program's code");
	if (header) {
		memcpy(p, RV_BPF_IMAGES_MAGIC, 8);
		u32 = VERSION;
		memcpy(p + 8, &u32, 4);
		p += HEADER_BYTES;
	}
	u32 = (uint32_t)size;
	memcpy(p, &u32, 4);
	memcpy(p + 4, &image->prog_id, 4);
	memcpy(p + 8, &image->addr, 8);
	memcpy(p + 16, &image->len, 4);
	u16 = (uint16_t)name_bytes;
	memcpy(p + 20, &u16, 2);
	memcpy(p + 22, &image->func, 2);
	memcpy(p + 24, image->tag, RV_BPF_TAG_BYTES);
	memcpy(p + ENTRY_FIXED, image->name, name_bytes - 1);
	memcpy(p + ENTRY_FIXED + pad8(name_bytes), image->code, image->len);
	ret = write_all(fd, buf, (size_t)(p - buf) + size);
	free(buf);
	if (ret)
		return rv_error_set(err, -ret, "cannot write '%s': %s", path, strerror(-ret));
	return 0;
}

static int parse(const uint8_t *data, size_t size, struct rv_bpf_image **out, size_t *nr,
		 char *names, bool *truncated)
{
	size_t at = HEADER_BYTES, cap = 0, names_used = 0;
	uint32_t version;

	memcpy(&version, data + 8, 4);
	if (memcmp(data, RV_BPF_IMAGES_MAGIC, 8) || version != VERSION)
		return -EINVAL;
	while (at < size) {
		struct rv_bpf_image im;
		const uint8_t *p = data + at;
		uint32_t entry;
		uint16_t name_bytes;

		if (size - at < ENTRY_FIXED) {
			*truncated = true;
			break;
		}
		memcpy(&entry, p, 4);
		memset(&im, 0, sizeof(im));
		memcpy(&im.prog_id, p + 4, 4);
		memcpy(&im.addr, p + 8, 8);
		memcpy(&im.len, p + 16, 4);
		memcpy(&name_bytes, p + 20, 2);
		memcpy(&im.func, p + 22, 2);
		memcpy(im.tag, p + 24, RV_BPF_TAG_BYTES);
		if (entry % 8 || entry < ENTRY_FIXED || !name_bytes ||
		    name_bytes > RV_BPF_NAME_BYTES ||
		    (uint64_t)ENTRY_FIXED + pad8(name_bytes) + pad8(im.len) != entry ||
		    im.addr + im.len < im.addr)
			return -EINVAL;
		if (entry > size - at) {
			*truncated = true;
			break;
		}
		if (p[ENTRY_FIXED + name_bytes - 1] != '\0')
			return -EINVAL;
		if (*nr == cap) {
			struct rv_bpf_image *v = realloc(*out, (cap ? cap * 2 : 16) * sizeof(*v));

			if (!v)
				return -ENOMEM;
			*out = v;
			cap = cap ? cap * 2 : 16;
		}
		/* names are copied, so that the file's bytes need not stay */
		memcpy(names + names_used, p + ENTRY_FIXED, name_bytes);
		im.name = (const char *)(uintptr_t)names_used; /* made a pointer below */
		names_used += name_bytes;
		im.code_offset = at + ENTRY_FIXED + pad8(name_bytes);
		(*out)[(*nr)++] = im;
		at += entry;
	}
	for (size_t i = 0; i < *nr; i++)
		(*out)[i].name = names + (size_t)(uintptr_t)(*out)[i].name;
	return 0;
}

int rv_bpf_images_read(const char *path, struct rv_bpf_image **out, size_t *nr, char **names,
		       bool *truncated, struct rv_error *err)
{
	struct stat st;
	uint8_t *data = NULL;
	size_t got = 0;
	int fd, ret = 0;

	*out = NULL;
	*nr = 0;
	*names = NULL;
	*truncated = false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return rv_error_set(err, errno, "cannot read '%s': %s", path, strerror(errno));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE_BYTES ||
	    st.st_size < HEADER_BYTES) {
		close(fd);
		return rv_error_set(err, EINVAL, "'%s' is not a file of saved BPF programs", path);
	}
	data = malloc((size_t)st.st_size);
	*names = malloc((size_t)st.st_size);
	if (!data || !*names) {
		ret = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, data + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	ret = got < HEADER_BYTES ? -EINVAL : parse(data, got, out, nr, *names, truncated);
	if (got < (size_t)st.st_size)
		*truncated = true;
out:
	free(data);
	close(fd);
	if (ret) {
		free(*out);
		free(*names);
		*out = NULL;
		*names = NULL;
		*nr = 0;
		if (ret == -ENOMEM)
			return rv_error_set(err, ENOMEM, "out of memory reading '%s'", path);
		return rv_error_set(err, EINVAL, "'%s' is not a file of saved BPF programs", path);
	}
	return 0;
}
