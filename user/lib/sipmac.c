// SPDX-License-Identifier: GPL-2.0-only
/* SipHash-2-4 over byte buffers (sipmac.h), keyed with the cluster's secret. */
#include <string.h>
#include "sipmac.h"

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static void round2(struct xtx_sipmac *m)
{
	int i;

	for (i = 0; i < 2; i++) {
		m->v0 += m->v1; m->v1 = ROTL(m->v1, 13); m->v1 ^= m->v0; m->v0 = ROTL(m->v0, 32);
		m->v2 += m->v3; m->v3 = ROTL(m->v3, 16); m->v3 ^= m->v2;
		m->v0 += m->v3; m->v3 = ROTL(m->v3, 21); m->v3 ^= m->v0;
		m->v2 += m->v1; m->v1 = ROTL(m->v1, 17); m->v1 ^= m->v2; m->v2 = ROTL(m->v2, 32);
	}
}

static void word(struct xtx_sipmac *m, uint64_t w)
{
	m->v3 ^= w;
	round2(m);
	m->v0 ^= w;
}

void xtx_sipmac_init(struct xtx_sipmac *m, const struct xtx_secret *s, uint64_t domain)
{
	/* the domain changes the key: a MAC of one kind is no MAC of another */
	uint64_t k0 = s->k0 ^ (domain * 0x9e3779b97f4a7c15ull), k1 = s->k1;

	m->v0 = k0 ^ 0x736f6d6570736575ull;
	m->v1 = k1 ^ 0x646f72616e646f6dull;
	m->v2 = k0 ^ 0x6c7967656e657261ull;
	m->v3 = k1 ^ 0x7465646279746573ull;
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
	word(m, m->tail | ((uint64_t)(m->len & 0xff) << 56));
	m->v2 ^= 0xff;
	round2(m);
	round2(m);
	return m->v0 ^ m->v1 ^ m->v2 ^ m->v3;
}

uint64_t xtx_sipmac(const struct xtx_secret *s, uint64_t domain, const void *buf, size_t len)
{
	struct xtx_sipmac m;

	xtx_sipmac_init(&m, s, domain);
	xtx_sipmac_update(&m, buf, len);
	return xtx_sipmac_final(&m);
}
