// SPDX-License-Identifier: GPL-2.0-only
/*
 * TPC-C over libxtx.  Rows a transaction writes are read for update (an
 * exclusive lock under 2PL, a fused read-and-lock under OCC); the rest are
 * plain reads.  Every key is known before its round, so NewOrder takes one
 * round of reads, Payment and OrderStatus one more when the customer comes
 * by last name, Delivery three.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "tpcc_txn.h"

void tpcc_txn_arm(struct tpcc_txn *x)
{
	x->logical = false;
	x->broken = false;
	x->empty = false;
	x->c_id = 0;
	x->o_id = 0;
	x->total = 0;
	x->low = 0;
}

static enum xtx_step broken(struct tpcc_txn *x)
{
	x->broken = true;
	return XTX_STEP_ABORT;
}

/* Queues a read into x->h[slot]; false when libxtx refuses it (too many keys). */
static bool get(struct xtx_txn *t, struct tpcc_txn *x, unsigned int slot, uint64_t key,
		bool for_update)
{
	x->h[slot] = xtx_get(t, tpcc_table_of(key), key, for_update ? XTX_GET_FOR_UPDATE : 0);
	return x->h[slot] >= 0;
}

/* The value read into slot: 0, 1 when the key is absent, -1 when not answered. */
static int value(struct xtx_txn *t, const struct tpcc_txn *x, unsigned int slot,
		 const void **v, uint16_t *vlen)
{
	int err = xtx_value(t, x->h[slot], v, vlen);

	return err == 0 ? 0 : err == -ENOENT ? 1 : -1;
}

static bool fixed(struct xtx_txn *t, const struct tpcc_txn *x, unsigned int slot, void *out,
		  size_t size)
{
	const void *v;
	uint16_t vlen;

	return !value(t, x, slot, &v, &vlen) && !tpcc_dec_fixed(v, vlen, out, size);
}

static bool put(struct xtx_txn *t, uint64_t key, const void *v, size_t vlen)
{
	return !xtx_put(t, tpcc_table_of(key), key, v, (uint16_t)vlen);
}

static bool insert(struct xtx_txn *t, uint64_t key, const void *v, size_t vlen)
{
	return !xtx_insert(t, tpcc_table_of(key), key, v, (uint16_t)vlen);
}

/* ---- NewOrder (clause 2.4.2) ---- */

enum { NO_W, NO_D, NO_C, NO_S };

static enum xtx_step neworder(struct xtx_txn *t, struct tpcc_txn *x)
{
	const struct tpcc_input *in = &x->in;
	uint8_t sbuf[sizeof(struct tpcc_stock) + TPCC_S_DATA_MAX];
	struct tpcc_warehouse w;
	struct tpcc_district d;
	struct tpcc_customer c;
	struct tpcc_olines ol;
	struct tpcc_order o;
	struct tpcc_neworder no;
	struct tpcc_idx clast;
	unsigned int i, lines = in->ol_cnt - (in->rollback ? 1 : 0);
	int64_t sum = 0;
	size_t tail;

