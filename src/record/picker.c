/* picker.c: choosing one line of a list, through fzf or a numbered list; see
 * picker.h. */
#define RV_LOG_DOMAIN "pick"
#include "record/picker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

static bool have_fzf(void)
{
	return system("command -v fzf >/dev/null 2>&1") == 0;
}

/* fzf over "INDEX\tLINE" lines, showing only LINE; its answer's INDEX. */
static int pick_with_fzf(const struct rv_pick_question *q, const char *const *lines, size_t nr,
			 size_t *chosen, struct rv_error *err)
{
	char tmpl[] = "/tmp/rearview-pick-XXXXXX", command[256], answer[64];
	int fd = mkstemp(tmpl);
	FILE *f, *result;
	char *end;
	unsigned long long index;
	bool answered;

	if (fd < 0)
		return rv_error_set(err, errno, "cannot create a temporary file: %s",
				    strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmpl);
		return rv_error_set(err, errno, "cannot write a temporary file");
	}
	for (size_t i = 0; i < nr; i++)
		fprintf(f, "%zu\t%s\n", i, lines[i]);
	if (fclose(f)) {
		unlink(tmpl);
		return rv_error_set(err, EIO, "cannot write a temporary file");
	}
	snprintf(command, sizeof(command), "fzf --delimiter='\t' --with-nth=2.. --prompt='%s' < %s",
		 q->fzf_prompt, tmpl);
	result = popen(command, "r");
	answered = result && fgets(answer, sizeof(answer), result);
	if (result)
		pclose(result);
	unlink(tmpl);
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
