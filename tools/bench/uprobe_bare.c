/* uprobe_bare.c: the least a probed call can cost, with a BPF program that
 * only counts (bpf/bench_count.bpf.c): the yardsticks that bench/run holds
 * the function tracer's per-call cost to.
 *
 *   uprobe_bare [--exits uretprobe|sites|none] FUNCTION -- CMD [ARGS...]
 *
 * --exits uretprobe (the default): a uprobe at FUNCTION's entry and a
 * uretprobe (the kernel replaces the return address on the stack with its
 * trampoline's and traps there).
 * --exits sites: plain uprobes, at FUNCTION's entry and at every instruction
 * that leaves it, found by decoding its code with Zydis: each ret, and each
 * direct jump (conditional or not) to outside the function (a tail call). A
 * function with an indirect jump is refused: where it goes is not known, so
 * its exits are not either. The sites are printed on stderr before CMD runs:
 *   sites FUNCTION entry 0xOFF (INSN) exits 0xOFF (INSN) ...
 * with file offsets and each site's instruction; an entry that is a 5-byte
 * nop is one a 6.17+ kernel turns into a call to a trampoline instead of an
 * int3 trap. The function's range is its symbol's: an out-of-line part
 * (.cold) is not followed.
 * --exits none: the entry's plain uprobe alone (the sites are printed too),
 * to tell the entry's cost from the exit's.
 *
 * FUNCTION is a symbol of CMD's executable (.symtab, else .dynsym). CMD
 * starts held before exec, the probes are attached for its process, then it
 * runs; once it has exited, `entries N returns N` is printed on stderr (N
 * returns: exits hit) and uprobe_bare exits with its status. The probes follow
 * the one task (no inherit): enough for the single-threaded loop bench/run
 * times.
 *
 * Errors: a message on stderr naming the file or function and status 1 (2 for
 * usage). Not a test and not part of rearview.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Zydis/Zydis.h>
#include <bpf/libbpf.h>

#include "bench_count.skel.h"

#define MAX_EXITS     64
#define MAX_FUNC_SIZE (1u << 20) /* more than any function worth a bench */

/* A probe site: a file offset and what is there. */
struct site {
	uint64_t offset;
	char insn[48];
};

struct sites {
	struct site entry;
	struct site exits[MAX_EXITS];
	size_t nr_exits;
};

/* The child waits on gate[0] until the probes are in place; an EOF without a
 * byte means the parent gave up, and it exits without running CMD. */
static pid_t start_held(char **argv, int *release)
{
	int gate[2];
	pid_t pid;

	if (pipe(gate))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char go;

		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(126);
		close(gate[0]);
		execvp(argv[0], argv);
		fprintf(stderr, "uprobe_bare: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(gate[0]);
	*release = gate[1];
	return pid;
}

/* CMD's executable as exec will find it: a path, or the first match in PATH. */
static int find_program(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
		return access(out, X_OK) ? -errno : 0;
	}
	while (path && *path) {
		size_t n = strcspn(path, ":");

		if ((size_t)snprintf(out, size, "%.*s/%s", (int)n, path, name) < size &&
		    !access(out, X_OK))
			return 0;
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

/* The defined FUNC symbol called name in elf's .symtab, else its .dynsym. */
static bool find_symbol(Elf *elf, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn;

	for (int pass = 0; pass < 2; pass++) {
		Elf64_Word want = pass ? SHT_DYNSYM : SHT_SYMTAB;

		scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *data;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || !sh.sh_entsize)
				continue;
			data = elf_getdata(scn, NULL);
			for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				const char *s;

				if (!gelf_getsym(data, (int)i, &sym) ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
				    sym.st_shndx == SHN_UNDEF || !sym.st_size)
					continue;
				s = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (s && !strcmp(s, name)) {
					*out = sym;
					return true;
				}
			}
		}
	}
	return false;
}

/* The file offset of [addr, addr + size) through the executable PT_LOAD
 * segment that holds all of it; -EFAULT when none does. */
static int code_offset(Elf *elf, uint64_t addr, uint64_t size, uint64_t *offset)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (addr >= ph.p_vaddr && addr - ph.p_vaddr <= ph.p_filesz &&
		    size <= ph.p_filesz - (addr - ph.p_vaddr)) {
			*offset = ph.p_offset + (addr - ph.p_vaddr);
			return 0;
		}
	}
	return -EFAULT;
}

