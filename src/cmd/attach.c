/* attach.c: `rearview attach [OPTIONS] [-p PID[,PID...]]`: record running
 * processes until Ctrl-C or until they exit, and leave them running.
 *
 * Not here: the recording (session/session.h) or finding the processes
 * (record/target.h); this file wires them and reports errors.
 */
#define RV_LOG_DOMAIN "attach"
#include "cmd/commands.h"
#include "record/target.h"
#include "session/session.h"
#include "util/log.h"

int rv_cmd_attach(const struct rv_options *opts)
{
	struct rv_session session;
	struct rv_target target = { 0 };
	struct rv_error err = { 0 };
	pid_t picked;
	const pid_t *pids = opts->pids;
	size_t nr_pids = opts->nr_pids;
	int ret;

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
	} else if (!ret) {
		char comm[64];

		rv_target_comm(pids[0], comm, sizeof(comm));
		rv_note("recording %s [%d]%s; press Ctrl-C to stop and write the trace", comm,
			(int)pids[0], nr_pids > 1 ? " and others" : "");
		ret = rv_session_record(&session, &target, &err);
	}
	if (ret)
		rv_error_msg("%s", err.message);
	rv_target_end(&target, 0);
	rv_session_destroy(&session);
	return ret ? 1 : 0;
}
