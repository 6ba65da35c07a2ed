/* proc.c: /proc answers; see proc.h. */
#include "util/proc.h"

#include <errno.h>
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

bool rv_proc_find_vdso(pid_t pid, uint64_t *start, uint64_t *end)
{
	char path[64], line[512];
	unsigned long long lo = 0, hi = 0;
	bool found = false;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return false;
	while (!found && fgets(line, sizeof(line), maps)) {
		size_t len = strlen(line);

		if (len && line[len - 1] == '\n')
			line[len - 1] = '\0';
		found = len > 6 && strstr(line, "[vdso]") &&
			sscanf(line, "%llx-%llx", &lo, &hi) == 2 && hi > lo &&
			hi - lo <= (64ull << 20);
	}
	fclose(maps);
	if (found) {
		*start = lo;
		*end = hi;
	}
	return found;
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
