# SPDX-License-Identifier: Apache-2.0
# ncclwatch: plain make.
#   make                 build/ncclwatch, build/libnccl-profiler-ncclwatch.so and
#                        build/libncclwatch-interpose.so (LD_PRELOAD, for NCCL 2.18 to 2.22)
#   make test            every test that needs no GPU (unit, CLI, plugin harness);
#                        T="test_a test_b" runs only those
#   make SANITIZE=1 test the same under AddressSanitizer + UndefinedBehaviorSanitizer (build-san/)
#   make TSAN=1 tsan     the plugin, the interposer and their drivers under ThreadSanitizer (clang, build-tsan/)
#   make MPI=0           build without MPI even when mpicc is present
#   make MPI=dl          no MPI at build or load time: Open MPI's libmpi.so.40 is
#                        opened when an MPI launcher starts ncclwatch (as in make portable)
#   make MHD_STATIC=DIR  libmicrohttpd linked from DIR/lib/libmicrohttpd.a (DIR/include), as
#                        make portable does with one built without TLS (scripts/portable)
#   make PQ=dl           libpq opened when --db names a PostgreSQL server (as in make portable)
#   make STATIC=1        jansson, SQLite and ncursesw linked statically
#   make portable        build-portable/: the three files built in a Debian 11 root, needing only
#                        glibc >= 2.31 at load time (scripts/portable; root, debootstrap)
#   make fuzz            libFuzzer targets (clang) in build-fuzz/
#   make install         PREFIX=/usr/local DESTDIR=: binary, plugin, interposer, man pages, completions,
#                        deploy examples, the exporter's systemd unit and /etc/default/ncclwatch,
#                        docs (INSTALL_FROM=build-portable installs the portable files)
#   make deb             build-deb/ncclwatch_VERSION_amd64.deb of the portable files
#   make image-root      build-image/rootfs: the container image's root (Dockerfile) as a directory

CC       ?= cc
SANITIZE ?= 0
TSAN     ?= 0
V        ?= 0
Q        := $(if $(filter 1,$(V)),,@)

# TSAN=1: ThreadSanitizer (clang, no MPI) in build-tsan/, for the plugin and
# the harness that drives it from several threads (make TSAN=1 tsan).
ifeq ($(TSAN),1)
BUILD    ?= build-tsan
CC       := clang
MPI      := 0
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else ifeq ($(SANITIZE),1)
BUILD    ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
BUILD    ?= build
SANFLAGS :=
endif
MPI      ?= auto

VERSION  := $(shell cat VERSION)
WARN     := -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes -Wvla \
            -Wshadow -Wformat=2 -Wno-format-nonliteral -Wpointer-arith -Wundef \
            $(shell $(CC) -Werror -Wno-format-truncation -E -x c /dev/null >/dev/null 2>&1 && echo -Wno-format-truncation)
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE $(WARN) $(SANFLAGS) -MMD -MP -Isrc \
            -DNW_VERSION='"$(VERSION)"'
LDLIBS   := -ljansson -lsqlite3 -lmicrohttpd -lncursesw -ldl -lpthread -lm
STATIC   ?= 0
ifeq ($(STATIC),1)
LDLIBS := -Wl,-Bstatic -ljansson -lsqlite3 -lncursesw -ltinfo -Wl,-Bdynamic -ldl -lpthread -lm
endif

# libmicrohttpd (the exporter's HTTP server): Debian's shared library, or
# with MHD_STATIC=DIR a static one built without TLS (scripts/portable builds
# it from Debian's source package), so the binary needs it at no point.
MHD_STATIC ?=
ifneq ($(MHD_STATIC),)
CFLAGS += -isystem $(MHD_STATIC)/include
LDLIBS := $(filter-out -lmicrohttpd,$(LDLIBS)) $(MHD_STATIC)/lib/libmicrohttpd.a
else ifeq ($(STATIC),1)
LDLIBS += -lmicrohttpd
endif

# libpq (PostgreSQL history): linked, or with PQ=dl opened at run time (src/store/pq_abi.h).
PQ       ?= link
ifeq ($(PQ),dl)
CFLAGS += -DNW_PQ_DL=1
else
CFLAGS += -DNW_PQ_DL=0 -I/usr/include/postgresql
LDLIBS += -lpq
endif