static void describe(const ZydisDecodedInstruction *insn, const uint8_t *bytes, uint64_t offset,
		     struct site *out)
{
	size_t used;

	out->offset = offset;
	used = (size_t)snprintf(out->insn, sizeof(out->insn), "%s",
				ZydisMnemonicGetString(insn->mnemonic));
	if (insn->mnemonic == ZYDIS_MNEMONIC_NOP && used < sizeof(out->insn))
		snprintf(out->insn + used, sizeof(out->insn) - used, ", %u bytes%s", insn->length,
			 insn->length == 5 && bytes[0] == 0x0f ? ": optimizable" : "");
}

/* The entry and exits of code (size bytes at file offset base, link-time
 * address addr): see the header. */
static int decode_sites(const uint8_t *code, uint64_t size, uint64_t base, uint64_t addr,
			struct sites *out, char *why, size_t why_size)
{
	ZydisDecoder decoder;
	uint64_t at = 0;

	if (!ZYAN_SUCCESS(
		    ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
		snprintf(why, why_size, "cannot set up the instruction decoder (Zydis)");
		return -ENOMEM;
	}
	out->nr_exits = 0;
	while (at < size) {
		ZydisDecodedInstruction insn;
		bool exit = false;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, NULL, code + at,
								size - at, &insn))) {
			snprintf(why, why_size, "undecodable instruction at +0x%" PRIx64, at);
			return -EINVAL;
		}
		if (at == 0)
			describe(&insn, code, base, &out->entry);
		if (insn.meta.category == ZYDIS_CATEGORY_RET) {
			exit = true;
		} else if (insn.mnemonic == ZYDIS_MNEMONIC_JMP ||
			   insn.meta.category == ZYDIS_CATEGORY_COND_BR) {
			int64_t target;

			if (!insn.raw.imm[0].is_relative) {
				snprintf(why, why_size,
					 "indirect jump at +0x%" PRIx64 ": its exits are unknown",
					 at);
				return -EINVAL;
			}
			target = (int64_t)(at + insn.length) + insn.raw.imm[0].value.s;
			exit = target < 0 || (uint64_t)target >= size;
		}
		if (exit) {
			if (out->nr_exits == MAX_EXITS) {
				snprintf(why, why_size, "more than %d exits", MAX_EXITS);
				return -E2BIG;
			}
			describe(&insn, code + at, base + at, &out->exits[out->nr_exits++]);
		}
		at += insn.length;
	}
	if (!out->nr_exits) {
		snprintf(why, why_size, "no exit found in its %" PRIu64 " bytes at 0x%" PRIx64,
			 size, addr);
		return -ENOENT;
	}
	return 0;
}

/* FUNCTION's sites in the ELF file at path; a message in why on failure. */
static int find_sites(const char *path, const char *function, struct sites *out, char *why,
		      size_t why_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -EINVAL;
	uint8_t *code = NULL;
	struct stat st;
	GElf_Sym sym;
	uint64_t offset;
	Elf *elf = NULL;

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(why, why_size, "cannot open it: %s", strerror(errno));
		ret = -errno;
		goto out;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(why, why_size, "not an ELF file");
		goto out;
	}
	if (!find_symbol(elf, function, &sym)) {
		snprintf(why, why_size, "no function %s in its symbol tables", function);
		ret = -ENOENT;
		goto out;
	}
	if (sym.st_size > MAX_FUNC_SIZE || code_offset(elf, sym.st_value, sym.st_size, &offset) ||
	    offset > (uint64_t)st.st_size || sym.st_size > (uint64_t)st.st_size - offset) {
		snprintf(why, why_size,
			 "%s (0x%" PRIx64 ", %" PRIu64 " bytes) is not in the file's code",
			 function, (uint64_t)sym.st_value, (uint64_t)sym.st_size);
		ret = -EFAULT;
		goto out;
	}
	code = malloc(sym.st_size);
	if (!code || pread(fd, code, sym.st_size, (off_t)offset) != (ssize_t)sym.st_size) {
		snprintf(why, why_size, "cannot read %s's code", function);
		ret = -EIO;
		goto out;
	}
	ret = decode_sites(code, sym.st_size, offset, sym.st_value, out, why, why_size);
out:
	free(code);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ret;
}

