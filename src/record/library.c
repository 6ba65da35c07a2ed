/* library.c: where a library named in a LIB:SYMBOL site or a LIB:PATTERN
 * selection is on disk; see library.h. */
#include "record/library.h"
#include "util/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const standard_lib_dirs[] = {
	"/lib/x86_64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu",
	"/lib64",
	"/usr/lib64",
	"/lib",
	"/usr/lib",
	"/usr/local/lib",
};

bool rv_library_name_matches(const char *base, const char *want)
{
	size_t len = strlen(want);

	return strncmp(base, want, len) == 0 && (base[len] == '\0' || base[len] == '.');
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

struct maps_wish {
	const char *want;
	char *path;
	size_t size;
};

static bool wished(void *ctx, uint64_t start, uint64_t end, const char *what)
{
	struct maps_wish *w = ctx;

	if (what[0] != '/' || !rv_library_name_matches(base_name(what), w->want) ||
	    strlen(what) >= w->size)
		return false;
	snprintf(w->path, w->size, "%s", what);
	return true;
}

static bool find_in_maps(pid_t pid, const char *want, char *path, size_t size)
{
	struct maps_wish w = { .want = want, .path = path, .size = size };

	return rv_proc_maps_find(pid, wished, &w);
}

struct search {
	char dirs[32][PATH_MAX];
	size_t nr_dirs;
	char needed[16][256];
	size_t nr_needed;
	unsigned char elf_class; /* the executable's: a library must match it */
	uint16_t machine;
};

static void add_dir(struct search *s, const char *dir, size_t len, const char *origin)
{
	if (s->nr_dirs == sizeof(s->dirs) / sizeof(s->dirs[0]) || len == 0 || len >= PATH_MAX)
		return;
	if (len >= 7 && !strncmp(dir, "$ORIGIN", 7))
		snprintf(s->dirs[s->nr_dirs], PATH_MAX, "%s%.*s", origin, (int)(len - 7), dir + 7);
	else
		snprintf(s->dirs[s->nr_dirs], PATH_MAX, "%.*s", (int)len, dir);
	s->nr_dirs++;
}

static void add_dir_list(struct search *s, const char *list, const char *origin)
{
	while (*list) {
		size_t len = strcspn(list, ":");

		add_dir(s, list, len, origin);
		list += len;
		if (*list == ':')
			list++;
	}
}

static void add_ld_so_conf_dirs(struct search *s)
{
	DIR *dir = opendir("/etc/ld.so.conf.d");
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char conf[PATH_MAX], line[PATH_MAX];
		size_t len = strlen(de->d_name);
		FILE *f;

		if (len < 5 || strcmp(de->d_name + len - 5, ".conf"))
			continue;
		snprintf(conf, sizeof(conf), "/etc/ld.so.conf.d/%s", de->d_name);
		f = fopen(conf, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n#")] = '\0';
			if (line[0] == '/')
				add_dir(s, line, strlen(line), "");
		}
		fclose(f);
	}
	closedir(dir);
}

/* The DT_NEEDED names of elf matching want, and its RUNPATH/RPATH. */
static void read_dynamic(Elf *elf, const char *want, struct search *s, const char *origin)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC || !shdr.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(data, (int)i, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH &&
			    dyn.d_tag != DT_RPATH)
				continue;
			name = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val);
			if (!name)
				continue;
			if (dyn.d_tag != DT_NEEDED)
				add_dir_list(s, name, origin);
			else if (rv_library_name_matches(name, want) &&
				 s->nr_needed < sizeof(s->needed) / sizeof(s->needed[0]) &&
				 strlen(name) < sizeof(s->needed[0]))
				snprintf(s->needed[s->nr_needed++], sizeof(s->needed[0]), "%s",
					 name);
		}
	}
}

/* Whether the file at path is an ELF file of the executable's class and
 * machine (a 64-bit program does not load /lib32's libraries). */
static bool same_kind(const struct search *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	GElf_Ehdr ehdr;
	bool same = false;

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &ehdr))
		same = ehdr.e_ident[EI_CLASS] == s->elf_class && ehdr.e_machine == s->machine;
	if (elf)
		elf_end(elf);
	close(fd);
	return same;
}

static bool find_in_dirs(const struct search *s, const char *name, char *path, size_t size)
{
	for (size_t i = 0; i < s->nr_dirs; i++) {
		int n = snprintf(path, size, "%s/%s", s->dirs[i], name);

		if (n > 0 && (size_t)n < size && !access(path, R_OK) && same_kind(s, path))
			return true;
	}
	return false;
}

int rv_find_library(const char *want, const char *exe, pid_t pid, const char *option,
		    const char *what, char *path, size_t size, struct rv_error *err)
{
	struct search *s;
	GElf_Ehdr ehdr;
	Elf *elf;
	char origin[PATH_MAX];
	bool found = false;
	int fd, ret;

	if (strchr(want, '/')) {
		if (access(want, R_OK))
			return rv_error_set(err, errno, "cannot read library '%s': %s", want,
					    strerror(errno));
		snprintf(path, size, "%s", want);
		return 0;
	}
	if (pid > 0 && find_in_maps(pid, want, path, size))
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return rv_error_set(err, ENOMEM, "out of memory");
	snprintf(origin, sizeof(origin), "%s", exe);
	if (strrchr(origin, '/'))
		*strrchr(origin, '/') = '\0';
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = rv_error_set(err, errno, "cannot open '%s': %s", exe, strerror(errno));
		free(s);
		return ret;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
		if (elf)
			elf_end(elf);
		close(fd);
		free(s);
		return rv_error_set(err, ENOEXEC, "'%s' is not an ELF file", exe);
	}
	read_dynamic(elf, want, s, origin);
	s->elf_class = ehdr.e_ident[EI_CLASS];
	s->machine = ehdr.e_machine;
	elf_end(elf);
	close(fd);
	add_ld_so_conf_dirs(s);
	for (size_t i = 0; i < sizeof(standard_lib_dirs) / sizeof(standard_lib_dirs[0]); i++)
		add_dir(s, standard_lib_dirs[i], strlen(standard_lib_dirs[i]), "");
	for (size_t i = 0; i < s->nr_needed && !found; i++)
		found = find_in_dirs(s, s->needed[i], path, size);
	if (!found) /* not a dependency: perhaps loaded with dlopen, by its file name */
		found = find_in_dirs(s, want, path, size);
	free(s);
	if (!found)
		return rv_error_set(err, ENOENT,
				    "cannot find library '%s': '%s' does not need it%s and it is "
				    "not in the library directories; give its path "
				    "(%s%s/path/to/%s:%s)",
				    want, exe, pid > 0 ? ", the process does not map it," : "",
				    option ? option : "", option ? " " : "", want, what);
	return 0;
}
