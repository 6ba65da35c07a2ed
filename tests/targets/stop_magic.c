/* stop_magic.c: a program with magic-trace's stop indicator (and rearview's
 * own, which '.' must not prefer); see stop_indicator.h. */
__attribute__((noinline)) void magic_trace_stop_indicator(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void rearview_stop_indicator(void)
{
	__asm__ volatile("" ::: "memory");
}

#define INDICATOR magic_trace_stop_indicator
#include "stop_indicator.h"
