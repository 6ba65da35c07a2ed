/* program.c: the PATH search of execvp; see program.h. */
#include "util/program.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rv_program_find(const char *name, char *path, size_t size, struct rv_error *err)
{
	const char *dirs = getenv("PATH");
	int saved = ENOENT;

	if (strchr(name, '/')) {
		if (strlen(name) >= size)
			return rv_error_set(err, ENAMETOOLONG, "cannot run '%s': path too long",
					    name);
		if (access(name, X_OK) == 0) {
			snprintf(path, size, "%s", name);
			return 0;
		}
		saved = errno;
		if (saved == ENOENT)
			return rv_error_set(err, ENOENT, "cannot run '%s': no such file", name);
		return rv_error_set(err, saved, "cannot run '%s': %s", name, strerror(saved));
	}
	if (!dirs)
		dirs = "/usr/local/bin:/usr/bin:/bin";
	while (*dirs) {
		const char *colon = strchr(dirs, ':');
		size_t len = colon ? (size_t)(colon - dirs) : strlen(dirs);
		struct stat st;

		int n = len ? snprintf(path, size, "%.*s/%s", (int)len, dirs, name)
			    : snprintf(path, size, "./%s", name); /* "": the current directory */

		if (n > 0 && (size_t)n < size && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(path, X_OK) == 0)
				return 0;
			saved = EACCES;
		}
		dirs += len;
		if (*dirs == ':')
			dirs++;
	}
	if (saved == EACCES)
		return rv_error_set(err, EACCES, "cannot run '%s': permission denied", name);
	return rv_error_set(err, ENOENT,
			    "command not found: '%s' (not in PATH; give a path such as ./%s)", name,
			    name);
}
