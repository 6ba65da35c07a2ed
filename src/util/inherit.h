/* inherit.h: what rearview changes of the process state it inherited, and
 * gives back to the programs it starts.
 *
 * rearview ignores SIGPIPE (a reader of its stderr or standard output that
 * went away is a failed write to report, or to shrug off for diagnostics,
 * never the end of rearview with its probes set and the trace unwritten),
 * and gives each of standard input, output and error that it was started
 * without a /dev/null (so that no file it opens becomes fd 2 and gets its
 * notes written into it). A traced program must not see either: it gets
 * SIGPIPE's disposition and the signal mask rearview started with, and the
 * /dev/null descriptors are close-on-exec.
 *
 * The state is the process's: rv_inherit_save runs once, first thing in
 * main, before any thread starts. Not here: the signals a session blocks
 * and reads through a signalfd (session/session.h), which rv_inherit_restore
 * undoes in a child all the same by restoring the whole mask.
 */
#ifndef RV_UTIL_INHERIT_H
#define RV_UTIL_INHERIT_H

/* Records SIGPIPE's disposition and the signal mask, then ignores SIGPIPE
 * and opens /dev/null (close-on-exec) on each closed fd of 0, 1 and 2. */
void rv_inherit_save(void);

/* In a forked child before it execs (async-signal-safe): SIGPIPE's
 * disposition (default, or ignored if it was) and the signal mask as
 * rv_inherit_save found them. Without rv_inherit_save (tests that start
 * targets themselves), SIGPIPE is left alone and the mask is emptied. */
void rv_inherit_restore(void);

#endif
