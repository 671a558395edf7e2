// SPDX-License-Identifier: GPL-2.0-only
/* Reads a cluster's shared secret from a file: 32 hex digits, mode 0600 or stricter. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "num.h"
#include "secret.h"

int xtx_secret_read(const char *path, struct xtx_secret *s)
{
	char buf[64];
	struct stat st;
	size_t n, i;
	FILE *f = fopen(path, "re");
	int err = 0;

	if (!f) {
		err = -errno;
		fprintf(stderr, "Error: secret file %s: %s\n", path, strerror(-err));
		return err;
	}
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077)) {
		fprintf(stderr, "Error: secret file %s is readable by others (mode %03o): "
			"chmod 600 it\n", path, (unsigned int)(st.st_mode & 0777));
		fclose(f);
		return -EINVAL;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	if (n != 32)
		goto bad;
	s->k0 = s->k1 = 0;
	for (i = 0; i < 32; i++) {
		int v = xtx_hex_digit(buf[i]);

		if (v < 0)
			goto bad;
		if (i < 16)
			s->k0 = s->k0 << 4 | (unsigned int)v;
		else
			s->k1 = s->k1 << 4 | (unsigned int)v;
	}
	return 0;
bad:
	fprintf(stderr, "Error: secret file %s: expected 32 hex digits (128 bits), e.g. from "
		"'head -c16 /dev/urandom | xxd -p'\n", path);
	return -EINVAL;
}
