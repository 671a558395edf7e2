# SPDX-License-Identifier: GPL-2.0-only
# Builds the BPF objects, their skeletons, the daemons, clients and tests into build/.

.DELETE_ON_ERROR:
# Keep generated skeletons and objects: they are real build products.
.SECONDARY:
.DEFAULT_GOAL := all
MAKEFLAGS += --no-print-directory

# clang 19 from Debian gives tighter BPF code and a friendlier verifier log
# than the default clang 14; CLANG= overrides.
CLANG ?= $(shell command -v clang-19 || command -v clang)
BPFTOOL ?= $(shell command -v bpftool || echo /usr/sbin/bpftool)
CC ?= gcc
ARCH_INC := /usr/include/$(shell uname -m)-linux-gnu

OUT := build
BPF_OUT := $(OUT)/bpf
SKEL_OUT := $(OUT)/skel
OBJ_OUT := $(OUT)/obj

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -mcpu=v3 -Iinclude -Ibpf \
	-idirafter $(ARCH_INC)
CFLAGS := -O2 -g -Wall -Wextra -Werror -std=gnu11 -Iinclude -Iuser/lib -Iclients -Itests/unit \
	-Wno-format-truncation \
	-I$(SKEL_OUT) -D_GNU_SOURCE $(EXTRA_CFLAGS)
LDLIBS := -lxdp -lbpf -lelf -lz -lpthread -lm

