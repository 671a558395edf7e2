// SPDX-License-Identifier: GPL-2.0-only
/* Buffered text output to a control-channel connection, immune to SIGPIPE. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "ctl_out.h"

void xtxd_out_init(struct xtxd_out *o, int fd)
{
	o->fd = fd;
	o->err = 0;
	o->len = 0;
}

int xtxd_out_flush(struct xtxd_out *o)
{
	size_t off = 0;
	ssize_t n;

	while (!o->err && off < o->len) {
		/* MSG_NOSIGNAL: a client that hung up must not kill xtxd */
		n = send(o->fd, o->buf + off, o->len - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			o->err = -errno;
			break;
		}
		off += n;
	}
	o->len = 0;
	return o->err;
}

void xtxd_out_printf(struct xtxd_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->err = -EINVAL;
			return;
		}
		if ((size_t)n < sizeof(o->buf) - o->len) {
			o->len += n;
			return;
		}
		/* did not fit: send what is there and write it again into the empty buffer */
		if (!o->len || xtxd_out_flush(o)) {
			if (!o->err)
				o->err = -EMSGSIZE;
			return;
		}
	}
}
