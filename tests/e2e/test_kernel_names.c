/* test_kernel_names.c: the kernel's names and gaps, as a user meets them:
 *
 * - --vmlinux on run, attach and decode: a file that is not ELF, or the
 *   image of another kernel (its build id against the running kernel's, or
 *   the one the capture recorded), is refused in one line that says what to
 *   give instead, before anything is recorded;
 * - a sampling run with --trace-include-kernel and a vmlinux of the running
 *   kernel (made here: this kernel's build id, and its kallsyms' functions
 *   under names of their own) names kernel frames from vmlinux;
 * - the real perf-4.14 capture decoded with --trace-include-kernel: the
 *   kernel's gap is reported once with what it cost and why, and images
 *   that cost nothing are not listed; without it, no kernel address reaches
 *   the summary or the trace.
 *
 * Not here: a PT capture through kernel and module code to a named trace
 * (unit: test_pt_capture.c, kernel_names_from_vmlinux_and_module).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"
#include "symbolize/kernel_syms.h"

#define CORPUS	    "../shared/pt-corpus"
#define PERF_4_14   CORPUS "/perf-4.14/perf.data.intel_pt-4.14"
#define NAME_PREFIX "vmlinux_"

static bool corpus_available(void)
{
	if (access(CORPUS "/README.md", R_OK) == 0)
		return true;
	cr_assert(!under_ci(), CORPUS " is missing: under CI=true the corpus must be there");
	fprintf(stderr, "skipped: " CORPUS " is not there (it is outside the repository)\n");
	return false;
}

static void expect_refusal(char *const argv[], int code, const char *says)
{
	struct proc_result *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, code, "exit %d, wanted %d: %s", r->exit_code, code, r->err);
	cr_assert_eq(count_lines(r->err), 1, "one line, got: %s", r->err);
	cr_assert(strstr(r->err, says), "'%s' does not say '%s'", r->err, says);
	free(r);
}

Test(kernel_names, vmlinux_refused_when_not_elf_or_another_kernel, .timeout = 120)
{
	const char *rv = build_path("rearview");
	char dir[256], not_elf[300], out[300], pid_text[32];
	int pipe_read;
	pid_t target;

	require_root("--trace-include-kernel");
	make_test_dir(dir, sizeof(dir));
	snprintf(not_elf, sizeof(not_elf), "%s/vmlinuz", dir);
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	FILE *f = fopen(not_elf, "w");
	cr_assert_not_null(f);
	fputs("a compressed kernel, say\n", f);
	fclose(f);

	/* rearview's own binary: an ELF file with a build id, of no kernel */
	char *run_not_elf[] = { (char *)rv,  "run",   "--trace-include-kernel",
				"--vmlinux", not_elf, "-o",
				out,	     "--",    "true",
				NULL };
	char *run_other[] = { (char *)rv,  "run",      "--trace-include-kernel",
			      "--vmlinux", (char *)rv, "-o",
			      out,	   "--",       "true",
			      NULL };
	char *run_no_scope[] = { (char *)rv, "run", "--vmlinux", (char *)rv, "-o",
				 out,	     "--",  "true",	 NULL };
	expect_refusal(run_not_elf, 1, "is not an ELF file");
	expect_refusal(run_other, 1, "is not the image of the running kernel");
	expect_refusal(run_no_scope, 2, "--trace-include-kernel");

	target = start_forever(&pipe_read);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target);
	char *attach_not_elf[] = { (char *)rv,	"attach", "-p", pid_text, "--trace-include-kernel",
				   "--vmlinux", not_elf,  "-o", out,	  NULL };
	char *attach_other[] = { (char *)rv,  "attach",	  "-p", pid_text, "--trace-include-kernel",
				 "--vmlinux", (char *)rv, "-o", out,	  NULL };
	expect_refusal(attach_not_elf, 1, "is not an ELF file");
	expect_refusal(attach_other, 1, "is not the image of the running kernel");
	cr_assert_eq(kill(target, 0), 0, "the target was left alone");
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	close(pipe_read);
	cr_assert(!file_exists(out), "nothing was recorded");

	if (corpus_available()) {
		/* the capture's HEADER_BUILD_ID gives its kernel 672679ce... */
		char *decode_not_elf[] = { (char *)rv,	"decode",  "--trace-include-kernel",
					   "--vmlinux", not_elf,   "-o",
					   out,		PERF_4_14, NULL };
		char *decode_other[] = { (char *)rv,  "decode",	  "--trace-include-kernel",
					 "--vmlinux", (char *)rv, "-o",
					 out,	      PERF_4_14,  NULL };
		expect_refusal(decode_not_elf, 1, "is not an ELF file");
		expect_refusal(decode_other, 1,
			       "is not the image of the kernel the capture recorded");
		expect_refusal(decode_other, 1, "672679ceaecf17b7a879e56c56802afc568aa242");
		cr_assert(!file_exists(out));
	}
	cleanup_dir(dir);
}

