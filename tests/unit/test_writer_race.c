/* test_writer_race.c: the trace writer's commit when the output path changes
 * under it. Commit looks at the path (a regular file is exchanged with the
 * finished trace, then unlinked) and then exchanges; a directory put at the
 * path between the two must go back where it was, and commit fails as
 * rename(2) would. The window is a few instructions wide, so this file's
 * renameat2 (which the unit tests' binary links instead of the C library's)
 * opens it: armed, it moves the old file aside and makes a directory at the
 * path just before the exchange, as another process could. Unarmed, it is
 * the system call. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test_files.h"
#include "write/trace_writer.h"

/* When set, the next exchange onto this path first finds a directory there. */
static const char *swap_in_directory_at;
static const char *moved_aside_to;

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
	      unsigned int flags)
{
	if (swap_in_directory_at && (flags & RENAME_EXCHANGE) &&
	    !strcmp(newpath, swap_in_directory_at)) {
		char *kept;

		swap_in_directory_at = NULL;
		cr_assert_eq(rename(newpath, moved_aside_to), 0, "%s", strerror(errno));
		cr_assert_eq(mkdir(newpath, 0700), 0, "%s", strerror(errno));
		kept = path_join(newpath, "kept");
		write_file(kept, "", 0);
		free(kept);
	}
	return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

Test(writer_race, directory_put_at_the_path_before_the_exchange_goes_back)
{
	char *dir = new_temp_dir("rv-writer-race"), *path = path_join(dir, "t.fxt"),
	     *aside = path_join(dir, "old.fxt"), *kept = path_join(path, "kept");
	struct rv_trace_writer *w = NULL;
	struct rv_error err = { 0 };
	struct stat st;
	int ret;

	write_file(path, "old contents", 12);
	cr_assert_eq(rv_trace_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_span(w, 1, 2, "f", 0, 10, NULL, 0, &err), 0, "%s",
		     err.message);
	swap_in_directory_at = path;
	moved_aside_to = aside;
	ret = rv_trace_writer_commit(w, &err);
	rv_trace_writer_free(w);
	cr_assert_null(swap_in_directory_at, "commit did not exchange over the old file");
	cr_assert_lt(ret, 0, "commit put the trace in place of a directory");
	cr_assert(strstr(err.message, "cannot put the trace in place"), "%s", err.message);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISDIR(st.st_mode), "the directory did not go back to its path");
	cr_assert_eq(stat(kept, &st), 0, "the directory lost what it held");
	cr_assert_eq(stat(aside, &st), 0);
	cr_assert_eq(st.st_size, 12, "the file moved aside changed");
	cr_assert_eq(dir_entries(dir), 2, "the trace or the directory was left under another name");
	unlink(kept);
	rmdir(path);
	unlink(aside);
	free(kept);
	free(aside);
	free(path);
	free_temp_dir(dir);
}
