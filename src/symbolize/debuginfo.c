/* debuginfo.c: libdwfl's search for separate debug files, with the debug
 * directories of REARVIEW_DEBUG_DIRS, and without libdebuginfod unless
 * DEBUGINFOD_URLS asks for it; see debuginfo.h.
 *
 * elfutils 0.188's dwfl_standard_find_debuginfo ends its search with
 * debuginfod, and for that dlopens libdebuginfod (curl, gnutls, krb5, ...:
 * some 25 libraries, milliseconds of start-up) whether or not a server is
 * set; the client then answers "no server" at once. So when none is set,
 * find_locally does the rest of that search itself, step for step: by build
 * ID (libdwfl's own dwfl_build_id_find_debuginfo), then by name along the
 * debug path (search_path, libdwfl's find_debuginfo_in_path), then by name
 * again from the file's real path.
 */
#include "symbolize/debuginfo.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* libdwfl's debuginfo_path when none is given: the file's directory, its
 * .debug/ subdirectory, then /usr/lib/debug. */
#define DEFAULT_DEBUG_PATH ":.debug:/usr/lib/debug"

/* The libdwfl debuginfo_path for REARVIEW_DEBUG_DIRS: libdwfl's form, where
 * "" is the file's own directory, ".debug" a directory beside it, absolute
 * entries debug roots (by build ID and by path); as its default, with other
 * roots. NULL with errno 0 when the variable is unset or empty (libdwfl's
 * default), NULL with ENOMEM when out of memory. The caller frees it. */
static char *debug_dirs_path(void)
{
	const char *dirs = getenv(RV_DEBUG_DIRS_ENV);
	char *path;

	errno = 0;
	if (!dirs || !*dirs)
		return NULL;
	if (asprintf(&path, ":.debug:%s", dirs) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	return path;
}

/* ---- the search by name (libdwfl's find_debuginfo_in_path) ---- */

/* What one search by name looks for. */
struct name_search {
	Dwfl_Module *mod;
	/* Looking for the module's dwz file (the DWARF's .gnu_debugaltlink)
	 * rather than its separate debug file: libdwfl asks for it once the
	 * debug file is open, so the module's DWARF bias is known. */
	bool alt;
	const char *link;      /* .gnu_debuglink's or .gnu_debugaltlink's name; NULL: none */
	GElf_Word crc;	       /* .gnu_debuglink's CRC-32 of the debug file; 0: none */
	struct stat main_stat; /* the module's file, never taken for its own debug file */
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Opens dir/subdir/name (either may be NULL). Returns the descriptor, its
 * path in *found (malloc'd), or -1 with errno (ENOENT for the module's own
 * file under another name). */
static int try_open(const struct name_search *s, const char *dir, const char *subdir,
		    const char *name, char **found)
{
	struct stat st;
	char *path;
	int fd, ret;

	if (!dir && !subdir)
		ret = asprintf(&path, "%s", name);
	else if (!dir || !subdir)
		ret = asprintf(&path, "%s/%s", dir ? dir : subdir, name);
	else
		ret = asprintf(&path, "%s/%s/%s", dir, subdir, name);
	if (ret < 0) {
		errno = ENOMEM;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == s->main_stat.st_ino &&
	    st.st_dev == s->main_stat.st_dev) {
		close(fd);
		fd = -1;
		errno = ENOENT;
	}
	if (fd < 0) {
		int saved = errno;

		free(path);
		errno = saved;
		return -1;
	}
	*found = path;
	return fd;
}

/* The CRC-32 of fd's whole contents (zlib's is .gnu_debuglink's). */
static bool crc_matches(int fd, GElf_Word crc)
{
	unsigned char buf[16384];
	uLong sum = crc32(0, Z_NULL, 0);
	off_t at = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), at)) > 0) {
		sum = crc32(sum, buf, (uInt)n);
		at += n;
	}
	return n == 0 && (GElf_Word)sum == crc;
}