/* ---- a vmlinux of the running kernel ---- */

struct ksym {
	unsigned long long addr;
	char name[128];
};

/* The core kernel's text symbols from /proc/kallsyms, in file order
 * (address order for the core kernel); *stext: _stext's address. */
static struct ksym *read_kallsyms(size_t *nr, unsigned long long *stext)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	struct ksym *v = NULL;
	size_t cap = 0;
	char line[512];

	cr_assert_not_null(f, "/proc/kallsyms");
	*nr = 0;
	*stext = 0;
	while (fgets(line, sizeof(line), f)) {
		struct ksym k;
		char type;

		if (strchr(line, '[') ||
		    sscanf(line, "%llx %c %127s", &k.addr, &type, k.name) != 3 || !k.addr ||
		    (type != 'T' && type != 't'))
			continue;
		if (!strcmp(k.name, "_stext"))
			*stext = k.addr;
		if (*nr == cap) {
			cap = cap ? 2 * cap : 65536;
			v = realloc(v, cap * sizeof(*v));
			cr_assert_not_null(v);
		}
		v[(*nr)++] = k;
	}
	fclose(f);
	return v;
}

/* An ELF vmlinux with the running kernel's build id, a .text (no bytes:
 * SHT_NOBITS) over its text, and each of its functions as NAME_PREFIX +
 * its name (but _stext and _text, which place it), linked where it runs
 * (so the KASLR offset is 0). */
