/* deepstack.c: a stack deeper than a sample's copy. main alternates two
 * phases for the milliseconds given (default 2000): shallow_spin runs
 * straight from main; then descend(64) recurses 64 levels with 1 KiB of
 * locals each (64 KiB of stack, more than the 8 KiB a DWARF sample copies by
 * default) and spins in deep_spin at the bottom. Prints how many rounds of each it
 * made. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LEVELS 64

static volatile unsigned long sink;

/* Through the system call, not the vdso: a sample in the vdso unwinds
 * without CFI (frame pointers), which skips main, and this target's trace is
 * checked for exactly one main. */
static double now_ms(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void deep_spin(void)
{
	for (int i = 0; i < 2000000; i++)
		sink = sink * 31 + (unsigned long)i;
}

__attribute__((noinline)) void shallow_spin(void)
{
	for (int i = 0; i < 1000000; i++)
		sink = sink * 17 + (unsigned long)i;
}

/* 1 KiB of locals a level; the work after the call keeps it from being a
 * tail call. */
__attribute__((noinline)) unsigned long descend(int level, unsigned long seed)
{
	volatile unsigned char pad[1024];
	unsigned long below;

	for (size_t i = 0; i < sizeof(pad); i += 64)
		pad[i] = (unsigned char)(seed + i);
	pad[sizeof(pad) - 1] = (unsigned char)(seed >> 8);
	if (level == 0) {
		deep_spin();
		return pad[0];
	}
	below = descend(level - 1, seed * 3 + 1);
	return below + pad[sizeof(pad) - 1] + pad[0];
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 2000, start = now_ms();
	unsigned long deep = 0, shallow = 0;

	while (now_ms() - start < ms) {
		shallow_spin();
		shallow++;
		sink += descend(LEVELS, deep);
		deep++;
	}
	printf("deep rounds: %lu\nshallow rounds: %lu\n", deep, shallow);
	return 0;
}
