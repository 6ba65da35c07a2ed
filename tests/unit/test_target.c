/* test_target.c: telling kernel threads from processes, and refusing them
 * with a message that says what to do. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "record/target.h"

Test(target, kernel_threads_are_told_from_processes)
{
	/* pid 2 is kthreadd, the kernel's thread that starts the others */
	cr_assert(rv_target_is_kernel_thread(2));
	cr_assert_not(rv_target_is_kernel_thread(getpid()));
	cr_assert_not(rv_target_is_kernel_thread(1), "init is a process");
	/* beyond pid_max: no such process, nothing to refuse */
	cr_assert_not(rv_target_is_kernel_thread(0x7ffffff0));
}

Test(target, a_kernel_thread_among_the_pids_is_refused_by_its_name)
{
	pid_t pids[] = { getpid(), 2 };
	struct rv_error err = { 0 };

	cr_assert_eq(rv_target_refuse_kernel_threads(pids, 1, &err), 0, "%s", err.message);
	cr_assert_neq(rv_target_refuse_kernel_threads(pids, 2, &err), 0);
	cr_assert(strstr(err.message, "2 (kthreadd) is a kernel thread"), "%s", err.message);
	cr_assert(strstr(err.message, "--trace-include-kernel"), "%s", err.message);
}
