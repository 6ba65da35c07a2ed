/* leftovers.c: owner records on what a run makes, and the sweep that
 * removes what a killed run left; see leftovers.h. */
#define RV_LOG_DOMAIN "leftovers"
#include "util/leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

#define BOOT_ID_PATH	 "/proc/sys/kernel/random/boot_id"
#define RECORD_MAX	 128 /* "rearview " + pid, start, boot id and pid ns, with room */
#define STAT_MAX	 4096
#define STAT_START_FIELD 22
#define TEMPLATE_CHARS	 6   /* mkdtemp's and mkstemp's XXXXXX */
#define NAME_TRIES	 100 /* names tried before giving up on EEXIST */

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

/* ---- making entries with their record ---- */

/* XXXXXX as mkdtemp and mkstemp fill it in, ending the string. */
static bool template_chars(const char *s)
{
	for (int i = 0; i < TEMPLATE_CHARS; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			return false;
	}
	return s[TEMPLATE_CHARS] == '\0';
}

/* rv_leftovers_simulate_refusal, rv_leftovers_simulate_names */
static int refused_tmpfile, refused_noreplace;
static const char *next_names;

void rv_leftovers_simulate_refusal(int tmpfile_errno, int noreplace_errno)
{
	refused_tmpfile = tmpfile_errno;
	refused_noreplace = noreplace_errno;
}

void rv_leftovers_simulate_names(const char *names)
{
	next_names = names && *names ? names : NULL;
}

/* TEMPLATE_CHARS letters and digits at out (not terminated), as mkstemp
 * picks them: from getrandom, or the clock, the pid and a counter when it
 * has nothing to give. A name taken already is tried again with others. */
static void random_chars(char *out)
{
	static const char chars[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	static atomic_uint counter;
	unsigned char bytes[TEMPLATE_CHARS];

	if (next_names && strlen(next_names) >= TEMPLATE_CHARS) {
		memcpy(out, next_names, TEMPLATE_CHARS);
		next_names += TEMPLATE_CHARS;
		return;
	}
	if (getrandom(bytes, sizeof(bytes), GRND_NONBLOCK) != (ssize_t)sizeof(bytes)) {
		struct timespec ts;
		uint64_t v;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = ((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		     ((uint64_t)getpid() << 12)) +
		    atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ULL;
		for (int i = 0; i < TEMPLATE_CHARS; i++)
			bytes[i] = (unsigned char)(v >> (8 * i));
	}
	for (int i = 0; i < TEMPLATE_CHARS; i++)
		out[i] = chars[bytes[i] % (sizeof(chars) - 1)];
}

/* The directory part of path ("." without a slash) into dir; false when it
 * does not fit. */
static bool dir_of(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!slash)
		return snprintf(dir, size, ".") < (int)size;
	len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= size)
		return false;
	memcpy(dir, path, len);
	dir[len] = '\0';
	return true;
}

