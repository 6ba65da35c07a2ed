/* log.h: diagnostics on stderr for the user, by verbosity.
 *
 * Each .c file that logs defines RV_LOG_DOMAIN before including this header,
 * so that verbose lines say where they came from ("rearview[sample]: ...").
 * Library-like modules only use rv_debug; what the user must see is returned
 * as an rv_error and printed once by the command.
 */
#ifndef RV_UTIL_LOG_H
#define RV_UTIL_LOG_H

#include <stdbool.h>

#ifndef RV_LOG_DOMAIN
#define RV_LOG_DOMAIN "main"
#endif

/* 0: errors, warnings and notes; 1 (-v): debug; 2 (-vv): more debug. */
void rv_log_set_verbosity(int level);
int rv_log_verbosity(void);

void rv_log_print(int level, const char *domain, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define rv_error_msg(...) rv_log_print(0, NULL, "error: ", __VA_ARGS__)
#define rv_warn(...)	  rv_log_print(0, NULL, "warning: ", __VA_ARGS__)
#define rv_note(...)	  rv_log_print(0, NULL, "", __VA_ARGS__)
#define rv_debug(...)	  rv_log_print(1, RV_LOG_DOMAIN, "", __VA_ARGS__)
#define rv_debug2(...)	  rv_log_print(2, RV_LOG_DOMAIN, "", __VA_ARGS__)

#endif