	if (xtx_txn_round(t) == 0) {
		if (!get(t, x, NO_W, tpcc_key(TPCC_K_WAREHOUSE, in->w, 0, 0), false) ||
		    !get(t, x, NO_D, tpcc_key(TPCC_K_DISTRICT, in->w, in->d, 0), true) ||
		    !get(t, x, NO_C, tpcc_key(TPCC_K_CUSTOMER, in->w, in->d, in->c), false))
			return broken(x);
		/* the unused item of a rollback has no stock row to read */
		for (i = 0; i < lines; i++)
			if (!get(t, x, NO_S + i, tpcc_key(TPCC_K_STOCK, in->supply_w[i], 0,
							   in->i_id[i]), true))
				return broken(x);
		return XTX_STEP_READ;
	}
	if (in->rollback) {
		/* the last item is not found: the whole order rolls back */
		x->logical = true;
		return XTX_STEP_ABORT;
	}
	{
		const void *v;
		uint16_t vlen;

		if (!fixed(t, x, NO_W, &w, sizeof(w)) || !fixed(t, x, NO_D, &d, sizeof(d)) ||
		    value(t, x, NO_C, &v, &vlen) ||
		    tpcc_dec_tail(v, vlen, &c, sizeof(c), TPCC_C_DATA_MAX, NULL, &tail))
			return broken(x);
	}
	x->o_id = d.next_o_id;
	d.next_o_id++;
	if (!put(t, tpcc_key(TPCC_K_DISTRICT, in->w, in->d, 0), &d, sizeof(d)))
		return broken(x);
	memset(&ol, 0, sizeof(ol));
	ol.o_id = x->o_id;
	ol.cnt = (uint8_t)lines;
	for (i = 0; i < lines; i++) {
		struct tpcc_oline *l = &ol.l[i];
		struct tpcc_stock s;
		struct tpcc_item it;
		const void *v;
		uint16_t vlen;

		if (value(t, x, NO_S + i, &v, &vlen) ||
		    tpcc_dec_tail(v, vlen, &s, sizeof(s), TPCC_S_DATA_MAX, (char *)sbuf + sizeof(s),
				  &tail))
			return broken(x);
		tpcc_item(x->cfg, in->i_id[i], &it);
		if (s.quantity >= in->quantity[i] + 10)
			s.quantity = (int16_t)(s.quantity - in->quantity[i]);
		else
			s.quantity = (int16_t)(s.quantity - in->quantity[i] + 91);
		s.ytd += in->quantity[i];
		s.order_cnt++;
		if (in->supply_w[i] != in->w)
			s.remote_cnt++;
		memcpy(sbuf, &s, sizeof(s));
		if (!put(t, tpcc_key(TPCC_K_STOCK, in->supply_w[i], 0, in->i_id[i]), sbuf,
			 sizeof(s) + tail))
			return broken(x);
		l->i_id = in->i_id[i];
		l->supply_w_id = in->supply_w[i];
		l->number = (uint8_t)(i + 1);
		l->quantity = in->quantity[i];
		l->amount = in->quantity[i] * it.price;
		memcpy(l->dist_info, s.dist[in->d - 1], sizeof(l->dist_info));
		sum += l->amount;
	}
	/* clause 2.4.2.2: sum * (1 - C_DISCOUNT) * (1 + W_TAX + D_TAX), in 1/10000 */
	x->total = sum * (10000 - c.discount) / 10000 * (10000 + w.tax + d.tax) / 10000;
	memset(&o, 0, sizeof(o));
	o.o_id = x->o_id;
	o.c_id = (uint16_t)in->c;
	o.entry_d = x->now;
	o.ol_cnt = (uint8_t)lines;
	o.all_local = in->all_local;
	no.o_id = x->o_id;
	clast.o_id = x->o_id;
	if (!insert(t, tpcc_key(TPCC_K_ORDER, in->w, in->d, x->o_id), &o, sizeof(o)) ||
	    !insert(t, tpcc_key(TPCC_K_NEWORDER, in->w, in->d, x->o_id), &no, sizeof(no)) ||
	    !insert(t, tpcc_key(TPCC_K_OLINES, in->w, in->d, x->o_id), &ol,
		    TPCC_OLINES_VLEN(lines)) ||
	    !put(t, tpcc_key(TPCC_K_CLAST, in->w, in->d, in->c), &clast, sizeof(clast)))
		return broken(x);
	return XTX_STEP_COMMIT;
}

/* ---- the customer by id or by last name (clause 2.5.2.2, 2.6.2.2) ---- */

/*
 * Resolves a by-name customer from the name index read into slot: the one
 * at position ceil(n / 2) in C_FIRST order.  0 when unresolved (broken).
 */
static uint32_t by_name(struct xtx_txn *t, const struct tpcc_txn *x, unsigned int slot)
{
	struct tpcc_cname cn;
	const void *v;
	uint16_t vlen;

	if (value(t, x, slot, &v, &vlen) || tpcc_dec_cname(v, vlen, &cn) || !cn.n)
		return 0;
	return cn.c_id[(cn.n - 1) / 2];
}

/* ---- Payment (clause 2.5.2) ---- */

enum { PAY_W, PAY_D, PAY_C, PAY_NAME };

/* Queues the read of the paying customer for update. */
static enum xtx_step pay_customer(struct xtx_txn *t, struct tpcc_txn *x)
{
	uint64_t key = tpcc_key(TPCC_K_CUSTOMER, x->in.c_w, x->in.c_d, x->c_id);

	return get(t, x, PAY_C, key, true) ? XTX_STEP_READ : broken(x);
}

