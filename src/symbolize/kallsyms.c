/* kallsyms.c: parsing and searching the kernel's symbol list; see kallsyms.h.
 *
 * The whole file is read into memory (about 5 MiB on a distribution kernel)
 * and names are terminated in place, so loading costs one read, one pass and
 * one sort.
 */
#include "symbolize/kallsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FILE_SIZE (1ull << 30)
#define PAGE_SIZE_X86 4096ull

struct parsed_sym {
	struct rv_ksym sym;
	const char *module; /* NULL for the core kernel */
	uint32_t order;	    /* position in the file, for stable choices */
	bool global;
};

static int read_whole_file(const char *path, char **out, size_t *out_len, struct rv_error *err)
{
	size_t cap = 1 << 20, len = 0;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		return rv_error_set(err, e, "cannot open kernel symbols '%s': %s", path,
				    strerror(e));
	}
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return rv_error_set(err, ENOMEM, "out of memory reading '%s'", path);
	}
	for (;;) {
		ssize_t got;

		if (len == cap) {
			char *grown;

			if (cap >= MAX_FILE_SIZE) {
				free(buf);
				close(fd);
				return rv_error_set(
					err, EFBIG,
					"'%s' is larger than 1 GiB; is it really a kallsyms file?",
					path);
			}
			cap *= 2;
			grown = realloc(buf, cap + 1);
			if (!grown) {
				free(buf);
				close(fd);
				return rv_error_set(err, ENOMEM, "out of memory reading '%s'",
						    path);
			}
			buf = grown;
		}
		got = read(fd, buf + len, cap - len);
		if (got < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			close(fd);
			return rv_error_set(err, e, "cannot read kernel symbols '%s': %s", path,
					    strerror(e));
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool is_text_type(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static size_t leading_underscores(const char *name)
{
	size_t n = 0;

	while (name[n] == '_')
		n++;
	return n;
}

/* Address order; among aliases, the one a reader expects: global before local,
 * fewer leading underscores, then the first in the file. */
static int compare_parsed(const void *a, const void *b)
{
	const struct parsed_sym *x = a, *y = b;
	size_t ux, uy;

	if (x->sym.addr != y->sym.addr)
		return x->sym.addr < y->sym.addr ? -1 : 1;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	ux = leading_underscores(x->sym.name);
	uy = leading_underscores(y->sym.name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool same_module(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Parses one line in place; false when it is not a text symbol with an address. */
static bool parse_line(char *line, char *end, struct parsed_sym *out)
{
	uint64_t addr = 0;
	size_t digits = 0;
	char *p = line, *name, *module = NULL;
	char type;

	while (p < end && hex_value(*p) >= 0) {
		if (++digits > 16)
			return false;
		addr = addr << 4 | (uint64_t)hex_value(*p);
		p++;
	}
	if (!digits || end - p < 4 || p[0] != ' ' || p[2] != ' ')
		return false;
	type = p[1];
	if (!is_text_type(type) || addr == 0)
		return false;
	name = p + 3;
	p = name;
	while (p < end && *p != '\t' && *p != ' ')
		p++;
	if (p == name)
		return false;
	if (p < end) {
		*p++ = '\0';
		while (p < end && (*p == '\t' || *p == ' '))
			p++;
		if (p < end && *p == '[') {
			char *close = memchr(p, ']', (size_t)(end - p));

			if (close) {
				*close = '\0';
				module = p + 1;
			}
		}
	}
	out->sym.addr = addr;
	out->sym.size = 0;
	out->sym.name = name;
	out->sym.display = NULL;
	out->module = module;
	out->global = type == 'T' || type == 'W';
	return true;
}

int rv_kallsyms_load(struct rv_kallsyms *table, const char *path, struct rv_error *err)
{
	struct parsed_sym *parsed = NULL;
	size_t nr = 0, cap = 0, len = 0, text_lines = 0, kept = 0;
	char *text = NULL, *line;
	int ret;

	memset(table, 0, sizeof(*table));
	ret = read_whole_file(path, &text, &len, err);
	if (ret)
		return ret;
	for (line = text; line < text + len;) {
		char *eol = memchr(line, '\n', (size_t)(text + len - line));
		struct parsed_sym sym;

		if (!eol)
			eol = text + len;
		*eol = '\0';
		if (eol - line > 20 && line[17] != '\0' && is_text_type(line[17]))
			text_lines++;
		if (parse_line(line, eol, &sym)) {
			if (nr == cap) {
				size_t grown_cap = cap ? cap * 2 : 65536;
				struct parsed_sym *grown =
					realloc(parsed, grown_cap * sizeof(*parsed));

				if (!grown) {
					free(parsed);
					free(text);
					return rv_error_set(err, ENOMEM,
							    "out of memory loading '%s'", path);
				}
				parsed = grown;
				cap = grown_cap;
			}
			sym.order = (uint32_t)nr;
			parsed[nr++] = sym;
		}
		line = eol + 1;
	}
	if (!nr) {
		free(parsed);
		free(text);
		if (text_lines)
			return rv_error_set(
				err, EPERM,
				"'%s' hides the kernel's addresses (kernel.kptr_restrict); "
				"run as root or set kernel.kptr_restrict=0",
				path);
		return rv_error_set(err, EINVAL,
				    "'%s' lists no kernel functions; is it a kallsyms file?", path);
	}
	qsort(parsed, nr, sizeof(*parsed), compare_parsed);
	table->syms = malloc(nr * sizeof(*table->syms));
	if (!table->syms) {
		free(parsed);
		free(text);
		return rv_error_set(err, ENOMEM, "out of memory loading '%s'", path);
	}
	for (size_t i = 0; i < nr; i++) {
		size_t next = i + 1;

		if (kept && table->syms[kept - 1].addr == parsed[i].sym.addr)
			continue; /* an alias: the preferred name came first */
		while (next < nr && parsed[next].sym.addr == parsed[i].sym.addr)
			next++;
		table->syms[kept] = parsed[i].sym;
		/* Up to the next symbol of the same kernel image or module; past
		 * the last one of each, to the end of its page, as perf does. */
		if (next < nr && same_module(parsed[next].module, parsed[i].module))
			table->syms[kept].size = parsed[next].sym.addr - parsed[i].sym.addr;
		else
			table->syms[kept].size =
				PAGE_SIZE_X86 - (parsed[i].sym.addr & (PAGE_SIZE_X86 - 1));
		kept++;
	}
	free(parsed);
	table->nr = kept;
	table->text = text;
	return 0;
}

struct rv_ksym *rv_kallsyms_find(const struct rv_kallsyms *table, uint64_t addr)
{
	size_t lo = 0, hi = table->nr;
	struct rv_ksym *sym;

	/* The last symbol starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (table->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	sym = &table->syms[lo - 1];
	return addr - sym->addr < sym->size ? sym : NULL;
}

void rv_kallsyms_destroy(struct rv_kallsyms *table)
{
	free(table->syms);
	free(table->text);
	memset(table, 0, sizeof(*table));
}
