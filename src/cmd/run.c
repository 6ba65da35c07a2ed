/* run.c: `rearview run [OPTIONS] -- COMMAND [ARGS...]`: start a program,
 * record it until it exits or the user interrupts, write the trace, and exit
 * with the program's status.
 *
 * Not here: the recording (session/session.h) or the program's life
 * (record/target.h); this file wires them and reports errors.
 */
#define RV_LOG_DOMAIN "run"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/commands.h"
#include "record/target.h"
#include "session/session.h"
#include "util/log.h"
#include "util/program.h"

/* --dry-run: what would be recorded of the program execvp would run. */
static int dry_run(struct rv_session *session, const struct rv_options *opts, struct rv_error *err)
{
	char found[PATH_MAX], exe[PATH_MAX];
	int ret = rv_program_find(opts->argv[0], found, sizeof(found), err);

	if (ret)
		return ret;
	if (!realpath(found, exe))
		snprintf(exe, sizeof(exe), "%s", found);
	return rv_session_dry_run(session, exe, 0, err);
}

int rv_cmd_run(const struct rv_options *opts)
{
	struct rv_session session;
	struct rv_target target = { 0 };
	struct rv_error err = { 0 };
	int ret, code;

	ret = rv_session_prepare(&session, opts, &err);
	if (!ret && opts->dry_run) {
		ret = dry_run(&session, opts, &err);
		if (ret)
			rv_error_msg("%s", err.message);
		rv_session_destroy(&session);
		return ret ? 1 : 0;
	}
	if (!ret)
		ret = rv_target_spawn(&target, opts->argv, &err);
	if (ret) {
		rv_error_msg("%s", err.message);
		rv_session_destroy(&session);
		return 1;
	}
	ret = rv_session_record(&session, &target, &err);
	if (ret) {
		rv_error_msg("%s", err.message);
		if (!target.released)
			rv_target_kill(&target);
	}
	rv_target_end(&target, session.stop_signal, session.signal_fd);
	rv_session_destroy(&session);
	if (ret)
		return 1;
	/* a program left running has no status yet: the shell's for the
	 * signal that stopped the wait */
	if (target.left_running)
		return 128 + target.left_running;
	code = rv_exit_code_from_status(target.exit_status);
	if (code)
		rv_debug("the program exited with status %d", code);
	return code;
}
