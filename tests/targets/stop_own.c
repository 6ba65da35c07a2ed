/* stop_own.c: a program with only rearview's stop indicator; see
 * stop_indicator.h. */
__attribute__((noinline)) void rearview_stop_indicator(void)
{
	__asm__ volatile("" ::: "memory");
}

#define INDICATOR rearview_stop_indicator
#include "stop_indicator.h"
