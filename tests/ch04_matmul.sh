# tests/ch04_matmul.sh - cases for ch04_matmul, sourced by tests/run.sh (helpers are defined there).
bad_input 2 "unknown argument '--bogus'" ./matmul --bogus
bad_input 2 '--size must be positive (got 0)' ./matmul --size 0
bad_input 2 '--size takes N or M,N,K' ./matmul --size 2,3
bad_input 2 "--size: '1,2,3,4' is not a size (N, M,N,K or MxNxK)" ./matmul --size 1,2,3,4
bad_input 2 "--size takes N or M,N,K (also written MxNxK), not two numbers" ./matmul --size 16x16
bad_input 2 "--size: '1e30' is too large" ./matmul --size 1e30
bad_input 2 "--sweep times its own sizes (512..8192) and versions: no --size, version or --tiling with it" ./matmul --sweep --size 100
bad_input 2 "--tiling is version 10's plan: not with version 0" ./matmul 0 --tiling 64x128,4
bad_input 2 "... (cut: an argument too long to show)" ./matmul --bogus$(printf '%0400d' 0)
bad_input 2 "--png needs a file name (--no-png writes none)" ./life --png ""
bad_input 0 "usage: bash explore.sh" bash explore.sh --help
bad_input 2 "explore.sh: no arguments" bash explore.sh 4096
bad_input 2 '--size: each dimension at most 65536' ./matmul --size 100000
bad_input 2 "version '12' does not exist (0..11)" ./matmul 12
bad_input 2 "--tiling '64x64,2': the tile is 128x256, 128x128 or 64x128, and S is 1..256" ./matmul 10 --tiling 64x64,2
bad_input 2 "--tiling '128x128,0': the tile is 128x256, 128x128 or 64x128, and S is 1..256" ./matmul 10 --tiling 128x128,0
bad_input 2 "--tiling '128x128': expected BMxBN,S (e.g. 64x128,4)" ./matmul 10 --tiling 128x128
bad_input 2 "--block 33: the naive kernel's block is B x B threads, B at most 32" ./matmul --block 33
bad_input 0 'usage: matmul ' ./matmul --help
no_gpu ./matmul

gpu_check ./matmul --check-only --size 1,1,1
gpu_check_large ./matmul --check-only --size 1000,1023,777
gpu_check ./matmul --check-only --size 17,33,65
gpu_check ./matmul --check-only --size 128,128,13
gpu_check_large ./matmul --check-only --size 256,260,100
gpu_check_large ./matmul --check-only --size 513
gpu_check_large ./matmul --check-only --size 2048
gpu_check ./matmul 1 --check-only --size 100,200,50 --block 7
gpu_check_large ./matmul --size 256 --iters 2
# versions 8-10 (cp.async stages, split K): a network layer's shape, K split into parts with a
# ragged last part, M = 1, N not a multiple of 4 (4-byte copies), every tile by --tiling
gpu_check_large ./matmul --check-only --size 128,1024,784
gpu_check ./matmul 10 --check-only --size 1,300,5000
gpu_check_large ./matmul 10 --check-only --size 200,1001,3001 --tiling 128x128,7
gpu_check ./matmul 10 --check-only --size 300,500,77 --tiling 64x128,3
gpu_check ./matmul 10 --check-only --size 129,257,1000 --tiling 128x256,2
gpu_check ./matmul 10 --check-only --size 64,64,9 --tiling 64x128,200
gpu_check_large ./matmul 8 --check-only --size 4096,4096,1000
# planted bugs: the last, partial K step of 8 dropped; the parts of a split K added to the
# poison instead of to zero; version 9 reading step t+1's first k from step t's stage
mutant "matmul 8-10 drop a partial last K step" matmul_kernels.cu \
    's|int steps = (k_end - k_begin + K8_BK - 1) / K8_BK;|int steps = (k_end - k_begin) / K8_BK;|' ./matmul 8 --check-only --size 300,200,777
mutant "matmul 10 adds the parts of K without zeroing C" matmul_kernels.cu \
    's|if (split) { /\* the parts|if (0) { /* the parts|' ./matmul 10 --check-only --size 128,1024,784
mutant "matmul 9 reads the next step's first k from the wrong stage" matmul_kernels.cu \
    's|smem + next_slot \* T::STAGE_FLOATS, 0, a_off|stage, 0, a_off|' ./matmul 9 --check-only --size 256,512,200
mutant "matmul 11 takes K's remainder as a whole step" matmul_kernels.cu \
    's|first = k_len - (steps - 1) \* 8;|first = 8;|' ./matmul 11 --check-only --size 100,37,777
# the same kernels on CPU threads (tests/emu), GPU or not: every version at M = N = K = 1, K's
# remainder (777 = 97 x 8 + 1), N not a multiple of 4, ragged splits of K; three planted bugs
emu_check emu_matmul 1 1 1 1 2 3 4 5 6 7 8 9 10 11
emu_check emu_matmul 100 37 777 1 2 3 4 5 6 7 8 9 10 11
emu_check emu_matmul 130 258 9 3 4 5 6 7 8 9 10 11
emu_check emu_matmul 256 512 64 5 6 7 8 9 10 11
emu_check emu_matmul 300 520 1000 10 11
emu_mutant "matmul 11 takes K's remainder as a whole step" matmul_kernels.cu \
    's|first = k_len - (steps - 1) \* 8;|first = 8;|' emu_matmul 100 37 777 11