static void write_running_vmlinux(const char *path, const struct ksym *k, size_t nr,
				  unsigned long long stext, const uint8_t *id, size_t id_size)
{
	size_t str_cap = 64 + nr * (sizeof(NAME_PREFIX) + 64), str_len = 1;
	char *str = calloc(1, str_cap);
	Elf64_Sym *syms = calloc(nr + 2, sizeof(*syms));
	static const char shstr[] = "\0.text\0.note.gnu.build-id\0.strtab\0.symtab\0.shstrtab";
	uint8_t note[16 + RV_BUILD_ID_MAX];
	uint32_t words[3] = { 4, (uint32_t)id_size, NT_GNU_BUILD_ID };
	unsigned long long end = k[nr - 1].addr + 4096;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	cr_assert(str && syms && fd >= 0);
	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	Elf64_Ehdr *eh = elf64_newehdr(e);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_machine = EM_X86_64;
	eh->e_type = ET_EXEC;
	eh->e_version = EV_CURRENT;

	Elf_Scn *text = elf_newscn(e);
	Elf64_Shdr *sh = elf64_getshdr(text);
	Elf_Data *d = elf_newdata(text);
	d->d_size = end - stext;
	d->d_type = ELF_T_BYTE;
	sh->sh_name = 1;
	sh->sh_type = SHT_NOBITS;
	sh->sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	sh->sh_addr = stext;
	sh->sh_size = end - stext;

	memcpy(note, words, 12);
	memcpy(note + 12, "GNU", 4);
	memcpy(note + 16, id, id_size);
	Elf_Scn *notes = elf_newscn(e);
	d = elf_newdata(notes);
	d->d_buf = note;
	d->d_size = 16 + ((id_size + 3) & ~3ul);
	d->d_type = ELF_T_BYTE;
	d->d_align = 4;
	sh = elf64_getshdr(notes);
	sh->sh_name = 7;
	sh->sh_type = SHT_NOTE;
	sh->sh_flags = SHF_ALLOC;

	size_t n = 1;
	for (size_t i = 0; i < nr; i++) {
		if (k[i].addr < stext || k[i].addr >= end)
			continue;
		syms[n].st_name = (Elf64_Word)str_len;
		str_len += (size_t)sprintf(str + str_len, "%s%s",
					   strcmp(k[i].name, "_stext") && strcmp(k[i].name, "_text")
						   ? NAME_PREFIX
						   : "",
					   k[i].name) +
			   1;
		syms[n].st_value = k[i].addr;
		syms[n].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[n].st_shndx = (Elf64_Section)elf_ndxscn(text);
		n++;
	}
	Elf_Scn *strs = elf_newscn(e);
	d = elf_newdata(strs);
	d->d_buf = str;
	d->d_size = str_len;
	d->d_type = ELF_T_BYTE;
	sh = elf64_getshdr(strs);
	sh->sh_name = 26;
	sh->sh_type = SHT_STRTAB;
	Elf_Scn *symtab = elf_newscn(e);
	d = elf_newdata(symtab);
	d->d_buf = syms;
	d->d_size = n * sizeof(*syms);
	d->d_type = ELF_T_SYM;
	d->d_align = 8;
	sh = elf64_getshdr(symtab);
	sh->sh_name = 34;
	sh->sh_type = SHT_SYMTAB;
	sh->sh_link = (Elf64_Word)elf_ndxscn(strs);
	sh->sh_info = 1;
	sh->sh_entsize = sizeof(Elf64_Sym);
	Elf_Scn *shs = elf_newscn(e);
	d = elf_newdata(shs);
	d->d_buf = (void *)shstr;
	d->d_size = sizeof(shstr);
	d->d_type = ELF_T_BYTE;
	sh = elf64_getshdr(shs);
	sh->sh_name = 42;
	sh->sh_type = SHT_STRTAB;
	eh->e_shstrndx = (Elf64_Half)elf_ndxscn(shs);
	cr_assert_geq(elf_update(e, ELF_C_WRITE), 0, "%s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
	free(str);
	free(syms);
}

/* Sampling with the kernel in scope and --vmlinux: kernel frames are named
 * from vmlinux's symbol table (its names, not kallsyms'). */
Test(kernel_names, sampling_run_names_kernel_frames_from_vmlinux, .timeout = 180)
{
	const char *rv = build_path("rearview");
	char dir[256], vmlinux[300], out[300];
	uint8_t id[RV_BUILD_ID_MAX];
	size_t id_size, nr, named = 0, syscalls_named = 0, from_kallsyms = 0, raw = 0;
	unsigned long long stext;
	struct proc_result *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = NULL;
	char fxt_err[256];

	require_root("--trace-include-kernel");
	id_size = rv_kernel_running_build_id(id);
	cr_assert_gt(id_size, 0, "/sys/kernel/notes gives the running kernel's build id");
	struct ksym *k = read_kallsyms(&nr, &stext);
	cr_assert_gt(nr, 1000);
	cr_assert_neq(stext, 0);
	make_test_dir(dir, sizeof(dir));
	snprintf(vmlinux, sizeof(vmlinux), "%s/vmlinux", dir);
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	write_running_vmlinux(vmlinux, k, nr, stext, id, id_size);

	/* dd: read and write system calls, so the kernel shows in samples */
	char *argv[] = {
		(char *)rv,  "run",	     "--backend",    "sample", "--trace-include-kernel",
		"--vmlinux", vmlinux,	     "-o",	     out,      "--",
		"/bin/dd",   "if=/dev/zero", "of=/dev/null", "bs=1",   "count=3000000",
		NULL
	};
	run_process(argv, 150, r);
	cr_assert_eq(r->exit_code, 0, "exit %d: %s", r->exit_code, r->err);
	cr_assert_eq(fxt_read_file(out, &t, fxt_err, sizeof(fxt_err)), 0, "%s", fxt_err);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const char *name = t->spans[i].name;

		named += !strncmp(name, NAME_PREFIX, strlen(NAME_PREFIX));
		syscalls_named += !strcmp(name, NAME_PREFIX "do_syscall_64");
		from_kallsyms += !strcmp(name, "do_syscall_64");
		raw += !strncmp(name, "0xffff", 6);
	}
	cr_assert_gt(syscalls_named, 0, "do_syscall_64 is not named from vmlinux: %s", r->err);
	cr_assert_eq(from_kallsyms, 0, "do_syscall_64 named from kallsyms");
	cr_assert_eq(raw, 0, "%zu kernel frames not named", raw);
	fxt_trace_free(t);
	free(k);
	free(r);
	cleanup_dir(dir);
}

