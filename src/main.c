/* main.c: rearview's entry point: parse the command line, dispatch to the
 * command, and turn a usage error into one line and exit status 2. */
#include <stdio.h>

#include "cli/options.h"
#include "cmd/commands.h"
#include "util/heap.h"
#include "util/inherit.h"
#include "util/log.h"

int main(int argc, char **argv)
{
	struct rv_options opts;
	struct rv_error err = { 0 };
	int status;

	/* before anything opens a file or starts a thread */
	rv_inherit_save();
	rv_heap_prepare();
	if (rv_options_parse(&opts, argc, argv, &err)) {
		rv_error_msg("%s", err.message);
		rv_options_destroy(&opts);
		return 2;
	}
	if (opts.version || opts.help) {
		if (opts.version)
			printf("rearview %s\n", RV_VERSION);
		else
			rv_options_print_help(opts.command, stdout);
		rv_options_destroy(&opts);
		return 0;
	}
	rv_log_set_verbosity(opts.verbose);
	switch (opts.command) {
	case RV_CMD_RUN:
		status = rv_cmd_run(&opts);
		break;
	case RV_CMD_ATTACH:
		status = rv_cmd_attach(&opts);
		break;
	case RV_CMD_DECODE:
		status = rv_cmd_decode(&opts);
		break;
	default:
		rv_options_print_help(RV_CMD_NONE, stderr);
		status = 2;
		break;
	}
	rv_options_destroy(&opts);
	return status;
}
