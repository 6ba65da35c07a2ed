/* inherit.c: SIGPIPE, the signal mask and the standard descriptors rearview
 * inherited; see inherit.h. */
#include "util/inherit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

/* Set once by rv_inherit_save, before any thread starts; read-only after. */
static struct {
	bool saved;
	bool sigpipe_ignored;
	sigset_t mask;
} inherited;

void rv_inherit_save(void)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN }, before;

	sigprocmask(SIG_SETMASK, NULL, &inherited.mask);
	sigemptyset(&ignore.sa_mask);
	if (sigaction(SIGPIPE, &ignore, &before) == 0)
		inherited.sigpipe_ignored = before.sa_handler == SIG_IGN;
	/* lowest free descriptor first: each open lands on the closed fd */
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		if (open("/dev/null", O_RDWR | O_CLOEXEC) < 0)
			break;
	}
	inherited.saved = true;
}

void rv_inherit_restore(void)
{
	sigset_t none;

	if (!inherited.saved) {
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		return;
	}
	if (!inherited.sigpipe_ignored) {
		struct sigaction deflt = { .sa_handler = SIG_DFL };

		sigemptyset(&deflt.sa_mask);
		sigaction(SIGPIPE, &deflt, NULL);
	}
	sigprocmask(SIG_SETMASK, &inherited.mask, NULL);
}
