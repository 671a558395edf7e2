// SPDX-License-Identifier: GPL-2.0-only
/* The rare path's sockets and threads: receive what XDP deferred, execute, reply to the client. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <urcu.h>
#include <bpf/bpf.h>
#include <xtx/maps.h>
#include "log.h"
#include "rare.h"
#include "defer_ring.h"
#include "store/valstore.h"

#define RARE_BATCH	32
/* above the largest valid request, so an oversized datagram shows as MSG_TRUNC */
#define RARE_BUF	2048
#define RARE_SOCKBUF	(4 << 20)

_Static_assert(RARE_BUF > XTXD_REQ_MAX, "receive buffer holds every valid request");

struct rare_thread {
	pthread_t tid;
	bool running;
	int sock;
	struct mmsghdr msg[RARE_BATCH];
	struct iovec iov[RARE_BATCH];
	struct sockaddr_in from[RARE_BATCH];
	char cmsg[RARE_BATCH][CMSG_SPACE(sizeof(struct in_pktinfo))];
	/* replies are built in place over their requests */
	uint8_t buf[RARE_BATCH][RARE_BUF] __attribute__((aligned(8)));
	struct mmsghdr rep[RARE_BATCH];
	struct iovec rep_iov[RARE_BATCH];
	char rep_cmsg[RARE_BATCH][CMSG_SPACE(sizeof(struct in_pktinfo))];
};

static struct {
	struct xtxd_exec x;
	struct xtxd_defer_ring ring;
	size_t kv_size;
	int runtime_fd;
	int valstore_fd;
	struct rare_thread **th;
	uint32_t nthreads;
	int stop_fd;
	bool live;
} rare = { .stop_fd = -1, .runtime_fd = -1, .valstore_fd = -1 };

struct xtxd_ovf *xtxd_rare_store(void)
{
	return rare.live ? rare.x.store : NULL;
}

const struct xtxd_rare_stats *xtxd_rare_stats(void)
{
	return rare.live ? &rare.x.stats : NULL;
}

/* The kernel cache's bucket count: the store's filters are per bucket. */
static int read_kv_buckets(const struct xtx_target *t, uint32_t *nbuckets)
{
	struct xtx_info info;
	__u32 zero = 0;
	int fd, err;

	fd = xtx_target_map_fd(t, XTX_MAP_INFO);
	if (fd < 0) {
		fprintf(stderr, "Error: rare path: opening %s/%s: %s\n", t->pin_dir, XTX_MAP_INFO,
			strerror(-fd));
		return fd;
	}
	err = bpf_map_lookup_elem(fd, &zero, &info) ? -errno : 0;
	close(fd);
	if (err) {
		fprintf(stderr, "Error: rare path: reading %s: %s\n", XTX_MAP_INFO, strerror(-err));
		return err;
	}
	if (!info.kv_buckets) {
		fprintf(stderr, "Error: rare path: the loaded program reports no KV buckets; "
			"reload it (--replace)\n");
		return -EINVAL;
	}
	*nbuckets = info.kv_buckets;
	return 0;
}

static void set_buf(int sock, int force_opt, int opt, int bytes)
{
	/* FORCE passes rmem_max/wmem_max (we are root); the plain one is the fallback */
	if (setsockopt(sock, SOL_SOCKET, force_opt, &bytes, sizeof(bytes)) &&
	    setsockopt(sock, SOL_SOCKET, opt, &bytes, sizeof(bytes)))
		pr_warn("rare path: socket buffer of %d bytes: %s\n", bytes, strerror(errno));
}

static int open_socket(uint16_t port, const char *iface)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int one = 1, sock, err;

	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		err = -errno;
		fprintf(stderr, "Error: rare path: socket: %s\n", strerror(errno));
		return err;
	}
	/*
	 * SO_NO_CHECK: replies leave with UDP checksum 0, because TC egress
	 * trims the fix trailer off and must not leave a stale checksum.
	 * IP_PKTINFO: answer from the address the client sent to.
	 * SO_BINDTODEVICE: only what XDP passed on our interface, never a
	 * datagram from elsewhere (lo, or another xtxd's interface in this
	 * namespace), and replies leave through the TC egress hook that
	 * must see them.
	 */
	if (setsockopt(sock, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    setsockopt(sock, SOL_SOCKET, SO_BINDTODEVICE, iface, strlen(iface) + 1) ||
	    setsockopt(sock, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)) ||
	    setsockopt(sock, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one))) {
		err = -errno;
		fprintf(stderr, "Error: rare path: setsockopt: %s\n", strerror(errno));
		close(sock);
		return err;
	}
	set_buf(sock, SO_RCVBUFFORCE, SO_RCVBUF, RARE_SOCKBUF);
	set_buf(sock, SO_SNDBUFFORCE, SO_SNDBUF, RARE_SOCKBUF);
	if (bind(sock, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		fprintf(stderr, "Error: rare path: binding UDP port %u: %s\n", port,
			strerror(errno));
		close(sock);
		return err;
	}
	return sock;
}

