/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * TPC-C (specification 5.11) as key-value rows: 8-byte keys that start
 * with a kind byte naming the TPC-C table, full rows as values of up to
 * 1 KiB in three wire tables by size, the population (clause 4.3.3.1) and the transactions'
 * inputs (clause 2.4-2.8).  Warehouse, district, customer, order and item
 * ids are 1-based as in the specification.
 *
 * Where it departs from a relational schema, and why:
 * - ITEM is read-only and never changes, so every client computes it from
 *   the seed instead of reading it (as DrTM and its successors replicate
 *   it): NewOrder then touches 3 + 2 * 15 keys at most, inside libxtx's
 *   32 keys per transaction once the order lines are packed.
 * - An order's lines are one row (TPCC_K_OLINES, up to 15 lines of 44
 *   bytes): a NewOrder writes one row for them, a Delivery updates one.
 * - Range accesses go through index rows written inside the transactions:
 *   TPCC_K_NOHEAD (a district's oldest undelivered order, for Delivery),
 *   TPCC_K_CLAST (a customer's last order, for OrderStatus) and
 *   TPCC_K_CNAME (a district's customers of one last name sorted by first
 *   name, written at load: names never change).  StockLevel reads
 *   D_NEXT_O_ID and the 20 orders below it by key.
 * All integers are little-endian as the host stores them (x86, arm64);
 * money is int64 cents, tax and discount units of 1/10000.
 */
#ifndef XTX_TPCC_H
#define XTX_TPCC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Wire table ids are few (16) and shared by every workload, so TPC-C's
 * tables are the kinds below, in three wire tables by value size: a read
 * reserves room in its request for the longest value its table holds.
 */
#define TPCC_T_SMALL		6	/* ORDER, NEW-ORDER, the order indexes: within the slot */
#define TPCC_T_MID		7	/* WAREHOUSE, DISTRICT, STOCK, HISTORY: up to 306 bytes */
#define TPCC_T_BIG		12	/* CUSTOMER, the order lines, the name index: up to 1 KiB */

enum tpcc_kind {
	TPCC_K_WAREHOUSE = 1,	/* (w) */
	TPCC_K_DISTRICT,	/* (w, d) */
	TPCC_K_CUSTOMER,	/* (w, d, c) */
	TPCC_K_HISTORY,		/* loaded: (w, d, c); new ones: client << 40 | sequence */
	TPCC_K_NEWORDER,	/* (w, d, o) */
	TPCC_K_ORDER,		/* (w, d, o) */
	TPCC_K_OLINES,		/* (w, d, o): the order's lines, packed */
	TPCC_K_STOCK,		/* (w, 0, i) */
	TPCC_K_NOHEAD,		/* (w, d): the oldest undelivered order id */
	TPCC_K_CLAST,		/* (w, d, c): the customer's last order id */
	TPCC_K_CNAME,		/* (w, d, last name number 0..999): customer ids */
	TPCC_K_HISTORY_RUN,	/* (client << 40 | sequence): Payment's history rows */
	TPCC_NKINDS,
};

/* kind:8 | w:16 | d:8 | x:32 */
static inline uint64_t tpcc_key(enum tpcc_kind k, uint32_t w, uint32_t d, uint32_t x)
{
	return (uint64_t)k << 56 | (uint64_t)(w & 0xffff) << 40 | (uint64_t)(d & 0xff) << 32 | x;
}

static inline enum tpcc_kind tpcc_key_kind(uint64_t key)
{
	return (enum tpcc_kind)(key >> 56);
}

static inline uint32_t tpcc_key_w(uint64_t key)
{
	return (uint32_t)(key >> 40) & 0xffff;
}

static inline uint32_t tpcc_key_d(uint64_t key)
{
	return (uint32_t)(key >> 32) & 0xff;
}

static inline uint32_t tpcc_key_x(uint64_t key)
{
	return (uint32_t)key;
}

/*
 * The wire table of a key's kind.  A read reserves its table's longest
 * value in the request (tpcc_value_max): the few rows past 306 bytes sit
 * apart, so a packet carries several STOCK reads, not one.
 */
static inline uint8_t tpcc_table_of(uint64_t key)
{
	switch (tpcc_key_kind(key)) {
	case TPCC_K_ORDER:
	case TPCC_K_NEWORDER:
	case TPCC_K_NOHEAD:
	case TPCC_K_CLAST:
		return TPCC_T_SMALL;
	case TPCC_K_CUSTOMER:
	case TPCC_K_OLINES:
	case TPCC_K_CNAME:
		return TPCC_T_BIG;
	default:
		return TPCC_T_MID;
	}
}

/* A Payment's history row: unique per client and sequence number (40 bits). */
static inline uint64_t tpcc_history_key(uint32_t client, uint64_t seq)
{
	return (uint64_t)TPCC_K_HISTORY_RUN << 56 | (uint64_t)(client & 0xffff) << 40 |
	       (seq & 0xffffffffffull);
}

/* ---- sizes (clause 1.3, 4.3) ---- */

#define TPCC_DISTRICTS		10	/* per warehouse */
#define TPCC_CUSTOMERS		3000	/* per district */
#define TPCC_ITEMS		100000
#define TPCC_NAMES		1000	/* last names: three syllables of ten */
#define TPCC_MAX_WAREHOUSES	65535	/* the key's 16 bits */
#define TPCC_MIN_LINES		5
#define TPCC_MAX_LINES		15
#define TPCC_STOCK_LEVEL_ORDERS	20
/* Customers one name index row lists at most. */
#define TPCC_CNAME_MAX		500

/* ---- rows ---- */

struct tpcc_warehouse {
	uint16_t w_id;
	char name[10], street1[20], street2[20], city[20], state[2], zip[9];
	uint16_t tax;			/* 1/10000 */
	int64_t ytd;			/* cents */
} __attribute__((packed));

struct tpcc_district {
	uint16_t w_id;
	uint8_t d_id;
	char name[10], street1[20], street2[20], city[20], state[2], zip[9];
	uint16_t tax;
	int64_t ytd;
	uint32_t next_o_id;
} __attribute__((packed));

#define TPCC_C_DATA_MAX		500

/* The fixed part; C_DATA (300..500 bytes at load) follows, its length vlen - sizeof. */
struct tpcc_customer {
	uint16_t w_id;
	uint8_t d_id;
	uint16_t c_id;
	char first[16], middle[2], last[16];
	char street1[20], street2[20], city[20], state[2], zip[9], phone[16];
	uint64_t since;			/* seconds since the epoch */
	char credit[2];			/* "GC" or "BC" */
	int64_t credit_lim, balance, ytd_payment;
	uint16_t discount;		/* 1/10000 */
	uint32_t payment_cnt, delivery_cnt;
} __attribute__((packed));

struct tpcc_history {
	uint16_t c_id;
	uint8_t c_d_id;
	uint16_t c_w_id;
	uint8_t d_id;
	uint16_t w_id;
	uint64_t date;
	int64_t amount;
	char data[24];
} __attribute__((packed));

struct tpcc_order {
	uint32_t o_id;
	uint16_t c_id;
	uint64_t entry_d;
	uint8_t carrier_id;		/* 0: null (not delivered) */
	uint8_t ol_cnt;
	uint8_t all_local;
} __attribute__((packed));

struct tpcc_neworder {
	uint32_t o_id;
} __attribute__((packed));

struct tpcc_oline {
	uint32_t i_id;
	uint16_t supply_w_id;
	uint8_t number;			/* 1..15 */
	uint8_t quantity;
	uint64_t delivery_d;		/* 0: null */
	int32_t amount;			/* cents */
	char dist_info[24];
} __attribute__((packed));

/* An order's lines: this header, then cnt lines. */
struct tpcc_olines {
	uint32_t o_id;
	uint8_t cnt;
	struct tpcc_oline l[TPCC_MAX_LINES];
} __attribute__((packed));

#define TPCC_S_DATA_MAX		50

/* The fixed part; S_DATA (26..50 bytes) follows. */
struct tpcc_stock {
	uint32_t i_id;
	uint16_t w_id;
	int16_t quantity;
	uint32_t ytd;
	uint16_t order_cnt, remote_cnt;
	char dist[TPCC_DISTRICTS][24];
} __attribute__((packed));

/* The longest value of TPCC_T_MID: a STOCK row with the longest S_DATA. */
#define TPCC_MID_VALUE_MAX	(sizeof(struct tpcc_stock) + TPCC_S_DATA_MAX)
_Static_assert(sizeof(struct tpcc_warehouse) <= TPCC_MID_VALUE_MAX &&
	       sizeof(struct tpcc_district) <= TPCC_MID_VALUE_MAX &&
	       sizeof(struct tpcc_history) <= TPCC_MID_VALUE_MAX, "TPCC_T_MID's rows fit its room");

/* The index rows. */
struct tpcc_idx {
	uint32_t o_id;		/* NOHEAD: the oldest undelivered; CLAST: the last order */
} __attribute__((packed));

struct tpcc_cname {
	uint16_t n;
	uint16_t c_id[TPCC_CNAME_MAX];	/* sorted by C_FIRST, then c_id */
} __attribute__((packed));

/* ITEM, computed from (seed, i) by every client. */
struct tpcc_item {
	uint32_t i_id;
	uint32_t im_id;
	int32_t price;			/* cents, 100..10000 */
	bool original;			/* I_DATA holds "ORIGINAL" */
};

/* The values are the structs' bytes (plus the variable tail of CUSTOMER and STOCK). */
#define TPCC_OLINES_VLEN(cnt)	\
	(offsetof(struct tpcc_olines, l) + (cnt) * sizeof(struct tpcc_oline))
#define TPCC_CNAME_VLEN(n)	(offsetof(struct tpcc_cname, c_id) + (n) * sizeof(uint16_t))

/*
 * Decoders: 0 and *out when vlen fits the row (the variable tails'
 * lengths in *tail), else -1.  out is the caller's aligned copy.
 */
int tpcc_dec_fixed(const void *v, uint16_t vlen, void *out, size_t size);
int tpcc_dec_tail(const void *v, uint16_t vlen, void *out, size_t size, size_t tail_max,
		  char *tail, size_t *tail_len);
int tpcc_dec_olines(const void *v, uint16_t vlen, struct tpcc_olines *out);
int tpcc_dec_cname(const void *v, uint16_t vlen, struct tpcc_cname *out);

/* ---- configuration ---- */

enum tpcc_mix {
	TPCC_MIX_STANDARD,	/* 45/43/4/4/4 */
	TPCC_MIX_NEWORDER,	/* NewOrder alone (DrTM+H, Xenic) */
};

enum tpcc_type {
	TPCC_NEWORDER,
	TPCC_PAYMENT,
	TPCC_ORDERSTATUS,
	TPCC_DELIVERY,		/* one district's part of a Delivery */
	TPCC_STOCKLEVEL,	/* its first part, or a batch of its stock reads */
	TPCC_NTYPES,
};

extern const char *const tpcc_type_names[TPCC_NTYPES];
/* Percent of the business transactions of the standard mix (clause 5.2.3). */
extern const unsigned int tpcc_standard_mix[TPCC_NTYPES];

/* NURand's run-time constants C (clause 2.1.6), drawn from the seed. */
struct tpcc_nurand_c {
	uint32_t c_last_load, c_last_run, c_id, ol_i_id;
};

struct tpcc_cfg {
	uint32_t warehouses;		/* in all */
	uint32_t items;			/* 100000 by the specification */
	uint32_t customers;		/* per district, 3000 by the specification */
	enum tpcc_mix mix;
	uint64_t seed;			/* of the population and the items */
	struct tpcc_nurand_c c;
};

/* Fills cfg->c from cfg->seed, C_LAST's load and run values 65..119 apart, not 96 or 112. */
void tpcc_cfg_init(struct tpcc_cfg *cfg);

/* Last names in use: 1000, or fewer at a scale below 1000 customers. */
static inline uint32_t tpcc_names(const struct tpcc_cfg *cfg)
{
	return cfg->customers < TPCC_NAMES ? cfg->customers : TPCC_NAMES;
}

/* Orders per district at load (one per customer), and the first one not delivered. */
static inline uint32_t tpcc_first_new_order(const struct tpcc_cfg *cfg)
{
	return cfg->customers - cfg->customers * 3 / 10 + 1;	/* 2101 of 3000 */
}

/* ---- generators (clause 2.1, 4.3.2) ---- */

/* NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x */
uint32_t tpcc_nurand(uint64_t *rng, uint32_t a, uint32_t c, uint32_t x, uint32_t y);
/* Uniform in [lo, hi]. */
uint32_t tpcc_rand(uint64_t *rng, uint32_t lo, uint32_t hi);
/* The last name of number n (0..999): its three syllables, NUL-padded to 16 bytes. */
void tpcc_last_name(uint32_t n, char out[16]);
/* Item i (1..cfg->items). */
void tpcc_item(const struct tpcc_cfg *cfg, uint32_t i, struct tpcc_item *out);

/* ---- population ---- */

/* Writes one row; 0 or -1. */
typedef int (*tpcc_emit_fn)(void *arg, uint64_t key, const void *value, uint16_t vlen);

/*
 * Every row of warehouse w: the warehouse, its stock, districts,
 * customers, history, orders and their lines, new-orders and the index
 * rows; a function of (cfg->seed, w) alone.  0, or the first nonzero emit
 * result, or -1 when a name index row would overflow (printed).
 */
int tpcc_populate_warehouse(const struct tpcc_cfg *cfg, uint32_t w, tpcc_emit_fn emit,
			    void *arg);

/* ---- the transactions' inputs ---- */

struct tpcc_input {
	enum tpcc_type type;
	uint32_t w, d;
	/* NewOrder */
	uint32_t c;
	uint8_t ol_cnt;
	bool rollback;			/* the last item is unused: the 1 % rollback */
	bool all_local;
	uint32_t i_id[TPCC_MAX_LINES];	/* distinct */
	uint16_t supply_w[TPCC_MAX_LINES];
	uint8_t quantity[TPCC_MAX_LINES];
	/* Payment, OrderStatus: the customer by id, or by last name (60 %) */
	uint32_t c_w, c_d;
	bool by_name;
	uint32_t name;
	int64_t amount;			/* Payment, cents */
	/* Delivery */
	uint8_t carrier;
	/* StockLevel */
	uint32_t threshold;
};

/* A type by cfg->mix. */
enum tpcc_type tpcc_pick_type(const struct tpcc_cfg *cfg, uint64_t *rng);

/*
 * The inputs of a business transaction of the given type (clause 2.4.1,
 * 2.5.1, 2.6.1, 2.7.1, 2.8.1): the home warehouse uniform over all of
 * them, 1 % of order lines supplied by another warehouse, 15 % of
 * Payments by a customer of another one (when there is another).
 */
void tpcc_draw_input(const struct tpcc_cfg *cfg, enum tpcc_type type, uint64_t *rng,
		     struct tpcc_input *in);

/* The C_DATA a BC customer's Payment prepends (clause 2.5.2.2), into out; its length. */
size_t tpcc_bc_data(const struct tpcc_input *in, uint32_t c_id, char *out, size_t cap);

#endif /* XTX_TPCC_H */