/* ---- the gaps of a real capture ---- */

Test(kernel_names, perf_4_14_gaps_explained, .timeout = 120)
{
	const char *rv = build_path("rearview");
	struct proc_result *r = calloc(1, sizeof(*r));
	char out[64], fxt_err[256];
	struct fxt_trace *t = NULL;

	if (!corpus_available()) {
		free(r);
		cr_skip_test(CORPUS " is not there");
		return;
	}
	snprintf(out, sizeof(out), "/tmp/rv-kernel-gaps-%d.fxt", getpid());
	char *with_kernel[] = { (char *)rv, "decode", "--trace-include-kernel", PERF_4_14, "-o",
				out,	    NULL };
	run_process(with_kernel, 120, r);
	cr_assert_eq(r->exit_code, 0, "exit %d: %s", r->exit_code, r->err);
	cr_assert(strstr(r->err, "[kernel.kallsyms] is missing: 5 decode errors and 67276 bytes"),
		  "%s", r->err);
	cr_assert(strstr(r->err, "no kcore_dir/kcore and no --vmlinux"), "the reason: %s", r->err);
	cr_assert(strstr(r->err, "give the recorded kernel's vmlinux with --vmlinux"), "%s",
		  r->err);
	cr_assert_null(strstr(r->err, " 0 decode errors and 0 bytes"), "a 0-byte line: %s", r->err);
	cr_assert_null(strstr(r->err, ".ko is missing"), "%s", r->err);
	cr_assert(strstr(r->err, "/lib64/ld-2.23.so is missing: 5 decode errors"), "%s", r->err);
	/* and why the kernel's code is named by address */
	cr_assert(strstr(r->err, "kernel names: no kallsyms (kcore_dir/kallsyms) and no --vmlinux"),
		  "%s", r->err);

	/* without the kernel in scope: its gap is said, and no address of it is
	 * in the summary or the trace */
	char *user_only[] = { (char *)rv, "decode", PERF_4_14, "-o", out, NULL };
	run_process(user_only, 120, r);
	cr_assert_eq(r->exit_code, 0, "exit %d: %s", r->exit_code, r->err);
	cr_assert(strstr(r->err, "--trace-include-kernel"), "%s", r->err);
	cr_assert_null(strstr(r->err, "0xffff"), "a kernel address: %s", r->err);
	cr_assert_eq(fxt_read_file(out, &t, fxt_err, sizeof(fxt_err)), 0, "%s", fxt_err);
	for (size_t i = 0; i < t->nr_spans; i++)
		cr_assert(strncmp(t->spans[i].name, "0xffff", 6), "a kernel address: %s",
			  t->spans[i].name);
	fxt_trace_free(t);
	unlink(out);
	free(r);
}
