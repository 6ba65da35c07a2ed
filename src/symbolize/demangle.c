/* demangle.c: readable names from mangled ones, for the symbolizer.
 *
 * C++ names go through libstdc++'s __cxa_demangle (the build links it from
 * libsupc++.a, statically).
 * Rust's legacy mangling (_ZN...17h<16 hex digits>E) is Itanium-shaped but
 * carries its own escapes ($LT$, $u20$, ..) and a hash that only gets in the
 * way of reading a trace, so it is decoded here and the hash dropped.
 *
 * This is not: a demangler for Rust's v0 scheme (_R...), Swift or D; those
 * names are shown as they are.
 */
#include "symbolize/symbolizer.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* From libstdc++ (cxxabi.h is C++ only). */
char *__cxa_demangle(const char *mangled, char *buffer, size_t *length, int *status);

struct name_part {
	const char *text;
	size_t len;
};

static bool is_hex_digit(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool is_rust_hash(const struct name_part *part)
{
	if (part->len != 17 || part->text[0] != 'h')
		return false;
	for (size_t i = 1; i < part->len; i++) {
		if (!is_hex_digit(part->text[i]))
			return false;
	}
	return true;
}

static size_t put_utf8(char *out, unsigned long code)
{
	if (code < 0x80) {
		out[0] = (char)code;
		return 1;
	}
	if (code < 0x800) {
		out[0] = (char)(0xc0 | (code >> 6));
		out[1] = (char)(0x80 | (code & 0x3f));
		return 2;
	}
	if (code < 0x10000) {
		out[0] = (char)(0xe0 | (code >> 12));
		out[1] = (char)(0x80 | ((code >> 6) & 0x3f));
		out[2] = (char)(0x80 | (code & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (code >> 18));
	out[1] = (char)(0x80 | ((code >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((code >> 6) & 0x3f));
	out[3] = (char)(0x80 | (code & 0x3f));
	return 4;
}

/* Decodes one "$XX$" escape at text[0] (text[0] == '$') into out; returns how
 * many input bytes it consumed, 0 if it is not a known escape. */
static size_t decode_rust_escape(const char *text, size_t len, char *out, size_t *written)
{
	static const struct {
		const char *code;
		char c;
	} simple[] = {
		{ "SP", '@' }, { "BP", '*' }, { "RF", '&' }, { "LT", '<' },
		{ "GT", '>' }, { "LP", '(' }, { "RP", ')' }, { "C", ',' },
	};
	const char *end = memchr(text + 1, '$', len - 1);
	size_t inner;

	if (!end)
		return 0;
	inner = (size_t)(end - text) - 1;
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
		if (strlen(simple[i].code) == inner &&
		    memcmp(text + 1, simple[i].code, inner) == 0) {
			out[0] = simple[i].c;
			*written = 1;
			return inner + 2;
		}
	}
	if (inner >= 2 && inner <= 7 && text[1] == 'u') {
		unsigned long code = 0;

		for (size_t i = 2; i <= inner; i++) {
			char c = text[i];

			if (!is_hex_digit(c))
				return 0;
			code = code * 16 + (unsigned long)(c <= '9' ? c - '0' : c - 'a' + 10);
		}
		if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) || code == 0)
			return 0;
		*written = put_utf8(out, code);
		return inner + 2;
	}
	return 0;
}

static size_t decode_rust_part(const struct name_part *part, char *out)
{
	const char *text = part->text;
	size_t len = part->len, n = 0, i = 0;

	/* A component starting with an escape is prefixed with '_' to stay an identifier. */
	if (len >= 2 && text[0] == '_' && text[1] == '$')
		i = 1;
	while (i < len) {
		size_t used, written;

		if (text[i] == '.') {
			if (i + 1 < len && text[i + 1] == '.') {
				out[n++] = ':';
				out[n++] = ':';
				i += 2;
			} else {
				out[n++] = '.';
				i++;
			}
			continue;
		}
		if (text[i] == '$') {
			used = decode_rust_escape(text + i, len - i, out + n, &written);
			if (used) {
				n += written;
				i += used;
				continue;
			}
		}
		out[n++] = text[i++];
	}
	return n;
}

/* NULL when name is not a Rust legacy symbol. */
static char *demangle_rust_legacy(const char *name)
{
	struct name_part *parts = NULL;
	size_t nr_parts = 0, cap_parts = 0, out_len = 0;
	const char *p = name + 3, *suffix;
	char *out = NULL;

	if (strncmp(name, "_ZN", 3) != 0)
		return NULL;
	while (*p != 'E') {
		size_t len = 0;

		if (*p < '0' || *p > '9' || *p == '0')
			goto not_rust;
		while (*p >= '0' && *p <= '9') {
			len = len * 10 + (size_t)(*p - '0');
			if (len > 4096)
				goto not_rust;
			p++;
		}
		if (strnlen(p, len) < len)
			goto not_rust;
		if (nr_parts == cap_parts) {
			size_t cap = cap_parts ? cap_parts * 2 : 8;
			struct name_part *grown = realloc(parts, cap * sizeof(*parts));

			if (!grown)
				goto not_rust;
			parts = grown;
			cap_parts = cap;
		}
		parts[nr_parts].text = p;
		parts[nr_parts].len = len;
		nr_parts++;
		p += len;
	}
	suffix = p + 1;
	if (nr_parts < 2 || !is_rust_hash(&parts[nr_parts - 1]))
		goto not_rust;
	/* LLVM's ".llvm.NNNN" (from ThinLTO) says nothing a reader needs. */
	if (strncmp(suffix, ".llvm.", 6) == 0)
		suffix = "";
	/* Escapes only shrink, except $uXXXX$ forms which stay within their own length. */
	out = malloc(strlen(name) + 2 * nr_parts + strlen(suffix) + 1);
	if (!out)
		goto not_rust;
	for (size_t i = 0; i + 1 < nr_parts; i++) {
		if (i) {
			out[out_len++] = ':';
			out[out_len++] = ':';
		}
		out_len += decode_rust_part(&parts[i], out + out_len);
	}
	strcpy(out + out_len, suffix);
	free(parts);
	return out;

not_rust:
	free(parts);
	return NULL;
}

char *rv_demangle(const char *name)
{
	char *readable;
	int status = 0;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	readable = demangle_rust_legacy(name);
	if (readable)
		return readable;
	readable = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(readable);
		return NULL;
	}
	return readable;
}
