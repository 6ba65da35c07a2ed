/* leftovers.c: owner records on what a run makes, and the sweep that
 * removes what a killed run left; see leftovers.h. */
#define RV_LOG_DOMAIN "leftovers"
#include "util/leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util/log.h"

#define BOOT_ID_PATH	 "/proc/sys/kernel/random/boot_id"
#define RECORD_MAX	 128 /* "rearview " + pid, start, boot id and pid ns, with room */
#define STAT_MAX	 4096
#define STAT_START_FIELD 22
#define TEMPLATE_CHARS	 6 /* mkdtemp's and mkstemp's XXXXXX */

/* Reads at most size - 1 bytes of path, NUL-terminated; the length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t used = 0;

	if (fd < 0)
		return -errno;
	while (used < size - 1) {
		ssize_t n = read(fd, buf + used, size - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	return (ssize_t)used;
}

static void read_boot_id(char *out)
{
	char buf[64];
	ssize_t n = read_small(BOOT_ID_PATH, buf, sizeof(buf));
	size_t len;

	out[0] = '\0';
	if (n <= 0)
		return;
	len = strcspn(buf, "\n");
	if (len > RV_OWNER_BOOT_ID_MAX)
		return;
	memcpy(out, buf, len);
	out[len] = '\0';
}

/* Field 22 (start time) and field 3 (state) of a /proc/PID/stat text. The
 * name in field 2 may hold spaces and parentheses: fields are counted from
 * its last ')'. */
static bool parse_stat(const char *text, unsigned long long *start, char *state)
{
	const char *p = strrchr(text, ')');
	int field = 2;

	if (!p)
		return false;
	p++;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		field++;
		if (field == 3)
			*state = *p;
		if (field == STAT_START_FIELD) {
			char *end;

			errno = 0;
			*start = strtoull(p, &end, 10);
			return !errno && end != p && (*end == ' ' || *end == '\n' || !*end);
		}
		while (*p && *p != ' ')
			p++;
	}
	return false;
}

/* The inode of process pid's pid namespace ("pid:[INODE]"); 0 when unknown. */
static unsigned long long read_pid_ns(pid_t pid)
{
	char path[64], link[64];
	unsigned long long inode;
	ssize_t n;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/pid");
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	if (sscanf(link, "pid:[%llu]", &inode) != 1)
		return 0;
	return inode;
}

int rv_owner_of(pid_t pid, struct rv_owner *out, struct rv_error *err)
{
	char path[64], text[STAT_MAX];
	ssize_t n;
	char state = '?';

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_small(path, text, sizeof(text));
	if (n < 0)
		return rv_error_set(err, (int)-n, "cannot read %s: %s", path, strerror((int)-n));
	if (!parse_stat(text, &out->start_ticks, &state))
		return rv_error_set(err, EINVAL, "cannot find the start time in %s", path);
	out->pid = pid;
	read_boot_id(out->boot_id);
	out->pid_ns = read_pid_ns(pid);
	return 0;
}

