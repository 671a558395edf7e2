// SPDX-License-Identifier: GPL-2.0-only
/* TC egress entry: finish the rare path when xtxd's reply leaves, then strip its trailer. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xtx/proto.h>
#include <xtx/kv.h>
#include "lib/config.h"
#include "lib/maps.h"
#include "lib/parse.h"
#include "lib/csum.h"
#include "lib/stats.h"
#include "lib/fix.h"
#include "lib/hades_slot.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Every reply xtxd sends ends in fix entries and a struct xtx_fix_footer
 * (include/xtx/kv.h), found from the packet's end; anything else leaves
 * untouched.
 */
SEC("tc")
int xtx_tc_egress(struct __sk_buff *skb)
{
	struct xtx_fix_entry fe;
	struct xtx_fix_footer ft;
	struct xtx_dedupe_slot *slot;
	struct xtx_hdr h;
	struct xtx_op op;
	__u32 ulen, foot_off, ents_off, body_end, i;
	bool first_answer;
	__u64 cookie;
	struct iphdr iph;
	struct udphdr uh;
	void *data, *data_end;
	struct iphdr *ip;
	struct udphdr *udp;

	if (bpf_skb_load_bytes(skb, XTX_IP_OFF, &iph, sizeof(iph)) ||
	    bpf_skb_load_bytes(skb, XTX_UDP_OFF, &uh, sizeof(uh)) ||
	    skb->protocol != bpf_htons(ETH_P_IP) || iph.protocol != IPPROTO_UDP ||
	    iph.ihl != 5 || uh.source != bpf_htons(xtx_port))
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, XTX_HDR_OFF, &h, sizeof(h)) || h.magic != XTX_MAGIC ||
	    !(h.flags & XTX_F_REPLY) || h.nops > XTX_MAX_OPS)
		return TC_ACT_OK;
	/* only xtxd's answers carry fixes: not a forwarded or forged look-alike */
	cookie = bpf_get_socket_cookie(skb);
	if (!xtx_tc_any_sender && !bpf_map_lookup_elem(&xtx_rare_socks, &cookie)) {
		xtx_count(XTX_CTR_TC_FOREIGN);
		return TC_ACT_OK;
	}
	ulen = bpf_ntohs(uh.len);
	if (ulen < sizeof(uh) + sizeof(h) + sizeof(ft) || ulen > sizeof(uh) + XTX_MAX_PAYLOAD ||
	    skb->len != XTX_UDP_OFF + ulen)
		return TC_ACT_OK;
	foot_off = XTX_UDP_OFF + ulen - sizeof(ft);
	if (bpf_skb_load_bytes(skb, foot_off, &ft, sizeof(ft)) || ft.magic != XTX_FIX_MAGIC ||
	    ft.count > XTX_MAX_DEFERRED ||
	    ft.body_len < sizeof(h) + h.nops * sizeof(struct xtx_op) ||
	    sizeof(uh) + ft.body_len + XTX_FIX_TRAILER_LEN(ft.count) != ulen)
		return TC_ACT_OK;
	body_end = XTX_HDR_OFF + ft.body_len;
	ents_off = body_end;

	slot = ft.count ? xtx_fix_dedupe_slot(&h) : NULL;
	first_answer = slot || !xtx_fix_answered(&h);
	for (i = 0; i < XTX_MAX_DEFERRED && i < ft.count; i++) {
		if (bpf_skb_load_bytes(skb, ents_off + i * sizeof(fe), &fe, sizeof(fe)) ||
		    fe.op_idx >= h.nops ||
		    bpf_skb_load_bytes(skb, XTX_OPS_OFF + (fe.op_idx & (XTX_MAX_OPS - 1)) *
				       sizeof(op), &op, sizeof(op)))
			return TC_ACT_OK;
		/*
		 * Record before the fix releases the bucket: a re-deferral of
		 * this request that takes the bucket next must find the answer
		 * (xtx_op_kv checks the record once it holds the bucket).
		 */
		if (slot)
			xtx_fix_record(slot, fe.op_idx, &op);
		xtx_fix_apply(&fe, &op, first_answer);
		/* a HADES transaction's install is in: its slot may end now (XTX_HSF_INSTALLING) */
		if (op.opcode == XTX_OP_HVALIDATE &&
		    (op.status == XTX_ST_OK || op.status == XTX_ST_ALREADY_APPLIED))
			xtx_hades_installed(op.txn, op.table, op.key);
	}
	if (slot)
		__sync_lock_test_and_set(&slot->word, xtx_dedupe_word(h.req_id, XTX_DEDUPE_DONE));

	/* the client sees an ordinary reply: cut the entries and footer, fix the lengths */
	if (bpf_skb_change_tail(skb, body_end, 0))
		return TC_ACT_SHOT;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	ip = data + XTX_IP_OFF;
	udp = data + XTX_UDP_OFF;
	if ((void *)(udp + 1) > data_end)
		return TC_ACT_SHOT;
	ip->tot_len = bpf_htons(body_end - XTX_IP_OFF);
	ip->check = xtx_ip_csum(ip);
	udp->len = bpf_htons(body_end - XTX_UDP_OFF);
	udp->check = 0;
	return TC_ACT_OK;
}
