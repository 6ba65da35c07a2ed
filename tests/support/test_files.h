/* test_files.h: scratch directories and whole files for the tests: made
 * under /tmp, read and written in one call, removed with what they hold.
 *
 * Failures are Criterion assertions.
 *
 * Not here: where the build and the corpus are (test_env.h).
 */
#ifndef RV_TESTS_TEST_FILES_H
#define RV_TESTS_TEST_FILES_H

#include <stdbool.h>
#include <stddef.h>

/* A fresh directory /tmp/NAME-XXXXXX, its path in out. */
void make_temp_dir(char *out, size_t size, const char *name);

/* The same, its path malloc'd; free_temp_dir removes it and frees the path. */
char *new_temp_dir(const char *name);
void free_temp_dir(char *dir);

/* Removes dir and everything under it (links are not followed); a missing
 * dir is no error. */
void remove_tree(const char *dir);

/* The entries of dir, "." and ".." aside. */
size_t dir_entries(const char *dir);

/* "DIR/NAME", malloc'd. */
char *path_join(const char *dir, const char *name);

/* The whole file, malloc'd with a NUL after its last byte (so that text can
 * be read as a string); *size (may be NULL) is its length. */
void *read_whole(const char *path, size_t *size);

/* Whether the files at a and b both exist and hold the same bytes. */
bool files_equal(const char *a, const char *b);

/* Creates or truncates path and writes size bytes of data to it. */
void write_file(const char *path, const void *data, size_t size);

#endif
