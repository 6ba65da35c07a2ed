/* fncalls.c: the target of the uprobe function tracer (--backend uprobe). It
 * counts its own calls and prints them, so that a trace of a whole run can be
 * checked call for call (tests/support/program_counts.h):
 *
 *   count F N          F was called N times
 *   entered F N        F was entered N times without a call (signal handler)
 *   syscall read N     read_chunks made N read() calls, 4096 bytes each
 *   syscall clock_nanosleep N   nap made N clock_nanosleep() calls ...
 *   sleep_ns NS        ... each asking for NS nanoseconds
 *   windows K          window_start..window_stop windows (--filter)
 *   elapsed_ns T       --loop: the loop's own wall-clock time
 *   thread_cpu_ns T    --loop: the CPU time of the thread that ran the loop
 *                      (CLOCK_THREAD_CPUTIME_ID: user and kernel, probe
 *                      handling included; what a busy machine's other work
 *                      does not inflate)
 *
 * The parts, each run when named in --only (default: all but loop):
 *   fib      fib(N) recursively                        --fib N (12)
 *   ops      apply_op through a table of function pointers, N rounds
 *            of op_add, op_sub, op_mul                 --ops N (10)
 *   jumps    jump_around: setjmp, then jump_deep1 -> jump_deep2 ->
 *            jump_deep3, which longjmps back over the three frames (they
 *            are called, never return); after_jump is then called from
 *            jump_around                               --jumps N (3)
 *   signals  signal_sender raises SIGUSR1 (raise, and kill to itself on
 *            every other round); on_signal calls in_handler  --signals N (3)
 *   threads  N threads (thread_main), each calling thread_work M times
 *                                                      --threads N (3) --thread-calls M (50)
 *   reads    write_file makes a file of N * 4096 bytes; read_chunks reads
 *            it in N read() calls                      --reads N (4)
 *   sleeps   nap sleeps NS with clock_nanosleep, N times
 *                                                      --sleeps N (2) --sleep-ns NS (5 ms)
 *   windows  outside_work, then N rounds of window_start, inside_work x W,
 *            window_stop, outside_work x W             --windows N (3) --window-calls W (4)
 *   loop     only tiny(), N times, timed: the benchmark  --loop N
 *
 * --wait FILE: prints "PID ready" and "address F 0xADDR" for every counted
 * function, then waits (without calling any of them) until FILE exists
 * before it runs the parts, so that a tracer can attach first. It gives up
 * (status 1) after 120 s, and dies with its parent.
 *
 * Built with -O2, frame pointers and no sibling calls (mk/fncalls.mk); every
 * counted function is noinline and external, so each call in the source is a
 * call in the binary, to the symbol of that name. Counters are atomic: the
 * threads share them. Not a benchmark of anything but --loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define COUNTED	     __attribute__((noinline, used))
#define CHUNK_SIZE   4096
#define WAIT_LIMIT_S 120

enum counter {
	C_FIB,
	C_APPLY_OP,
	C_OP_ADD,
	C_OP_SUB,
	C_OP_MUL,
	C_JUMP_AROUND,
	C_JUMP_DEEP1,
	C_JUMP_DEEP2,
	C_JUMP_DEEP3,
	C_AFTER_JUMP,
	C_SIGNAL_SENDER,
	C_ON_SIGNAL,
	C_IN_HANDLER,
	C_THREAD_MAIN,
	C_THREAD_WORK,
	C_WRITE_FILE,
	C_READ_CHUNKS,
	C_NAP,
	C_WINDOW_START,
	C_WINDOW_STOP,
	C_INSIDE_WORK,
	C_OUTSIDE_WORK,
	C_TINY,
	NR_COUNTERS
};

static unsigned long counters[NR_COUNTERS];
static unsigned long read_calls, sleep_calls;
static volatile unsigned long sink;
static jmp_buf jump_target;

static void counted(enum counter c)
{
	__atomic_fetch_add(&counters[c], 1, __ATOMIC_RELAXED);
}

/* Some work the compiler cannot drop, so that a call is not empty. */
static inline __attribute__((always_inline)) void work(unsigned long rounds)
{
	for (unsigned long i = 0; i < rounds; i++)
		sink = sink * 31 + i;
}