static int attach_uretprobe(struct bench_count_bpf *skel, pid_t pid, const char *path,
			    const char *function)
{
	LIBBPF_OPTS(bpf_uprobe_opts, entry, .func_name = function, .retprobe = false);
	LIBBPF_OPTS(bpf_uprobe_opts, exit, .func_name = function, .retprobe = true);

	skel->links.count_entry =
		bpf_program__attach_uprobe_opts(skel->progs.count_entry, pid, path, 0, &entry);
	if (!skel->links.count_entry)
		return -errno;
	skel->links.count_return =
		bpf_program__attach_uprobe_opts(skel->progs.count_return, pid, path, 0, &exit);
	if (!skel->links.count_return)
		return -errno;
	return 0;
}

/* Plain uprobes: count_entry at the entry, count_return (a uretprobe
 * program only by its section name: the same program type) at every exit. */
static int attach_sites(struct bench_count_bpf *skel, pid_t pid, const char *path,
			const struct sites *sites, struct bpf_link **exits)
{
	LIBBPF_OPTS(bpf_uprobe_opts, plain, .retprobe = false);

	skel->links.count_entry = bpf_program__attach_uprobe_opts(
		skel->progs.count_entry, pid, path, (size_t)sites->entry.offset, &plain);
	if (!skel->links.count_entry)
		return -errno;
	for (size_t i = 0; i < sites->nr_exits; i++) {
		exits[i] = bpf_program__attach_uprobe_opts(skel->progs.count_return, pid, path,
							   (size_t)sites->exits[i].offset, &plain);
		if (!exits[i])
			return -errno;
	}
	return 0;
}

static void print_sites(const char *function, const struct sites *s)
{
	fprintf(stderr, "sites %s entry 0x%" PRIx64 " (%s) exits", function, s->entry.offset,
		s->entry.insn);
	for (size_t i = 0; i < s->nr_exits; i++)
		fprintf(stderr, " 0x%" PRIx64 " (%s)", s->exits[i].offset, s->exits[i].insn);
	fputc('\n', stderr);
}

static int usage(void)
{
	fprintf(stderr,
		"usage: uprobe_bare [--exits uretprobe|sites|none] FUNCTION -- CMD [ARGS...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct bpf_link *exits[MAX_EXITS] = { 0 };
	struct bench_count_bpf *skel;
	struct sites sites = { 0 };
	char program[4096], why[256];
	int release = -1, status = 0, ret, arg = 1;
	bool use_sites = false, entry_only = false;
	const char *function;
	pid_t pid;

	if (argc > 2 && !strcmp(argv[1], "--exits")) {
		entry_only = !strcmp(argv[2], "none");
		use_sites = entry_only || !strcmp(argv[2], "sites");
		if (!use_sites && strcmp(argv[2], "uretprobe"))
			return usage();
		arg = 3;
	}
	if (argc - arg < 3 || strcmp(argv[arg + 1], "--"))
		return usage();
	function = argv[arg];
	argv += arg + 2;
	ret = find_program(argv[0], program, sizeof(program));
	if (ret) {
		fprintf(stderr, "uprobe_bare: cannot find %s: %s\n", argv[0], strerror(-ret));
		return 2;
	}
	if (use_sites) {
		if (find_sites(program, function, &sites, why, sizeof(why))) {
			fprintf(stderr, "uprobe_bare: %s: %s\n", program, why);
			return 1;
		}
		print_sites(function, &sites);
		if (entry_only)
			sites.nr_exits = 0;
	}
	skel = bench_count_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "uprobe_bare: cannot load the BPF program: %s (run as root)\n",
			strerror(errno));
		return 1;
	}
	pid = start_held(argv, &release);
	if (pid < 0) {
		fprintf(stderr, "uprobe_bare: cannot start %s: %s\n", argv[0], strerror(errno));
		bench_count_bpf__destroy(skel);
		return 1;
	}
	ret = use_sites ? attach_sites(skel, pid, program, &sites, exits)
			: attach_uretprobe(skel, pid, program, function);
	if (ret || write(release, "x", 1) != 1) {
		if (ret)
			fprintf(stderr, "uprobe_bare: cannot attach to %s in %s: %s\n", function,
				program, strerror(-ret));
		close(release); /* the child exits without running CMD */
		waitpid(pid, &status, 0);
		status = 1 << 8;
		goto out;
	}
	close(release);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = 1 << 8;
			break;
		}
	fprintf(stderr, "entries %llu returns %llu\n", (unsigned long long)skel->bss->entries,
		(unsigned long long)skel->bss->returns);
out:
	for (size_t i = 0; i < MAX_EXITS; i++)
		bpf_link__destroy(exits[i]);
	bench_count_bpf__destroy(skel);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
