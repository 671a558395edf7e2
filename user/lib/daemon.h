/* SPDX-License-Identifier: GPL-2.0-only */
/* Background start for the servers: fork, readiness reported to the parent, pidfile. */
#ifndef XTX_DAEMON_H
#define XTX_DAEMON_H

/*
 * Forks.  The parent waits until the child calls xtx_daemon_ready() and
 * exits 0 if it reported success, 1 otherwise (or if it died first), so a
 * script that starts a server can use it right away, and a failed start
 * fails loudly.  The child starts a session and, when logfile is given,
 * sends its messages there.  Returns 0 in the child (with *ready_fd set)
 * or -1 after printing why.
 */
int xtx_daemonize(const char *logfile, int *ready_fd);

/*
 * Tells the waiting parent how the start went (0: serving) and, on
 * success, detaches stdin/stdout/stderr.  No-op when *ready_fd < 0.
 */
void xtx_daemon_ready(int *ready_fd, char status);

/*
 * Tells systemd (a Type=notify unit: $NOTIFY_SOCKET) how the service is:
 * "READY=1", "STOPPING=1", "STATUS=...".  No-op outside systemd; 0 or a
 * negative errno.
 */
int xtx_sd_notify(const char *state);

/* Writes getpid() to path atomically (a temporary file renamed); 0 or -1 after printing why. */
int xtx_write_pidfile(const char *path);

#endif /* XTX_DAEMON_H */