COUNTED unsigned long fib(unsigned n)
{
	counted(C_FIB);
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

COUNTED long op_add(long a, long b)
{
	counted(C_OP_ADD);
	return a + b;
}

COUNTED long op_sub(long a, long b)
{
	counted(C_OP_SUB);
	return a - b;
}

COUNTED long op_mul(long a, long b)
{
	counted(C_OP_MUL);
	return a * b;
}

/* volatile: the compiler must load each pointer and call through it. */
static long (*volatile const op_table[])(long, long) = { op_add, op_sub, op_mul };

COUNTED long apply_op(unsigned which, long a, long b)
{
	counted(C_APPLY_OP);
	return op_table[which % 3](a, b);
}

COUNTED void jump_deep3(int value)
{
	counted(C_JUMP_DEEP3);
	longjmp(jump_target, value);
}

COUNTED void jump_deep2(int value)
{
	counted(C_JUMP_DEEP2);
	jump_deep3(value);
	work(1);
}

COUNTED void jump_deep1(int value)
{
	counted(C_JUMP_DEEP1);
	jump_deep2(value);
	work(1);
}

COUNTED int after_jump(int value)
{
	counted(C_AFTER_JUMP);
	return value * 2;
}

/* The three frames under it are left by longjmp, then after_jump is called
 * from here: its span belongs under jump_around, not under jump_deep*. */
COUNTED int jump_around(int round)
{
	volatile int value;

	counted(C_JUMP_AROUND);
	value = setjmp(jump_target);
	if (value == 0)
		jump_deep1(round + 1);
	return after_jump(value);
}

COUNTED void in_handler(int sig)
{
	counted(C_IN_HANDLER);
	sink += (unsigned long)sig;
}

COUNTED void on_signal(int sig)
{
	counted(C_ON_SIGNAL);
	in_handler(sig);
}

/* The handler runs on the way out of the system call, inside this call. */
COUNTED void signal_sender(int round)
{
	counted(C_SIGNAL_SENDER);
	if (round % 2)
		kill(getpid(), SIGUSR1);
	else
		raise(SIGUSR1);
	work(1);
}

COUNTED void thread_work(unsigned long i)
{
	counted(C_THREAD_WORK);
	work(100 + i % 7);
}

/* arg: the number of calls of thread_work to make. */
COUNTED void *thread_main(void *arg)
{
	const unsigned long *calls = arg;

	counted(C_THREAD_MAIN);
	for (unsigned long i = 0; i < *calls; i++)
		thread_work(i);
	return NULL;
}

COUNTED int write_file(int fd, unsigned long chunks)
{
	char chunk[CHUNK_SIZE];

	counted(C_WRITE_FILE);
	memset(chunk, 'x', sizeof(chunk));
	for (unsigned long i = 0; i < chunks; i++)
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			return -1;
	return 0;
}

/* Exactly `chunks` read() calls, never one at the end of the file. */
COUNTED int read_chunks(int fd, unsigned long chunks)
{
	char chunk[CHUNK_SIZE];

	counted(C_READ_CHUNKS);
	for (unsigned long i = 0; i < chunks; i++) {
		ssize_t got = read(fd, chunk, sizeof(chunk));

		read_calls++;
		if (got != (ssize_t)sizeof(chunk))
			return -1;
		sink += (unsigned char)chunk[i % sizeof(chunk)];
	}
	return 0;
}

COUNTED int nap(long ns)
{
	struct timespec request = { ns / 1000000000, ns % 1000000000 }, left;
	int ret;

	counted(C_NAP);
	for (;;) {
		sleep_calls++;
		ret = clock_nanosleep(CLOCK_MONOTONIC, 0, &request, &left);
		if (ret != EINTR)
			return ret;
		request = left;
	}
}

COUNTED void window_start(void)
{
	counted(C_WINDOW_START);
}

COUNTED void window_stop(void)
{
	counted(C_WINDOW_STOP);
}

COUNTED void inside_work(void)
{
	counted(C_INSIDE_WORK);
	work(200);
}

COUNTED void outside_work(void)
{
	counted(C_OUTSIDE_WORK);
	work(200);
}

/* The benchmark's function: as small as a real call gets. */
COUNTED unsigned long tiny(unsigned long x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

static const struct {
	const char *name;
	void *address;
	enum counter counter;
	const char *part;
	bool entered; /* by the kernel, not by a call */
} functions[] = {
	{ "fib", fib, C_FIB, "fib", false },
	{ "apply_op", apply_op, C_APPLY_OP, "ops", false },
	{ "op_add", op_add, C_OP_ADD, "ops", false },
	{ "op_sub", op_sub, C_OP_SUB, "ops", false },
	{ "op_mul", op_mul, C_OP_MUL, "ops", false },
	{ "jump_around", jump_around, C_JUMP_AROUND, "jumps", false },
	{ "jump_deep1", jump_deep1, C_JUMP_DEEP1, "jumps", false },
	{ "jump_deep2", jump_deep2, C_JUMP_DEEP2, "jumps", false },
	{ "jump_deep3", jump_deep3, C_JUMP_DEEP3, "jumps", false },
	{ "after_jump", after_jump, C_AFTER_JUMP, "jumps", false },
	{ "signal_sender", signal_sender, C_SIGNAL_SENDER, "signals", false },
	{ "on_signal", on_signal, C_ON_SIGNAL, "signals", true },
	{ "in_handler", in_handler, C_IN_HANDLER, "signals", false },
	{ "thread_main", thread_main, C_THREAD_MAIN, "threads", false },
	{ "thread_work", thread_work, C_THREAD_WORK, "threads", false },
	{ "write_file", write_file, C_WRITE_FILE, "reads", false },
	{ "read_chunks", read_chunks, C_READ_CHUNKS, "reads", false },
	{ "nap", nap, C_NAP, "sleeps", false },
	{ "window_start", window_start, C_WINDOW_START, "windows", false },
	{ "window_stop", window_stop, C_WINDOW_STOP, "windows", false },
	{ "inside_work", inside_work, C_INSIDE_WORK, "windows", false },
	{ "outside_work", outside_work, C_OUTSIDE_WORK, "windows", false },
	{ "tiny", tiny, C_TINY, "loop", false },
};

static const char *const parts[] = { "fib",   "ops",	"jumps",   "signals", "threads",
				     "reads", "sleeps", "windows", "loop" };

#define NR_FUNCTIONS (sizeof(functions) / sizeof(functions[0]))

struct config {
	unsigned fib;
	unsigned long ops, jumps, signals, threads, thread_calls, reads, sleeps, sleep_ns;
	unsigned long windows, window_calls;
	unsigned long loop;
	const char *only;
	const char *wait_file;
};

static bool wanted(const struct config *c, const char *part)
{
	const char *p = c->only;
	size_t len = strlen(part);

	if (!p)
		return strcmp(part, "loop") != 0;
	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == len && !strncmp(p, part, len))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static int run_threads(unsigned long n, unsigned long *calls)
{
	pthread_t threads[64];

	if (n > 64) {
		fprintf(stderr, "fncalls: at most 64 threads\n");
		return -1;
	}
	for (unsigned long i = 0; i < n; i++)
		if (pthread_create(&threads[i], NULL, thread_main, calls))
			return -1;
	for (unsigned long i = 0; i < n; i++)
		if (pthread_join(threads[i], NULL))
			return -1;
	return 0;
}

static int run_reads(unsigned long chunks)
{
	char path[] = "/tmp/fncalls-XXXXXX";
	int fd = mkstemp(path), ret;

	if (fd < 0)
		return -1;
	unlink(path);
	ret = write_file(fd, chunks);
	if (!ret && lseek(fd, 0, SEEK_SET) != 0)
		ret = -1;
	if (!ret)
		ret = read_chunks(fd, chunks);
	close(fd);
	return ret;
}

static unsigned long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

static unsigned long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

static void run_loop(unsigned long n)
{
	unsigned long start = now_ns(), cpu_start = thread_cpu_ns(), elapsed, cpu;

	for (unsigned long i = 0; i < n; i++)
		sink += tiny(i);
	cpu = thread_cpu_ns() - cpu_start;
	elapsed = now_ns() - start;
	counters[C_TINY] = n; /* counted here: an increment in tiny would be timed too */
	printf("elapsed_ns %lu\n", elapsed);
	printf("thread_cpu_ns %lu\n", cpu);
}

/* Gives up after WAIT_LIMIT_S, and dies with its parent: a test that failed
 * before making the file leaves nothing running. */
static int wait_for(const char *file)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	unsigned long deadline = now_ns() + WAIT_LIMIT_S * 1000000000ul;
	pid_t parent = getppid();

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		return -1;
	printf("%d ready\n", (int)getpid());
	for (size_t i = 0; i < NR_FUNCTIONS; i++)
		printf("address %s %p\n", functions[i].name, functions[i].address);
	fflush(stdout);
	while (access(file, F_OK)) {
		if (errno != ENOENT || (nanosleep(&pause, NULL) && errno != EINTR))
			return -1;
		if (now_ns() > deadline) {
			fprintf(stderr, "fncalls: %s did not appear within %d s\n", file,
				WAIT_LIMIT_S);
			return -1;
		}
	}
	return 0;
}

static int run_parts(struct config *c)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return -1;
	if (wanted(c, "fib"))
		sink += fib(c->fib);
	if (wanted(c, "ops"))
		for (unsigned long i = 0; i < c->ops * 3; i++)
			sink += (unsigned long)apply_op((unsigned)i, (long)i, 3);
	if (wanted(c, "jumps"))
		for (unsigned long i = 0; i < c->jumps; i++)
			sink += (unsigned long)jump_around((int)i);
	if (wanted(c, "signals"))
		for (unsigned long i = 0; i < c->signals; i++)
			signal_sender((int)i);
	if (wanted(c, "threads") && run_threads(c->threads, &c->thread_calls))
		return -1;
	if (wanted(c, "reads") && run_reads(c->reads))
		return -1;
	if (wanted(c, "sleeps"))
		for (unsigned long i = 0; i < c->sleeps; i++)
			if (nap((long)c->sleep_ns))
				return -1;
	if (wanted(c, "windows")) {
		outside_work();
		for (unsigned long i = 0; i < c->windows; i++) {
			window_start();
			for (unsigned long j = 0; j < c->window_calls; j++)
				inside_work();
			window_stop();
			for (unsigned long j = 0; j < c->window_calls; j++)
				outside_work();
		}
	}
	if (wanted(c, "loop"))
		run_loop(c->loop);
	return 0;
}

