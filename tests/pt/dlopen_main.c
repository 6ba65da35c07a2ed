/* dlopen_main.c: PT target. dlopen()s libptplugin.so (found through its
 * $ORIGIN run path), calls its function through the pointer dlsym() returns,
 * and dlclose()s it: code in a mapping that appears after the program started
 * and disappears before it ends. Prints its own call counts, and the plugin's,
 * as `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long through_plugin_calls;

typedef long (*plugin_fn)(long);
typedef unsigned long (*plugin_count_fn)(const char *);

__attribute__((noinline)) static long through_plugin(plugin_fn work, long x)
{
	through_plugin_calls++;
	return work(x);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 12;
	void *plugin = dlopen("libptplugin.so", RTLD_NOW | RTLD_LOCAL);
	plugin_fn work;
	plugin_count_fn calls_of;
	long x = 5;

	if (!plugin) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	work = (plugin_fn)dlsym(plugin, "plugin_work");
	calls_of = (plugin_count_fn)dlsym(plugin, "plugin_calls_of");
	if (!work || !calls_of)
		return 2;
	for (int i = 0; i < rounds; i++)
		x = through_plugin(work, x);
	printf("x %ld\n", x);
	printf("count through_plugin %lu\n", through_plugin_calls);
	printf("count plugin_work %lu\n", calls_of("plugin_work"));
	printf("count plugin_step %lu\n", calls_of("plugin_step"));
	dlclose(plugin);
	return 0;
}