size_t rv_owner_format(const struct rv_owner *owner, char *buf, size_t size)
{
	int n = snprintf(buf, size, "rearview %d %llu %s %llu\n", (int)owner->pid,
			 owner->start_ticks, owner->boot_id[0] ? owner->boot_id : "-",
			 owner->pid_ns);

	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* Decimal digits at *p (at most max_digits) as a number no larger than
 * limit; advances *p past them. */
static bool parse_number(const char **p, const char *end, unsigned long long limit,
			 unsigned long long *out)
{
	unsigned long long value = 0;
	const char *q = *p;

	if (q == end || *q < '0' || *q > '9')
		return false;
	while (q < end && *q >= '0' && *q <= '9') {
		unsigned digit = (unsigned)(*q - '0');

		if (value > (limit - digit) / 10)
			return false;
		value = value * 10 + digit;
		q++;
	}
	*p = q;
	*out = value;
	return true;
}

bool rv_owner_parse(const char *text, size_t len, struct rv_owner *out)
{
	static const char magic[] = "rearview ";
	const char *p = text, *end = text + len, *id;
	unsigned long long pid, start, pid_ns;
	size_t id_len;

	if (!text || len < sizeof(magic) - 1 || memcmp(p, magic, sizeof(magic) - 1))
		return false;
	if (end[-1] == '\n')
		end--;
	p += sizeof(magic) - 1;
	if (!parse_number(&p, end, INT_MAX, &pid) || pid == 0 || p == end || *p++ != ' ')
		return false;
	if (!parse_number(&p, end, ULLONG_MAX, &start) || p == end || *p++ != ' ')
		return false;
	id = p;
	while (p < end && *p != ' ')
		p++;
	id_len = (size_t)(p - id);
	if (id_len == 0 || id_len > RV_OWNER_BOOT_ID_MAX || p == end || *p++ != ' ')
		return false;
	if (!parse_number(&p, end, ULLONG_MAX, &pid_ns) || p != end)
		return false;
	for (size_t i = 0; i < id_len; i++) {
		char c = id[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-'))
			return false;
	}
	memset(out, 0, sizeof(*out));
	out->pid = (pid_t)pid;
	out->start_ticks = start;
	out->pid_ns = pid_ns;
	if (!(id_len == 1 && id[0] == '-'))
		memcpy(out->boot_id, id, id_len);
	return true;
}

bool rv_owner_alive(const struct rv_owner *owner)
{
	char path[64], text[STAT_MAX], boot_id[RV_OWNER_BOOT_ID_MAX + 1];
	unsigned long long start, ns;
	char state = '?';
	ssize_t n;

	read_boot_id(boot_id);
	if (owner->boot_id[0] && boot_id[0] && strcmp(owner->boot_id, boot_id))
		return false; /* made before the last reboot */
	ns = read_pid_ns(0);
	if (owner->pid_ns && ns && owner->pid_ns != ns)
		return true; /* its pid means another process here */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)owner->pid);
	n = read_small(path, text, sizeof(text));
	if (n == -ENOENT || n == -ESRCH)
		return false;
	if (n < 0 || !parse_stat(text, &start, &state))
		return true; /* there, but it will not say: not provably gone */
	if (start != owner->start_ticks)
		return false;		     /* the pid went to another process */
	return state != 'Z' && state != 'X'; /* a dead one waiting to be reaped is gone */
}

const char *rv_leftovers_tmpdir(void)
{
	const char *tmp = getenv("TMPDIR");

	return tmp && *tmp ? tmp : "/tmp";
}

int rv_leftovers_mark_dir(const char *dir, struct rv_error *err)
{
	char path[PATH_MAX], record[RECORD_MAX];
	struct rv_owner self;
	size_t len;
	ssize_t written;
	int fd, ret;

	ret = rv_owner_of(getpid(), &self, err);
	if (ret)
		return ret;
	len = rv_owner_format(&self, record, sizeof(record));
	if (!len)
		return rv_error_set(err, EOVERFLOW, "the owner record does not fit");
	if (snprintf(path, sizeof(path), "%s/%s", dir, RV_OWNER_FILE) >= (int)sizeof(path))
		return rv_error_set(err, ENAMETOOLONG, "'%s': path too long", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return rv_error_set(err, errno, "cannot create '%s': %s", path, strerror(errno));
	written = write(fd, record, len);
	ret = written == (ssize_t)len ? 0 : written < 0 ? errno : EIO;
	if (close(fd) && !ret)
		ret = errno;
	if (ret) {
		unlink(path);
		return rv_error_set(err, ret, "cannot write '%s': %s", path, strerror(ret));
	}
	return 0;
}

int rv_leftovers_mark_file(int fd, struct rv_error *err)
{
	char record[RECORD_MAX];
	struct rv_owner self;
	size_t len;
	int ret = rv_owner_of(getpid(), &self, err);

	if (ret)
		return ret;
	len = rv_owner_format(&self, record, sizeof(record));
	if (!len)
		return rv_error_set(err, EOVERFLOW, "the owner record does not fit");
	if (fsetxattr(fd, RV_OWNER_XATTR, record, len, 0))
		return rv_error_set(err, errno, "cannot set the extended attribute %s: %s",
				    RV_OWNER_XATTR, strerror(errno));
	return 0;
}

/* ---- sweeping ---- */

static bool template_chars(const char *s)
{
	for (int i = 0; i < TEMPLATE_CHARS; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			return false;
	}
	return s[TEMPLATE_CHARS] == '\0';
}

/* rearview-XXXXXX */
static bool is_capture_name(const char *name)
{
	size_t prefix = strlen(RV_CAPTURE_PREFIX);

	return !strncmp(name, RV_CAPTURE_PREFIX, prefix) &&
	       strlen(name) == prefix + TEMPLATE_CHARS && template_chars(name + prefix);
}

/* .NAME.XXXXXX, NAME not empty */
static bool is_partial_trace_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] == '.' && len >= 3 + TEMPLATE_CHARS &&
	       name[len - TEMPLATE_CHARS - 1] == '.' && template_chars(name + len - TEMPLATE_CHARS);
}

