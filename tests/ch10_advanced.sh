# tests/ch10_advanced.sh - cases for ch10_advanced, sourced by tests/run.sh (helpers are defined there).
for p in reduce histogram scan atomics shuffle; do
    bad_input 2 "unknown argument '--bogus'" ./$p --bogus
    bad_input 0 "usage: $p " ./$p --help
    bad_input 2 "--size must be positive (got 0)" ./$p --size 0
    no_gpu ./$p
done
bad_input 2 "version '9' does not exist (0..8)" ./reduce 9
bad_input 2 '--exact needs n <= 2^22 (3 n < 2^24 keeps float sums exact)' ./reduce --exact --size 2^23
bad_input 2 "version '4' does not exist (0..3)" ./histogram 4
bad_input 2 '--input must be uniform, one, band or all' ./histogram --input skewed
bad_input 2 "version '6' does not exist (0..5)" ./scan 6
bad_input 2 '--type must be int, float or both' ./scan --type double
bad_input 2 '--mode must be inclusive, exclusive or both' ./scan --mode both-ways
bad_input 2 '--exact needs n <= 2^24' ./scan --exact --size 2^24+1
bad_input 2 '--size must be a multiple of 32 (whole warps)' ./shuffle --size 33
bad_input 2 '--reps must be 1..100000' ./shuffle --reps 0

# every version at awkward sizes; exact integer sums prove each element is counted once
for n in 1 1000 2^20+3; do
    gpu_check ./reduce --check-only --exact --size $n
done
for n in 31 2^22-5; do
    gpu_check_large ./reduce --check-only --exact --size $n
done
gpu_check_large ./reduce --check-only --size 2^20+3
gpu_check_large ./reduce --size 2^20 --iters 2
gpu_check_large ./reduce --check-only --size 2^28+1
# planted bugs the checks must catch. Version 8 loses one block's partial sum: at 2^28 inputs
# in [0, 1) that is 1/1000 of the sum (on a large GPU), 15x the tolerance; with inputs in
# [-1, 1) (sum near 0) and a tolerance relative to sum |x| it passed.
mutant "reduce 8 loses block 7's partial sum" reduce_kernels.cu \
    's/partial\[blockIdx.x\] = v;/partial[blockIdx.x] = blockIdx.x == 7 ? 0.0f : v;/' ./reduce 8 --check-only --size 2^28

for n in 1 2^20+3; do
    gpu_check ./histogram --check-only --size $n
done
for n in 31 1000; do
    gpu_check_large ./histogram --check-only --size $n
done
gpu_check_large ./histogram --size 2^20 --iters 2
gpu_check_large ./histogram --check-only --size 2^28+1 --input uniform

# 1024: blocks of versions 1-2; 4096: tiles of 3-4; 8192 = 256 x 32: tiles of 5 (3072 = 128 x 24
# with SCAN_THREADS=128 SCAN_VECS=6); 128: the rows of a warp in 5
# (the sanitizer runs one size past each tile: 1, 1025, 4097, 8193, and 2^20+3)
for n in 1 1025 4097 8193 2^20+3; do
    gpu_check ./scan --check-only --size $n
done
for n in 31 129 1023 1024 3071 3073 8191 9217 3145805; do
    gpu_check_large ./scan --check-only --size $n
done
gpu_check_large ./scan --size 2^20 --iters 2
first gpu_check_large ./scan --check-only --size 2^28+1
# float paths checked exactly: inputs 0 or 1 keep every float prefix an exact integer
gpu_check ./scan --check-only --exact --type float --size 4097
for n in 1 2^20+3; do
    gpu_check_large ./scan --check-only --exact --type float --size $n
done
gpu_check_large ./scan --check-only --exact --type float --size 2^24
# a planted bug: version 3's tile sums miss each tile's last element, so every carry is short
# by a little (a few hundred at 2^24, inside 2^-12 of the prefix); --exact catches it
mutant "scan 3 tile sums miss their last element" scan_kernels.cu \
    '/scan_kernel3_tile_sums/,/^}/s/if (i < n) acc = add(acc, in\[i\]);/if (i < n \&\& i + 1 != base + SCAN_TILE) acc = add(acc, in[i]);/' \
    ./scan 3 --check-only --exact --type float --mode inclusive --size 2^24

