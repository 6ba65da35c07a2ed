/* commands.h: the entry point of each rearview command, called by main with
 * the parsed options. Each returns the process's exit code and has already
 * reported any error to the user. */
#ifndef RV_CMD_COMMANDS_H
#define RV_CMD_COMMANDS_H

#include "cli/options.h"

int rv_cmd_run(const struct rv_options *opts);
int rv_cmd_attach(const struct rv_options *opts);
int rv_cmd_decode(const struct rv_options *opts);

#endif