static enum xtx_step payment(struct xtx_txn *t, struct tpcc_txn *x)
{
	const struct tpcc_input *in = &x->in;
	uint8_t cbuf[sizeof(struct tpcc_customer) + TPCC_C_DATA_MAX];
	char data[TPCC_C_DATA_MAX];
	struct tpcc_warehouse w;
	struct tpcc_district d;
	struct tpcc_customer c;
	struct tpcc_history h;
	const void *v;
	uint16_t vlen;
	size_t tail;

	if (xtx_txn_round(t) == 0) {
		if (!get(t, x, PAY_W, tpcc_key(TPCC_K_WAREHOUSE, in->w, 0, 0), true) ||
		    !get(t, x, PAY_D, tpcc_key(TPCC_K_DISTRICT, in->w, in->d, 0), true))
			return broken(x);
		if (in->by_name)
			return get(t, x, PAY_NAME,
				   tpcc_key(TPCC_K_CNAME, in->c_w, in->c_d, in->name), false) ?
				       XTX_STEP_READ : broken(x);
		x->c_id = in->c;
		return pay_customer(t, x);
	}
	if (!x->c_id) {
		x->c_id = by_name(t, x, PAY_NAME);
		return x->c_id ? pay_customer(t, x) : broken(x);
	}
	if (!fixed(t, x, PAY_W, &w, sizeof(w)) || !fixed(t, x, PAY_D, &d, sizeof(d)) ||
	    value(t, x, PAY_C, &v, &vlen) ||
	    tpcc_dec_tail(v, vlen, &c, sizeof(c), TPCC_C_DATA_MAX, data, &tail))
		return broken(x);
	w.ytd += in->amount;
	d.ytd += in->amount;
	c.balance -= in->amount;
	c.ytd_payment += in->amount;
	c.payment_cnt++;
	if (!memcmp(c.credit, "BC", 2)) {
		/* the payment's ids and amount go in front; C_DATA keeps its first 500 bytes */
		char head[64];
		size_t n = tpcc_bc_data(in, x->c_id, head, sizeof(head));

		if (n + tail > TPCC_C_DATA_MAX)
			tail = TPCC_C_DATA_MAX - n;
		memmove(data + n, data, tail);
		memcpy(data, head, n);
		tail += n;
	}
	memcpy(cbuf, &c, sizeof(c));
	memcpy(cbuf + sizeof(c), data, tail);
	memset(&h, 0, sizeof(h));
	h.c_id = (uint16_t)x->c_id;
	h.c_d_id = (uint8_t)in->c_d;
	h.c_w_id = (uint16_t)in->c_w;
	h.d_id = (uint8_t)in->d;
	h.w_id = (uint16_t)in->w;
	h.date = x->now;
	h.amount = in->amount;
	/* H_DATA: W_NAME, four spaces, D_NAME */
	memcpy(h.data, w.name, strnlen(w.name, sizeof(w.name)));
	memcpy(h.data + strnlen(w.name, sizeof(w.name)), "    ", 4);
	memcpy(h.data + strnlen(w.name, sizeof(w.name)) + 4, d.name, strnlen(d.name, 10));
	if (!put(t, tpcc_key(TPCC_K_WAREHOUSE, in->w, 0, 0), &w, sizeof(w)) ||
	    !put(t, tpcc_key(TPCC_K_DISTRICT, in->w, in->d, 0), &d, sizeof(d)) ||
	    !put(t, tpcc_key(TPCC_K_CUSTOMER, in->c_w, in->c_d, x->c_id), cbuf, sizeof(c) + tail) ||
	    !insert(t, x->hist_key, &h, sizeof(h)))
		return broken(x);
	return XTX_STEP_COMMIT;
}

/* ---- OrderStatus (clause 2.6.2) ---- */

enum { OS_NAME, OS_C, OS_LAST, OS_O, OS_OL };

static enum xtx_step orderstatus(struct xtx_txn *t, struct tpcc_txn *x)
{
	const struct tpcc_input *in = &x->in;
	struct tpcc_customer c;
	struct tpcc_olines ol;
	struct tpcc_order o;
	struct tpcc_idx last;
	const void *v;
	uint16_t vlen;
	size_t tail;