BPF_HDRS := $(wildcard bpf/lib/*.h) $(wildcard include/xtx/*.h)
BPF_PROGS := xtx_xdp xtx_tc xdp_pass
BPF_OBJS := $(patsubst %,$(BPF_OUT)/%.bpf.o,$(BPF_PROGS))
SKELS := $(SKEL_OUT)/xtx_xdp.skel.h $(SKEL_OUT)/xtx_tc.skel.h

ULIB_SRCS := $(wildcard user/lib/*.c)
ULIB_OBJS := $(patsubst %.c,$(OBJ_OUT)/%.o,$(ULIB_SRCS))
CLIENT_LIB_SRCS := $(filter-out clients/xtxbench.c clients/bench_%.c,$(wildcard clients/*.c))
CLIENT_LIB_OBJS := $(patsubst %.c,$(OBJ_OUT)/%.o,$(CLIENT_LIB_SRCS))
XTXD_SRCS := $(wildcard user/xtxd/*.c)
# Everything of xtxd but its main(), for unit tests of its parts.
XTXD_LIB_OBJS := $(patsubst %.c,$(OBJ_OUT)/%.o,$(filter-out user/xtxd/main.c,$(XTXD_SRCS)))
XTXCTL_SRCS := $(wildcard user/xtxctl/*.c)
BENCH_SRCS := clients/xtxbench.c $(wildcard clients/bench_*.c)
USER_HDRS := $(wildcard include/xtx/*.h user/lib/*.h user/xtxd/*.h user/xtxctl/*.h clients/*.h)

BINS := $(OUT)/xtxd $(OUT)/xtxctl $(OUT)/xtxbench $(OUT)/bench/xdp_cost $(OUT)/bench/bloom_fp
BINS += $(OUT)/libxtx.a $(OUT)/examples/transfer

# ---- xtx-udpd: the kernel-UDP baseline server (user/udpd/) ----
UDPD_OWN_OBJS := $(patsubst %.c,$(OBJ_OUT)/%.o,$(wildcard user/udpd/*.c))
UDPD_OBJS := $(UDPD_OWN_OBJS) $(OBJ_OUT)/clients/kvmodel.o \
	$(patsubst %,$(OBJ_OUT)/user/lib/%.o,daemon log names num)
BINS += $(OUT)/xtx-udpd
$(UDPD_OWN_OBJS): $(wildcard user/udpd/*.h)
$(OUT)/xtx-udpd: $(UDPD_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
# ---- end xtx-udpd ----

TEST_SUITES := $(basename $(notdir $(wildcard tests/unit/test_*.c)))
TEST_BINS := $(patsubst %,$(OUT)/tests/%,$(TEST_SUITES))
TEST_FIXTURES := $(OBJ_OUT)/tests/unit/harness.o $(OBJ_OUT)/tests/unit/pkt.o

.PHONY: all help clean deps test demo bench bench-kv load unload format
all: $(BPF_OBJS) $(BINS) $(TEST_BINS)

help:
	@echo 'xtx: distributed transactions served by XDP'
	@echo
	@echo 'Targets:'
	@echo '  all (default)  build BPF objects, xtxd, xtxctl, xtxbench and tests into build/'
	@echo '  deps           install the Debian packages everything needs'
	@echo '  test           run unit and netns integration tests (root)'
	@echo '  demo           bring up 3 servers in namespaces, run clients, tear down'
	@echo '  bench          side-by-side benchmarks; see docs/performance.md'
	@echo '  bench-kv       DINT Table 1 and Figure 11a: the KV cache ablations'
	@echo '  load           make load IFACE=dev [NETNS=name] [ARGS="xtxd options"]'
	@echo '  unload         make unload IFACE=dev [NETNS=name]'
	@echo '  clean          remove build/'
	@echo
	@echo 'Variables: V=1 (show commands), CLANG=path (BPF compiler)'

deps:
	$(Q)scripts/deps.sh

$(BPF_OUT)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(BPF_OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(SKEL_OUT)/%.skel.h: $(BPF_OUT)/%.bpf.o | $(SKEL_OUT)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

$(OBJ_OUT)/%.o: %.c $(USER_HDRS) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/xtxd: $(patsubst %.c,$(OBJ_OUT)/%.o,$(XTXD_SRCS)) $(ULIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lurcu-cds -lurcu $(LDLIBS)

$(OUT)/xtxctl: $(patsubst %.c,$(OBJ_OUT)/%.o,$(XTXCTL_SRCS)) $(ULIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# libxtx: the coordinator library (clients/libxtx.h) and what it stands on.
$(OUT)/libxtx.a: $(CLIENT_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/examples/%: $(OBJ_OUT)/clients/examples/%.o $(OUT)/libxtx.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(OUT)/xtxbench: $(patsubst %.c,$(OBJ_OUT)/%.o,$(BENCH_SRCS)) $(CLIENT_LIB_OBJS) $(ULIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(OUT)/tests/%: $(OBJ_OUT)/tests/unit/%.o $(TEST_FIXTURES) $(ULIB_OBJS) $(CLIENT_LIB_OBJS) \
		$(XTXD_LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lurcu-cds -lurcu $(LDLIBS)

# The rare path's core without sockets, threads or main(), and no XDP program
# to load (so no harness): what test_overflow exercises.
XTXD_CORE_OBJS := $(patsubst %,$(OBJ_OUT)/user/xtxd/%.o,overflow replay rare_exec) \
	$(OBJ_OUT)/user/lib/log.o $(OBJ_OUT)/user/lib/names.o
$(OUT)/tests/test_overflow: $(OBJ_OUT)/tests/unit/test_overflow.o $(XTXD_CORE_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lurcu-cds -lurcu -lbpf -lpthread

$(OUT)/bench/%: $(OBJ_OUT)/tests/bench/%.o $(TEST_FIXTURES) $(ULIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BPF_OUT) $(SKEL_OUT):
	$(Q)mkdir -p $@

# Every user-facing target installs its own dependencies first.
test: deps
	$(Q)$(MAKE) all
	$(Q)tests/run.sh

demo: deps
	$(Q)$(MAKE) all
	$(Q)scripts/demo.sh

bench: deps
	$(Q)$(MAKE) all
	$(Q)scripts/bench.sh
	$(Q)scripts/bench_txn.sh

bench-kv: deps
	$(Q)$(MAKE) all
	$(Q)scripts/bench_kv.sh

load: deps
	$(Q)$(MAKE) all
	$(Q)test -n "$(IFACE)" || { echo 'Error: make load IFACE=dev [NETNS=name] [ARGS=...]' >&2; exit 2; }
	$(Q)$(OUT)/xtxd --iface $(IFACE) $(if $(NETNS),--netns $(NETNS)) --daemon $(ARGS)

unload:
	$(Q)test -n "$(IFACE)" || { echo 'Error: make unload IFACE=dev [NETNS=name]' >&2; exit 2; }
	$(Q)$(OUT)/xtxctl --iface $(IFACE) $(if $(NETNS),--netns $(NETNS)) unload

format:
	$(Q)clang-format -i $(shell git ls-files '*.c' '*.h')

clean:
	$(call msg,CLEAN,$(OUT))
	$(Q)rm -rf $(OUT)
