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
 * Each is made so that a SIGKILL at any moment leaves it either absent or
 * with its record (rv_leftovers_create_file, rv_leftovers_create_dir):
 * - the partial trace is opened unnamed (O_TMPFILE in the output's
 *   directory: killed before it is named, the kernel frees it), given its
 *   record, and only then linked under its name;
 * - the capture directory is made under a staging name that is the record
 *   itself, RV_STAGING_PREFIX "PID.START.BOOT_ID.PID_NS.XXXXXX", its record
 *   file written in it, and only then renamed to rearview-XXXXXX
 *   (RENAME_NOREPLACE, never over another entry).
 *
 * A later run sweeps (rv_leftovers_sweep_*): it removes an entry only when
 * all of these hold: its name has the form rearview makes (rearview-XXXXXX
 * directories, .NAME.XXXXXX regular files, XXXXXX six letters or digits, or
 * a staging directory's name, exactly as rearview spells it for the owner it
 * names), it is not a symbolic link, it belongs to the sweeping process's
 * effective uid, it carries a well-formed owner record (for a staging
 * directory, its name), and that owner is gone. A staging directory is
 * removed only when it holds nothing but (maybe) its record file, a regular
 * file of that uid: that is all rearview ever puts in one. Anything else is
 * never touched, whatever its name.
 *
 * What is not covered: a filesystem that refuses O_TMPFILE (EOPNOTSUPP,
 * EINVAL; EISDIR from a kernel before 3.11) or RENAME_NOREPLACE (EINVAL;
 * ENOSYS before 3.15), and an unnamed file that cannot be linked (no /proc,
 * and AT_EMPTY_PATH refused without CAP_DAC_READ_SEARCH): there the entry
 * is made named (mkostemp, mkdtemp) and its record written right after, and
 * a SIGKILL between the two system calls leaves an entry without a record,
 * which no sweep removes. And a filesystem that refuses user extended
 * attributes: the partial trace is made without its record (the caller is
 * told), and one a killed run left stays.
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
#define RV_STAGING_PREFIX    "rearview-new."
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
 * through a symbolic link). rv_leftovers_create_dir uses it. */
int rv_leftovers_mark_dir(const char *dir, struct rv_error *err);

/* Attaches this process's record to the open file fd as RV_OWNER_XATTR.
 * A negative errno when the filesystem refuses it (ENOTSUP, EPERM...), with
 * err saying so; the file is usable either way. */
int rv_leftovers_mark_file(int fd, struct rv_error *err);

/* Creates a partial trace at template ("DIR/.NAME.XXXXXX"; its X's become
 * the name it gets), open for reading and writing (O_CLOEXEC), 0600 less the
 * umask, with this process's record: unnamed first, then marked, then linked
 * (see above); where DIR's filesystem refuses O_TMPFILE, or the link cannot
 * be made, by mkostemp and then the record. Returns the descriptor, or
 * -errno when nothing was made. The file is made even when the record
 * cannot be attached: unmarked then says why (its code is 0 otherwise). */
int rv_leftovers_create_file(char *template, struct rv_error *unmarked);

/* Creates a temporary capture directory PARENT/rearview-XXXXXX, 0700 less
 * the umask, holding this process's record RV_OWNER_FILE: under a staging
 * name first, renamed when the record is written (see above); where the
 * filesystem refuses RENAME_NOREPLACE, by mkdtemp and then the record. Its
 * path goes into out (size bytes). On an error nothing is left, out is
 * empty and err says why (the cause alone: the caller says what failed). */
int rv_leftovers_create_dir(const char *parent, char *out, size_t size, struct rv_error *err);

/* A staging directory's name for owner, with the six letters or digits
 * chars (not NUL-terminated): RV_STAGING_PREFIX "PID.START.BOOT_ID.PID_NS."
 * then chars, BOOT_ID "-" when unknown. The length, or 0 when it does not fit
 * in size bytes. */
size_t rv_leftovers_staging_name(const struct rv_owner *owner, const char *chars, char *buf,
				 size_t size);

/* Whether name is a staging directory's name, spelt exactly as
 * rv_leftovers_staging_name spells it for the owner it names (into out). */
bool rv_leftovers_parse_staging_name(const char *name, struct rv_owner *out);

/* For tests: makes O_TMPFILE opens (tmpfile_errno) and RENAME_NOREPLACE
 * renames (noreplace_errno) fail with these errors, as a filesystem that
 * refuses them would, until called again with 0 (as the filesystem says). */
void rv_leftovers_simulate_refusal(int tmpfile_errno, int noreplace_errno);

/* For tests: the XXXXXX the next names get (staging and final ones), six
 * letters or digits each from names (which must outlive their use), in
 * order; random ones once they are used up, or with NULL. */
void rv_leftovers_simulate_names(const char *names);

/* Called for each entry a sweep removed, with its path and its gone owner. */
typedef void (*rv_leftover_fn)(void *ctx, const char *path, const struct rv_owner *owner);

/* The commands' callback: one note per removal, "removed PATH, left by
 * rearview [PID], which is gone" (ctx unused). */
void rv_leftovers_note_removed(void *ctx, const char *path, const struct rv_owner *owner);

/* Removes the stale rearview-XXXXXX capture directories in dir (with all
 * they hold, never following a link out of them) and the stale staging
 * directories. Returns how many. */
size_t rv_leftovers_sweep_captures(const char *dir, rv_leftover_fn fn, void *ctx);

/* Removes the stale .NAME.XXXXXX partial traces in dir. Returns how many. */
size_t rv_leftovers_sweep_traces(const char *dir, rv_leftover_fn fn, void *ctx);

/* Both sweeps as a command runs them: the captures in rv_leftovers_tmpdir(),
 * the partial traces in the directory of output (NULL or "-": none). */
size_t rv_leftovers_sweep(const char *output, rv_leftover_fn fn, void *ctx);

#endif