gpu_check ./atomics --check-only --size 1
gpu_check ./atomics --check-only --size 2^20+3
gpu_check_large ./atomics --size 2^20 --iters 2

gpu_check ./shuffle --check-only --size 32 --reps 1
gpu_check ./shuffle --check-only --size 2^20+32 --reps 5
gpu_check_large ./shuffle --size 2^20 --reps 8 --iters 2

# part 2
host_test test_ptx
for p in vector_types ptx; do
    bad_input 2 "unknown argument '--bogus'" ./$p --bogus
    bad_input 0 "usage: $p " ./$p --help
    bad_input 2 "--size must be positive (got 0)" ./$p --size 0
    no_gpu ./$p
done
bad_input 2 '--size: at most 2^28' ./ptx --size 2^29
for n in 3 1000003; do
    gpu_check ./vector_types --check-only --size $n
done
for n in 1 5; do
    gpu_check_large ./vector_types --check-only --size $n
done
gpu_check_large ./vector_types --size 2^20 --iters 2
gpu_check ./ptx --size 1
gpu_check ./ptx --size 33
gpu_check_large ./ptx

bad_input 2 "unknown argument '--bogus'" ./compiled_code --bogus
bad_input 0 'usage: compiled_code ' ./compiled_code --help
bad_input 2 '--max-iter must be 1..1000000' ./compiled_code --max-iter 0
bad_input 2 '--size: each side at most 16384' ./compiled_code --size 20000
bad_input 2 '--size: each side at most 16384' ./compiled_code --size 2^32+5
bad_input 2 '--size: each side at most 16384' ./compiled_code --size 2^40
bad_input 2 'no-such-lib.so: cannot open: No such file or directory (the shared library)' ./compiled_code --lib no-such-lib.so
bad_input 2 'no-such-module.fatbin: cannot open: No such file or directory (the module)' ./compiled_code --module no-such-module.fatbin
bad_input 2 '../tests/data: is a folder, not a file (the module)' ./compiled_code --module ../tests/data
bad_input 2 '../tests/data: is a folder, not a file (the kernel source for NVRTC)' ./compiled_code --source ../tests/data
bad_input 2 '../tests/data/empty.cu: the file is empty (the kernel source for NVRTC)' ./compiled_code --source ../tests/data/empty.cu
bad_input 2 'run it from ch10_advanced, where make builds it' sh -c 'cd .. && ch10_advanced/compiled_code'
bad_input 2 "--output 'no-such-folder/x.png': no folder 'no-such-folder'" ./compiled_code --output no-such-folder/x.png
bad_input 2 'no-such-kernel.cu: cannot open: No such file or directory (the kernel' ./compiled_code --source no-such-kernel.cu
# a kernel that does not compile: the NVRTC log, exit 2 (no GPU needed to compile)
run_case "$CHAPTER: NVRTC shows the compile log" 2 "expected an expression" "" ./compiled_code --source ../tests/data/bad_kernel.cu
no_gpu ./compiled_code
gpu_expect 2 "INVALID_IMAGE" ./compiled_code --module ../tests/data/plain_p2.pgm --output ""
gpu_check_large ./compiled_code --size 1x1 --output ""
gpu_check ./compiled_code --size 37x23 --max-iter 1000 --output ""
gpu_check_large ./compiled_code
bad_input 2 'no-such.ptx: cannot open: No such file or directory (the PTX)' ./compiled_code --ptx no-such.ptx
gpu_expect 2 "CUDA_ERROR_INVALID" ./compiled_code --ptx ../tests/data/bad_kernel.cu --output ""
gpu_expect 0 "4 driver API alone (own context, PTX) *PASS" ./compiled_code --size 64x48
# the book's ctypes way (python3 is what make test itself needs; said so rather than assumed)
if ! command -v python3 >/dev/null 2>&1; then
    record SKIP "$CHAPTER: mandel_ctypes.py (no python3)"