/* The counts of the functions of the parts that ran. */
static void print_counts(const struct config *c)
{
	for (size_t i = 0; i < NR_FUNCTIONS; i++) {
		unsigned long n =
			__atomic_load_n(&counters[functions[i].counter], __ATOMIC_RELAXED);

		if (wanted(c, functions[i].part))
			printf("%s %s %lu\n", functions[i].entered ? "entered" : "count",
			       functions[i].name, n);
	}
	if (wanted(c, "reads"))
		printf("syscall read %lu\n", read_calls);
	if (wanted(c, "sleeps")) {
		printf("syscall clock_nanosleep %lu\n", sleep_calls);
		printf("sleep_ns %lu\n", c->sleep_ns);
	}
	if (wanted(c, "windows"))
		printf("windows %lu\n", c->windows);
}

static int usage(void)
{
	fprintf(stderr, "usage: fncalls [--only PART,...] [--fib N] [--ops N] [--jumps N] "
			"[--signals N] [--threads N] [--thread-calls M] [--reads N] [--sleeps N] "
			"[--sleep-ns NS] [--windows N] [--window-calls W] [--loop N] "
			"[--wait FILE]\n"
			"parts: fib ops jumps signals threads reads sleeps windows loop\n");
	return 2;
}

/* Whether every name in an --only list is a part. */
static bool valid_parts(const char *list)
{
	while (*list) {
		size_t n = strcspn(list, ","), i;

		for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
			if (strlen(parts[i]) == n && !strncmp(list, parts[i], n))
				break;
		if (i == sizeof(parts) / sizeof(parts[0]))
			return false;
		list += n + (list[n] == ',');
	}
	return true;
}

