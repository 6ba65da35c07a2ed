/* touchpages.c: a program that makes a known number of page faults or
 * context switches, for --events.
 *
 * "pages N" (default): maps N fresh anonymous pages (no huge pages, so that
 * each page is a fault of its own), writes a byte to each in touch_pages(),
 * and prints "touched_pages N", "touch_faults F", the minor faults
 * getrusage counted during the touching (F is N give or take what the
 * kernel did around it), and "touch_ns T", how long the touching took.
 * "sleeps K": sleeps 1 ms K times in nap() and prints "naps K" and "main_tid T".
 * Either way it first prints "main_tid T" (its thread id).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void touch_pages(volatile char *pages, size_t n, size_t page)
{
	for (size_t i = 0; i < n; i++)
		pages[i * page] = (char)i;
}

__attribute__((noinline)) static void nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "pages";
	long count = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (count <= 0 || count > 1000000) {
		fprintf(stderr, "touchpages: a count from 1 to 1000000\n");
		return 2;
	}
	printf("main_tid %ld\n", (long)syscall(SYS_gettid));
	if (!strcmp(mode, "pages")) {
		char *pages = mmap(NULL, (size_t)count * page, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		long before, after;
		struct timespec t0, t1;

		if (pages == MAP_FAILED) {
			perror("touchpages: mmap");
			return 1;
		}
		madvise(pages, (size_t)count * page, MADV_NOHUGEPAGE);
		before = minor_faults();
		clock_gettime(CLOCK_MONOTONIC, &t0);
		touch_pages(pages, (size_t)count, page);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		after = minor_faults();
		printf("touched_pages %ld\ntouch_faults %ld\ntouch_ns %lld\n", count,
		       after - before,
		       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll +
			       (t1.tv_nsec - t0.tv_nsec));
		munmap(pages, (size_t)count * page);
	} else if (!strcmp(mode, "sleeps")) {
		for (long i = 0; i < count; i++)
			nap();
		printf("naps %ld\n", count);
	} else {
		fprintf(stderr, "touchpages: pages N or sleeps K\n");
		return 2;
	}
	return 0;
}