else
    bad_input 2 "not a PNG file" python3 mandel_ctypes.py --size 6x4 --compare ../tests/data/plain_p2.pgm
    bad_input 2 "is 6x4, not 7x4: run both with the same --size" python3 mandel_ctypes.py --size 7x4 --compare ../tests/data/gray_6x4.png
    bad_input 2 "no such file" python3 mandel_ctypes.py --compare no-such.png
    [ $SANITIZE = 1 ] || run_case "$CHAPTER: no GPU: mandel_ctypes.py" 77 "mandel_run failed" "CUDA_VISIBLE_DEVICES=" \
        python3 mandel_ctypes.py --size 6x4 --compare ../tests/data/gray_6x4.png
    gpu_expect 0 "PASS (the same image)" sh -c "./compiled_code --size 301x203 --max-iter 100 --output '$LOG_DIR/ctypes.png' --quiet && python3 mandel_ctypes.py --size 301x203 --max-iter 100 --compare '$LOG_DIR/ctypes.png'"
    gpu_expect 1 "FAIL" sh -c "./compiled_code --size 301x203 --max-iter 100 --output '$LOG_DIR/ctypes2.png' --quiet && python3 mandel_ctypes.py --size 301x203 --max-iter 99 --compare '$LOG_DIR/ctypes2.png'"
fi

bad_input 2 "unknown argument '--bogus'" ./dynamic_parallelism --bogus
bad_input 0 'usage: dynamic_parallelism ' ./dynamic_parallelism --help
bad_input 2 '--depth must be 1..24 (launches nest at most 24 deep)' ./dynamic_parallelism --depth 0
bad_input 2 '--depth must be 1..24 (launches nest at most 24 deep)' ./dynamic_parallelism --depth 25
bad_input 2 '--max-depth must be 1..23' ./dynamic_parallelism --max-depth 0
bad_input 2 '--max-depth must be 1..23' ./dynamic_parallelism --max-depth 24
bad_input 2 '--image: each side 1 to 16384' ./dynamic_parallelism --image 20000x10
bad_input 2 '--image: each side 1 to 16384' ./dynamic_parallelism --image 0x0
bad_input 2 "--image: '-5x5': each number must be 0 to 2^31-1" ./dynamic_parallelism --image -5x5
bad_input 2 '--max-iter must be 1..100000' ./dynamic_parallelism --max-iter 0
no_gpu ./dynamic_parallelism
# quicksort from n = 1 up, each run on random, sorted, reversed and all-equal inputs
for n in 1 33 1000; do
    # racecheck, synccheck and initcheck do not support dynamic parallelism (they say so, and
    # the child launches fail): memcheck alone
    SANITIZE_TOOLS=memcheck gpu_check ./dynamic_parallelism --check-only --depth 2 --size $n --image 100x77
done
for n in 2 31 65537; do
    gpu_check_large ./dynamic_parallelism --check-only --depth 2 --size $n --image 100x77
done
gpu_check_large ./dynamic_parallelism --check-only --size 5000 --max-depth 1 --image 33x257
SANITIZE_TOOLS=memcheck gpu_check ./dynamic_parallelism --check-only --depth 24 --size 100 --image 64x64
gpu_check_large ./dynamic_parallelism --check-only

# tensor_gemm: every version the GPU runs, on whole tiles, on shapes that are not (M, N, K not
# multiples of 128/256/64; K = 16; M = 1; N = 1), in bf16 and tf32 (version 2, bf16 only, is
# listed as skipped there); 8192^3 checks the large case against cuBLAS and sampled CPU rows
# a version added the way tensor_gemm's table says (a launcher and its row in launchers[], the count, a
# row in versions[]): it must build, be listed and (with a GPU) pass; a half-done edit must stop the build
if [ $SANITIZE = 0 ]; then
    want=0; [ $HAVE_GPU = 1 ] || want=77
    first run_case "$CHAPTER: a tensor_gemm version added by the table's steps" $want "" "" bash ../tests/add_version.sh tensor_gemm "$LOG_DIR/add_version_tensor_gemm"
