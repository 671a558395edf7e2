// SPDX-License-Identifier: GPL-2.0-only
/* A server's record of the cluster configuration it took up (cluster_record.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include "cluster_record.h"
#include "durable.h"

int xtx_cluster_record_path(const char *dir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", dir, XTX_CLUSTER_RECORD_FILE);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int xtx_cluster_record_write(const char *dir, const struct xtx_cluster *c, unsigned int self)
{
	static __thread char text[XTX_CLUSTER_TEXT_MAX];
	char head[32];
	struct iovec iov[2];
	int n, fd, err;

	n = xtx_cluster_format(c, text, sizeof(text));
	if (n < 0)
		return n;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	iov[0].iov_base = head;
	iov[0].iov_len = (size_t)snprintf(head, sizeof(head), "server %u\n", self);
	iov[1].iov_base = text;
	iov[1].iov_len = (size_t)n;
	err = xtx_replace_file(fd, XTX_CLUSTER_RECORD_FILE, iov, 2);
	close(fd);
	return err;
}

int xtx_cluster_record_read(const char *path, struct xtx_cluster *c, unsigned int *self,
			    char *err, size_t errlen)
{
	static __thread char text[XTX_CLUSTER_TEXT_MAX + 32];
	char why[160];
	int end = 0;
	size_t n;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	if (ferror(f) || !feof(f)) {
		snprintf(err, errlen, "%s: %s", path, ferror(f) ? "read error" : "too long");
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	text[n] = '\0';
	if (sscanf(text, "server %u\n%n", self, &end) != 1 || !end) {
		snprintf(err, errlen, "%s: not a server's record (no 'server N' line first)", path);
		return -EINVAL;
	}
	if (xtx_cluster_parse(c, text + end, why, sizeof(why))) {
		snprintf(err, errlen, "%s: not a cluster configuration: %s", path, why);
		return -EINVAL;
	}
	if (*self >= c->nservers) {
		snprintf(err, errlen, "%s: written by server %u, which its configuration does not "
			 "list", path, *self);
		return -EINVAL;
	}
	return 0;
}

bool xtx_cluster_record_allows(const struct xtx_cluster *rec, const struct xtx_cluster *c)
{
	/* another cluster, made again: its epochs say nothing about ours */
	if (rec->id && c->id != rec->id)
		return false;
	if (c->epoch != rec->epoch)
		return c->epoch > rec->epoch;
	return xtx_cluster_equal(c, rec);
}