/* The way where O_TMPFILE is refused: named first, marked after. */
static int create_named_file(char *template, struct rv_error *unmarked)
{
	int fd;

	memset(template + strlen(template) - TEMPLATE_CHARS, 'X', TEMPLATE_CHARS);
	fd = mkostemp(template, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rv_leftovers_mark_file(fd, unmarked);
	return fd;
}

/* Gives the unnamed file fd the name template with its X's replaced, new
 * ones while the name is taken. Through /proc/self/fd (what an unprivileged
 * process may link), else AT_EMPTY_PATH (which older kernels allow only
 * with CAP_DAC_READ_SEARCH). 0 or -errno. */
static int link_unnamed(int fd, char *template)
{
	char *x = template + strlen(template) - TEMPLATE_CHARS;
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (int i = 0; i < NAME_TRIES; i++) {
		random_chars(x);
		if (!linkat(AT_FDCWD, proc, AT_FDCWD, template, AT_SYMLINK_FOLLOW))
			return 0;
		if (errno == EEXIST)
			continue;
		if (!linkat(fd, "", AT_FDCWD, template, AT_EMPTY_PATH))
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int rv_leftovers_create_file(char *template, struct rv_error *unmarked)
{
	size_t len = strlen(template);
	char dir[PATH_MAX];
	int fd;

	rv_error_clear(unmarked);
	if (len < TEMPLATE_CHARS || strspn(template + len - TEMPLATE_CHARS, "X") != TEMPLATE_CHARS)
		return -EINVAL;
	if (!dir_of(template, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	if (refused_tmpfile) {
		fd = -1;
		errno = refused_tmpfile;
	} else {
		fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		/* a kernel before 3.11 opens the directory (EISDIR); a
		 * filesystem without it says EOPNOTSUPP, or EINVAL */
		if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)
			return create_named_file(template, unmarked);
		return -errno;
	}
	/* no name yet: a kill here leaves nothing */
	rv_leftovers_mark_file(fd, unmarked);
	if (!link_unnamed(fd, template))
		return fd;
	close(fd);
	rv_error_clear(unmarked);
	return create_named_file(template, unmarked);
}

size_t rv_leftovers_staging_name(const struct rv_owner *owner, const char *chars, char *buf,
				 size_t size)
{
	int n = snprintf(buf, size, RV_STAGING_PREFIX "%d.%llu.%s.%llu.%.*s", (int)owner->pid,
			 owner->start_ticks, owner->boot_id[0] ? owner->boot_id : "-",
			 owner->pid_ns, TEMPLATE_CHARS, chars);

	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

bool rv_leftovers_parse_staging_name(const char *name, struct rv_owner *out)
{
	size_t prefix = strlen(RV_STAGING_PREFIX), len = strlen(name);
	char record[RECORD_MAX], again[NAME_MAX + 1];
	struct rv_owner owner;
	size_t fields;

	if (len <= prefix + 1 + TEMPLATE_CHARS || strncmp(name, RV_STAGING_PREFIX, prefix) ||
	    name[len - TEMPLATE_CHARS - 1] != '.' || !template_chars(name + len - TEMPLATE_CHARS))
		return false;
	/* "PID.START.BOOT.NS" read as the record "rearview PID START BOOT NS" */
	fields = len - prefix - 1 - TEMPLATE_CHARS;
	if (fields + 9 >= sizeof(record))
		return false;
	memcpy(record, "rearview ", 9);
	for (size_t i = 0; i < fields; i++)
		record[9 + i] = name[prefix + i] == '.' ? ' ' : name[prefix + i];
	if (!rv_owner_parse(record, 9 + fields, &owner))
		return false;
	/* exactly the name rearview makes for that owner, nothing spelt
	 * another way (leading zeros, a space where a dot goes) */
	if (!rv_leftovers_staging_name(&owner, name + len - TEMPLATE_CHARS, again, sizeof(again)) ||
	    strcmp(again, name))
		return false;
	*out = owner;
	return true;
}

/* Removes a staging directory: its record file (if any), then itself. */
static void remove_staging(const char *path)
{
	char file[PATH_MAX];

	if (snprintf(file, sizeof(file), "%s/%s", path, RV_OWNER_FILE) < (int)sizeof(file))
		unlink(file);
	rmdir(path);
}

/* The way where RENAME_NOREPLACE is refused: mkdtemp, then the record. */
static int create_named_dir(const char *parent, char *out, size_t size, struct rv_error *err)
{
	int ret;

	if (snprintf(out, size, "%s/" RV_CAPTURE_PREFIX "XXXXXX", parent) >= (int)size)
		return rv_error_set(err, ENAMETOOLONG, "'%s': path too long", parent);
	if (!mkdtemp(out))
		return rv_error_set(err, errno, "%s", strerror(errno));
	ret = rv_leftovers_mark_dir(out, err);
	if (ret)
		rmdir(out);
	return ret;
}

int rv_leftovers_create_dir(const char *parent, char *out, size_t size, struct rv_error *err)
{
	char staging[PATH_MAX], name[NAME_MAX + 1], chars[TEMPLATE_CHARS];
	struct rv_owner self;
	int ret, i, e;

	out[0] = '\0';
	if (strlen(parent) + strlen("/" RV_CAPTURE_PREFIX) + TEMPLATE_CHARS >= size)
		return rv_error_set(err, ENAMETOOLONG, "'%s': path too long", parent);
	ret = rv_owner_of(getpid(), &self, err);
	if (ret)
		return ret;
	for (i = 0; i < NAME_TRIES; i++) {
		random_chars(chars);
		if (!rv_leftovers_staging_name(&self, chars, name, sizeof(name)) ||
		    snprintf(staging, sizeof(staging), "%s/%s", parent, name) >=
			    (int)sizeof(staging))
			return rv_error_set(err, ENAMETOOLONG, "'%s': path too long", parent);
		/* its name is its record: a kill from here on leaves a
		 * directory a later sweep can judge */
		if (!mkdir(staging, 0700))
			break;
		if (errno != EEXIST)
			return rv_error_set(err, errno, "%s", strerror(errno));
	}
	if (i == NAME_TRIES)
		return rv_error_set(err, EEXIST, "no free name");
	ret = rv_leftovers_mark_dir(staging, err);
	if (ret) {
		remove_staging(staging);
		return ret;
	}
	for (i = 0; i < NAME_TRIES; i++) {
		random_chars(chars);
		snprintf(out, size, "%s/" RV_CAPTURE_PREFIX "%.*s", parent, TEMPLATE_CHARS, chars);
		if (refused_noreplace) {
			errno = refused_noreplace;
		} else if (!renameat2(AT_FDCWD, staging, AT_FDCWD, out, RENAME_NOREPLACE)) {
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	e = i == NAME_TRIES ? EEXIST : errno;
	remove_staging(staging);
	out[0] = '\0';
	/* a filesystem without RENAME_NOREPLACE says EINVAL; a kernel before
	 * 3.15 ENOSYS */
	if (e == EINVAL || e == ENOSYS)
		return create_named_dir(parent, out, size, err);
	return rv_error_set(err, e, "%s", strerror(e));
}

/* ---- sweeping ---- */

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

/* One kind of leftover: the names rearview gives it, and how a stale one is
 * told and removed (true when it was). */
struct leftover_kind {
	bool (*matches)(const char *name);
	bool (*try_remove)(const char *path, const struct stat *st, struct rv_owner *owner);
};

/* Tries each entry of dir whose name one of the nr kinds matches (the kinds'
 * names never overlap) and that belongs to our effective uid (by lstat: a
 * link is not followed) on that kind's try_remove; reports each one it
 * removed to fn. A path too long for PATH_MAX is skipped. One pass over dir
 * for all kinds: reading a directory costs the kernel a hash of every name
 * in it, some 100 us for a shared /tmp of 200 entries. */
static size_t sweep(const char *dir, const struct leftover_kind *kinds, size_t nr,
		    rv_leftover_fn fn, void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t removed = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		const struct leftover_kind *kind = NULL;
		char path[PATH_MAX];
		struct rv_owner owner;
		struct stat st;

		for (size_t i = 0; i < nr && !kind; i++)
			if (kinds[i].matches(de->d_name))
				kind = &kinds[i];
		if (!kind)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		if (lstat(path, &st) || st.st_uid != geteuid())
			continue;
		if (kind->try_remove(path, &st, &owner)) {
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

static bool is_staging_name(const char *name)
{
	struct rv_owner owner;

	return rv_leftovers_parse_staging_name(name, &owner);
}

/* A staging directory whose owner is gone, holding nothing but (maybe) its
 * record file: anything else in it is not what rearview puts there. */
static bool remove_stale_staging(const char *path, const struct stat *st, struct rv_owner *owner)
{
	const char *name = strrchr(path, '/') + 1;
	struct dirent *de;
	struct stat in;
	bool only_record = true;
	DIR *d;
	int fd;

	if (!S_ISDIR(st->st_mode) || !rv_leftovers_parse_staging_name(name, owner) ||
	    rv_owner_alive(owner))
		return false;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	while (only_record && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		only_record = !strcmp(de->d_name, RV_OWNER_FILE) &&
			      !fstatat(fd, de->d_name, &in, AT_SYMLINK_NOFOLLOW) &&
			      S_ISREG(in.st_mode) && in.st_uid == geteuid();
	}
	if (only_record && unlinkat(fd, RV_OWNER_FILE, 0) && errno != ENOENT)
		only_record = false;
	closedir(d);
	return only_record && rmdir(path) == 0;
}

/* Every kind, the captures' first: rv_leftovers_sweep_captures takes the
 * first two, rv_leftovers_sweep_traces the last. */
static const struct leftover_kind kinds[] = {
	{ is_capture_name, remove_stale_capture },
	{ is_staging_name, remove_stale_staging },
	{ is_partial_trace_name, remove_stale_trace },
};

size_t rv_leftovers_sweep_captures(const char *dir, rv_leftover_fn fn, void *ctx)
{
	return sweep(dir, kinds, 2, fn, ctx);
}

size_t rv_leftovers_sweep_traces(const char *dir, rv_leftover_fn fn, void *ctx)
{
	return sweep(dir, kinds + 2, 1, fn, ctx);
}

size_t rv_leftovers_sweep(const char *output, rv_leftover_fn fn, void *ctx)
{
	const char *tmp = rv_leftovers_tmpdir();
	char dir[PATH_MAX];

	if (!output || !*output || !strcmp(output, "-") || !dir_of(output, dir, sizeof(dir)))
		return rv_leftovers_sweep_captures(tmp, fn, ctx);
	/* the output in TMPDIR itself, spelled as TMPDIR is: one pass */
	if (!strcmp(dir, tmp))
		return sweep(tmp, kinds, 3, fn, ctx);
	return rv_leftovers_sweep_captures(tmp, fn, ctx) + rv_leftovers_sweep_traces(dir, fn, ctx);
}

void rv_leftovers_note_removed(void *ctx, const char *path, const struct rv_owner *owner)
{
	rv_note("removed %s, left by rearview [%d], which is gone", path, (int)owner->pid);
}
