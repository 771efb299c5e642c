# rules.mk - compile and link rules shared by every chapter.
#
# A chapter Makefile lists its programs and includes this file:
#
#     PROGS := vecadd mandelbrot          # each from prog.c (+ prog_kernels.cu, prog_hopper.cu if they exist)
#     CFLAGS_mandelbrot := -fopenmp       # extra gcc flags for one program's host file
#     LIBS_mandelbrot   := -lgomp         # extra libraries for one program (e.g. -lcublas)
#     NVCCFLAGS_prog    := -rdc=true      # extra nvcc flags for one program's kernels
#     OBJS_dnn := dnn_data.o dnn_net.o    # more host objects for one program (from .c files here,
#                                         # or from common/: lb_driver.o the driver API, lb_csv.o
#                                         # the data sets' CSV reader), or its library baseline
#                                         # compiled apart (reduce_cub.o from reduce_cub.cu)
#     TUNABLES := TILE                    # make TILE=32 passes -DTILE=32 to nvcc and rebuilds
#                                         # the kernels (host objects are not rebuilt)
#     DEMO_vecadd := ./vecadd --quiet --size 2^24   # what `make run` runs for a program (one
#                                         # line each, common/demo.sh): every program of PROGS
#                                         # runs, `./prog --quiet` unless DEMO_prog says otherwise
#                                         # (small demo sizes; commands separated by ';')
#     CLEAN_EXTRA := libx.so              # more files for `make clean` to remove
#     include ../common/rules.mk
#
# Variables you may set on the command line:
#     ARCH=sm_86        GPU target (default: the installed GPU's, else sm_90); PTX is embedded
#     CUDA_PATH=/opt/cuda   where the toolkit lives (default /usr/local/cuda)
#     DEBUG=1           host -g, device -g -G (`make debug` does this)

COMMON_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
CUDA_PATH ?= /usr/local/cuda
NVCC ?= $(CUDA_PATH)/bin/nvcc
ifeq ($(origin CC),default)
CC := gcc
endif

