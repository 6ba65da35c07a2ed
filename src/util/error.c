/* error.c: formatting of rv_error; see error.h. */
#include "util/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int rv_error_set(struct rv_error *err, int code, const char *fmt, ...)
{
	if (code < 0)
		code = -code;
	if (code == 0)
		code = EINVAL;
	if (err) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return -code;
}

int rv_error_prefix(struct rv_error *err, const char *fmt, ...)
{
	char prefix[256];
	size_t prefix_len, old_len, room = sizeof(err->message) - 1;
	va_list ap;

	if (!err)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix) - 2, fmt, ap);
	va_end(ap);
	strcat(prefix, ": ");
	prefix_len = strlen(prefix);
	old_len = strnlen(err->message, room);
	if (old_len > room - prefix_len)
		old_len = room - prefix_len;
	memmove(err->message + prefix_len, err->message, old_len);
	memcpy(err->message, prefix, prefix_len);
	err->message[prefix_len + old_len] = '\0';
	return err->code ? -err->code : -EINVAL;
}

void rv_error_clear(struct rv_error *err)
{
	if (err) {
		err->code = 0;
		err->message[0] = '\0';
	}
}
