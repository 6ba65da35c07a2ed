/* run.c: `rearview run [OPTIONS] -- COMMAND [ARGS...]`: start a program,
 * record it until it exits or the user interrupts, write the trace, and exit
 * with the program's status. */
#define RV_LOG_DOMAIN "run"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "cmd/record.h"
#include "record/target.h"
#include "util/log.h"
#include "util/program.h"

/* The program got the terminal's Ctrl-C too (it shares our process group);
 * give it time to exit on its own, then pass the signal on once, for the case
 * where only rearview was signalled. */
static void wait_for_program(struct rv_target *t, int stop_signal)
{
	struct timespec pause = { 0, 50 * 1000 * 1000 };

	if (!t->spawned || !t->released || t->exited)
		return;
	if (stop_signal) {
		for (int waited_ms = 0; waited_ms < 2000 && !rv_target_poll_exit(t);
		     waited_ms += 50)
			nanosleep(&pause, NULL);
		if (!t->exited)
			kill(t->pids[0], stop_signal);
	}
	rv_target_wait(t);
}

int rv_cmd_run(const struct rv_options *opts)
{
	struct rv_session session;
	struct rv_target target = { 0 };
	struct rv_error err = { 0 };
	int ret, code;

	ret = rv_session_prepare(&session, opts, &err);
	if (!ret && opts->dry_run) {
		char exe[PATH_MAX];

		char found[PATH_MAX];

		ret = rv_program_find(opts->argv[0], found, sizeof(found), &err);
		if (!ret && !realpath(found, exe))
			snprintf(exe, sizeof(exe), "%s", found);
		if (!ret)
			ret = rv_session_dry_run(&session, exe, 0, &err);
		if (ret)
			rv_error_msg("%s", err.message);
		rv_session_cleanup(&session);
		return ret ? 1 : 0;
	}
	if (!ret)
		ret = rv_target_spawn(&target, opts->argv, &err);
	if (ret) {
		rv_error_msg("%s", err.message);
		rv_session_cleanup(&session);
		return 1;
	}
	ret = rv_session_record(&session, &target, &err);
	if (ret) {
		rv_error_msg("%s", err.message);
		if (!target.released)
			rv_target_kill(&target);
	}
	wait_for_program(&target, session.stop_signal);
	rv_session_cleanup(&session);
	if (ret)
		return 1;
	code = rv_exit_code_from_status(target.exit_status);
	if (code)
		rv_debug("the program exited with status %d", code);
	return code;
}
