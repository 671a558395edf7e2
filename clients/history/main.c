// SPDX-License-Identifier: GPL-2.0-only
/* xtx-history-check: the history checker on its own, for hosts without the benchmark tool. */
#include <string.h>
#include "history_check.h"
#include "version.h"

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		xtx_print_version("xtx-history-check");
		return 0;
	}
	return history_check_main(argc, argv);
}
