/* short_name.h: a demangled function name made short enough for a line of
 * the summary's table. The trace keeps the full names; only the summary
 * shortens them, so that a C++ name fits on one line and its function can
 * still be recognized:
 *
 * - template arguments are folded to "<…>" at the outermost level (what
 *   they nest is folded with them): "std::vector<int, std::allocator<int>
 *   >::push_back" is "std::vector<…>::push_back";
 * - a parameter list longer than RV_SHORT_NAME_PARAMS characters once its own
 *   templates are folded is "(…)"; a shorter one is kept ("f(int, char)");
 * - an operator's own characters are never taken for brackets
 *   ("operator<<", "operator()", "operator->", "operator<=>");
 * - anything else (C names, "[k]", "file+0x1234", brackets that do not
 *   close) is copied as it is.
 *
 * Not here: demangling (symbolize/symbolizer.h's rv_demangle), the table
 * itself (render.c).
 */
#ifndef RV_RENDER_SHORT_NAME_H
#define RV_RENDER_SHORT_NAME_H

#include <stddef.h>

/* The longest parameter list (its parentheses included) kept as it is. */
#define RV_SHORT_NAME_PARAMS 32

/* Writes the short form of name into out (size bytes, at least 1), cut at
 * a character boundary (and nothing after the cut) if it does not fit;
 * returns out. */
char *rv_short_name(const char *name, char *out, size_t size);

#endif