fi
bad_input 2 "unknown argument '--bogus'" ./tensor_gemm --bogus
bad_input 0 'usage: tensor_gemm ' ./tensor_gemm --help
bad_input 2 '--size must be positive (got 0)' ./tensor_gemm --size 0
bad_input 2 "--type must be bf16, tf32 or fp8 (got 'fp16')" ./tensor_gemm --type fp16
bad_input 2 "version '13' does not exist (0..12)" ./tensor_gemm 13
no_gpu ./tensor_gemm
# (the sanitizer runs 64, 100,200,16 and 1,300,64 in bf16, and 1,300,40 in tf32)
for s in 64 100,200,16 1,300,64; do
    gpu_check ./tensor_gemm --check-only --size $s
done
for s in 128,256,64 1000,1023,777 300,1,16; do
    gpu_check_large ./tensor_gemm --check-only --size $s
done
gpu_check ./tensor_gemm --check-only --size 1,300,40 --type tf32
for s in 64 1000,1023,777; do
    gpu_check_large ./tensor_gemm --check-only --size $s --type tf32
done
gpu_check_large ./tensor_gemm --size 512 --iters 2
# version 11's split tiles: 16 x 17 tiles of 128 x 256 on 132 SMs leave 8 past the whole waves,
# 5 k tiles each (K 300): 40 units in 132 runs, most of one unit or none, each tile summed by 5 blocks
# (bf16 under the sanitizers too: memcheck, racecheck and initcheck ran it in seconds on an H100)
gpu_check ./tensor_gemm 11 --check-only --size 2048,4352,300
for t in tf32 fp8; do
    gpu_check_large ./tensor_gemm 11 --check-only --size 2048,4352,300 --type $t
done
gpu_expect 2 'version 2 (mma.sync+ldmatrix, cp.async x2): bf16 only' ./tensor_gemm 2 --type tf32 --size 64
# fp8 (e4m3, a power-of-two scale a tensor; version 0 is cuBLASLt's fp8 product): K of one tile,
# K not a multiple of the 128-element k tile, M = 1, N = 1; and 4096^3 against cuBLASLt
for s in 128 100,200,16 1,300,200; do
    gpu_check ./tensor_gemm --check-only --size $s --type fp8
done
for s in 1000,1023,777 300,1,130; do
    gpu_check_large ./tensor_gemm --check-only --size $s --type fp8
done
first gpu_check_large ./tensor_gemm --check-only --size 4096 --type fp8
mutant "tensor_gemm fp8 applies the scales twice" tensor_gemm_hopper.cu \
    's|for (int i = 0; i < 128; i++) d\[i\] \*= alpha;|for (int i = 0; i < 128; i++) d[i] *= alpha * alpha;|' \
    ./tensor_gemm 9 --check-only --size 256 --type fp8
mutant "tensor_gemm fp8 reads the e4m3 codes as e5m2" tensor_gemm_hopper.cu \
    's|wgmma_m64n256k32_e4m3_ss(d, da, db)|wgmma_m64n256k32_e5m2_ss(d, da, db)|' \
    ./tensor_gemm 9 --check-only --size 256 --type fp8
first gpu_check_large ./tensor_gemm --check-only --size 8192
# planted bugs: the wgmma versions skip the last 32 bytes of every k tile (one k16 step of bf16);
# version 2 skips the second k16 step of its tiles; version 9 writes C to shared memory unswizzled
mutant "tensor_gemm 3-10 skip a wgmma k step" tensor_gemm_hopper.cu \
    's|ks < TG_TILE_K_BYTES / 32; ks++|ks < TG_TILE_K_BYTES / 32 - 1; ks++|' ./tensor_gemm 8 --check-only --size 256
