/* attach.c: `rearview attach [OPTIONS] [-p PID[,PID...]] [-- COMMAND
 * [ARGS...]]`: record running processes until Ctrl-C, --duration, their
 * exit or COMMAND's, and leave them running. With COMMAND, rearview exits
 * with COMMAND's status once the trace is written and COMMAND has exited.
 *
 * Not here: the recording (session/session.h) or finding the processes
 * (record/target.h); this file wires them and reports errors.
 */
#define RV_LOG_DOMAIN "attach"
#include <stdio.h>

#include "cmd/commands.h"
#include "record/target.h"
#include "session/session.h"
#include "util/log.h"

/* What ends the recording, for the note that says how to stop it. */
static void note_recording(const struct rv_options *opts, const pid_t *pids, size_t nr_pids)
{
	char comm[64], until[256];

	rv_target_comm(pids[0], comm, sizeof(comm));
	if (opts->argc > 0)
		snprintf(until, sizeof(until), "while %s runs (Ctrl-C stops sooner)",
			 opts->argv[0]);
	else if (opts->duration_ns)
		snprintf(until, sizeof(until), "for %.3g s (Ctrl-C stops sooner)",
			 (double)opts->duration_ns / 1e9);
	else
		snprintf(until, sizeof(until), "; press Ctrl-C to stop and write the trace");
	rv_note("recording %s [%d]%s%s%s", comm, (int)pids[0], nr_pids > 1 ? " and others" : "",
		until[0] == ';' ? "" : " ", until);
}

int rv_cmd_attach(const struct rv_options *opts)
{
	struct rv_session session;
	struct rv_target target = { 0 }, command = { 0 };
	struct rv_error err = { 0 };
	pid_t picked;
	const pid_t *pids = opts->pids;
	size_t nr_pids = opts->nr_pids;
	bool with_command = opts->argc > 0;
	int ret, code = 0;

	/* before anything is set up: a kernel thread has nothing to record
	 * without the kernel */
	if (!opts->include_kernel && rv_target_refuse_kernel_threads(pids, nr_pids, &err)) {
		rv_error_msg("%s", err.message);
		return 1;
	}
	ret = rv_session_prepare(&session, opts, &err);
	if (!ret && nr_pids == 0) {
		ret = rv_target_pick(&picked, session.signal_fd, &err);
		pids = &picked;
		nr_pids = 1;
	}
	if (!ret)
		ret = rv_target_attach(&target, pids, nr_pids, &err);
	if (!ret && opts->dry_run) {
		ret = rv_session_dry_run(&session, NULL, pids[0], &err);
		with_command = false;
	} else if (!ret) {
		/* stopped at its first instruction until the recording is set up */
		if (with_command) {
			ret = rv_target_spawn(&command, opts->argv, &err);
			with_command = !ret;
			session.command = with_command ? &command : NULL;
		}
		if (!ret) {
			note_recording(opts, pids, nr_pids);
			ret = rv_session_record(&session, &target, &err);
		}
	}
	if (ret)
		rv_error_msg("%s", err.message);
	if (with_command && !command.released)
		rv_target_kill(&command);
	else if (with_command)
		rv_target_end(&command, session.stop_signal, session.signal_fd);
	rv_target_end(&target, 0, -1);
	rv_session_destroy(&session);
	if (ret)
		return 1;
	if (with_command && command.left_running) {
		code = 128 + command.left_running;
	} else if (with_command) {
		code = rv_exit_code_from_status(command.exit_status);
		if (code)
			rv_debug("the command exited with status %d", code);
	}
	return code;
}
