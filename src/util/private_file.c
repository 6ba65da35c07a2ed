/* private_file.c: files of a capture, readable by their owner alone; see
 * private_file.h. */
#include "util/private_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rv_private_file_create(const char *path, struct rv_error *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0 && errno == ELOOP)
		return rv_error_set(err, ELOOP,
				    "cannot create '%s': it is a symbolic link, which rearview "
				    "does not write through; remove it",
				    path);
	if (fd < 0)
		return rv_error_set(err, errno, "cannot create '%s': %s", path, strerror(errno));
	if (fchmod(fd, 0600)) {
		int saved = errno;

		close(fd);
		return rv_error_set(err, saved, "cannot make '%s' private: %s", path,
				    strerror(saved));
	}
	return fd;
}