/* The record in DIR/owner, when the file is ours, regular and well formed. */
static bool read_dir_owner(const char *dir, struct rv_owner *owner)
{
	char path[PATH_MAX], record[RECORD_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, RV_OWNER_FILE) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size <= 0 ||
	    st.st_size >= RECORD_MAX) {
		close(fd);
		return false;
	}
	n = read(fd, record, sizeof(record));
	close(fd);
	return n > 0 && rv_owner_parse(record, (size_t)n, owner);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (remove(path) && errno != ENOENT)
		rv_debug("cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

/* Tries try_remove on each entry of dir whose name matches and that belongs
 * to our effective uid (by lstat: a link is not followed); reports each one
 * it removed to fn. A path too long for PATH_MAX is skipped. */
static size_t sweep(const char *dir, bool (*matches)(const char *name),
		    bool (*try_remove)(const char *path, const struct stat *st,
				       struct rv_owner *owner),
		    rv_leftover_fn fn, void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t removed = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct rv_owner owner;
		struct stat st;

		if (!matches(de->d_name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		if (lstat(path, &st) || st.st_uid != geteuid())
			continue;
		if (try_remove(path, &st, &owner)) {
			removed++;
			if (fn)
				fn(ctx, path, &owner);
		}
	}
	closedir(d);
	return removed;
}

static bool remove_stale_capture(const char *path, const struct stat *st, struct rv_owner *owner)
{
	if (!S_ISDIR(st->st_mode) || !read_dir_owner(path, owner) || rv_owner_alive(owner))
		return false;
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return access(path, F_OK) != 0;
}

static bool remove_stale_trace(const char *path, const struct stat *st, struct rv_owner *owner)
{
	char record[RECORD_MAX];
	ssize_t n;

	if (!S_ISREG(st->st_mode))
		return false;
	n = lgetxattr(path, RV_OWNER_XATTR, record, sizeof(record));
	if (n <= 0 || !rv_owner_parse(record, (size_t)n, owner) || rv_owner_alive(owner))
		return false;
	return unlink(path) == 0;
}

size_t rv_leftovers_sweep_captures(const char *dir, rv_leftover_fn fn, void *ctx)
{
	return sweep(dir, is_capture_name, remove_stale_capture, fn, ctx);
}

size_t rv_leftovers_sweep_traces(const char *dir, rv_leftover_fn fn, void *ctx)
{
	return sweep(dir, is_partial_trace_name, remove_stale_trace, fn, ctx);
}

size_t rv_leftovers_sweep(const char *output, rv_leftover_fn fn, void *ctx)
{
	size_t removed = rv_leftovers_sweep_captures(rv_leftovers_tmpdir(), fn, ctx);
	char dir[PATH_MAX];
	const char *slash;

	if (!output || !*output || !strcmp(output, "-"))
		return removed;
	slash = strrchr(output, '/');
	if (!slash)
		return removed + rv_leftovers_sweep_traces(".", fn, ctx);
	if (slash == output)
		return removed + rv_leftovers_sweep_traces("/", fn, ctx);
	if ((size_t)(slash - output) >= sizeof(dir))
		return removed;
	memcpy(dir, output, (size_t)(slash - output));
	dir[slash - output] = '\0';
	return removed + rv_leftovers_sweep_traces(dir, fn, ctx);
}

void rv_leftovers_note_removed(void *ctx, const char *path, const struct rv_owner *owner)
{
	rv_note("removed %s, left by rearview [%d], which is gone", path, (int)owner->pid);
}
