// SPDX-License-Identifier: GPL-2.0-only
/* Printable names for the ABI's enums, kept next to nothing else. */
#include <stdio.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "names.h"

static const char *const op_names[XTX_OP__COUNT] = {
	[XTX_OP_PING] = "ping",
	[XTX_OP_STATS] = "stats",
	[XTX_OP_COUNTER_ADD] = "counter_add",
};

static const char *const status_names[XTX_ST__COUNT] = {
	[XTX_ST_NONE] = "none",
	[XTX_ST_OK] = "ok",
	[XTX_ST_RETRY] = "retry",
	[XTX_ST_MALFORMED] = "malformed",
	[XTX_ST_BAD_VERSION] = "bad_version",
	[XTX_ST_UNKNOWN_OP] = "unknown_op",
	[XTX_ST_BAD_ARG] = "bad_arg",
	[XTX_ST_BAD_CLIENT] = "bad_client",
	[XTX_ST_STALE] = "stale",
	[XTX_ST_NOT_EXECUTED] = "not_executed",
};

static const char *const pkt_names[XTX_PKT__COUNT] = {
	[XTX_PKT_RX] = "rx",
	[XTX_PKT_TX] = "tx",
	[XTX_PKT_PASS] = "pass",
	[XTX_PKT_DROP] = "drop",
	[XTX_PKT_REPLAYED] = "replayed",
	[XTX_PKT_TRUNCATED] = "truncated",
	[XTX_PKT_BAD_MAGIC] = "bad_magic",
	[XTX_PKT_IP_OPTIONS] = "ip_options",
	[XTX_PKT_BAD_VERSION] = "bad_version",
	[XTX_PKT_MALFORMED] = "malformed",
	[XTX_PKT_BAD_OP] = "bad_op",
	[XTX_PKT_BAD_CLIENT] = "bad_client",
	[XTX_PKT_STALE] = "stale",
	[XTX_PKT_BUSY] = "busy",
	[XTX_PKT_FAULT_DROP] = "fault_drop",
	[XTX_PKT_OPS] = "ops",
};

const char *xtx_op_name(unsigned int opcode)
{
	return opcode < XTX_OP__COUNT ? op_names[opcode] : NULL;
}

const char *xtx_status_name(unsigned int status)
{
	static __thread char buf[16];

	if (status < XTX_ST__COUNT && status_names[status])
		return status_names[status];
	snprintf(buf, sizeof(buf), "st%u", status);
	return buf;
}

const char *xtx_pkt_counter_name(unsigned int counter)
{
	return counter < XTX_PKT__COUNT && pkt_names[counter] ? pkt_names[counter] : "?";
}
