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

# SAN=1: the same tree with AddressSanitizer and UndefinedBehaviorSanitizer, in build-san/.
ifeq ($(SAN),1)
OUT := build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else
OUT := build
SAN_FLAGS :=
endif
# The release: --version of every tool, libxtx's pkg-config version and soname.
XTX_VERSION := 0.9.0
LIBXTX_VERSION := $(XTX_VERSION)
LIBXTX_SONAME := libxtx.so.0
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

include rooms.mk

BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -mcpu=v3 -Iinclude -Ibpf \
	-idirafter $(ARCH_INC)
CFLAGS := -O2 -g -Wall -Wextra -Werror -std=gnu11 -Wno-format-truncation $(SAN_FLAGS) \
	-D_GNU_SOURCE $(EXTRA_CFLAGS)
LDLIBS := -lxdp -lbpf -lelf -lz -lzookeeper_mt -lpthread -lm

# Each room compiles with the include paths rooms.mk grants it, and no others,
# so an include from a room it may not use fails to build.
room_inc = $(addprefix -I,$(ROOM_$(1))) -I$(SKEL_OUT)
$(OBJ_OUT)/common/%.o: ROOM_INC = $(call room_inc,common)
$(OBJ_OUT)/user/lib/%.o: ROOM_INC = $(call room_inc,userlib)
$(OBJ_OUT)/user/xtxd/%.o: ROOM_INC = $(call room_inc,xtxd)
$(OBJ_OUT)/user/xtxctl/%.o: ROOM_INC = $(call room_inc,xtxctl)
$(OBJ_OUT)/user/udpd/%.o: ROOM_INC = $(call room_inc,udpd)
$(OBJ_OUT)/clients/libxtx/%.o: ROOM_INC = $(call room_inc,libxtx)
$(OBJ_OUT)/clients/history/%.o: ROOM_INC = $(call room_inc,history)
$(OBJ_OUT)/clients/workloads/%.o: ROOM_INC = $(call room_inc,workloads)
$(OBJ_OUT)/clients/bench/%.o: ROOM_INC = $(call room_inc,bench)
$(OBJ_OUT)/clients/examples/%.o: ROOM_INC = $(call room_inc,examples)
$(OBJ_OUT)/tests/%.o: ROOM_INC = $(call room_inc,tests)

