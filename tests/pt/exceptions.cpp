/* exceptions.cpp: PT target. C++ exceptions thrown four frames down and
 * caught in main: the unwinder (libgcc's, through its personality routine and
 * landing pads) leaves frames without returning from them. Prints its own
 * call counts as `count FUNCTION N`.
 *
 * libstdc++ and libgcc are linked statically (mk/pt-targets.mk): loading the
 * shared libstdc++ alone costs 1.5 million instructions, which single-stepping
 * cannot afford. Not a benchmark. */
#include <cstdio>
#include <cstdlib>

namespace {

struct thrown_depth {
	int depth;
};

unsigned long level1_calls, level2_calls, level3_calls, thrower_calls, cleanup_calls;

/* A destructor that runs during unwinding: a call made by the unwinder's
 * landing pad in a frame that never returns. */
struct cleanup {
	~cleanup();
};

} // namespace

extern "C" __attribute__((noinline)) void record_cleanup(void)
{
	cleanup_calls++;
}

cleanup::~cleanup()
{
	record_cleanup();
}

extern "C" __attribute__((noinline)) void thrower(int depth)
{
	thrower_calls++;
	if (depth % 3 != 0)
		throw thrown_depth{ depth };
}

extern "C" __attribute__((noinline)) void level3(int depth)
{
	level3_calls++;
	thrower(depth);
	__asm__ volatile("" ::: "memory"); /* keeps the call a call, not a jmp */
}

extern "C" __attribute__((noinline)) void level2(int depth)
{
	cleanup guard;

	level2_calls++;
	level3(depth);
}

extern "C" __attribute__((noinline)) void level1(int depth)
{
	level1_calls++;
	level2(depth);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 4;
	int caught = 0;

	for (int round = 1; round <= rounds; round++) {
		try {
			level1(round);
		} catch (const thrown_depth &e) {
			caught += e.depth > 0;
		}
	}
	std::printf("caught %d\n", caught);
	std::printf("count level1 %lu\n", level1_calls);
	std::printf("count level2 %lu\n", level2_calls);
	std::printf("count level3 %lu\n", level3_calls);
	std::printf("count thrower %lu\n", thrower_calls);
	std::printf("count record_cleanup %lu\n", cleanup_calls);
	return 0;
}
