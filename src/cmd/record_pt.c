/* record_pt.c: TEMPORARY until the PT session lands (H4). */
#include "cmd/record_pt.h"

#include <errno.h>

int rv_session_describe_pt(struct rv_session *s, const struct rv_gating_sites *sites, pid_t pid,
			   struct rv_dry_run_plan *plan, struct rv_error *err)
{
	(void)s, (void)sites, (void)pid, (void)plan;
	return rv_error_set(err, ENOTSUP, "PT session not wired yet");
}

int rv_session_record_pt(struct rv_session *s, struct rv_target *target,
			 const struct rv_gating_sites *sites, struct rv_error *err)
{
	(void)s, (void)target, (void)sites;
	return rv_error_set(err, ENOTSUP, "PT session not wired yet");
}
