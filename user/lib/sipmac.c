// SPDX-License-Identifier: GPL-2.0-only
/* SipHash-2-4 over byte buffers (sipmac.h), keyed with the cluster's secret. */
#include <string.h>
#include "sipmac.h"

/* SipHash-2-4's compression: two of the rounds the request MAC (xtx/mac.h) runs once. */
static void word(struct xtx_sipmac *m, uint64_t w)
{
	m->s.v3 ^= w;
	xtx_sip_round(&m->s);
	xtx_sip_round(&m->s);
	m->s.v0 ^= w;
}

void xtx_sipmac_init(struct xtx_sipmac *m, const struct xtx_secret *s, uint64_t domain)
{
	/* the domain changes the key: a MAC of one kind is no MAC of another */
	xtx_sip_init(&m->s, s->k0 ^ (domain * 0x9e3779b97f4a7c15ull), s->k1);
	m->tail = 0;
	m->len = 0;
}

void xtx_sipmac_update(struct xtx_sipmac *m, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		size_t have = m->len & 7;

		/* whole words straight from the buffer when aligned to our count */
		if (!have && len >= 8) {
			uint64_t w;

			memcpy(&w, p, 8);
			word(m, w);
			p += 8;
			len -= 8;
			m->len += 8;
			continue;
		}
		m->tail |= (uint64_t)*p++ << (8 * have);
		len--;
		m->len++;
		if (!(m->len & 7)) {
			word(m, m->tail);
			m->tail = 0;
		}
	}
}

uint64_t xtx_sipmac_final(struct xtx_sipmac *m)
{
	int i;

	word(m, m->tail | ((uint64_t)(m->len & 0xff) << 56));
	m->s.v2 ^= 0xff;
	for (i = 0; i < 4; i++)
		xtx_sip_round(&m->s);
	return m->s.v0 ^ m->s.v1 ^ m->s.v2 ^ m->s.v3;
}

uint64_t xtx_sipmac(const struct xtx_secret *s, uint64_t domain, const void *buf, size_t len)
{
	struct xtx_sipmac m;

	xtx_sipmac_init(&m, s, domain);
	xtx_sipmac_update(&m, buf, len);
	return xtx_sipmac_final(&m);
}
