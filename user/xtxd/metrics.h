/* SPDX-License-Identifier: GPL-2.0-only */
/* xtxd's HTTP endpoint: /metrics (Prometheus text), /healthz (liveness), /readyz (readiness). */
#ifndef XTXD_METRICS_H
#define XTXD_METRICS_H

#include <stddef.h>
#include <netinet/in.h>
#include "target.h"

/* "ADDR:PORT" (ADDR may be empty: every address) -> sa; 0 or -EINVAL after saying why. */
int xtxd_metrics_parse(const char *s, struct sockaddr_in *sa);
/* Serves http://sa/metrics from a thread of its own; 0 or a negative errno. */
int xtxd_metrics_start(const struct xtx_target *t, const struct sockaddr_in *sa);
/* Safe when never started. */
void xtxd_metrics_stop(void);
/* Where xtxd is, for /readyz: ready only while it serves. */
enum xtxd_serve_state { XTXD_STARTING, XTXD_SERVING, XTXD_STOPPING };
void xtxd_metrics_set_state(enum xtxd_serve_state st);
/* One scrape's text (malloc'ed, *len bytes), or NULL when out of memory. */
char *xtxd_metrics_text(size_t *len);

#endif /* XTXD_METRICS_H */