/* Whether fd's ELF file carries the build ID id[0..len). */
static bool build_id_matches(int fd, const void *id, ssize_t len)
{
	Elf *elf = dwelf_elf_begin(fd);
	const void *file_id;
	bool same = false;

	if (elf) {
		same = dwelf_elf_gnu_build_id(elf, &file_id) == len &&
		       memcmp(file_id, id, (size_t)len) == 0;
		elf_end(elf);
	}
	return same;
}

/* libdwfl's judgement of a file found by name: a dwz file must carry the
 * build ID its link names; a debug file, the module's build ID if the module
 * has one, else (when check) the CRC its link names. */
static bool is_valid(const struct name_search *s, int fd, bool check)
{
	const unsigned char *bits;
	const void *id;
	const char *name;
	Dwarf_Addr bias;
	GElf_Addr vaddr;
	ssize_t len;

	if (s->alt) {
		/* The DWARF is open (the premise of s->alt): this only reads it. */
		Dwarf *dw = dwfl_module_getdwarf(s->mod, &bias);

		len = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &name, &id) : -1;
		return len > 0 && build_id_matches(fd, id, len);
	}
	len = dwfl_module_build_id(s->mod, &bits, &vaddr);
	if (len > 0)
		return build_id_matches(fd, bits, len);
	return !check || crc_matches(fd, s->crc);
}

/* The next subdirectory to try under an absolute debug directory: subdir
 * without its first component ("usr/bin" after "/usr/bin", then "bin");
 * NULL after the last. */
static const char *next_subdir(const char *subdir)
{
	const char *slash = strchr(subdir, '/');

	return slash ? slash + 1 : NULL;
}

/* Looks for the file along one entry of the debug path: "" is the file's
 * own directory, a relative entry a subdirectory of it, an absolute entry a
 * debug root holding the file's directory tree, or for a dwz file its base
 * name (also in .dwz/). For a debug file, the subdirectory is then tried
 * with its leading components taken off one by one, and left out, as
 * libdwfl does. A leading '-' in the entry turns the CRC check off, '+' on.
 * file_dir is the file's directory (NULL: none), file_base its name, link
 * the name sought (base_too: link was made up, try file_base too). Returns
 * the descriptor and *found, or -1 with errno 0 when the entry holds no
 * valid file, or with errno when the search must stop. */
static int search_entry(const struct name_search *s, const char *entry, const char *file_dir,
			const char *file_base, const char *link, bool base_too, bool can_check,
			char **found)
{
	bool check = true, try_base = base_too;
	const char *dir = file_dir, *subdir = NULL, *name = link;
	int fd;

	if (*entry == '+' || *entry == '-')
		check = *entry++ == '+';
	check = check && can_check;
	if (*entry == '\0') {
		try_base = false;
	} else if (*entry == '/') {
		if (!s->alt && (!file_dir || file_dir[0] != '/'))
			goto nothing;
		dir = entry;
		if (s->alt)
			name = base_name(link);
		else if ((subdir = next_subdir(file_dir)) && !*subdir)
			goto nothing;
	} else {
		subdir = entry;
	}
	for (;;) {
		fd = try_open(s, dir, subdir, name, found);
		if (fd < 0 && try_base)
			fd = try_open(s, dir, subdir, file_base, found);
		if (fd >= 0)
			break;
		if (errno != ENOENT && errno != ENOTDIR)
			return -1;
		if (s->alt) {
			if (*entry != '\0' && *entry != '/')
				goto nothing;
			fd = try_open(s, dir, ".dwz", base_name(name), found);
			if (fd >= 0)
				break;
			if (errno != ENOENT && errno != ENOTDIR)
				return -1;
			goto nothing;
		}
		if (!subdir)
			goto nothing;
		subdir = next_subdir(subdir);
		if (subdir && !*subdir)
			goto nothing;
	}
	if (is_valid(s, fd, check))
		return fd;
	free(*found);
	*found = NULL;
	close(fd);
nothing:
	errno = 0;
	return -1;
}

/* Looks for file_name's debug file (or dwz file) by name along path.
 * Returns the descriptor and *found, or -1 with errno 0 when there is none,
 * or with errno on an error. */
