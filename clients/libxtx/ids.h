/* SPDX-License-Identifier: GPL-2.0-only */
/* Client ids and request ids that respect the server's dedupe rules. */
#ifndef XTX_IDS_H
#define XTX_IDS_H

#include <stdint.h>

/*
 * First request id for a (client, server) pair: CLOCK_REALTIME in
 * microseconds.  A restarted client with the same client id then starts
 * above every id its previous run used, as long as that run sent fewer
 * than a million requests per second to one server; reused ids would be
 * answered from (or refused by) the server's dedupe record.
 */
uint64_t xtx_req_id_start(void);

/*
 * A default first client id for n consecutive ids, derived from the pid so
 * that concurrent runs rarely collide; base + n stays within the server's
 * default limit of XTX_MAX_CLIENTS_DEFAULT.
 */
uint32_t xtx_client_base_default(unsigned int n);

#endif /* XTX_IDS_H */
