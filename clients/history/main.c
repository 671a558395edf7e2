// SPDX-License-Identifier: GPL-2.0-only
/* xtx-history-check: the history checker on its own, for hosts without the benchmark tool. */
#include "history_check.h"

int main(int argc, char **argv)
{
	return history_check_main(argc, argv);
}
