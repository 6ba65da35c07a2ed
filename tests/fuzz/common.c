/* common.c: the harnesses' scratch directory (common.h). */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[PATH_MAX];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_scratch(void)
{
	if (scratch[0])
		nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A harness that crashed (ASan ends it with _exit, past atexit) left its
 * directory: the next one removes those whose process is gone. */
static void remove_stale(const char *tmp)
{
	DIR *dir = opendir(tmp);
	struct dirent *e;

	while (dir && (e = readdir(dir))) {
		char path[PATH_MAX];
		long pid;

		if (sscanf(e->d_name, "rearview-fuzz-%ld-", &pid) != 1 || pid <= 0 ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name) < (int)sizeof(path))
			nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	if (dir)
		closedir(dir);
}

const char *fuzz_scratch_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (scratch[0])
		return scratch;
	if (!tmp || !*tmp)
		tmp = "/tmp";
	remove_stale(tmp);
	snprintf(scratch, sizeof(scratch), "%s/rearview-fuzz-%ld-XXXXXX", tmp, (long)getpid());
	if (!mkdtemp(scratch)) {
		fprintf(stderr, "fuzz: cannot create %s: %s\n", scratch, strerror(errno));
		abort();
	}
	atexit(remove_scratch);
	return scratch;
}

void fuzz_scratch_path(char *buf, size_t size, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", fuzz_scratch_dir(), name);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "fuzz: scratch path for %s too long\n", name);
		abort();
	}
}

void fuzz_write_file(char *buf, size_t buf_size, const char *name, const uint8_t *data, size_t size)
{
	int fd;

	fuzz_scratch_path(buf, buf_size, name);
	fd = open(buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "fuzz: cannot create %s: %s\n", buf, strerror(errno));
		abort();
	}
	while (size) {
		ssize_t n = write(fd, data, size);

		if (n <= 0) {
			fprintf(stderr, "fuzz: cannot write %s: %s\n", buf, strerror(errno));
			abort();
		}
		data += n;
		size -= (size_t)n;
	}
	close(fd);
}

uint8_t *fuzz_read_build_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long len;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) ||
	    !(data = malloc((size_t)len)) || fread(data, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "fuzz: cannot read %s (build it with make fuzz-build)\n", path);
		abort();
	}
	fclose(f);
	*size = (size_t)len;
	return data;
}
