/* attach.c: `rearview attach [OPTIONS] [-p PID[,PID...]]`: record running
 * processes until Ctrl-C or until they exit, and leave them running. */
#define RV_LOG_DOMAIN "attach"
#include <unistd.h>

#include "cmd/commands.h"
#include "cmd/record.h"
#include "record/target.h"
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
		ret = rv_target_pick(&picked, &err);
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
	for (size_t i = 0; i < target.nr_pids; i++)
		if (target.pidfds[i] >= 0)
			close(target.pidfds[i]);
	rv_session_cleanup(&session);
	return ret ? 1 : 0;
}
