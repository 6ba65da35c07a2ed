/* picker.h: letting the user choose one line of a list: `attach` without -p
 * (a process), --trigger ? and --filter ?,? (a function or a source line).
 *
 * fzf when it is installed and both stdin and stderr are terminals (its fuzzy
 * search over the whole list); else a numbered list on stderr, answered by a
 * number on stdin.
 *
 * Not here: what the lines are (target.c lists processes, probe_site.h
 * functions and lines).
 */
#ifndef RV_RECORD_PICKER_H
#define RV_RECORD_PICKER_H

#include <stddef.h>

#include "util/error.h"

struct rv_pick_question {
	const char *noun;	/* "process", "function": in "no process chosen" */
	const char *question;	/* ends the numbered list: "Record which process?" */
	const char *fzf_prompt; /* "process to record> " */
	const char *otherwise;	/* what to do instead, for errors: "use -p PID" */
};

/* Lets the user choose one of lines[0..nr) (nr >= 1); *chosen is its index.
 * stop_fd (a signalfd of the stop signals, or -1): a SIGINT, SIGTERM or
 * SIGHUP read from it while the list waits for an answer ends it (ECANCELED);
 * other signals it holds (SIGCHLD) are read and ignored. No answer (end of
 * input, fzf left with Esc) is ECANCELED; an answer that is not one of the
 * numbers, EINVAL. */
int rv_pick(const struct rv_pick_question *q, const char *const *lines, size_t nr, int stop_fd,
	    size_t *chosen, struct rv_error *err);

#endif