static bool number_option(const char *arg, const char *value, const char *name, unsigned long *out)
{
	char *end;

	if (strcmp(arg, name))
		return false;
	if (!value)
		exit(usage());
	errno = 0;
	*out = strtoul(value, &end, 10);
	if (errno || *end || !*value)
		exit(usage());
	return true;
}

int main(int argc, char **argv)
{
	struct config c = { .fib = 12,
			    .ops = 10,
			    .jumps = 3,
			    .signals = 3,
			    .threads = 3,
			    .thread_calls = 50,
			    .reads = 4,
			    .sleeps = 2,
			    .sleep_ns = 5000000,
			    .windows = 3,
			    .window_calls = 4 };
	unsigned long fib_n = c.fib;
	bool loop = false;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(arg, "--only") && value)
			c.only = value;
		else if (!strcmp(arg, "--wait") && value)
			c.wait_file = value;
		else if (number_option(arg, value, "--loop", &c.loop))
			loop = true;
		else if (!number_option(arg, value, "--fib", &fib_n) &&
			 !number_option(arg, value, "--ops", &c.ops) &&
			 !number_option(arg, value, "--jumps", &c.jumps) &&
			 !number_option(arg, value, "--signals", &c.signals) &&
			 !number_option(arg, value, "--threads", &c.threads) &&
			 !number_option(arg, value, "--thread-calls", &c.thread_calls) &&
			 !number_option(arg, value, "--reads", &c.reads) &&
			 !number_option(arg, value, "--sleeps", &c.sleeps) &&
			 !number_option(arg, value, "--sleep-ns", &c.sleep_ns) &&
			 !number_option(arg, value, "--windows", &c.windows) &&
			 !number_option(arg, value, "--window-calls", &c.window_calls))
			return usage();
		i++;
	}
	if (fib_n > 40 || (c.only && !valid_parts(c.only)))
		return usage();
	c.fib = (unsigned)fib_n;
	if (loop && !c.only)
		c.only = "loop";
	if (c.wait_file && wait_for(c.wait_file))
		return 1;
	if (run_parts(&c)) {
		fprintf(stderr, "fncalls: failed: %s\n", strerror(errno));
		return 1;
	}
	print_counts(&c);
	return 0;
}
