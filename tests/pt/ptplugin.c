/* ptplugin.c: the shared library that the dlopen_main PT target loads at run
 * time (built as libptplugin.so next to it). It counts its own calls and
 * reports them by name, because dlclose() unmaps its counters. */
#include <string.h>

static unsigned long work_calls, step_calls;

__attribute__((noinline)) static long plugin_step(long x)
{
	step_calls++;
	return (x * 13 + 7) % 1000003;
}

long plugin_work(long x);
long plugin_work(long x)
{
	work_calls++;
	return plugin_step(plugin_step(x));
}

unsigned long plugin_calls_of(const char *function);
unsigned long plugin_calls_of(const char *function)
{
	if (!strcmp(function, "plugin_work"))
		return work_calls;
	if (!strcmp(function, "plugin_step"))
		return step_calls;
	return 0;
}