BPF_HDRS := $(wildcard bpf/lib/*.h) $(wildcard include/xtx/*.h)
BPF_PROGS := xtx_xdp xtx_tc xdp_pass xtx_xsk
BPF_OBJS := $(patsubst %,$(BPF_OUT)/%.bpf.o,$(BPF_PROGS))
SKELS := $(SKEL_OUT)/xtx_xdp.skel.h $(SKEL_OUT)/xtx_tc.skel.h $(SKEL_OUT)/xtx_xsk.skel.h

objs = $(patsubst %.c,$(OBJ_OUT)/%.o,$(1))
COMMON_OBJS := $(call objs,$(wildcard common/*.c))
ULIB_OBJS := $(call objs,$(wildcard user/lib/*.c))
XTXD_SRCS := $(wildcard user/xtxd/*.c user/xtxd/*/*.c)
# Everything of xtxd but its main(), for unit tests of its parts.
XTXD_LIB_OBJS := $(call objs,$(filter-out user/xtxd/main.c,$(XTXD_SRCS)))
XTXCTL_OBJS := $(call objs,$(wildcard user/xtxctl/*.c))
LIBXTX_OBJS := $(call objs,$(wildcard clients/libxtx/*.c clients/libxtx/txn/*.c \
	clients/libxtx/afxdp/*.c))
WORKLOAD_OBJS := $(call objs,$(wildcard clients/workloads/*.c))
# The history recorder and checker, without the stand-alone checker's main().
HISTORY_OBJS := $(call objs,$(filter-out clients/history/main.c,$(wildcard clients/history/*.c)))
BENCH_SRCS := $(wildcard clients/bench/*.c)
# The benchmark tool's helpers (threads, histograms, the workload driver) without
# its commands, for the tests that drive workloads.
BENCH_LIB_OBJS := $(call objs,$(filter-out clients/bench/xtxbench.c clients/bench/bench_%.c,\
	$(BENCH_SRCS)))
USER_HDRS := $(wildcard include/xtx/*.h common/*.h user/*/*.h user/xtxd/*/*.h \
	clients/*/*.h clients/libxtx/txn/*.h clients/libxtx/afxdp/*.h tests/unit/*.h)

BINS := $(OUT)/xtxd $(OUT)/xtxctl $(OUT)/xtxbench $(OUT)/bench/xdp_cost $(OUT)/bench/bloom_fp \
	$(OUT)/bench/logw_cost
BINS += $(OUT)/libxtx.a $(OUT)/examples/transfer $(OUT)/examples/values $(OUT)/xtx-history-check
ifneq ($(SAN),1)
# (a sanitized build makes no shared library: its objects need the sanitizers' runtime)
BINS += $(OUT)/libxtx.so $(OUT)/$(LIBXTX_SONAME) $(OUT)/libxtx.pc
endif
BINS += $(OUT)/tests/afxdp_churn $(OUT)/tests/libfaildisk.so

# ---- xtx-udpd: the kernel-UDP baseline server (user/udpd/) ----
UDPD_OWN_OBJS := $(call objs,$(wildcard user/udpd/*.c))
UDPD_OBJS := $(UDPD_OWN_OBJS) $(COMMON_OBJS) $(OBJ_OUT)/user/lib/daemon.o \
	$(OBJ_OUT)/user/lib/logfile.o $(OBJ_OUT)/user/lib/target.o
BINS += $(OUT)/xtx-udpd
$(UDPD_OWN_OBJS): $(wildcard user/udpd/*.h)
$(OUT)/xtx-udpd: $(UDPD_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
# ---- end xtx-udpd ----

TEST_SUITES := $(basename $(notdir $(wildcard tests/unit/test_*.c)))
TEST_BINS := $(patsubst %,$(OUT)/tests/%,$(TEST_SUITES))
TEST_FIXTURES := $(OBJ_OUT)/tests/unit/harness.o $(OBJ_OUT)/tests/unit/pkt.o \
	$(OBJ_OUT)/tests/unit/race.o

.PHONY: all help clean deps test test-loaded san-tests demo bench bench-kv bench-scale bench-footprint bundle nemesis load unload format install uninstall
all: $(BPF_OBJS) $(BINS) $(TEST_BINS)

help:
	@echo 'xtx: distributed transactions served by XDP'
	@echo
	@echo 'Targets:'
	@echo '  all (default)  build BPF objects, xtxd, xtxctl, xtxbench and tests into build/'
	@echo '  deps           install the Debian packages everything needs'
	@echo '  test           run unit (also built with ASan+UBSan) and netns integration tests (root)'
	@echo '  test-loaded    the same with a busy loop on every core beside it'
	@echo '  demo           bring up 3 servers in namespaces, run clients, tear down'
	@echo '  bench          side-by-side benchmarks; see docs/performance.md'
	@echo '  bench-kv       DINT Table 1 and Figure 11a: the KV cache ablations'
	@echo '  bench-scale    one server on Q = 1, 2, 4 ... cores: xtx, xtx-udpd, the XDP echo'
	@echo '  bench-footprint the same TATP keys on default map sizes and on --capacity'
	@echo '  bundle         build/bundle/xtx-scale.tar.gz: bench-scale for a bare machine'
	@echo '  nemesis        workloads under pauses, loss, kills, bulk loads, concurrent duplicates,'
	@echo '                 lost rare-path answers, snapshots, forgers and failing disks, checked'
	@echo '                 (~26 min), then the failover and ZooKeeper-ensemble nemeses'
	@echo '  load           make load IFACE=dev [NETNS=name] [ARGS="xtxd options"]'
	@echo '  unload         make unload IFACE=dev [NETNS=name]'
	@echo '  install        binaries, BPF objects, libxtx, man pages, xtxd@.service'
	@echo '                 (PREFIX=/usr/local, DESTDIR=); uninstall removes them'
	@echo '  clean          remove build/'
	@echo
	@echo 'Variables: V=1 (show commands), CLANG=path (BPF compiler)'
	@echo
	@echo 'Rooms (rooms.mk; each builds with only the include paths listed there):'
	@echo '  include/xtx      the ABI: wire format, map layouts, the hash'
	@echo '  bpf/             XDP and TC programs'
	@echo '  common/          helpers daemons and clients share, the KV reference model'
	@echo '  user/lib         what the daemons and xtxctl share'
	@echo '  user/xtxd        the daemon (store/, rare/, log/, resolve/)'
	@echo '  user/xtxctl      the operator CLI      user/udpd   the user-space baseline'
	@echo '  clients/libxtx   the client library (libxtx.h; txn/ is private)'
	@echo '  clients/workloads TATP, SmallBank, YCSB, Retwis  clients/bench  xtxbench'
	@echo '  clients/examples programs against libxtx alone'

deps:
	$(Q)scripts/deps.sh

$(BPF_OUT)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(BPF_OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(SKEL_OUT)/%.skel.h: $(BPF_OUT)/%.bpf.o | $(SKEL_OUT)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

# The release and the commit built, for --version and xtx_build_info: rewritten only when
# they change, so a new commit rebuilds version.o and relinks, nothing more.
XTX_BUILD := $(shell git -C $(CURDIR) describe --always --dirty 2>/dev/null || echo unknown)
# (a temporary file of its own per make: the tests run make load from two suites at once)
$(SKEL_OUT)/xtx_version.h: FORCE | $(SKEL_OUT)
	$(Q)t=$@.tmp.$$$$; printf '#define XTX_VERSION_STR "%s"\n#define XTX_BUILD_STR "%s"\n' \
		'$(XTX_VERSION)' '$(XTX_BUILD)' >$$t && { cmp -s $$t $@ && rm -f $$t || mv $$t $@; }
$(OBJ_OUT)/common/version.o: $(SKEL_OUT)/xtx_version.h
.PHONY: FORCE
FORCE:

$(OBJ_OUT)/%.o: %.c $(USER_HDRS) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(ROOM_INC) -c $< -o $@

$(OUT)/xtxd: $(call objs,$(XTXD_SRCS)) $(ULIB_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lurcu-cds -lurcu -lmicrohttpd $(LDLIBS)

# Stands alone, for hosts that check histories without running anything.
$(OUT)/xtx-history-check: $(call objs,clients/history/main.c) $(HISTORY_OBJS) \
		$(OBJ_OUT)/common/version.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@

$(OUT)/xtxctl: $(XTXCTL_OBJS) $(ULIB_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# libxtx: the coordinator library (clients/libxtx/libxtx.h) and what it stands on, as an
# archive and as a shared library whose soname changes only with an incompatible ABI.
LIBXTX_PIC_OBJS := $(LIBXTX_OBJS) $(OBJ_OUT)/common/cluster.o
$(LIBXTX_PIC_OBJS): CFLAGS += -fPIC
# objects built before they were position-independent are built again, once
ifeq ($(wildcard $(OBJ_OUT)/.pic),)
$(shell rm -f $(LIBXTX_PIC_OBJS); mkdir -p $(OBJ_OUT) && touch $(OBJ_OUT)/.pic)
endif
# what libxtx needs linked, for those linking the archive (pkg-config's Libs.private)
LIBXTX_LIBS := -lxdp -lbpf -lelf -lz -lpthread -lm
$(OUT)/libxtx.a: $(LIBXTX_PIC_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/libxtx.so.$(LIBXTX_VERSION): $(LIBXTX_PIC_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,$(LIBXTX_SONAME) -Wl,--no-undefined $^ -o $@ \
		$(LIBXTX_LIBS)

$(OUT)/$(LIBXTX_SONAME) $(OUT)/libxtx.so: $(OUT)/libxtx.so.$(LIBXTX_VERSION)
	$(Q)ln -sf $(notdir $<) $@

# libxtx.pc for an installed tree (PREFIX substituted), and for build/ (build-tree paths)
$(OUT)/libxtx.pc: scripts/libxtx.pc.in Makefile
	$(call msg,GEN,$@)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$${prefix}/lib|' \
		-e 's|@INCLUDEDIR@|$${prefix}/include|' -e 's|@VERSION@|$(XTX_VERSION)|' \
		-e 's|@LIBS_PRIVATE@|$(LIBXTX_LIBS)|' $< >$@

$(OUT)/examples/%: $(OBJ_OUT)/clients/examples/%.o $(OUT)/libxtx.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(OUT)/xtxbench: $(call objs,$(BENCH_SRCS)) $(WORKLOAD_OBJS) $(HISTORY_OBJS) $(LIBXTX_OBJS) \
		$(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(OUT)/tests/%: $(OBJ_OUT)/tests/unit/%.o $(TEST_FIXTURES) $(ULIB_OBJS) $(COMMON_OBJS) \
		$(LIBXTX_OBJS) $(WORKLOAD_OBJS) $(HISTORY_OBJS) $(BENCH_LIB_OBJS) $(XTXD_LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lurcu-cds -lurcu -lmicrohttpd $(LDLIBS)

# The rare path's core without sockets, threads or main(), and no XDP program
# to load (so no harness): what test_overflow exercises.
XTXD_CORE_OBJS := $(patsubst %,$(OBJ_OUT)/user/xtxd/%.o,store/overflow store/valstore rare/replay rare/rare_exec) \
	$(OBJ_OUT)/common/log.o $(OBJ_OUT)/common/names.o
$(OUT)/tests/test_overflow: $(OBJ_OUT)/tests/unit/test_overflow.o $(XTXD_CORE_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lurcu-cds -lurcu -lbpf -lpthread

# TPC-C's transactions against an in-memory stand-in for libxtx, so linked without it.
TPCC_MODEL_OBJS := $(patsubst %,$(OBJ_OUT)/clients/workloads/%.o,tpcc tpcc_txn tpcc_check wlsnap)
$(OUT)/tests/test_tpcc_txn: $(OBJ_OUT)/tests/unit/test_tpcc_txn.o $(TPCC_MODEL_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lm

$(OUT)/bench/%: $(OBJ_OUT)/tests/bench/%.o $(TEST_FIXTURES) $(ULIB_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# AF_XDP transports opened and closed by many threads at once; test_afxdp.sh runs it.
$(OUT)/tests/afxdp_churn: $(OBJ_OUT)/tests/integration/afxdp_churn.o $(LIBXTX_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# A failing or hung disk, preloaded into xtxd by test_log_fail.sh and the nemesis.
$(OUT)/tests/libfaildisk.so: tests/integration/faildisk.c
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror -fPIC -shared $< -o $@ -ldl

$(BPF_OUT) $(SKEL_OUT):
	$(Q)mkdir -p $@

# Every user-facing target installs its own dependencies first.
# A job per core: the build is a fifth of make test's time otherwise.
JOBS ?= $(shell nproc)

test: deps
	$(Q)$(MAKE) -j$(JOBS) all
	$(Q)$(MAKE) -j$(JOBS) SAN=1 san-tests
	$(Q)tests/run.sh

# make test beside a CPU hog on every core (a busy loop each, started and stopped here): the
# suite must pass on a machine that is busy with something else, so no check may wait for
# a time where it should wait for an event.
test-loaded: deps
	$(Q)$(MAKE) -j$(JOBS) all
	$(Q)$(MAKE) -j$(JOBS) SAN=1 san-tests
	$(Q)scripts/cpu_hog.sh tests/run.sh

# The unit tests built with the sanitizers (tests/run.sh runs them as san-unit-*).
san-tests: $(TEST_BINS)

demo: deps
	$(Q)$(MAKE) -j$(JOBS) all
	$(Q)scripts/demo.sh

bench: deps
	$(Q)$(MAKE) -j$(JOBS) all
	$(Q)scripts/bench.sh
	$(Q)scripts/bench_txn.sh
	$(Q)scripts/bench_values.sh
	$(Q)scripts/bench_transport.sh
	$(Q)scripts/bench_failover.sh

# Every workload and protocol under every fault kind; ends "nemesis: N runs, N anomalies".
# Then repeated failovers of a cluster held in ZooKeeper, each ending whole again, and the
# faults of a three-member ZooKeeper ensemble.
nemesis: deps
	$(Q)$(MAKE) all
	$(Q)NEMESIS_FULL=1 bash tests/nemesis.sh
	$(Q)bash tests/nemesis_failover.sh
	$(Q)bash tests/nemesis_zk.sh

bench-kv: deps
	$(Q)$(MAKE) all
	$(Q)scripts/bench_kv.sh

bench-scale: deps
	$(Q)$(MAKE) -j$(JOBS) all
	$(Q)scripts/bench_scale.sh

bench-footprint: deps
	$(Q)$(MAKE) -j$(JOBS) all
	$(Q)scripts/bench_footprint.sh

bundle: deps
	$(Q)$(MAKE) -j$(JOBS) all
	$(Q)scripts/bundle.sh

load: deps
	$(Q)$(MAKE) all
	$(Q)test -n "$(IFACE)" || { echo 'Error: make load IFACE=dev [NETNS=name] [ARGS=...]' >&2; exit 2; }
	$(Q)$(OUT)/xtxd --iface $(IFACE) $(if $(NETNS),--netns $(NETNS)) --daemon $(ARGS)

unload:
	$(Q)test -n "$(IFACE)" || { echo 'Error: make unload IFACE=dev [NETNS=name] [FORCE=1]' >&2; exit 2; }
	$(Q)$(OUT)/xtxctl --iface $(IFACE) $(if $(NETNS),--netns $(NETNS)) unload $(if $(FORCE),--force)

# ---- make install [PREFIX=/usr/local] [DESTDIR=...] ----
PREFIX ?= /usr/local
SBINDIR := $(PREFIX)/sbin
BINDIR := $(PREFIX)/bin
LIBDIR := $(PREFIX)/lib/xtx
INCDIR := $(PREFIX)/include
MANDIR := $(PREFIX)/share/man
EXAMPLEDIR := $(PREFIX)/share/xtx/examples
UNITDIR ?= /lib/systemd/system
SYSCONFDIR ?= /etc
MANPAGES := xtxd:8:load-the-xtx-transaction-server-onto-an-interface \
	xtxctl:8:inspect-and-control-a-loaded-xtx-server \
	xtx-udpd:8:the-xtx-protocol-served-from-kernel-UDP-sockets-(baseline) \
	xtxbench:1:load-generators-and-end-to-end-checks-for-xtx-servers
# libxtx's API (its own headers and the ABI they stand on), all under include/xtx/:
# cc app.c $$(pkg-config --cflags --libs libxtx), #include "libxtx.h"
API_HDRS := clients/libxtx/libxtx.h clients/libxtx/servers.h common/cluster.h \
	$(wildcard include/xtx/*.h)
EXAMPLES := $(wildcard clients/examples/*.c)
INSTALLED := $(SBINDIR)/xtxd $(SBINDIR)/xtxctl $(SBINDIR)/xtx-udpd $(BINDIR)/xtxbench \
	$(LIBDIR)/xtx_xdp.bpf.o $(LIBDIR)/xtx_tc.bpf.o $(LIBDIR)/xdp_pass.bpf.o $(LIBDIR)/xtx_xsk.bpf.o \
	$(PREFIX)/lib/libxtx.a $(PREFIX)/lib/libxtx.so.$(LIBXTX_VERSION) \
	$(PREFIX)/lib/$(LIBXTX_SONAME) $(PREFIX)/lib/libxtx.so $(PREFIX)/lib/pkgconfig/libxtx.pc \
	$(addprefix $(INCDIR)/xtx/,$(notdir $(API_HDRS))) \
	$(addprefix $(EXAMPLEDIR)/,$(notdir $(EXAMPLES))) \
	$(UNITDIR)/xtxd@.service $(SYSCONFDIR)/xtx/example.conf \
	$(foreach m,$(MANPAGES),$(MANDIR)/man$(word 2,$(subst :, ,$(m)))/$(word 1,$(subst :, ,$(m))).$(word 2,$(subst :, ,$(m))))

install: all
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
		$(DESTDIR)$(INCDIR)/xtx $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/xtx \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(EXAMPLEDIR)
	$(Q)install -m 0755 $(OUT)/xtxd $(OUT)/xtxctl $(OUT)/xtx-udpd $(DESTDIR)$(SBINDIR)/
	$(Q)install -m 0755 $(OUT)/xtxbench $(DESTDIR)$(BINDIR)/
	$(Q)install -m 0644 $(BPF_OBJS) $(DESTDIR)$(LIBDIR)/
	$(Q)install -m 0644 $(OUT)/libxtx.a $(DESTDIR)$(PREFIX)/lib/
	$(Q)install -m 0755 $(OUT)/libxtx.so.$(LIBXTX_VERSION) $(DESTDIR)$(PREFIX)/lib/
	$(Q)ln -sf libxtx.so.$(LIBXTX_VERSION) $(DESTDIR)$(PREFIX)/lib/$(LIBXTX_SONAME)
	$(Q)ln -sf libxtx.so.$(LIBXTX_VERSION) $(DESTDIR)$(PREFIX)/lib/libxtx.so
	$(Q)sed -e 's|^prefix=.*|prefix=$(PREFIX)|' $(OUT)/libxtx.pc \
		>$(DESTDIR)$(PREFIX)/lib/pkgconfig/libxtx.pc
	$(Q)install -m 0644 $(API_HDRS) $(DESTDIR)$(INCDIR)/xtx/
	$(Q)install -m 0644 $(EXAMPLES) $(DESTDIR)$(EXAMPLEDIR)/
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g' scripts/service/xtxd@.service \
		>$(DESTDIR)$(UNITDIR)/xtxd@.service
	$(Q)install -m 0644 scripts/service/example.conf $(DESTDIR)$(SYSCONFDIR)/xtx/
	$(Q)$(foreach m,$(MANPAGES),scripts/manpage.sh $(OUT)/$(word 1,$(subst :, ,$(m))) \
		$(word 2,$(subst :, ,$(m))) "$(subst -, ,$(word 3,$(subst :, ,$(m))))" \
		>$(DESTDIR)$(MANDIR)/man$(word 2,$(subst :, ,$(m)))/$(word 1,$(subst :, ,$(m))).$(word 2,$(subst :, ,$(m))) &&) true
	$(Q)[ -n "$(DESTDIR)" ] || ! command -v ldconfig >/dev/null || ldconfig

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(Q)rmdir $(DESTDIR)$(LIBDIR) $(DESTDIR)$(SYSCONFDIR)/xtx $(DESTDIR)$(INCDIR)/xtx \
		$(DESTDIR)$(EXAMPLEDIR) $(DESTDIR)$(PREFIX)/share/xtx \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig 2>/dev/null || true

format:
	$(Q)clang-format -i $(shell git ls-files '*.c' '*.h')

clean:
	$(call msg,CLEAN,$(OUT))
	$(Q)rm -rf build build-san
