/* signals.c: PT target. Signal handlers entered three ways, each at a place
 * fixed by the program rather than by timing: raise() (delivered on the way
 * out of a system call), a timer's SIGALRM kept blocked until sigsuspend()
 * waits for it, and a page fault (SIGSEGV on a store to a PROT_NONE page,
 * whose handler makes the page writable so the store is retried). Handlers are
 * entered by the kernel, not by a call: they are printed as
 * `entered FUNCTION N`; functions reached by calls as `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1_entries, alarm_entries, fault_entries;
static volatile sig_atomic_t note_calls;
static char *volatile fault_page;
static long page_size;

__attribute__((noinline)) static void note_signal(int sig)
{
	note_calls++;
	(void)sig;
}

__attribute__((noinline)) static void on_usr1(int sig)
{
	usr1_entries++;
	note_signal(sig);
}

__attribute__((noinline)) static void on_alarm(int sig)
{
	alarm_entries++;
	note_signal(sig);
}

/* Only the page this program protected may fault; anything else is a bug,
 * and the handler then restores the default action to crash for real. */
__attribute__((noinline)) static void on_fault(int sig, siginfo_t *info, void *context)
{
	char *addr = info->si_addr;

	fault_entries++;
	note_signal(sig);
	if (addr < fault_page || addr >= fault_page + page_size ||
	    mprotect(fault_page, (size_t)page_size, PROT_READ | PROT_WRITE))
		signal(SIGSEGV, SIG_DFL);
	(void)context;
}

static int install(int sig, void (*handler)(int))
{
	struct sigaction sa = { 0 };

	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

static int install_fault_handler(void)
{
	struct sigaction sa = { 0 };

	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSEGV, &sa, NULL);
}

/* SIGALRM is blocked from the start; a one-shot timer makes it pending and
 * sigsuspend() unblocks it only while waiting, so the handler always runs
 * from inside sigsuspend whatever the timer's timing under single-stepping. */
static int wait_for_alarm(const sigset_t *while_waiting)
{
	struct itimerval once = { .it_value = { .tv_sec = 0, .tv_usec = 1000 } };
	sig_atomic_t before = alarm_entries;

	if (setitimer(ITIMER_REAL, &once, NULL))
		return -1;
	while (alarm_entries == before)
		sigsuspend(while_waiting);
	return 0;
}

int main(int argc, char **argv)
{
	sigset_t alarm_only, unblocked;
	int raises = argc > 1 ? atoi(argv[1]) : 3; /* more for a longer trace */

	page_size = sysconf(_SC_PAGESIZE);
	sigemptyset(&alarm_only);
	sigaddset(&alarm_only, SIGALRM);
	if (sigprocmask(SIG_BLOCK, &alarm_only, &unblocked))
		return 2;
	sigdelset(&unblocked, SIGALRM);
	if (install(SIGUSR1, on_usr1) || install(SIGALRM, on_alarm) || install_fault_handler())
		return 2;

	for (int i = 0; i < raises; i++)
		raise(SIGUSR1);
	for (int i = 0; i < 2; i++)
		if (wait_for_alarm(&unblocked))
			return 2;
	for (int i = 0; i < 2; i++) {
		fault_page = mmap(NULL, (size_t)page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
		if (fault_page == MAP_FAILED)
			return 2;
		fault_page[i] = 1; /* faults once, then succeeds */
		munmap(fault_page, (size_t)page_size);
	}

	printf("entered on_usr1 %d\n", (int)usr1_entries);
	printf("entered on_alarm %d\n", (int)alarm_entries);
	printf("entered on_fault %d\n", (int)fault_entries);
	printf("count note_signal %d\n", (int)note_calls);
	return 0;
}