/* recvmmsg overwrites the lengths: reset them before every batch. */
static void arm_receive(struct rare_thread *th)
{
	int i;

	for (i = 0; i < RARE_BATCH; i++) {
		struct msghdr *m = &th->msg[i].msg_hdr;

		th->iov[i].iov_base = th->buf[i];
		th->iov[i].iov_len = RARE_BUF;
		m->msg_name = &th->from[i];
		m->msg_namelen = sizeof(th->from[i]);
		m->msg_iov = &th->iov[i];
		m->msg_iovlen = 1;
		m->msg_control = th->cmsg[i];
		m->msg_controllen = sizeof(th->cmsg[i]);
		m->msg_flags = 0;
	}
}

/* The reply to request i, sent to its source from the address it was sent to. */
static void prepare_reply(struct rare_thread *th, int i, struct mmsghdr *rep, struct iovec *iov,
			  char *cbuf, size_t cbuf_len, size_t len)
{
	struct msghdr *req = &th->msg[i].msg_hdr, *m = &rep->msg_hdr;
	struct cmsghdr *c;

	memset(rep, 0, sizeof(*rep));
	iov->iov_base = th->buf[i];
	iov->iov_len = len;
	m->msg_name = &th->from[i];
	m->msg_namelen = sizeof(th->from[i]);
	m->msg_iov = iov;
	m->msg_iovlen = 1;
	for (c = CMSG_FIRSTHDR(req); c; c = CMSG_NXTHDR(req, c)) {
		struct in_pktinfo pi, out = {};
		struct cmsghdr *oc;

		if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_PKTINFO)
			continue;
		memcpy(&pi, CMSG_DATA(c), sizeof(pi));
		out.ipi_spec_dst = pi.ipi_addr;
		memset(cbuf, 0, cbuf_len);
		m->msg_control = cbuf;
		m->msg_controllen = CMSG_SPACE(sizeof(out));
		oc = CMSG_FIRSTHDR(m);
		oc->cmsg_level = IPPROTO_IP;
		oc->cmsg_type = IP_PKTINFO;
		oc->cmsg_len = CMSG_LEN(sizeof(out));
		memcpy(CMSG_DATA(oc), &out, sizeof(out));
		break;
	}
}

static void send_replies(struct rare_thread *th, int n)
{
	int sent = 0, r;

	while (sent < n) {
		r = sendmmsg(th->sock, th->rep + sent, n - sent, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* sendmmsg stops at the failing message: count it, go on with the rest */
			pr_debug("rare path: sending a reply: %s\n", strerror(errno));
			xtxd_stat_inc(&rare.x.stats.send_errors);
			sent++;
			continue;
		}
		sent += r;
		__atomic_fetch_add(&rare.x.stats.tx, r, __ATOMIC_RELAXED);
	}
}

/*
 * Fault injection (xtxctl fault --drop-rare-reply-ppm): answers executed
 * but never sent, the case the bucket lease and xtxd's record exist for.
 * Dropped from the end of the batch; the knob is re-read every batch.
 */
static int drop_for_fault(int nrep)
{
	struct xtx_runtime rt;
	__u32 zero = 0;
	int kept = nrep, i;

	if (rare.runtime_fd < 0 || bpf_map_lookup_elem(rare.runtime_fd, &zero, &rt) ||
	    !rt.drop_rare_reply_ppm)
		return nrep;
	for (i = 0; i < nrep; i++)
		if ((uint32_t)random() % 1000000 < rt.drop_rare_reply_ppm)
			kept--;
	xtxd_stat_add(&rare.x.stats.fault_drops, nrep - kept);
	return kept;
}