mutant "tensor_gemm 2 skips half of each k tile" tensor_gemm_kernels.cu \
    's|for (int kk = 0; kk < TG2_BK; kk += 16)|for (int kk = 0; kk < TG2_BK / 2; kk += 16)|' ./tensor_gemm 2 --check-only --size 256
# version 2 walks one k tile past the end: at 1 x 256 x 64 the extra tile multiplies A's zero pad
# rows by B's next rows, and C's last column by what lies past B: NaN (the guard), so the check
# fails; without the guard it read the allocator's padding and added 0
mutant "tensor_gemm 2 reads a k tile past the end of B" tensor_gemm_kernels.cu \
    's|int tiles = kp / TG2_BK;|int tiles = kp / TG2_BK + 1;|' ./tensor_gemm 2 --check-only --size 1,256,64
# version 10's list of tiles with row and column swapped: a square grid of pairs is walked
# transposed (still every tile), a tall one (4 pairs of rows, one column) names tiles past N and
# leaves most of C unwritten
mutant "tensor_gemm 10's tile list swaps rows and columns" tensor_gemm_hopper.cu \
    's|h\[n++\] = (uint32_t)y << 16 \| (uint32_t)x;|h[n++] = (uint32_t)x << 16 \| (uint32_t)y;|' \
    ./tensor_gemm 10 --check-only --size 1024,256,128
mutant "tensor_gemm 11 leaves out the parts of its split tiles" tensor_gemm_hopper.cu \
    's|add_partial(d, partials + (size_t)(2 \* q + c) \* SK_SLOT_FLOATS);|(void)partials;|' \
    ./tensor_gemm 11 --check-only --size 2048,4352,300
mutant "tensor_gemm 12's two halves read the same rows of A" tensor_gemm_hopper.cu \
    's|wgmma_128<In>(d\[1\], wgmma_desc(sA + 64 \* TG_TILE_K_BYTES + 32 \* ks), db);|wgmma_128<In>(d[1], wgmma_desc(sA + 32 * ks), db);|' \
    ./tensor_gemm 12 --check-only --size 256
mutant "tensor_gemm 9 writes C's chunks unswizzled" tensor_gemm_hopper.cu \
    's|uint32_t r = row + 8 \* h, swizzled = r \* 128 + (col_bytes ^ ((r % 8) << 4));|uint32_t r = row + 8 * h, swizzled = r * 128 + col_bytes;|' \
    ./tensor_gemm 9 --check-only --size 256
# the same kernels on CPU threads (tests/emu), GPU or not: every version but the clusters' (6,
# 8: a cluster's blocks would have to run at once), bf16 and tf32, whole tiles and not
emu_check emu_tensor_gemm 100 200 16 bf16 1 2 3 4 5 7 9 11 12
emu_check emu_tensor_gemm 300 1 16 bf16 1 2 3 4 5 7 9 11 12  # 9, 11, 12 skipped: N = 1 is no multiple of 4
emu_check emu_tensor_gemm 1 300 40 tf32 1 3 4 5 7 9 11 12
emu_check emu_tensor_gemm 256 256 128 bf16 3 4 5 7 9 11 12
# 32 tiles on 3 blocks: the persistent versions' rings and version 9's buffers over many tiles;
# version 11's last 2 tiles (4 k tiles each) cut in 3 runs, in 5 (a tile from three blocks), and
# in 13 (runs of one unit or none)
EMU_ENV=EMU_SMS=3 emu_check emu_tensor_gemm 1000 1024 200 bf16 5 7 9 11 12
EMU_ENV=EMU_SMS=5 emu_check emu_tensor_gemm 1000 1024 200 bf16 11
EMU_ENV=EMU_SMS=13 emu_check emu_tensor_gemm 1000 1024 200 bf16 11
EMU_ENV=EMU_SMS=2 emu_check emu_tensor_gemm 513 260 64 tf32 5 9 11 12
# version 12: 16 k tiles a tile, more than twice its 6 stages, so that a consumer a tile ahead
# would wait on a stage two phases on (its turns keep it from that)
EMU_ENV=EMU_SMS=3 emu_check emu_tensor_gemm 512 512 1000 bf16 12
# fp8: e4m3 codes, 128 of them a k tile (K 300 pads to 384, K 16 to 128), the scales' product
# applied as C leaves; 1 and 2 listed as skipped
emu_check emu_tensor_gemm 300 264 300 fp8 1 2 3 4 5 7 9 12  # N a multiple of 8: 9 stores bf16 rows by TMA
emu_check emu_tensor_gemm 1 300 16 fp8 3 4 9
EMU_ENV=EMU_SMS=3 emu_check emu_tensor_gemm 513 512 200 fp8 5 9 11 12
EMU_ENV=EMU_SMS=5 emu_mutant "tensor_gemm 11 leaves out the parts of its split tiles" tensor_gemm_hopper.cu \
    's|add_partial(d, partials + (size_t)(2 \* q + c) \* SK_SLOT_FLOATS);|(void)partials;|' \
    emu_tensor_gemm 1000 1024 200 bf16 11