	if (xtx_txn_round(t) == 0 && in->by_name)
		return get(t, x, OS_NAME, tpcc_key(TPCC_K_CNAME, in->w, in->d, in->name), false) ?
		       XTX_STEP_READ : broken(x);
	if (!x->c_id) {
		x->c_id = in->by_name ? by_name(t, x, OS_NAME) : in->c;
		if (!x->c_id)
			return broken(x);
		return get(t, x, OS_C, tpcc_key(TPCC_K_CUSTOMER, in->w, in->d, x->c_id), false) &&
		       get(t, x, OS_LAST, tpcc_key(TPCC_K_CLAST, in->w, in->d, x->c_id), false) ?
		       XTX_STEP_READ : broken(x);
	}
	if (!x->o_id) {
		if (value(t, x, OS_C, &v, &vlen) ||
		    tpcc_dec_tail(v, vlen, &c, sizeof(c), TPCC_C_DATA_MAX, NULL, &tail) ||
		    !fixed(t, x, OS_LAST, &last, sizeof(last)) || !last.o_id)
			return broken(x);
		x->o_id = last.o_id;
		return get(t, x, OS_O, tpcc_key(TPCC_K_ORDER, in->w, in->d, x->o_id), false) &&
		       get(t, x, OS_OL, tpcc_key(TPCC_K_OLINES, in->w, in->d, x->o_id), false) ?
		       XTX_STEP_READ : broken(x);
	}
	/* the index must name an order of this customer, with its lines */
	if (!fixed(t, x, OS_O, &o, sizeof(o)) || o.c_id != x->c_id ||
	    value(t, x, OS_OL, &v, &vlen) || tpcc_dec_olines(v, vlen, &ol) || ol.cnt != o.ol_cnt)
		return broken(x);
	return XTX_STEP_COMMIT;
}

/* ---- Delivery, one district (clause 2.7.4) ---- */

enum { DLV_HEAD, DLV_NO, DLV_O, DLV_OL, DLV_C };

static enum xtx_step delivery(struct xtx_txn *t, struct tpcc_txn *x)
{
	const struct tpcc_input *in = &x->in;
	uint8_t cbuf[sizeof(struct tpcc_customer) + TPCC_C_DATA_MAX];
	struct tpcc_customer c;
	struct tpcc_olines ol;
	struct tpcc_order o;
	struct tpcc_idx head;
	const void *v;
	uint16_t vlen;
	uint64_t no_key;
	unsigned int i;
	size_t tail;
	int no;

	switch (xtx_txn_round(t)) {
	case 0:
		return get(t, x, DLV_HEAD, tpcc_key(TPCC_K_NOHEAD, in->w, in->d, 0), true) ?
		       XTX_STEP_READ : broken(x);
	case 1:
		if (!fixed(t, x, DLV_HEAD, &head, sizeof(head)) || !head.o_id)
			return broken(x);
		x->o_id = head.o_id;
		return get(t, x, DLV_NO, tpcc_key(TPCC_K_NEWORDER, in->w, in->d, x->o_id), true) &&
		       get(t, x, DLV_O, tpcc_key(TPCC_K_ORDER, in->w, in->d, x->o_id), true) &&
		       get(t, x, DLV_OL, tpcc_key(TPCC_K_OLINES, in->w, in->d, x->o_id), true) ?
		       XTX_STEP_READ : broken(x);
	case 2:
		no = value(t, x, DLV_NO, &v, &vlen);
		if (no < 0)
			return broken(x);
		if (no == 1) {
			/* nothing to deliver: then the head is past the last order */
			if (value(t, x, DLV_O, &v, &vlen) != 1)
				return broken(x);
			x->empty = true;
			return XTX_STEP_COMMIT;
		}
		if (!fixed(t, x, DLV_O, &o, sizeof(o)) || o.carrier_id)
			return broken(x);
		x->c_id = o.c_id;
		return get(t, x, DLV_C, tpcc_key(TPCC_K_CUSTOMER, in->w, in->d, x->c_id), true) ?
		       XTX_STEP_READ : broken(x);
	}
	if (!fixed(t, x, DLV_O, &o, sizeof(o)) || value(t, x, DLV_OL, &v, &vlen) ||
	    tpcc_dec_olines(v, vlen, &ol) || value(t, x, DLV_C, &v, &vlen) ||
	    tpcc_dec_tail(v, vlen, &c, sizeof(c), TPCC_C_DATA_MAX, (char *)cbuf + sizeof(c), &tail))
		return broken(x);
	o.carrier_id = in->carrier;
	for (i = 0; i < ol.cnt; i++) {
		ol.l[i].delivery_d = x->now;
		x->total += ol.l[i].amount;
	}
	c.balance += x->total;
	c.delivery_cnt++;
	memcpy(cbuf, &c, sizeof(c));
	head.o_id = x->o_id + 1;
	no_key = tpcc_key(TPCC_K_NEWORDER, in->w, in->d, x->o_id);
	if (xtx_delete(t, tpcc_table_of(no_key), no_key) ||
	    !put(t, tpcc_key(TPCC_K_NOHEAD, in->w, in->d, 0), &head, sizeof(head)) ||
	    !put(t, tpcc_key(TPCC_K_ORDER, in->w, in->d, x->o_id), &o, sizeof(o)) ||
	    !put(t, tpcc_key(TPCC_K_OLINES, in->w, in->d, x->o_id), &ol,
		 TPCC_OLINES_VLEN(ol.cnt)) ||
	    !put(t, tpcc_key(TPCC_K_CUSTOMER, in->w, in->d, x->c_id), cbuf, sizeof(c) + tail))
		return broken(x);
	return XTX_STEP_COMMIT;
}