static void serve_batch(struct rare_thread *th, int n)
{
	int i, nrep = 0, len;

	for (i = 0; i < n; i++) {
		if (th->msg[i].msg_hdr.msg_flags & MSG_TRUNC) {
			xtxd_stat_inc(&rare.x.stats.rx);
			xtxd_stat_inc(&rare.x.stats.drop[XTXD_DROP_TRUNCATED]);
			continue;
		}
		len = xtxd_defer_ring_complete(&rare.ring, th->buf[i], th->msg[i].msg_len,
					       RARE_BUF);
		if (len < 0) {
			xtxd_stat_inc(&rare.x.stats.rx);
			xtxd_stat_inc(&rare.x.stats.drop[XTXD_DROP_RECORD]);
			continue;
		}
		len = xtxd_exec_packet(&rare.x, th->buf[i], len, th->buf[i], RARE_BUF);
		if (len < 0)
			continue;
		prepare_reply(th, i, &th->rep[nrep], &th->rep_iov[nrep], th->rep_cmsg[nrep],
			      sizeof(th->rep_cmsg[nrep]), len);
		nrep++;
	}
	nrep = drop_for_fault(nrep);
	if (nrep)
		send_replies(th, nrep);
}

static void *rare_thread_main(void *arg)
{
	struct rare_thread *th = arg;
	struct pollfd pfd[2] = {
		{ .fd = th->sock, .events = POLLIN },
		{ .fd = rare.stop_fd, .events = POLLIN },
	};
	int n;

	rcu_register_thread();
	/* what this thread writes is logged after it runs: copied for XDP once durable */
	xtxd_ovf_copy_later(true);
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			pr_warn("rare path: poll: %s\n", strerror(errno));
			break;
		}
		if (pfd[1].revents)
			break;
		arm_receive(th);
		n = recvmmsg(th->sock, th->msg, RARE_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				pr_debug("rare path: recvmmsg: %s\n", strerror(errno));
			continue;
		}
		serve_batch(th, n);
	}
	rcu_unregister_thread();
	return NULL;
}

/* The kernel buckets, shared with XDP, for the executor's filter updates. */
static int map_kv(const struct xtx_target *t, uint32_t nbuckets)
{
	struct xtx_kv_bucket *kv;
	size_t size;
	int err = xtx_target_map_kv(t, nbuckets, &kv, &size);

	if (err) {
		fprintf(stderr, "Error: rare path: mapping %s: %s\n", XTX_MAP_KV, strerror(-err));
		return err;
	}
	rare.kv_size = size;
	rare.x.kv = kv;
	rare.x.kv_buckets = nbuckets;
	return 0;
}

/*
 * XDP's copies of the store's big values (store/valstore.h) copied a store
 * that died with the last xtxd: emptied, then kept in step with this one's
 * from its first key on, before any request is let through.
 */
static int open_valstore(const struct xtx_target *t)
{
	struct xtx_info info;
	int err = xtx_target_info(t, &info);

	if (!err && !info.bigval_max)
		return 0;
	if (!err) {
		rare.valstore_fd = xtx_target_map_fd(t, XTX_MAP_BIGVAL);
		err = rare.valstore_fd < 0 ? rare.valstore_fd : 0;
	}
	if (!err)
		err = xtxd_valstore_clear(rare.valstore_fd);
	if (err) {
		fprintf(stderr, "Error: rare path: the value store %s: %s\n", XTX_MAP_BIGVAL,
			strerror(-err));
		return err;
	}
	xtxd_ovf_set_valstore(rare.x.store, rare.valstore_fd);
	return 0;
}

/*
 * The overflow store lives in xtxd's memory.  A new xtxd that finds kernel
 * buckets whose Bloom filters point into a store says so loudly: those
 * keys went with the old process (until the store is rebuilt from the
 * logs), and their GETs will answer NOT_FOUND.
 */
static void warn_lost_store(void)
{
	uint64_t b, referenced = 0;

	for (b = 0; b < rare.x.kv_buckets; b++)
		referenced += rare.x.kv[b].bloom != 0;
	if (referenced)
		pr_warn("WARNING: %llu kernel buckets refer to keys in an overflow store this xtxd "
			"did not build (a previous xtxd died or was replaced): those keys are lost "
			"until they are loaded again\n", (unsigned long long)referenced);
}

/*
 * Lists this xtxd's sockets as the only senders whose fix trailers TC
 * egress applies (XTX_MAP_RARE_SOCKS), after forgetting those of an
 * earlier xtxd: their sockets are gone, and cookies are never reused.
 */
static int list_sockets(const struct xtx_target *t)
{
	int fd = xtx_target_map_fd(t, XTX_MAP_RARE_SOCKS), err = 0;
	__u64 key, cookie;
	socklen_t len;
	__u32 one = 1, i;

	if (fd < 0)
		return fd;
	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key)) {
			err = -errno;
			goto out;
		}
	for (i = 0; i < rare.nthreads; i++) {
		len = sizeof(cookie);
		if (getsockopt(rare.th[i]->sock, SOL_SOCKET, SO_COOKIE, &cookie, &len) ||
		    bpf_map_update_elem(fd, &cookie, &one, BPF_ANY)) {
			err = -errno;
			goto out;
		}
	}
