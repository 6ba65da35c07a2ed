/* leftovers.h: what a rearview killed by SIGKILL leaves behind, and how a
 * later run finds and removes it.
 *
 * A run that is killed cannot clean up: its temporary capture directory
 * ($TMPDIR/rearview-XXXXXX) and its partial trace (.NAME.XXXXXX next to the
 * output) stay. So each carries an owner record naming the process that
 * made it: the capture directory a file RV_OWNER_FILE in it, the partial
 * trace an extended attribute RV_OWNER_XATTR. The record is one line of
 * text, "rearview PID START BOOT_ID PID_NS\n": the pid, the process's start
 * time (/proc/PID/stat field 22, clock ticks since boot), the kernel's boot id
 * (/proc/sys/kernel/random/boot_id, "-" when unknown) and the inode of its
 * pid namespace (/proc/PID/ns/pid, 0 when unknown), so that a pid reused by
 * another process, or the same pid after a reboot, is not mistaken for the
 * owner, and a pid of another namespace (a container sharing the directory)
 * is not looked up in ours.
 *
 * A later run sweeps (rv_leftovers_sweep_*): it removes an entry only when
 * all of these hold: its name has the form rearview makes (rearview-XXXXXX
 * directories, .NAME.XXXXXX regular files, XXXXXX six characters), it is
 * not a symbolic link, it belongs to the sweeping process's effective uid,
 * it carries a well-formed owner record, and that owner is gone. Anything
 * else is never touched, whatever its name.
 *
 * What is not covered: the moment between creating a directory or file and
 * writing its record (two system calls back to back: a SIGKILL there leaves
 * an entry without a record, which no sweep removes), and a filesystem that
 * refuses user extended attributes (rv_leftovers_mark_file returns the
 * error; the caller goes on without the record).
 *
 * The sweeps report each removal through a callback; the one the commands
 * pass, rv_leftovers_note_removed, is the only thing here that prints.
 * Not here: removing what a run that is still alive made (session.c and the
 * trace writer do that on every exit path they control).
 */
#ifndef RV_UTIL_LEFTOVERS_H
#define RV_UTIL_LEFTOVERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/error.h"

#define RV_OWNER_FILE	     "owner"
#define RV_OWNER_XATTR	     "user.rearview.owner"
#define RV_CAPTURE_PREFIX    "rearview-"
#define RV_OWNER_BOOT_ID_MAX 40

struct rv_owner {
	pid_t pid;
	unsigned long long start_ticks;		/* /proc/PID/stat field 22 */
	char boot_id[RV_OWNER_BOOT_ID_MAX + 1]; /* "" when the kernel does not say */
	unsigned long long pid_ns;		/* its pid namespace's inode; 0: unknown */
};

/* The owner record of process pid as it runs now; an error when it is gone
 * or /proc cannot say. */
int rv_owner_of(pid_t pid, struct rv_owner *out, struct rv_error *err);

/* The record as text (no NUL counted) into buf of size bytes; the length,
 * or 0 when it does not fit. */
size_t rv_owner_format(const struct rv_owner *owner, char *buf, size_t size);

/* Parses len bytes of a record (the text rv_owner_format makes, a final
 * newline optional). False for anything else: other text, a pid that is
 * not positive, numbers out of range, a boot id too long. */
bool rv_owner_parse(const char *text, size_t len, struct rv_owner *out);

/* Whether the owner still runs: the boot id is this boot's and a process
 * with that pid has that start time (and is not a zombie). What cannot be
 * told counts as alive (it is not provably gone): a process that exists but
 * cannot be read, an owner in another pid namespace of this boot. */
bool rv_owner_alive(const struct rv_owner *owner);

/* The directory temporary captures go in: $TMPDIR when set and not empty,
 * else "/tmp". */
const char *rv_leftovers_tmpdir(void);

/* Writes this process's record into DIR/RV_OWNER_FILE (created 0600, never
 * through a symbolic link). */
int rv_leftovers_mark_dir(const char *dir, struct rv_error *err);

/* Attaches this process's record to the open file fd as RV_OWNER_XATTR.
 * A negative errno when the filesystem refuses it (ENOTSUP, EPERM...), with
 * err saying so; the file is usable either way. */
int rv_leftovers_mark_file(int fd, struct rv_error *err);

/* Called for each entry a sweep removed, with its path and its gone owner. */
typedef void (*rv_leftover_fn)(void *ctx, const char *path, const struct rv_owner *owner);

/* The commands' callback: one note per removal, "removed PATH, left by
 * rearview [PID], which is gone" (ctx unused). */
void rv_leftovers_note_removed(void *ctx, const char *path, const struct rv_owner *owner);

/* Removes the stale rearview-XXXXXX capture directories in dir (with all
 * they hold, never following a link out of them). Returns how many. */
size_t rv_leftovers_sweep_captures(const char *dir, rv_leftover_fn fn, void *ctx);

/* Removes the stale .NAME.XXXXXX partial traces in dir. Returns how many. */
size_t rv_leftovers_sweep_traces(const char *dir, rv_leftover_fn fn, void *ctx);

/* Both sweeps as a command runs them: the captures in rv_leftovers_tmpdir(),
 * the partial traces in the directory of output (NULL or "-": none). */
size_t rv_leftovers_sweep(const char *output, rv_leftover_fn fn, void *ctx);

#endif
