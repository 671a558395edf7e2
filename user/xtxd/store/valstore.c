// SPDX-License-Identifier: GPL-2.0-only
/* The copies of big values XDP answers reads from (valstore.h). */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <xtx/kv.h>
#include "overflow.h"
#include "valstore.h"

static void key_of(struct xtx_bigval_key *k, uint8_t table, uint64_t key)
{
	memset(k, 0, sizeof(*k));
	k->key = key;
	k->table = table;
}

int xtxd_valstore_del(int fd, uint8_t table, uint64_t key)
{
	struct xtx_bigval_key k;

	if (fd < 0)
		return 0;
	key_of(&k, table, key);
	if (bpf_map_delete_elem(fd, &k) && errno != ENOENT)
		return -errno;
	return 0;
}

int xtxd_valstore_put(int fd, const struct xtxd_ovf_item *it)
{
	struct xtx_bigval v;
	struct xtx_bigval_key k;

	if (fd < 0)
		return 0;
	if (it->vlen <= XTX_VALUE_INLINE || it->vlen > XTX_VALUE_MAX)
		return xtxd_valstore_del(fd, it->table, it->key);
	key_of(&k, it->table, it->key);
	memset(&v, 0, sizeof(v));
	v.key = it->key;
	v.version = it->version;
	v.table = it->table;
	v.len = it->vlen;
	memcpy(v.data, it->value, it->vlen);
	if (!bpf_map_update_elem(fd, &k, &v, BPF_ANY))
		return 0;
	/* full, or no memory: no copy is safe, an old one is not */
	return xtxd_valstore_del(fd, it->table, it->key);
}

int xtxd_valstore_clear(int fd)
{
	struct xtx_bigval_key k, next;
	int err = 0;

	if (fd < 0)
		return 0;
	/* deleting the key the walk stands on restarts it from the first: fine, we empty it all */
	while (!bpf_map_get_next_key(fd, NULL, &next)) {
		k = next;
		if (bpf_map_delete_elem(fd, &k) && errno != ENOENT) {
			err = -errno;
			break;
		}
	}
	return err;
}