# MPI: on when mpicc answers, unless MPI=0; MPI=dl opens Open MPI at run time
# (src/comm/mpi_abi.h). The build says which.
ifeq ($(MPI),dl)
CFLAGS += -DNW_HAVE_MPI=1 -DNW_MPI_DL=1
MPI_STATE := MPI support: yes (Open MPI's libmpi.so.40, opened at run time under an MPI launcher)
else
CFLAGS += -DNW_MPI_DL=0
ifneq ($(MPI),0)
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)
endif
ifneq ($(strip $(MPI_LIBS)),)
CFLAGS += -DNW_HAVE_MPI=1 $(MPI_CFLAGS)
LDLIBS += $(MPI_LIBS)
MPI_STATE := MPI support: yes ($(MPI_LIBS))
else
CFLAGS += -DNW_HAVE_MPI=0
MPI_STATE := MPI support: no (install libopenmpi-dev or set MPI=1 with mpicc on PATH)
endif
endif

# src/plugin/ builds two shared libraries from the same recording code (NWP_SRC):
# the profiler plugin adds NCCL's profiler entry points (plugin.c), the
# interposer its wrappers of NCCL's API (ipose*.c).
PLUGIN_ALL := $(wildcard src/plugin/*.c)
IPOSE_SRC  := $(wildcard src/plugin/ipose*.c)
NWP_SRC    := $(filter-out src/plugin/plugin.c $(IPOSE_SRC),$(PLUGIN_ALL))
PLUGIN_SRC := $(NWP_SRC) src/plugin/plugin.c
APP_SRC    := $(filter-out $(PLUGIN_ALL),$(shell find src -name '*.c' | sort))
# The check kernels' PTX text goes into the binary as data (src/gpu/verify_ptx.S, .incbin).
APP_ASM    := $(shell find src -name '*.S' | sort)
APP_OBJ    := $(APP_SRC:%.c=$(BUILD)/obj/%.o) $(APP_ASM:%.S=$(BUILD)/obj/%.o)
LIB_OBJ    := $(filter-out $(BUILD)/obj/src/main.o,$(APP_OBJ))
PLUGIN_OBJ := $(PLUGIN_SRC:%.c=$(BUILD)/pic/%.o)
IPOSE_OBJ  := $(NWP_SRC:%.c=$(BUILD)/pic/%.o) $(IPOSE_SRC:%.c=$(BUILD)/pic/%.o)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
HELPER_SRC := $(wildcard tests/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/tests/%)

# The fake CUDA driver and NCCL (tests/fakegpu/) that let the NCCL backend
# run on CPUs in tests: shared objects of their own, linked with nothing of ncclwatch.
FAKE_DIR   := $(BUILD)/tests/fakegpu
FAKE_LIBS  := $(FAKE_DIR)/libcuda.so.1 $(FAKE_DIR)/libnccl.so.2 $(FAKE_DIR)/libcupti.so.13
FAKE_FLAGS := $(filter-out -MMD -MP $(MPI_CFLAGS),$(CFLAGS)) -fPIC -shared -fvisibility=hidden

BIN    := $(BUILD)/ncclwatch
PLUGIN := $(BUILD)/libnccl-profiler-ncclwatch.so
IPOSE  := $(BUILD)/libncclwatch-interpose.so

.PHONY: all test tsan clean fuzz mpi-state portable install deb image-root
all: mpi-state $(BIN) $(PLUGIN) $(IPOSE)

mpi-state:
	@echo "ncclwatch $(VERSION): $(MPI_STATE)"

$(BIN): $(APP_OBJ)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# The plugin links nothing but libc, libdl, libpthread and libm, and exports only
# the ncclProfiler_v* tables (everything else is hidden). It is never unmapped
# (nodelete): CUPTI may still hold callbacks into it after NCCL closes it.
$(PLUGIN): $(PLUGIN_OBJ)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,$(notdir $@) -Wl,--version-script=src/plugin/exports.map -Wl,-z,nodelete -o $@ $^ $(LDFLAGS) -ldl -lpthread -lm

# The interposer (LD_PRELOAD) links the same, and exports only the NCCL
# functions it wraps (src/plugin/interpose.map); tests/cli/test_interpose.sh checks both.
$(IPOSE): $(IPOSE_OBJ) src/plugin/interpose.map
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,$(notdir $@) -Wl,--version-script=src/plugin/interpose.map -o $@ \
	  $(IPOSE_OBJ) $(LDFLAGS) -ldl -lpthread -lm

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/src/gpu/verify_ptx.o: src/gpu/verify_ptx.S src/gpu/verify.ptx
	@mkdir -p $(dir $@)
	@echo "  AS      $<"
	$(Q)$(CC) -c -o $@ $<

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC (so) $<"
	$(Q)$(CC) $(filter-out $(MPI_CFLAGS),$(CFLAGS)) -fPIC -fvisibility=hidden -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	$(Q)$(CC) $(CFLAGS) -Itests -o $@ $< $(LIB_OBJ) $(LDFLAGS) $(LDLIBS) -lcmocka

# The overlap arithmetic lives in the plugin (which links only libc): its test links that one object.
$(BUILD)/tests/test_overlap_math: tests/unit/test_overlap_math.c $(BUILD)/pic/src/plugin/overlap_math.o
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	$(Q)$(CC) $(CFLAGS) -Itests -o $@ $^ -lcmocka

# The interposer's stand-in job links nothing of ncclwatch and not NCCL: the
# loader binds its NCCL calls to an LD_PRELOADed interposer, as PyTorch's are.
$(BUILD)/tests/ipose_job: tests/helpers/ipose_job.c
	@mkdir -p $(dir $@)
	@echo "  HELPER  $@"
	$(Q)$(CC) $(filter-out $(MPI_CFLAGS),$(CFLAGS)) -o $@ $< -ldl -lpthread

$(BUILD)/tests/%: tests/helpers/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  HELPER  $@"
	$(Q)$(CC) $(CFLAGS) -Itests -o $@ $< $(LIB_OBJ) $(LDFLAGS) $(LDLIBS)

$(FAKE_DIR)/libcuda.so.1: tests/fakegpu/fake_cuda.c tests/fakegpu/fakegpu.h
	@mkdir -p $(dir $@)
	@echo "  FAKE    $@"
	$(Q)$(CC) $(FAKE_FLAGS) -Wl,-soname,libcuda.so.1 -o $@ $< -lpthread

$(FAKE_DIR)/libnccl.so.2: tests/fakegpu/fake_nccl.c tests/fakegpu/fake_nccl_prof.c tests/fakegpu/fake_nccl_prof.h \
                          tests/fakegpu/profiler_abi.h tests/fakegpu/fakegpu.h
	@mkdir -p $(dir $@)
	@echo "  FAKE    $@"
	$(Q)$(CC) $(FAKE_FLAGS) -Wl,-soname,libnccl.so.2 -o $@ tests/fakegpu/fake_nccl.c tests/fakegpu/fake_nccl_prof.c \
	  -lpthread -lm -ldl

# The fake CUPTI (NCCLWATCH_CUPTI_LIB) for the plugin's exposed-communication window.
$(FAKE_DIR)/libcupti.so.13: tests/fakegpu/fake_cupti.c src/plugin/cupti_abi.h
	@mkdir -p $(dir $@)
	@echo "  FAKE    $@"
	$(Q)$(CC) $(FAKE_FLAGS) -Wl,-soname,libcupti.so.13 -o $@ $<

test: all $(UNIT_BIN) $(HELPER_BIN) $(FAKE_LIBS)
	@BUILD=$(BUILD) tests/run.sh $(T)

# The plugin and its harness under ThreadSanitizer, driven through every
# profiler ABI from several threads as NCCL drives it (scripts/tsan-plugin).
tsan:
	@test "$(TSAN)" = 1 || { echo "run it as: make TSAN=1 tsan" >&2; exit 2; }
	$(Q)$(MAKE) --no-print-directory TSAN=1 $(PLUGIN) $(BUILD)/tests/plugin_harness
	scripts/tsan-plugin $(BUILD)

# libFuzzer targets: tests/fuzz/fuzz_<name>.c, linked with every module
# (compiled once, instrumented, without MPI).
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN   := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
FUZZ_OBJ   := $(filter-out src/main.c,$(APP_SRC))
FUZZ_OBJ   := $(FUZZ_OBJ:%.c=build-fuzz/obj/%.o) build-fuzz/obj/src/gpu/verify_ptx.o
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Isrc -DNW_VERSION='"$(VERSION)"' -DNW_HAVE_MPI=0 -DNW_MPI_DL=0 -DNW_PQ_DL=0 -I/usr/include/postgresql
fuzz: $(FUZZ_BIN)
build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC (fz) $<"
	$(Q)clang $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<
build-fuzz/obj/src/gpu/verify_ptx.o: src/gpu/verify_ptx.S src/gpu/verify.ptx
	@mkdir -p $(dir $@)
	$(Q)clang -c -o $@ $<
build-fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_FLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_OBJ) \
	  -ljansson -lsqlite3 -lmicrohttpd -lpq -lncursesw -ldl -lpthread -lm

# Both files for any image with glibc 2.31 or newer (README, "Into an existing image").
portable:
	scripts/portable build-portable

# Where make install puts things. The plugin goes on the loader's path, so
# NCCL_PROFILER_PLUGIN=ncclwatch finds it (docs/plugin.md); the interposer
# beside it (LD_PRELOAD=$(LIBDIR)/libncclwatch-interpose.so).
PREFIX       ?= /usr/local
DESTDIR      ?=
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
MANDIR       ?= $(PREFIX)/share/man
DATADIR      ?= $(PREFIX)/share/ncclwatch
BASHCOMPDIR  ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR   ?= $(PREFIX)/share/zsh/site-functions
SYSTEMDDIR   ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR   ?= /etc
DOCDIR       ?= $(PREFIX)/share/doc/ncclwatch
INSTALL_FROM ?= $(BUILD)

# The man pages come from the installed binary's own help text (scripts/mkman).
install: $(if $(filter $(BUILD),$(INSTALL_FROM)),all)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(DATADIR) \
	  $(DESTDIR)$(SYSTEMDDIR) $(DESTDIR)$(SYSCONFDIR)/default $(DESTDIR)$(DOCDIR)/docs
	install -m 755 $(INSTALL_FROM)/ncclwatch $(DESTDIR)$(BINDIR)/ncclwatch
	install -m 644 $(INSTALL_FROM)/libnccl-profiler-ncclwatch.so $(DESTDIR)$(LIBDIR)/
	install -m 644 $(INSTALL_FROM)/libncclwatch-interpose.so $(DESTDIR)$(LIBDIR)/
	rm -rf $(INSTALL_FROM)/man && scripts/mkman $(INSTALL_FROM)/ncclwatch $(INSTALL_FROM)/man
	for m in $(INSTALL_FROM)/man/*.1; do gzip -9n <$$m >$(DESTDIR)$(MANDIR)/man1/$${m##*/}.gz; done
	install -m 644 completions/ncclwatch.bash $(DESTDIR)$(BASHCOMPDIR)/ncclwatch
	install -m 644 completions/_ncclwatch $(DESTDIR)$(ZSHCOMPDIR)/_ncclwatch
	cp -R deploy $(DESTDIR)$(DATADIR)/
	chmod -R u=rwX,go=rX $(DESTDIR)$(DATADIR)/deploy
	sed 's|/usr/bin/ncclwatch|$(BINDIR)/ncclwatch|' packaging/ncclwatch-exporter.service \
	  >$(DESTDIR)$(SYSTEMDDIR)/ncclwatch-exporter.service
	chmod 644 $(DESTDIR)$(SYSTEMDDIR)/ncclwatch-exporter.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/ncclwatch ] || \
	  install -m 644 packaging/ncclwatch.default $(DESTDIR)$(SYSCONFDIR)/default/ncclwatch
	install -m 644 README.md NOTICE $(DESTDIR)$(DOCDIR)/
	install -m 644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/

# The container image's root file system as a directory (the Dockerfile makes
# the same from its own build stage): build-image/rootfs.
image-root: portable
	scripts/image-root build-portable build-portable/rootfs build-image/rootfs

# The Debian package of the portable files (packaging/mkdeb).
deb: portable
	packaging/mkdeb build-portable build-deb

clean:
	rm -rf build build-san build-tsan build-fuzz build-dl build-deb build-image

-include $(APP_OBJ:.o=.d) $(PLUGIN_OBJ:.o=.d) $(IPOSE_OBJ:.o=.d)
