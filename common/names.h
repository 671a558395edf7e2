/* SPDX-License-Identifier: GPL-2.0-only */
/* Printable names for op codes, status codes and packet counters. */
#ifndef XTX_NAMES_H
#define XTX_NAMES_H

const char *xtx_op_name(unsigned int opcode);		/* NULL if not an op */
const char *xtx_status_name(unsigned int status);	/* "st<N>" if unknown */
const char *xtx_counter_name(unsigned int counter);

#endif /* XTX_NAMES_H */
