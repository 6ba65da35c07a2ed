/* proc.c: /proc answers; see proc.h. */
#include "util/proc.h"

#include <errno.h>
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
