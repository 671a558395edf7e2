// SPDX-License-Identifier: GPL-2.0-only
/* Serving threads: a batch of datagrams in, each answered in place, the batch out. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include "log.h"
#include "serve.h"
#include "stats.h"

#define BATCH		32
#define BUF_SIZE	2048		/* above any datagram a 1500-byte MTU carries */
#define SOCK_BUF	(4 << 20)
#define RECV_TIMEOUT_MS	100		/* how soon a thread notices a stop */

struct batch {
	struct mmsghdr in[BATCH], out[BATCH];
	struct iovec iov[BATCH], oiov[BATCH];
	struct sockaddr_in from[BATCH];
	unsigned char buf[BATCH][BUF_SIZE] __attribute__((aligned(8)));
};

static int open_socket(const struct udpd_config *cfg)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_port = htons(cfg->port),
		.sin_addr = cfg->bind,
	};
	struct timeval tv = { .tv_usec = RECV_TIMEOUT_MS * 1000 };
	int one = 1, size = SOCK_BUF, fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "Error: socket: %s\n", strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		fprintf(stderr, "Error: setsockopt: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	/* best effort: bursts from many client threads should not overflow the queue */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		fprintf(stderr, "Error: binding %s:%u: %s\n", inet_ntoa(cfg->bind), cfg->port,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends every reply of the batch; a reply the socket refuses is lost like a dropped packet. */
static void send_all(struct udpd_worker *w, struct batch *b, unsigned int n)
{
	unsigned int sent = 0;
	int k;

	while (sent < n) {
		k = sendmmsg(w->fd, b->out + sent, n - sent, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			/* the datagram at sent failed alone: skip it, keep the rest */
			pr_debug("thread %u: sendmmsg: %s\n", w->id, strerror(errno));
			udpd_count(w->stats, XTX_CTR_DROP);
			sent++;
			continue;
		}
		sent += k;
	}
}

static void serve_batch(struct udpd_worker *w, struct batch *b, unsigned int n)
{
	unsigned int i, nout = 0;
	int len;

	for (i = 0; i < n; i++) {
		if (b->in[i].msg_hdr.msg_flags & MSG_TRUNC) {
			/* longer than any xtx request: not ours to answer */
			udpd_count(w->stats, XTX_CTR_RX);
			udpd_count(w->stats, XTX_CTR_DROP);
			continue;
		}
		len = udpd_handle(w, b->buf[i], b->in[i].msg_len);
		if (len < 0)
			continue;
		b->oiov[nout].iov_base = b->buf[i];
		b->oiov[nout].iov_len = len;
		memset(&b->out[nout].msg_hdr, 0, sizeof(b->out[nout].msg_hdr));
		b->out[nout].msg_hdr.msg_name = &b->from[i];
		b->out[nout].msg_hdr.msg_namelen = b->in[i].msg_hdr.msg_namelen;
		b->out[nout].msg_hdr.msg_iov = &b->oiov[nout];
		b->out[nout].msg_hdr.msg_iovlen = 1;
		nout++;
	}
	if (nout)
		send_all(w, b, nout);
}

static void *worker_main(void *arg)
{
	struct udpd_worker *w = arg;
	struct batch *b = malloc(sizeof(*b));
	unsigned int i;
	int n;

	if (!b) {
		pr_warn("thread %u: no memory for its batch; not serving\n", w->id);
		return NULL;
	}
	while (!w->srv->stop) {
		for (i = 0; i < BATCH; i++) {
			b->iov[i].iov_base = b->buf[i];
			b->iov[i].iov_len = BUF_SIZE;
			memset(&b->in[i].msg_hdr, 0, sizeof(b->in[i].msg_hdr));
			b->in[i].msg_hdr.msg_name = &b->from[i];
			b->in[i].msg_hdr.msg_namelen = sizeof(b->from[i]);
			b->in[i].msg_hdr.msg_iov = &b->iov[i];
			b->in[i].msg_hdr.msg_iovlen = 1;
		}
		/* blocks for the first datagram only, then takes what is queued */
		n = recvmmsg(w->fd, b->in, BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				pr_warn("thread %u: recvmmsg: %s\n", w->id, strerror(errno));
			continue;
		}
		serve_batch(w, b, n);
	}
	free(b);
	return NULL;
}

static void close_all(struct udpd_server *srv, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		close(srv->workers[i].fd);
		srv->workers[i].fd = -1;
	}
}

/*
 * SO_REUSEPORT would let a second server on the same address and port
 * silently take half of the traffic: a plain bind first finds it.
 */
static int port_free(const struct udpd_config *cfg)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_port = htons(cfg->port),
		.sin_addr = cfg->bind,
	};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0) {
		fprintf(stderr, "Error: socket: %s\n", strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		fprintf(stderr, "Error: %s:%u: %s%s\n", inet_ntoa(cfg->bind), cfg->port,
			strerror(errno), errno == EADDRINUSE ? " (another server runs there)" : "");
		err = -1;
	}
	close(fd);
	return err;
}

int udpd_serve_start(struct udpd_server *srv, const int *cpus, unsigned int ncpus)
{
	unsigned int i;
	int err;

	if (port_free(&srv->cfg))
		return -1;
	for (i = 0; i < srv->nworkers; i++) {
		srv->workers[i].fd = open_socket(&srv->cfg);
		if (srv->workers[i].fd < 0) {
			close_all(srv, i);
			return -1;
		}
	}
	for (i = 0; i < srv->nworkers; i++) {
		struct udpd_worker *w = &srv->workers[i];

		err = pthread_create(&w->thread, NULL, worker_main, w);
		if (err) {
			fprintf(stderr, "Error: starting thread %u: %s\n", i, strerror(err));
			srv->stop = 1;
			while (i--)
				pthread_join(srv->workers[i].thread, NULL);
			close_all(srv, srv->nworkers);
			return -1;
		}
		if (ncpus) {
			cpu_set_t set;

			w->cpu = cpus[i % ncpus];
			CPU_ZERO(&set);
			CPU_SET(w->cpu, &set);
			err = pthread_setaffinity_np(w->thread, sizeof(set), &set);
			if (err)
				pr_warn("thread %u: cannot pin to CPU %d: %s\n", i, w->cpu,
					strerror(err));
		}
	}
	return 0;
}

void udpd_serve_stop(struct udpd_server *srv)
{
	unsigned int i;

	srv->stop = 1;
	for (i = 0; i < srv->nworkers; i++)
		pthread_join(srv->workers[i].thread, NULL);
	close_all(srv, srv->nworkers);
}
