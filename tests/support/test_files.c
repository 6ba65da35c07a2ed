/* test_files.c: scratch directories and whole files (test_files.h). For
 * Criterion tests only: failures are test assertions. */
#include "test_files.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void make_temp_dir(char *out, size_t size, const char *name)
{
	int n = snprintf(out, size, "/tmp/%s-XXXXXX", name);

	cr_assert(n > 0 && (size_t)n < size, "no room for the directory's name %s", name);
	cr_assert_not_null(mkdtemp(out), "mkdtemp %s: %s", out, strerror(errno));
}

char *new_temp_dir(const char *name)
{
	char path[256];
	char *dir;

	make_temp_dir(path, sizeof(path), name);
	dir = strdup(path);
	cr_assert_not_null(dir);
	return dir;
}

void free_temp_dir(char *dir)
{
	remove_tree(dir);
	free(dir);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) ? -1 : 0;
}

void remove_tree(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) && errno == ENOENT)
		return;
	cr_assert_eq(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0, "cannot remove %s: %s",
		     dir, strerror(errno));
}

size_t dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	cr_assert_not_null(d, "cannot open %s", dir);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

char *path_join(const char *dir, const char *name)
{
	char *path;

	cr_assert_gt(asprintf(&path, "%s/%s", dir, name), 0);
	return path;
}

void *read_whole(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rbe");
	char *data = NULL;
	size_t used = 0, cap = 0, got;

	cr_assert_not_null(f, "cannot read %s: %s", path, strerror(errno));
	do {
		if (cap - used < 4096) {
			cap = cap ? cap * 2 : 65536;
			data = realloc(data, cap + 1);
			cr_assert_not_null(data);
		}
		got = fread(data + used, 1, cap - used, f);
		used += got;
	} while (got > 0);
	cr_assert_not(ferror(f), "error reading %s", path);
	fclose(f);
	data[used] = '\0';
	if (size)
		*size = used;
	return data;
}

bool files_equal(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool same = fa && fb;

	while (same) {
		int ca = fgetc(fa), cb = fgetc(fb);

		same = ca == cb;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

void write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wbe");

	cr_assert_not_null(f, "cannot write %s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(data, 1, size, f), size, "cannot write %s", path);
	cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}
