/* picker.c: choosing one line of a list, through fzf or a numbered list; see
 * picker.h. */
#define RV_LOG_DOMAIN "pick"
#include "record/picker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/leftovers.h"

static bool have_fzf(void)
{
	return system("command -v fzf >/dev/null 2>&1") == 0;
}

/* The list fzf reads, in a file without a name, so that no way of ending
 * rearview (SIGKILL included) leaves it behind: an O_TMPFILE in the
 * temporary directory; where its filesystem refuses that, a file unlinked
 * right after mkstemp makes it (only a kill between the two leaves it, as
 * rearview-pick-XXXXXX, which no sweep removes). Open for reading and
 * writing, and not close-on-exec: fzf's shell opens it again through
 * /dev/fd. -errno on failure. */
static int unnamed_list_file(void)
{
	const char *dir = rv_leftovers_tmpdir();
	char path[PATH_MAX];
	int fd = open(dir, O_TMPFILE | O_RDWR, 0600);

	if (fd >= 0)
		return fd;
	if ((size_t)snprintf(path, sizeof(path), "%s/rearview-pick-XXXXXX", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	unlink(path);
	return fd;
}

/* fzf over "INDEX\tLINE" lines, showing only LINE; its answer's INDEX. */
static int pick_with_fzf(const struct rv_pick_question *q, const char *const *lines, size_t nr,
			 size_t *chosen, struct rv_error *err)
{
	char command[320], answer[64];
	int fd = unnamed_list_file(), copy;
	FILE *f, *result;
	char *end;
	unsigned long long index;
	bool answered;

	if (fd < 0)
		return rv_error_set(err, -fd, "cannot create a temporary file in %s: %s",
				    rv_leftovers_tmpdir(), strerror(-fd));
	copy = dup(fd);
	f = copy >= 0 ? fdopen(copy, "w") : NULL;
	if (!f) {
		int e = errno;

		if (copy >= 0)
			close(copy);
		close(fd);
		return rv_error_set(err, e, "cannot write a temporary file: %s", strerror(e));
	}
	for (size_t i = 0; i < nr; i++)
		fprintf(f, "%zu\t%s\n", i, lines[i]);
	if (fclose(f)) {
		close(fd);
		return rv_error_set(err, EIO, "cannot write a temporary file");
	}
	snprintf(command, sizeof(command),
		 "fzf --delimiter='\t' --with-nth=2.. --prompt='%s' < /dev/fd/%d", q->fzf_prompt,
		 fd);
	result = popen(command, "r");
	answered = result && fgets(answer, sizeof(answer), result);
	if (result)
		pclose(result);
	close(fd);
	if (!answered)
		return rv_error_set(err, ECANCELED, "no %s chosen; %s", q->noun, q->otherwise);
	errno = 0;
	index = strtoull(answer, &end, 10);
	if (errno || end == answer || *end != '\t' || index >= nr)
		return rv_error_set(err, ECANCELED, "no %s chosen (fzf answered '%.*s'); %s",
				    q->noun, (int)strcspn(answer, "\t\n"), answer, q->otherwise);
	*chosen = (size_t)index;
	return 0;
}

/* Whether a stop signal is among what stop_fd holds (all of it is read). */
static bool stop_signal_came(int stop_fd)
{
	struct signalfd_siginfo info;
	bool stop = false;

	while (read(stop_fd, &info, sizeof(info)) == (ssize_t)sizeof(info))
		if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM ||
		    info.ssi_signo == SIGHUP)
			stop = true;
	return stop;
}

static int pick_from_list(const struct rv_pick_question *q, const char *const *lines, size_t nr,
			  int stop_fd, size_t *chosen, struct rv_error *err)
{
	char answer[64];
	char *end;
	long choice;

	char *list = NULL;
	size_t list_size = 0;
	FILE *f = open_memstream(&list, &list_size);

	/* in one write, not one per line (stderr is unbuffered, and a list of
	 * source lines can have tens of thousands) */
	for (size_t i = 0; f && i < nr; i++)
		fprintf(f, "%4zu) %s\n", i + 1, lines[i]);
	if (!f || fclose(f))
		return rv_error_set(err, ENOMEM, "out of memory");
	fwrite(list, 1, list_size, stderr);
	free(list);
	fprintf(stderr, "%s Enter its number (1-%zu): ", q->question, nr);
	fflush(stderr);
	/* the stop signals are blocked (the session waits for them on
	 * stop_fd): one ends the question */
	while (stop_fd >= 0) {
		struct pollfd fds[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
					 { .fd = stop_fd, .events = POLLIN } };

		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if ((fds[1].revents & POLLIN) && stop_signal_came(stop_fd)) {
			fprintf(stderr, "\n");
			return rv_error_set(err, ECANCELED, "interrupted: no %s chosen", q->noun);
		}
		if (fds[0].revents)
			break;
	}
	if (!fgets(answer, sizeof(answer), stdin))
		return rv_error_set(err, ECANCELED, "no %s chosen (standard input closed); %s",
				    q->noun, q->otherwise);
	choice = strtol(answer, &end, 10);
	if (end == answer || (*end && *end != '\n') || choice < 1 || (size_t)choice > nr)
		return rv_error_set(err, EINVAL, "'%.*s' is not a number between 1 and %zu",
				    (int)strcspn(answer, "\n"), answer, nr);
	*chosen = (size_t)(choice - 1);
	return 0;
}

int rv_pick(const struct rv_pick_question *q, const char *const *lines, size_t nr, int stop_fd,
	    size_t *chosen, struct rv_error *err)
{
	if (nr == 0)
		return rv_error_set(err, ENOENT, "no %s to choose from", q->noun);
	if (isatty(STDIN_FILENO) && isatty(STDERR_FILENO) && have_fzf())
		return pick_with_fzf(q, lines, nr, chosen, err);
	return pick_from_list(q, lines, nr, stop_fd, chosen, err);
}
