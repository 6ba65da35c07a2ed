/* fn_live.c: the status line of a function-tracing run; see fn_live.h. */
#include "session/fn_live.h"
#include "util/count_text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_COLUMNS 80
#define LINE_BYTES	1024

struct rv_fn_live {
	struct rv_fn_live_config config;
	uint64_t last_ns;    /* the last line's time, or the start */
	uint64_t last_total; /* calls at last_ns */
	bool shown;	     /* a line is on the terminal */
	bool finished;
};

int rv_fn_live_create(struct rv_fn_live **out, const struct rv_fn_live_config *config,
		      struct rv_error *err)
{
	struct rv_fn_live *l;

	*out = NULL;
	if (config->nr_functions && !config->names)
		return rv_error_set(err, EINVAL, "live status: %zu functions without names",
				    config->nr_functions);
	l = calloc(1, sizeof(*l));
	if (!l)
		return rv_error_set(err, ENOMEM, "out of memory");
	l->config = *config;
	if (!l->config.columns)
		l->config.columns = DEFAULT_COLUMNS;
	l->last_ns = config->start_ns;
	*out = l;
	return 0;
}

bool rv_fn_live_due(const struct rv_fn_live *l, uint64_t now_ns)
{
	return l->config.is_terminal && !l->finished && now_ns >= l->last_ns &&
	       now_ns - l->last_ns >= RV_FN_LIVE_INTERVAL_NS;
}

/* The indexes of the (up to) RV_FN_LIVE_HOTTEST functions with the most
 * calls, most first, ties to the lower index; functions with none are left
 * out. Returns how many. */
static size_t hottest(const uint64_t *calls, size_t n, size_t top[RV_FN_LIVE_HOTTEST])
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++) {
		size_t at = count;

		if (!calls[i])
			continue;
		while (at > 0 && calls[top[at - 1]] < calls[i])
			at--;
		if (at >= RV_FN_LIVE_HOTTEST)
			continue;
		if (count < RV_FN_LIVE_HOTTEST)
			count++;
		memmove(&top[at + 1], &top[at], (count - 1 - at) * sizeof(top[0]));
		top[at] = i;
	}
	return count;
}

/* Appends to line (of size LINE_BYTES) at *used, cutting what does not fit. */
static void append(char *line, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void append(char *line, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= LINE_BYTES - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line + *used, LINE_BYTES - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used += (size_t)n < LINE_BYTES - *used ? (size_t)n : LINE_BYTES - 1 - *used;
}

/* Cuts line to at most max characters (a UTF-8 sequence is never split). */
static void cut(char *line, size_t max)
{
	size_t chars = 0, i;

	for (i = 0; line[i]; i++) {
		if (((unsigned char)line[i] & 0xc0) == 0x80)
			continue;
		if (chars++ == max)
			break;
	}
	line[i] = '\0';
}

static void format_line(const struct rv_fn_live *l, uint64_t now_ns, const uint64_t *calls,
			uint64_t total, char *line)
{
	uint64_t elapsed_s = (now_ns - l->config.start_ns) / 1000000000ull;
	uint64_t span = now_ns - l->last_ns, delta = total - l->last_total;
	size_t top[RV_FN_LIVE_HOTTEST], nr_top = 0, used = 0;
	char rate[32];

	if (total < l->last_total)
		delta = 0; /* counts restarted: no rate this time */
	rv_count_text(span ? (uint64_t)((double)delta * 1e9 / (double)span) : 0, rate,
		      sizeof(rate));
	if (elapsed_s >= 60)
		append(line, &used,
		       "rearview: recording %" PRIu64 " min %02" PRIu64 " s: ", elapsed_s / 60,
		       elapsed_s % 60);
	else
		append(line, &used, "rearview: recording %" PRIu64 " s: ", elapsed_s);
	append(line, &used, "%s calls/s", rate);
	if (calls)
		nr_top = hottest(calls, l->config.nr_functions, top);
	for (size_t i = 0; i < nr_top; i++)
		append(line, &used, "%s %s %.0f%%", i ? "," : "; hottest:", l->config.names[top[i]],
		       total ? 100.0 * (double)calls[top[i]] / (double)total : 0.0);
	cut(line, l->config.columns - 1);
}

bool rv_fn_live_tick(struct rv_fn_live *l, uint64_t now_ns, const uint64_t *calls, uint64_t total)
{
	char line[LINE_BYTES];

	if (!rv_fn_live_due(l, now_ns))
		return false;
	line[0] = '\0';
	format_line(l, now_ns, calls, total, line);
	fprintf(l->config.out, "\r\033[K%s", line);
	fflush(l->config.out);
	l->shown = true;
	l->last_ns = now_ns;
	l->last_total = total;
	return true;
}

void rv_fn_live_finish(struct rv_fn_live *l)
{
	if (!l || l->finished)
		return;
	l->finished = true;
	if (!l->shown)
		return;
	fprintf(l->config.out, "\r\033[K");
	fflush(l->config.out);
	l->shown = false;
}

void rv_fn_live_free(struct rv_fn_live *l)
{
	free(l);
}