# version 12's second half of each tile multiplies the first half's rows of A
EMU_ENV=EMU_SMS=3 emu_mutant "tensor_gemm 12's two halves read the same rows of A" tensor_gemm_hopper.cu \
    's|wgmma_128<In>(d\[1\], wgmma_desc(sA + 64 \* TG_TILE_K_BYTES + 32 \* ks), db);|wgmma_128<In>(d[1], wgmma_desc(sA + 32 * ks), db);|' \
    emu_tensor_gemm 512 512 1000 bf16 12
emu_mutant "tensor_gemm fp8 applies the scales twice" tensor_gemm_hopper.cu \
    's|for (int i = 0; i < 128; i++) d\[i\] \*= alpha;|for (int i = 0; i < 128; i++) d[i] *= alpha * alpha;|' \
    emu_tensor_gemm 300 260 300 fp8 4
emu_mutant "tensor_gemm fp8 reads the e4m3 codes as e5m2" tensor_gemm_hopper.cu \
    's|wgmma_m64n256k32_e4m3_ss(d, da, db)|wgmma_m64n256k32_e5m2_ss(d, da, db)|' emu_tensor_gemm 300 260 300 fp8 4
emu_mutant "tensor_gemm fp8 runs bf16's wgmma on the codes" tensor_gemm_hopper.cu \
    's|wgmma_m64n256k32_e4m3_ss(d, da, db); /\* uint8_t|wgmma_m64n256k16_bf16_ss(d, da, db); /* uint8_t|' emu_tensor_gemm 300 264 300 fp8 3
emu_mutant "tensor_gemm 3-10 skip a wgmma k step" tensor_gemm_hopper.cu \
    's|ks < TG_TILE_K_BYTES / 32; ks++|ks < TG_TILE_K_BYTES / 32 - 1; ks++|' emu_tensor_gemm 256 256 128 bf16 5
emu_mutant "tensor_gemm 2 reads a k tile past the end of B" tensor_gemm_kernels.cu \
    's|int tiles = kp / TG2_BK;|int tiles = kp / TG2_BK + 1;|' emu_tensor_gemm 1 256 64 bf16 2
# the consumers read a stage without waiting on its full barrier: the emulation lands a TMA load
# only at a wait on its barrier, so they read NaN
emu_mutant "tensor_gemm 4-9 consumers skip the full barrier's wait" tensor_gemm_hopper.cu \
    's|mbar_wait(&full\[s\], (u / TGW_STAGES) \& 1);|;|' emu_tensor_gemm 256 256 128 bf16 5
# version 9 writing a buffer again before its last store has read it (the emulation reads a
# store's shared memory as late as the waits allow, so the race shows as wrong data)
EMU_ENV=EMU_SMS=3 emu_mutant "tensor_gemm 9 reuses a buffer of C without waiting" tensor_gemm_hopper.cu \
    's|if (t == 0) bulk_wait_read<1>(); /\* the store of chunk q - 2 is done with buf \*/||' \
    emu_tensor_gemm 1000 1024 200 bf16 9