/* ---- StockLevel (clause 2.8.2) ---- */

enum { SL_D, SL_OL };

static enum xtx_step stocklevel(struct xtx_txn *t, struct tpcc_txn *x)
{
	const struct tpcc_input *in = &x->in;
	struct tpcc_district d;
	unsigned int i, j, k;

	if (x->part) {
		/* a batch of the stock rows: those below the threshold */
		if (xtx_txn_round(t) == 0) {
			for (i = 0; i < x->nitems; i++) {
				uint64_t key = tpcc_key(TPCC_K_STOCK, in->w, 0, x->items[i]);

				if (!get(t, x, i, key, false))
					return broken(x);
			}
			return XTX_STEP_READ;
		}
		for (i = 0; i < x->nitems; i++) {
			struct tpcc_stock s;
			const void *v;
			uint16_t vlen;
			size_t tail;

			if (value(t, x, i, &v, &vlen) ||
			    tpcc_dec_tail(v, vlen, &s, sizeof(s), TPCC_S_DATA_MAX, NULL, &tail))
				return broken(x);
			x->low += s.quantity < (int)in->threshold;
		}
		return XTX_STEP_COMMIT;
	}
	switch (xtx_txn_round(t)) {
	case 0:
		return get(t, x, SL_D, tpcc_key(TPCC_K_DISTRICT, in->w, in->d, 0), false) ?
		       XTX_STEP_READ : broken(x);
	case 1:
		if (!fixed(t, x, SL_D, &d, sizeof(d)))
			return broken(x);
		x->o_id = d.next_o_id;
		for (i = 0; i < TPCC_STOCK_LEVEL_ORDERS && i + 1 < d.next_o_id; i++)
			if (!get(t, x, SL_OL + i, tpcc_key(TPCC_K_OLINES, in->w, in->d,
							   d.next_o_id - 1 - i), false))
				return broken(x);
		return XTX_STEP_READ;
	}
	/* the distinct items of those orders' lines; their stock rows come in batches */
	x->nitems = 0;
	for (i = 0; i < TPCC_STOCK_LEVEL_ORDERS && i + 1 < x->o_id; i++) {
		struct tpcc_olines ol;
		const void *v;
		uint16_t vlen;

		if (value(t, x, SL_OL + i, &v, &vlen) || tpcc_dec_olines(v, vlen, &ol))
			return broken(x);
		for (j = 0; j < ol.cnt; j++) {
			for (k = 0; k < x->nitems && x->items[k] != ol.l[j].i_id; k++)
				;
			if (k == x->nitems && x->nitems < TPCC_SL_ITEMS)
				x->items[x->nitems++] = ol.l[j].i_id;
		}
	}
	return XTX_STEP_COMMIT;
}

enum xtx_step tpcc_step(struct xtx_txn *t, void *arg)
{
	struct tpcc_txn *x = arg;

	switch (x->in.type) {
	case TPCC_NEWORDER:
		return neworder(t, x);
	case TPCC_PAYMENT:
		return payment(t, x);
	case TPCC_ORDERSTATUS:
		return orderstatus(t, x);
	case TPCC_DELIVERY:
		return delivery(t, x);
	case TPCC_STOCKLEVEL:
		return stocklevel(t, x);
	default:
		return broken(x);
	}
}
