/* test_fn_live.c: the status line of a function-tracing run
 * (session/fn_live.h), on a fake clock into a memory FILE: about once a
 * second, elapsed time, calls per second over the last interval and the
 * three functions with the most calls; rewritten in place, cut to the
 * terminal's width, cleared at the end, and never written when the output is
 * not a terminal.
 *
 * Not here: the backend that ticks it (session/fn_backend.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/fn_live.h"

#define S     1000000000ull
#define START (5 * S) /* the fake clock's time when recording began */

static const char *const NAMES[] = { "main", "fib", "work", "helper", "idle" };

struct live {
	struct rv_fn_live *l;
	FILE *out;
	char *text;
	size_t size;
};

static void open_live(struct live *t, bool terminal, unsigned columns)
{
	struct rv_fn_live_config config = {
		.is_terminal = terminal,
		.columns = columns,
		.nr_functions = 5,
		.names = NAMES,
		.start_ns = START,
	};
	struct rv_error err = { 0 };

	memset(t, 0, sizeof(*t));
	t->out = open_memstream(&t->text, &t->size);
	cr_assert_not_null(t->out);
	config.out = t->out;
	cr_assert_eq(rv_fn_live_create(&t->l, &config, &err), 0, "%s", err.message);
}

/* Everything written so far. */
static const char *written(struct live *t)
{
	fflush(t->out);
	return t->text;
}

static void close_live(struct live *t)
{
	rv_fn_live_free(t->l);
	fclose(t->out);
	free(t->text);
}

Test(fn_live, a_line_a_second_with_the_rate_and_the_hottest_three)
{
	struct live t;
	uint64_t calls[5] = { 1, 600000, 300000, 99999, 0 };

	open_live(&t, true, 200);
	cr_assert_not(rv_fn_live_due(t.l, START + S / 2));
	cr_assert_not(rv_fn_live_tick(t.l, START + S / 2, calls, 100));
	cr_assert_str_eq(written(&t), "", "nothing before a second has passed");
	cr_assert(rv_fn_live_due(t.l, START + S));
	cr_assert(rv_fn_live_tick(t.l, START + S, calls, 1000000));
	cr_assert_str_eq(written(&t), "\r\033[Krearview: recording 1 s: 1,000,000 calls/s; "
				      "hottest: fib 60%, work 30%, helper 10%");
	cr_assert_not(rv_fn_live_tick(t.l, START + S + S / 2, calls, 1000000));
	/* the next line: the rate over the last 2 s only */
	calls[0] = 3000000;
	cr_assert(rv_fn_live_tick(t.l, START + 3 * S, calls, 4000000));
	cr_assert(strstr(written(&t), "1,000,000 calls/s; hottest: fib 60%, work 30%, helper 10%"
				      "\r\033[Krearview: recording 3 s: 1,500,000 calls/s; "
				      "hottest: main 75%, fib 15%, work 8%"),
		  "%s", written(&t));
	rv_fn_live_finish(t.l);
	cr_assert(strstr(written(&t), "work 8%\r\033[K"), "finish clears the line");
	cr_assert_not(rv_fn_live_tick(t.l, START + 10 * S, calls, 5000000), "nothing after finish");
	close_live(&t);
}

Test(fn_live, minutes_after_a_minute)
{
	struct live t;

	open_live(&t, true, 200);
	cr_assert(rv_fn_live_tick(t.l, START + 754 * S, NULL, 754));
	cr_assert_str_eq(written(&t), "\r\033[Krearview: recording 12 min 34 s: 1 calls/s");
	close_live(&t);
}

Test(fn_live, without_counts_per_function_it_names_none)
{
	struct live t;

	open_live(&t, true, 200);
	cr_assert(rv_fn_live_tick(t.l, START + 2 * S, NULL, 5000));
	cr_assert_str_eq(written(&t), "\r\033[Krearview: recording 2 s: 2,500 calls/s");
	close_live(&t);
}

Test(fn_live, functions_never_called_are_not_hot)
{
	struct live t;
	uint64_t calls[5] = { 0, 0, 7, 0, 0 };

	open_live(&t, true, 200);
	cr_assert(rv_fn_live_tick(t.l, START + S, calls, 7));
	cr_assert_str_eq(written(&t), "\r\033[Krearview: recording 1 s: 7 calls/s; hottest: "
				      "work 100%");
	close_live(&t);
}

Test(fn_live, ties_go_to_the_first_function)
{
	struct live t;
	uint64_t calls[5] = { 5, 5, 5, 5, 5 };

	open_live(&t, true, 200);
	cr_assert(rv_fn_live_tick(t.l, START + S, calls, 25));
	cr_assert(strstr(written(&t), "hottest: main 20%, fib 20%, work 20%"), "%s", written(&t));
	close_live(&t);
}

Test(fn_live, never_wider_than_the_terminal)
{
	struct live t;
	uint64_t calls[5] = { 1, 600000, 300000, 99999, 0 };
	const char *text;

	open_live(&t, true, 40);
	cr_assert(rv_fn_live_tick(t.l, START + S, calls, 1000000));
	text = written(&t);
	cr_assert_eq(strlen(text), strlen("\r\033[K") + 39, "%s", text);
	cr_assert_str_eq(text, "\r\033[Krearview: recording 1 s: 1,000,000 call");
	close_live(&t);
}

Test(fn_live, nothing_at_all_when_not_a_terminal)
{
	struct live t;
	uint64_t calls[5] = { 1, 2, 3, 4, 5 };

	open_live(&t, false, 80);
	cr_assert_not(rv_fn_live_due(t.l, START + 10 * S));
	cr_assert_not(rv_fn_live_tick(t.l, START + 10 * S, calls, 15));
	rv_fn_live_finish(t.l);
	cr_assert_str_eq(written(&t), "");
	close_live(&t);
}

Test(fn_live, finish_without_a_line_writes_nothing)
{
	struct live t;

	open_live(&t, true, 80);
	rv_fn_live_finish(t.l);
	cr_assert_str_eq(written(&t), "");
	close_live(&t);
}

Test(fn_live, functions_need_names)
{
	struct rv_fn_live_config config = { .out = stderr, .nr_functions = 2 };
	struct rv_fn_live *l = NULL;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_fn_live_create(&l, &config, &err), -EINVAL);
	cr_assert_null(l);
	cr_assert(strstr(err.message, "without names"), "%s", err.message);
}