# ARCH: ask the driver which GPU is installed (compute_cap 9.0 -> sm_90); without one, sm_90.
ifndef ARCH
ARCH := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -E '^[0-9]+\.[0-9]+$$' | head -n 1 | tr -d .)
ARCH_WHY := $(if $(ARCH),the installed GPU's,the default without a GPU)
ARCH := $(if $(ARCH),sm_$(ARCH),sm_90)
endif
export ARCH
ARCH_NUM := $(patsubst sm_%,%,$(ARCH))
ifeq ($(ARCH_NUM),$(ARCH))
$(error ARCH must look like sm_90 (got '$(ARCH)'))
endif
ifeq ($(shell [ "$(ARCH_NUM)" -lt 75 ] 2>/dev/null && echo old),old)
$(error ARCH=$(ARCH): the oldest GPU the lab book supports is sm_75 (CUDA 13 builds nothing older))
endif
# Machine code for ARCH plus its PTX, which the driver can compile for newer GPUs.
GENCODE := -gencode arch=compute_$(ARCH_NUM),code=[sm_$(ARCH_NUM),compute_$(ARCH_NUM)]

TUNABLE_DEFS := $(foreach t,$(TUNABLES),$(if $($(t)),-D$(t)=$($(t))))
CPPFLAGS := -I$(COMMON_DIR) -I$(CUDA_PATH)/include -DLB_ARCH=$(ARCH)
# -ffp-contract=off: the CPU references round each operation as written (no fused multiply-add
# where the CPU has one), so a GPU result that should match them exactly can be compared exactly
CFLAGS := -std=c11 -O2 -Wall -Wextra -ffp-contract=off $(if $(DEBUG),-g)
# Tunables reach only the kernels: a host file asks its kernels' launcher for a value it shows.
NVCCFLAGS := -O3 -lineinfo -std=c++17 $(GENCODE) $(TUNABLE_DEFS) $(if $(DEBUG),-g -G)
LDLIBS := -lm

CHAPTER := $(notdir $(CURDIR))
SHORT := $(firstword $(subst _, ,$(CHAPTER)))

# Rebuild when the flags change (ARCH=, TILE=, DEBUG=): host objects depend on a file holding
# the host flags, kernel objects on one holding the nvcc flags, each rewritten only when it
# differs from the last build's. So TILE=32 rebuilds the kernels and relinks, nothing more.
HOST_FLAGS := $(CC) $(CPPFLAGS) $(CFLAGS)
DEVICE_FLAGS := $(NVCC) $(CPPFLAGS) $(NVCCFLAGS)
# A build with other tunables than the last one says so first: `make TILE=32`, then a plain
# `make test`, rebuilds with the defaults and tests those (`make test TILE=32` tests TILE=32).
# A build for another ARCH than the last one says so first, and why this one (ARCH_WHY: the
# GPU or the default; else it was given on the command line)
LAST_ARCH := $(shell grep -o -- '-DLB_ARCH=sm_[0-9a-z]*' .build-flags-nvcc 2>/dev/null | head -n 1 | cut -d= -f2)
ifneq ($(LAST_ARCH),)
ifneq ($(LAST_ARCH),$(ARCH))
$(info $(CHAPTER): NOTE: building for $(ARCH) ($(or $(ARCH_WHY),ARCH= given)), not $(LAST_ARCH) as last built: everything is rebuilt)
endif
endif
LAST_TUNABLES := $(strip $(foreach t,$(TUNABLES),$(shell grep -o -- ' -D$(t)=[^ ]*' .build-flags-nvcc 2>/dev/null)))
ifneq ($(LAST_TUNABLES),$(strip $(TUNABLE_DEFS)))
ifneq ($(wildcard .build-flags-nvcc),)
$(info $(CHAPTER): NOTE: rebuilding the kernels with $(or $(strip $(TUNABLE_DEFS)),the default tunables), not as last built ($(or $(LAST_TUNABLES),the defaults)))
endif
endif
$(shell printf '%s\n' '$(HOST_FLAGS)' | cmp -s - .build-flags-host 2>/dev/null || printf '%s\n' '$(HOST_FLAGS)' > .build-flags-host)
$(shell printf '%s\n' '$(DEVICE_FLAGS)' | cmp -s - .build-flags-nvcc 2>/dev/null || printf '%s\n' '$(DEVICE_FLAGS)' > .build-flags-nvcc)
# a library baseline's file (prog_cub.cu) takes no tunable: its flags without them, so that
# TILE=32 does not rebuild it
LIB_DEVICE_FLAGS := $(NVCC) $(CPPFLAGS) $(filter-out $(TUNABLE_DEFS),$(NVCCFLAGS))
$(shell printf '%s\n' '$(LIB_DEVICE_FLAGS)' | cmp -s - .build-flags-nvcc-lib 2>/dev/null || printf '%s\n' '$(LIB_DEVICE_FLAGS)' > .build-flags-nvcc-lib)

# The $(shell) lines above write these files while make reads this file, after make may have
# listed the folder: an empty rule tells make they need nothing more.
.build-flags-host .build-flags-nvcc .build-flags-nvcc-lib: ;

# common/: labbook.c (GPU, checks, timing, report), lb_args.c (command line), lb_image.c (PNG, PGM)
COMMON_OBJS := labbook.o lb_args.o lb_image.o
HOST_DEPS := $(COMMON_DIR)/labbook.h $(COMMON_DIR)/lb_driver.h $(COMMON_DIR)/lb_csv.h .build-flags-host

.PHONY: all clean debug run test help print-arch print-progs print-demo solution check-solution unsolve $(SHORT) $(CHAPTER)
all: $(PROGS)
$(SHORT) $(CHAPTER): all

$(COMMON_OBJS): %.o: $(COMMON_DIR)/%.c $(HOST_DEPS)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# common/'s optional parts, for the programs that list them in OBJS_prog: lb_driver.o (the
# driver API, looked up in libcuda at run time; also LIBS_prog := -ldl), lb_csv.o (the data
# sets' CSV reader)
OPTIONAL_COMMON_OBJS := lb_driver.o lb_csv.o
$(OPTIONAL_COMMON_OBJS): %.o: $(COMMON_DIR)/%.c $(COMMON_DIR)/%.h $(HOST_DEPS)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

%.o: %.c $(HOST_DEPS) $(wildcard *.h)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(CFLAGS_$*) -c $< -o $@

%_kernels.o: %_kernels.cu %_kernels.h $(COMMON_DIR)/labbook.h $(COMMON_DIR)/lb_tensor_core.cuh $(COMMON_DIR)/lb_tensor_core_plain.cuh .build-flags-nvcc
	$(NVCC) $(CPPFLAGS) $(NVCCFLAGS) $(NVCCFLAGS_$*) -c $< -o $@

# a program's versions for Hopper alone (prog_hopper.cu: wgmma, setmaxnreg, TMA), compiled for
# sm_90a, Hopper's own target, whatever ARCH is: no later GPU runs sm_90a's machine code, so its
# PTX would help none, and on any GPU but an sm_90 the program lists those versions as skipped
# (lb_sm90a_unavailable). The portable kernels file is built for ARCH with its PTX.
HOPPER_GENCODE := -gencode arch=compute_90a,code=sm_90a
%_hopper.o: %_hopper.cu %_kernels.h $(COMMON_DIR)/labbook.h $(COMMON_DIR)/lb_tensor_core.cuh $(COMMON_DIR)/lb_tensor_core_plain.cuh .build-flags-nvcc
	$(NVCC) $(CPPFLAGS) $(filter-out $(GENCODE),$(NVCCFLAGS)) $(HOPPER_GENCODE) $(NVCCFLAGS_$*) -c $< -o $@

# a program's library baseline in a file of its own (reduce_cub.cu: CUB's headers take most of a
# build's time), listed in OBJS_prog: compiled once, not again for an edit of the kernels or a
# tunable
%_cub.o: %_cub.cu %_kernels.h .build-flags-nvcc-lib
	$(NVCC) $(CPPFLAGS) $(filter-out $(TUNABLE_DEFS),$(NVCCFLAGS)) $(NVCCFLAGS_$*) -c $< -o $@

# prog: prog.o [OBJS_prog] [prog_kernels.o] [prog_hopper.o] + common, linked by nvcc (static
# cudart, device link if -rdc)
define PROG_RULE
$(1): $(1).o $(OBJS_$(1)) $(if $(wildcard $(1)_kernels.cu),$(1)_kernels.o) $(if $(wildcard $(1)_hopper.cu),$(1)_hopper.o) $(COMMON_OBJS)
	$$(NVCC) $$(GENCODE) $$(NVCCFLAGS_$(1)) $$^ -o $$@ $$(LIBS_$(1)) $$(LDLIBS)
endef
$(foreach p,$(PROGS),$(eval $(call PROG_RULE,$(p))))

debug:
	$(MAKE) DEBUG=1

# the tour: every program (DEMO_prog, or ./prog --quiet), in the order of PROGS
DEMO := $(foreach p,$(PROGS),$(or $(DEMO_$(p)),./$(p) --quiet);)
run:
	@$(MAKE) -s --no-print-directory -j$(shell nproc 2>/dev/null || echo 4) all
	@bash $(COMMON_DIR)/demo.sh '$(DEMO)'

# the chapter built with a job per CPU core, then its cases, TEST_JOBS at a time (default: the
# cores, or 1.5 times them with a GPU: tests/run.sh)
test:
	@$(MAKE) --no-print-directory -j$(shell nproc 2>/dev/null || echo 4) all
	@REQUIRE_GPU=$(or $(REQUIRE_GPU),0) bash $(COMMON_DIR)/../tests/run.sh $(CHAPTER)

clean:
	rm -f $(PROGS) *.o *.png .build-flags .build-flags-host .build-flags-nvcc .build-flags-nvcc-lib perf.data perf.data.old gmon.out \
		$(CLEAN_EXTRA)

# one solution of SOLUTIONS.md, by the number in its title (common/solution.sh)
solution:
	@bash $(COMMON_DIR)/solution.sh apply '$(N)'
check-solution:
	@bash $(COMMON_DIR)/solution.sh check '$(N)'
unsolve:
	@bash $(COMMON_DIR)/solution.sh undo '$(N)'

# make help: this chapter's targets, its programs and tunables
help:
	@echo "$(CHAPTER): make targets (run them in this folder)"
	@echo "  make                  build every program: $(PROGS)"
	@echo "  make PROG             build one (make $(firstword $(PROGS)))"
	@echo "  make run              the tour: each program once at a demo size, one line each"
	@echo "  make test             build, then this chapter's cases (REQUIRE_GPU=1 on a GPU machine)"
	@echo "  make solution N=n     apply solution n of SOLUTIONS.md (the number in its title), build"
	@echo "  make check-solution N=n   run solution n's check block (exit 77 without a GPU)"
	@echo "  make unsolve N=n      take solution n's diff out and build again"
	@echo "  make debug            build with -g (host) and -G (device), for cuda-gdb"
	@echo "  make clean            remove what the build made"
	@echo "  variables: ARCH=sm_86 (now $(ARCH)), CUDA_PATH=$(CUDA_PATH)$(if $(TUNABLES),; tunables: $(TUNABLES) (make PROG NAME=value))"

print-arch:
	@echo $(ARCH)
print-progs:
	@echo $(PROGS)
print-demo:
	@echo '$(DEMO)'