static int search_path(const struct name_search *s, const char *path, const char *file_name,
		       char **found)
{
	const char *file_base = file_name ? base_name(file_name) : NULL, *link = s->link;
	char *made_up = NULL, *entries = NULL, *file_dir = NULL, *cursor, *entry;
	bool can_check = s->crc != 0;
	int fd = -1, saved;

	if (!link) {
		/* No .gnu_debuglink: NAME.debug, and NAME itself. */
		if (!file_base || s->alt)
			goto nothing;
		if (asprintf(&made_up, "%s.debug", file_base) < 0) {
			errno = ENOMEM;
			return -1;
		}
		link = made_up;
		can_check = false;
	}
	entries = strdup(path);
	if (file_base != file_name)
		file_dir = strndup(file_name, (size_t)(file_base - 1 - file_name));
	if (!entries || (file_base != file_name && !file_dir)) {
		errno = ENOMEM;
		goto out;
	}
	cursor = entries;
	while ((entry = strsep(&cursor, ":"))) {
		fd = search_entry(s, entry, file_dir, file_base, link, made_up != NULL, can_check,
				  found);
		if (fd >= 0 || errno)
			goto out;
	}
nothing:
	errno = 0;
out:
	saved = errno;
	free(made_up);
	free(entries);
	free(file_dir);
	errno = saved;
	return fd;
}

/* ---- the whole search ---- */

/* libdwfl's find_debuginfo callback: dwfl_standard_find_debuginfo's search
 * without its last step, debuginfod. */
static int find_locally(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink, GElf_Word crc,
			char **debuginfo_file_name)
{
	struct name_search s = { .mod = mod, .link = debuglink, .crc = crc };
	const unsigned char *bits;
	const char *main_name = NULL;
	Dwarf_Addr dwbias;
	GElf_Addr vaddr;
	char *path, *canon;
	int fd, saved;

	if (!mod)
		return -1;
	/* By build ID: if that finds a file, or fails other than by finding
	 * nothing, that is all. */
	if (dwfl_module_build_id(mod, &bits, &vaddr) > 0) {
		fd = dwfl_build_id_find_debuginfo(mod, NULL, NULL, 0, NULL, NULL, 0,
						  debuginfo_file_name);
		if (fd >= 0 || errno)
			return fd;
	}
	dwfl_module_info(mod, NULL, NULL, NULL, &dwbias, NULL, &main_name, NULL);
	s.alt = dwbias != (Dwarf_Addr)-1;
	if (!main_name)
		main_name = file_name;
	if (!main_name || stat(main_name, &s.main_stat) < 0)
		memset(&s.main_stat, 0, sizeof(s.main_stat));
	path = debug_dirs_path();
	if (!path && errno)
		return -1;
	fd = search_path(&s, path ? path : DEFAULT_DEBUG_PATH, file_name, debuginfo_file_name);
	if (fd < 0 && !errno && file_name) {
		/* A symlink's debug file may be named after its target. */
		canon = realpath(file_name, NULL);
		if (canon && strcmp(canon, file_name))
			fd = search_path(&s, path ? path : DEFAULT_DEBUG_PATH, canon,
					 debuginfo_file_name);
		free(canon);
	}
	saved = errno;
	free(path);
	errno = saved;
	return fd;
}

/* Whether the user asked for debuginfod (its client's own test). */
static bool debuginfod_wanted(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && *urls;
}

int rv_debuginfo_init(struct rv_debuginfo *d)
{
	memset(d, 0, sizeof(*d));
	d->callbacks.find_elf = dwfl_build_id_find_elf;
	d->callbacks.find_debuginfo =
		debuginfod_wanted() ? dwfl_standard_find_debuginfo : find_locally;
	d->callbacks.section_address = dwfl_offline_section_address;
	d->path = debug_dirs_path();
	if (!d->path && errno)
		return -ENOMEM;
	if (d->path)
		d->callbacks.debuginfo_path = &d->path;
	return 0;
}

void rv_debuginfo_destroy(struct rv_debuginfo *d)
{
	free(d->path);
	d->path = NULL;
	d->callbacks.debuginfo_path = NULL;
}