emu_mutant "matmul 11's parts of K all start at k = 0" matmul_kernels.cu \
    's|int k0 = SPLIT ? blockIdx.z \* k_chunk : 0|int k0 = 0|' emu_matmul 300 520 1000 11
emu_mutant "matmul 9 reads the next step's first k from the wrong stage" matmul_kernels.cu \
    's|smem + next_slot \* T::STAGE_FLOATS, 0, a_off|stage, 0, a_off|' emu_matmul 256 512 200 9

host_test test_life
bad_input 2 "unknown argument '--bogus'" ./life --bogus
bad_input 2 '--size must be positive (got 0)' ./life --size 0
bad_input 2 '--size: at most 65536x65536 cells' ./life --size 70000
bad_input 2 '--gens must be positive' ./life --gens 0
bad_input 2 '--density must be between 0 and 1' ./life --density 1.5
bad_input 2 "--density: 'x' is not a number" ./life --density x
bad_input 2 '--frames must be 0 or positive' ./life --frames -1
bad_input 2 "version '9' does not exist (0..8)" ./life 9
bad_input 2 '--boards must be 0..1024' ./life --boards -1
bad_input 2 '--boards runs version 1 or 2 (byte boards), not 3' ./life 3 --boards 4
bad_input 2 "--png '../tests/data' is a folder, not a file" ./life --png ../tests/data
bad_input 0 'usage: life ' ./life --help
no_gpu ./life

gpu_check ./life --check-only --size 1 --gens 3 --no-png
gpu_check_large ./life --check-only --size 5x7 --gens 20 --no-png
gpu_check ./life --check-only --size 33x17 --gens 40 --no-png
gpu_check_large ./life --check-only --size 1000x1023 --gens 25 --no-png
gpu_check ./life --check-only --size 100x3 --gens 10 --density 0.5 --no-png
gpu_check_large ./life --check-only --size 64 --gens 7 --density 1 --no-png
gpu_check_large ./life --check-only --size 2048 --gens 30 --no-png
gpu_check ./life --size 96x80 --gens 12 --iters 2 --frames 4 --png "$LOG_DIR/life-test.png"
# all generations in one launch: awkward boards, odd and even generation counts
for v in 4 5 6; do
    gpu_check_large ./life $v --check-only --size 1 --gens 3 --no-png
    gpu_check ./life $v --check-only --size 33x17 --gens 40 --no-png
    gpu_check_large ./life $v --check-only --size 100x3 --gens 11 --density 0.5 --no-png
done
gpu_check_large ./life 4 --check-only --size 256 --gens 10 --no-png
gpu_check_large ./life 6 --check-only --size 200x201 --gens 9 --no-png
# versions 7-8: 64-bit words when a row has an even number of 32-bit words (64x5, 100x9, 33x17:
# one 64-bit word of 33 cells), 32-bit words otherwise (5x7, 1000x3); boards shorter than a
# thread's rows
# (the sanitizer runs one board of each word width: 64x5 and 5x7)
for size in 64x5 5x7; do
    gpu_check ./life 7 --check-only --size $size --gens 9 --no-png
    gpu_check ./life 8 --check-only --size $size --gens 9 --no-png
done
for size in 100x9 33x17 1000x3 4000x1; do
    gpu_check_large ./life 7 --check-only --size $size --gens 9 --no-png
    gpu_check_large ./life 8 --check-only --size $size --gens 9 --no-png
done
gpu_expect 2 "this version takes at most 65536 here" ./life 4 --size 257x256 --gens 2 --no-png
gpu_expect 2 "both boards in one block's shared memory" ./life 5 --size 4096 --gens 2 --no-png
gpu_expect 2 "every block resident at once" ./life 6 --size 16384 --gens 2 --no-png
gpu_expect 0 "skipped: the board has" ./life --check-only --size 2048 --gens 2 --no-png
gpu_check_large ./life --size 32 --gens 50 --iters 2 --no-png
# --boards: one board per stream, each checked
gpu_check_large ./life --boards 1 --check-only --size 1 --gens 3
gpu_check ./life --boards 5 --check-only --size 33x17 --gens 9
gpu_check_large ./life 2 --boards 3 --check-only --size 128 --gens 10
gpu_expect 0 "boards_streams" ./life --boards 4 --size 64 --gens 20 --iters 2

# README exercise 4's three edits, made to a copy of matmul: it must build, list version 8 in
# --help and (with a GPU) pass with it; a half-done edit must stop the build
if [ $SANITIZE = 0 ]; then
    want=0; [ $HAVE_GPU = 1 ] || want=77
    first run_case "$CHAPTER: a version added by the README's steps" $want "" "" bash ../tests/add_version.sh matmul "$LOG_DIR/add_version"
fi
