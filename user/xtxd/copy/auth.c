// SPDX-License-Identifier: GPL-2.0-only
/* The seals of a copy (copy_wire.h): the request, the reply's header, each frame of keys. */
#include <string.h>
#include "sipmac.h"
#include "copy.h"
#include "copy_wire.h"

static struct {
	bool sealed;
	struct xtx_secret secret;
} A;

void xtxd_copy_set_secret(const struct xtx_secret *s)
{
	A.sealed = s != NULL;
	if (s)
		A.secret = *s;
}

bool xtxd_copy_sealed(void)
{
	return A.sealed;
}

uint64_t xtxd_copy_req_mac(const struct xtxd_copy_req *rq, uint64_t stamp)
{
	struct xtx_sipmac m;

	if (!A.sealed)
		return 0;
	xtx_sipmac_init(&m, &A.secret, XTX_MAC_COPY_REQ);
	xtx_sipmac_update(&m, rq, sizeof(*rq));
	xtx_sipmac_update(&m, &stamp, sizeof(stamp));
	return xtx_sipmac_final(&m);
}

uint64_t xtxd_copy_reply_mac(const struct xtxd_copy_hdr *h, uint64_t req_mac)
{
	struct xtx_sipmac m;

	if (!A.sealed)
		return 0;
	xtx_sipmac_init(&m, &A.secret, XTX_MAC_COPY_REPLY);
	xtx_sipmac_update(&m, &req_mac, sizeof(req_mac));
	xtx_sipmac_update(&m, h, offsetof(struct xtxd_copy_hdr, mac));
	return xtx_sipmac_final(&m);
}

uint64_t xtxd_copy_frame_mac(uint64_t chain, const struct xtxd_copy_frame *f, const void *bytes)
{
	struct xtx_sipmac m;

	if (!A.sealed)
		return 0;
	xtx_sipmac_init(&m, &A.secret, XTX_MAC_COPY_STREAM);
	xtx_sipmac_update(&m, &chain, sizeof(chain));
	xtx_sipmac_update(&m, f, sizeof(*f));
	xtx_sipmac_update(&m, bytes, f->len);
	return xtx_sipmac_final(&m);
}

bool xtxd_copy_mac_ok(uint64_t want, uint64_t got)
{
	return !A.sealed || xtx_sipmac_eq(want, got);
}