out:
	if (err)
		fprintf(stderr, "Error: rare path: listing its sockets in %s: %s\n",
			XTX_MAP_RARE_SOCKS, strerror(-err));
	close(fd);
	return err;
}

int xtxd_rare_start(const struct xtx_target *t, const struct xtxd_rare_opts *o)
{
	uint32_t nbuckets, i;
	int err;

	if (!o->threads || o->threads > XTXD_RARE_THREADS_MAX) {
		fprintf(stderr, "Error: rare path: %u threads: %s\n", o->threads,
			strerror(EINVAL));
		return -EINVAL;
	}
	err = read_kv_buckets(t, &nbuckets);
	if (!err)
		err = xtxd_defer_ring_open(&rare.ring, t);
	if (!err)
		err = map_kv(t, nbuckets);
	if (err)
		return err;
	rare.runtime_fd = xtx_target_map_fd(t, XTX_MAP_RUNTIME);
	rare.x.store = xtxd_ovf_new(nbuckets, o->overflow_max);
	if (rare.x.store) {
		err = open_valstore(t);
		if (err)
			goto fail;
	}
	rare.x.log_writes = o->log_writes;
	rare.x.replay = xtxd_replay_new(XTXD_REPLAY_ENTRIES);
	rare.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	rare.th = calloc(o->threads, sizeof(*rare.th));
	if (!rare.x.store || !rare.x.replay || rare.stop_fd < 0 || !rare.th) {
		err = rare.stop_fd < 0 ? -errno : -ENOMEM;
		fprintf(stderr, "Error: rare path: setting up: %s\n", strerror(-err));
		goto fail;
	}
	memset(&rare.x.stats, 0, sizeof(rare.x.stats));
	rare.nthreads = o->threads;
	for (i = 0; i < rare.nthreads; i++) {
		rare.th[i] = calloc(1, sizeof(*rare.th[i]));
		if (!rare.th[i]) {
			err = -ENOMEM;
			fprintf(stderr, "Error: rare path: setting up: %s\n", strerror(ENOMEM));
			goto fail;
		}
		rare.th[i]->sock = open_socket(o->port, t->iface);
		if (rare.th[i]->sock < 0) {
			err = rare.th[i]->sock;
			goto fail;
		}
	}
	err = list_sockets(t);
	if (err)
		goto fail;
	rare.live = true;
	for (i = 0; i < rare.nthreads; i++) {
		err = -pthread_create(&rare.th[i]->tid, NULL, rare_thread_main, rare.th[i]);
		if (err) {
			fprintf(stderr, "Error: rare path: starting a thread: %s\n",
				strerror(-err));
			goto fail;
		}
		rare.th[i]->running = true;
	}
	warn_lost_store();
	pr_info("rare path: %u threads on UDP port %u, overflow store of %llu keys over %u "
		"buckets\n", rare.nthreads, o->port, (unsigned long long)o->overflow_max,
		nbuckets);
	return 0;
fail:
	xtxd_rare_stop();
	return err;
}

void xtxd_rare_stop(void)
{
	uint64_t one = 1;
	uint32_t i;

	if (rare.stop_fd >= 0 && write(rare.stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_warn("rare path: waking the threads: %s\n", strerror(errno));
	for (i = 0; rare.th && i < rare.nthreads; i++) {
		if (!rare.th[i])
			continue;
		if (rare.th[i]->running)
			pthread_join(rare.th[i]->tid, NULL);
		if (rare.th[i]->sock >= 0)
			close(rare.th[i]->sock);
		free(rare.th[i]);
	}
	free(rare.th);
	rare.th = NULL;
	rare.nthreads = 0;
	rare.live = false;
	if (rare.x.store) {
		/* the store is freed through RCU: this thread takes part for the moment */
		rcu_register_thread();
		xtxd_ovf_free(rare.x.store);
		rcu_unregister_thread();
		rare.x.store = NULL;
	}
	xtxd_replay_free(rare.x.replay);
	rare.x.replay = NULL;
	xtxd_defer_ring_close(&rare.ring);
	if (rare.x.kv)
		munmap(rare.x.kv, rare.kv_size);
	rare.x.kv = NULL;
	if (rare.runtime_fd >= 0)
		close(rare.runtime_fd);
	rare.runtime_fd = -1;
	/* its copies stay for XDP: no write reaches them until the next xtxd */
	if (rare.valstore_fd >= 0)
		close(rare.valstore_fd);
	rare.valstore_fd = -1;
	if (rare.stop_fd >= 0)
		close(rare.stop_fd);
	rare.stop_fd = -1;
}
