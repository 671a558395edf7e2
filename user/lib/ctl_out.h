/* SPDX-License-Identifier: GPL-2.0-only */
/* Buffered text output to a control-channel connection. */
#ifndef XTXD_CTL_OUT_H
#define XTXD_CTL_OUT_H

#include <stddef.h>

/*
 * Collects text and sends it in large pieces; the first failed send (the
 * client went away) turns every later write into a no-op, so producers of
 * long answers need not check each line.
 */
struct xtxd_out {
	int fd;
	int err;		/* first error, negative errno */
	size_t len;
	char buf[32768];
};

void xtxd_out_init(struct xtxd_out *o, int fd);
void xtxd_out_printf(struct xtxd_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Sends what is buffered; 0 or the first error. */
int xtxd_out_flush(struct xtxd_out *o);

#endif /* XTXD_CTL_OUT_H */
