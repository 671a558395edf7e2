# SPDX-License-Identifier: GPL-2.0-only
# The rooms of the tree: ROOM_<name> := <its folder> <folders it may include from>...
# The Makefile compiles each room with exactly these include paths, and
# tests/check_layout.py fails on an include outside them, on an include cycle
# between files or rooms, and on a private folder included from another room.

ROOM_include   := include
ROOM_bpf       := bpf include
ROOM_common    := common include
ROOM_userlib   := user/lib common include
ROOM_xtxd      := user/xtxd user/lib common include
ROOM_xtxctl    := user/xtxctl user/lib common include
ROOM_udpd      := user/udpd user/lib common include
ROOM_libxtx    := clients/libxtx common include
ROOM_history   := clients/history common
ROOM_workloads := clients/workloads clients/libxtx common include
ROOM_bench     := clients/bench clients/workloads clients/libxtx clients/history common include
ROOM_examples  := clients/examples clients/libxtx common include
ROOM_tests     := tests tests/unit user/xtxd user/lib clients/bench clients/workloads clients/libxtx \
	clients/history \
	common include

# Folders only their own room (and the tests) may include from.
ROOM_PRIVATE := clients/libxtx/txn
