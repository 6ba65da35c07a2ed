/* unwind_throw.cpp: a C++ target whose exceptions cross traced frames, for
 * the function tracer's return-site probes (a uretprobe on any of these
 * frames makes the C++ unwinder find no handler: std::terminate).
 *
 * Each round, catcher(i) calls level1 -> level2 -> level3 -> check(i), and
 * check throws on every third i: the exception unwinds check, level3,
 * level2 and level1 (which never return then) and is caught in catcher,
 * whose handler calls on_caught, the first traced call after the unwinding.
 * check's throw is unlikely, so GCC moves it to "check(int) [clone .cold]",
 * reached by a jump: part of check, not a function. scale is always called
 * with factor 7, so GCC makes "scale(int, int) [clone .constprop.0]" of it
 * (mk/unwind.mk checks both with nm). It prints
 *
 *   count F N     F was called N times (tests/support/program_counts.h)
 *   caught N      exceptions caught
 *   sum S         what the rounds computed (the same with or without tracing)
 *
 * and exits 0; a terminate handler prints "terminate" and exits 3, so that a
 * broken unwind is seen, not just a crash. Argument: the rounds (300).
 *
 * This is not a benchmark.
 */
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace {
unsigned long n_catcher, n_level1, n_level2, n_level3, n_check, n_on_caught, n_scale;
} // namespace

struct Failure {
	int code;
};

volatile long unwind_sink;

__attribute__((noinline)) int check(int v)
{
	n_check++;
	if (__builtin_expect(v % 3 == 0, 0))
		throw Failure{ v };
	return v + 1;
}

__attribute__((noinline)) int level3(int v)
{
	n_level3++;
	return check(v) * 2 + 1;
}

__attribute__((noinline)) int level2(int v)
{
	n_level2++;
	return level3(v) * 3 + 1;
}

__attribute__((noinline)) int level1(int v)
{
	n_level1++;
	return level2(v) * 5 + 1;
}

__attribute__((noinline)) void on_caught(int code)
{
	n_on_caught++;
	unwind_sink = unwind_sink + code;
}

__attribute__((noinline)) long catcher(int v)
{
	n_catcher++;
	try {
		return level1(v);
	} catch (const Failure &f) {
		on_caught(f.code);
		return -f.code;
	}
}

__attribute__((noinline)) static int scale(int v, int factor)
{
	n_scale++;
	return v * factor + (v >> 3);
}

static void on_terminate()
{
	std::printf("terminate\n");
	std::fflush(stdout);
	std::_Exit(3);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 300;
	long sum = 0;

	std::set_terminate(on_terminate);
	for (int i = 0; i < rounds; i++) {
		sum += catcher(i);
		sum += scale(i, 7);
	}
	std::printf("count catcher %lu\ncount level1 %lu\ncount level2 %lu\ncount level3 %lu\n"
		    "count check %lu\ncount on_caught %lu\nclone scale %lu\ncaught %lu\nsum %ld\n",
		    n_catcher, n_level1, n_level2, n_level3, n_check, n_on_caught, n_scale,
		    n_on_caught, sum);
	return 0;
}
