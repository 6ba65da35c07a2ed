/* proc.c: /proc answers; see proc.h. */
#include "util/proc.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int rv_proc_exe(pid_t pid, char *out, size_t size, struct rv_error *err)
{
	char link[64];
	ssize_t n;

	if (pid <= 0)
		return rv_error_set(err, EINVAL, "no process to find the executable of");
	if (size < 2)
		return rv_error_set(err, ENAMETOOLONG, "no room for process %d's executable",
				    (int)pid);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, out, size - 1);
	if (n < 0)
		return rv_error_set(err, errno, "cannot find process %d's executable (%s): %s",
				    (int)pid, link, strerror(errno));
	out[n] = '\0';
	return 0;
}

bool rv_proc_maps_find(pid_t pid,
		       bool (*fn)(void *ctx, uint64_t start, uint64_t end, const char *what),
		       void *ctx)
{
	char path[64], line[PATH_MAX + 128];
	bool found = false;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return false;
	while (!found && fgets(line, sizeof(line), maps)) {
		unsigned long long lo, hi;
		int what = 0;

		line[strcspn(line, "\n")] = '\0';
		/* start-end perms offset dev inode [what] */
		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &lo, &hi, &what) < 2 || !what)
			continue;
		found = fn(ctx, lo, hi, line + what);
	}
	fclose(maps);
	return found;
}

struct vdso_range {
	uint64_t start, end;
};

static bool is_vdso(void *ctx, uint64_t start, uint64_t end, const char *what)
{
	struct vdso_range *r = ctx;

	if (strcmp(what, "[vdso]") || end <= start || end - start > (64ull << 20))
		return false;
	r->start = start;
	r->end = end;
	return true;
}

bool rv_proc_find_vdso(pid_t pid, uint64_t *start, uint64_t *end)
{
	struct vdso_range r;

	if (!rv_proc_maps_find(pid, is_vdso, &r))
		return false;
	*start = r.start;
	*end = r.end;
	return true;
}

int rv_proc_read_memory(pid_t pid, uint64_t addr, void *buf, size_t len, struct rv_error *err)
{
	char path[64];
	FILE *mem;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = fopen(path, "re");
	ok = mem && addr <= (uint64_t)INT64_MAX && !fseeko(mem, (off_t)addr, SEEK_SET) &&
	     fread(buf, 1, len, mem) == len;
	if (mem)
		fclose(mem);
	if (!ok)
		return rv_error_set(err, EIO,
				    "cannot read %zu bytes of process %d's memory at %#llx", len,
				    (int)pid, (unsigned long long)addr);
	return 0;
}

bool rv_proc_comm(pid_t pid, char *out, size_t size)
{
	char path[64];
	FILE *f;
	bool ok;

	if (!size)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(out, (int)size, f) != NULL;
	fclose(f);
	if (!ok)
		return false;
	out[strcspn(out, "\n")] = '\0';
	return true;
}
