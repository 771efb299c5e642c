# The lab book's root Makefile.
#
#   make                 build every chapter
#   make ch04            build one chapter (or make ch04_matmul)
#   make test            build, then run every test (host unit tests, bad input, no-GPU paths,
#                        GPU checks; the GPU checks are skipped without a GPU), TEST_JOBS at a
#                        time (default: the CPU cores; with a GPU 1.5 times them, see tests/run.sh)
#   make test REQUIRE_GPU=1   the same, and a check skipped for want of a GPU fails (run this
#                        on a GPU machine: a broken driver then cannot pass as "no GPU")
#   make bench           build, then run every benchmark into bench/results-<gpu>.md
#   make run             build, then the tour: each chapter's demo at small sizes, one line per
#                        program (passed, FAILED, skipped: no GPU); exits 1 if any failed
#   make sanitize [CH=ch10]   the GPU checks under compute-sanitizer (memcheck, racecheck,
#                        synccheck, initcheck), TEST_JOBS at once, a line as each finishes;
#                        CH= for one chapter
#   make env             check the machine: toolkit, driver, GPU, libraries (env/check.sh)
#   make cpu-profile     where the CPU Mandelbrot spends its time (gprof, and perf where allowed;
#                        no GPU needed; ch01's README)
#   make profile PROG=ch04_matmul/matmul ARGS="2 --size 2048 --iters 1" [KERNEL=matmul_kernel2] [COUNT=1]
#                        build PROG, run it under Nsight Compute, print a short set of sections
#                        for COUNT launches of the kernels whose name matches KERNEL
#   make format          reformat the C and CUDA sources with .clang-format (needs clang-format)
#   make clean           remove what the build made
#   make help            this list; in a chapter folder, `make help` lists that chapter's targets
#                        (its programs, run, test, solution N=3, check-solution, unsolve, debug, clean)
#
# Variables: ARCH=sm_86 (default: the installed GPU's, else sm_90), CUDA_PATH=/usr/local/cuda,
# tunables such as TILE=32 for the chapters that have them.

CHAPTERS := $(sort $(wildcard ch[0-9][0-9]_*))


short = $(firstword $(subst _, ,$(1)))

.PHONY: all help test bench run sanitize env profile cpu-profile format clean $(CHAPTERS) $(foreach c,$(CHAPTERS),$(call short,$(c)))

all: $(CHAPTERS)

# make help: the comment at the top of this file
help:
	@sed -n '3,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

$(CHAPTERS):
	$(MAKE) -C $@

# ch04 -> ch04_matmul
$(foreach c,$(CHAPTERS),$(eval $(call short,$(c)): $(c)))

# the build in parallel, one job per CPU core; the cases TEST_JOBS at a time (TEST_JOBS=4 for
# fewer; left empty, tests/run.sh picks: the cores, or 1.5 times them with a GPU)
JOBS := $(shell nproc 2>/dev/null || echo 4)
TEST_JOBS ?=
REQUIRE_GPU ?= 0
test:
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@REQUIRE_GPU=$(REQUIRE_GPU) TEST_JOBS=$(TEST_JOBS) bash tests/run.sh

# compute-sanitizer and ncu come with the toolkit; without them, one line and exit 2
SANITIZER ?= $(shell command -v compute-sanitizer 2>/dev/null || echo $(CUDA_PATH)/bin/compute-sanitizer)
sanitize:
	@test -x "$(SANITIZER)" || { echo "make sanitize: compute-sanitizer not found (not on PATH, not $(SANITIZER)); it comes with the CUDA toolkit (Debian/Ubuntu package cuda-sanitizer-XX-Y), or pass SANITIZER=/path/to/compute-sanitizer"; exit 2; }
	@test -z "$(CH)" -o -n "$(wildcard $(CH)/Makefile $(CH)_*/Makefile)" || { echo "make sanitize: no chapter $(CH) (try CH=ch10 or CH=ch10_advanced)"; exit 2; }
	@$(MAKE) -s --no-print-directory -j$(JOBS) $(if $(CH),$(CH),all)
	@COMPUTE_SANITIZER="$(SANITIZER)" TEST_JOBS=$(TEST_JOBS) bash tests/run.sh --sanitize $(CH)

bench: all
	@bash bench/run.sh

# every chapter's demo, one line per program; a failure does not stop the tour, but fails it
run:
	@echo "make run: building every chapter first ($(JOBS) jobs; a fresh clone takes a minute or two)"
	@$(MAKE) -s --no-print-directory -j$(JOBS) all
	@status=0; tally=$$(mktemp); \
	for c in $(CHAPTERS); do echo "$$c"; DEMO_TALLY=$$tally $(MAKE) -s --no-print-directory -C $$c run || status=1; done; \
	echo "(demo sizes; the full measurements: make bench, into bench/results-<gpu>.md)"; \
	awk '{ p += $$1; f += $$2; s += $$3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s }' $$tally; \
	rm -f $$tally; exit $$status

env:
	@bash env/check.sh

cpu-profile:
	@$(MAKE) -s --no-print-directory -C ch01_setup cpu-profile

# Nsight Compute: the clocks stay as they are (--clock-control none: the numbers are the
# ones the program really gets); sections: throughput against the peaks (SpeedOfLight),
# where the memory traffic goes, occupancy, the launch shape, and why warps stall.
CUDA_PATH ?= /usr/local/cuda
NCU ?= $(shell command -v ncu 2>/dev/null || echo $(CUDA_PATH)/bin/ncu)
PROFILE_SECTIONS ?= SpeedOfLight MemoryWorkloadAnalysis Occupancy LaunchStats WarpStateStats
COUNT ?= 1
profile:
	@test -x "$(NCU)" || { echo "make profile: ncu (Nsight Compute) not found (not on PATH, not $(NCU)); it comes with the CUDA toolkit (Debian/Ubuntu package cuda-nsight-compute-XX-Y), or pass NCU=/path/to/ncu"; exit 2; }
	@test -n "$(PROG)" || { echo 'usage: make profile PROG=ch04_matmul/matmul ARGS="2 --size 2048 --iters 1" [KERNEL=regex] [COUNT=1]'; exit 2; }
	@test -f "$(PROG).c" || { echo "make profile: no program $(PROG) (expected $(PROG).c)"; exit 2; }
	@$(MAKE) -s --no-print-directory -C $(dir $(PROG)) $(notdir $(PROG))
	cd $(dir $(PROG)) && $(NCU) --clock-control none $(addprefix --section ,$(PROFILE_SECTIONS)) \
	    $(if $(KERNEL),--kernel-name 'regex:$(KERNEL)') --launch-count $(COUNT) ./$(notdir $(PROG)) $(ARGS)

CLANG_FORMAT ?= clang-format
FORMAT_FILES = $(wildcard common/*.c common/*.h ch*/*.c ch*/*.h ch*/*.cu tests/*.c tests/*.h tests/emu/*.h tests/emu/*.cpp)
format:
	@command -v $(CLANG_FORMAT) >/dev/null 2>&1 || { echo "make format: $(CLANG_FORMAT) is not installed (apt-get install clang-format)"; exit 2; }
	$(CLANG_FORMAT) -i --style=file $(FORMAT_FILES)

clean:
	@for c in $(CHAPTERS); do $(MAKE) -s -C $$c clean; done
	$(MAKE) -s -C tests clean
