# tests/ch06_profiling.sh - cases for ch06_profiling, sourced by tests/run.sh (helpers are defined there).
for p in events bandwidth; do
    bad_input 2 "unknown argument '--bogus'" ./$p --bogus
    bad_input 2 "--size must be positive (got 0)" ./$p --size 0
    bad_input 2 "--iters must be positive (got 0)" ./$p --iters 0
    bad_input 0 "usage: $p " ./$p --help
    no_gpu ./$p
done
bad_input 2 '--reps must be positive' ./events --reps 0
bad_input 2 '--block must be positive (got 0)' ./events --block 0
bad_input 2 "unknown argument '1'" ./bandwidth 1

gpu_expect 2 "not allowed" ./events --block 2048
gpu_expect 2 "needs" ./bandwidth --size 2^44
gpu_check ./events --check-only --size 1
gpu_check ./events --check-only --size 2^20+3 --block 96 --reps 50
gpu_check_large ./events --size 2^16 --reps 20 --iters 3
gpu_check ./bandwidth --check-only --size 1
gpu_check ./bandwidth --check-only --size 1000003
gpu_check_large ./bandwidth --size 1M --iters 2

bad_input 2 "unknown argument '--bogus'" ./divergence --bogus
bad_input 2 '--block 96: must be a multiple of 64' ./divergence --block 96
bad_input 2 '--work must be positive' ./divergence --work 0
bad_input 2 "version '0' does not exist (1..2)" ./divergence 0
bad_input 2 "version '3' does not exist (1..2)" ./divergence 3
bad_input 0 'usage: divergence ' ./divergence --help
no_gpu ./divergence
gpu_check ./divergence --check-only --size 1
gpu_check ./divergence --check-only --size 2^20+3 --block 128 --work 20
gpu_check ./divergence --size 2^16 --work 16 --iters 3 --print

bad_input 2 "unknown argument '--bogus'" ./occupancy --bogus
bad_input 2 "version '0' does not exist (1..2)" ./occupancy 0
bad_input 2 "version '3' does not exist (1..2)" ./occupancy 3
bad_input 2 '--smem must be 0 or positive' ./occupancy --smem -1
bad_input 2 '--work must be positive' ./occupancy --work 0
bad_input 0 'usage: occupancy ' ./occupancy --help
no_gpu ./occupancy
gpu_expect 2 "at most" ./occupancy --smem 1000000
gpu_check ./occupancy --check-only --size 1
gpu_check ./occupancy --check-only --size 2^20+3 --work 3
gpu_check ./occupancy 1 --check-only --size 100000 --smem 65536
gpu_check_large ./occupancy 2 --size 2^16 --iters 2

bad_input 2 "unknown argument '--bogus'" ./streams --bogus
bad_input 2 '--arrays, --streams and --chunks must be positive, --reps 0 or more' ./streams --streams 0
bad_input 2 '--arrays, --streams and --chunks must be positive, --reps 0 or more' ./streams --chunks 0
bad_input 2 '--arrays, --streams and --chunks must be positive, --reps 0 or more' ./streams --arrays -3
bad_input 2 '--size must be positive (got 0)' ./streams --size 0
bad_input 0 'usage: streams ' ./streams --help
no_gpu ./streams
gpu_check ./streams --check-only --arrays 1 --size 1
gpu_check_large ./streams --check-only --arrays 7 --size 1000003 --streams 3 --chunks 5 --reps 10
gpu_check ./streams --check-only --arrays 3 --size 100 --streams 8 --chunks 1000
gpu_check_large ./streams --arrays 8 --size 2^16 --reps 50 --iters 2
gpu_check ./streams --per-stream-events --arrays 5 --size 1001 --streams 3 --reps 10
gpu_expect 0 "cudaEventQuery polling: the CPU did" ./streams --per-stream-events --arrays 4 --size 2^16 --streams 4

bad_input 2 "unknown argument '--bogus'" ./contexts --bogus
bad_input 2 '--threads must be 1..256' ./contexts --threads 0
bad_input 2 '--threads must be 1..256' ./contexts --threads 300
bad_input 2 '--reps must be 0..1000000' ./contexts --reps -1
bad_input 2 '--blocks must be 1..65535' ./contexts --blocks 0
bad_input 2 '--size: at most 2^28 floats per thread' ./contexts --size 2^29
bad_input 2 "version '4' does not exist (0..3)" ./contexts 4
bad_input 2 '--push-pop is way 3; it cannot be combined with way 1' ./contexts 1 --push-pop
bad_input 2 'cannot open no-such.fatbin, the kernel' ./contexts --module no-such.fatbin
bad_input 2 'contexts: --module ../tests/data is a folder, not a module file' ./contexts --module ../tests/data
bad_input 2 'contexts: --module ../tests/data/empty.cu is empty' ./contexts --module ../tests/data/empty.cu
# from another folder the module's relative path misses: say where to run it
bad_input 2 'run it from ch06_profiling, where make builds it' sh -c 'cd .. && ch06_profiling/contexts'
bad_input 0 'usage: contexts ' ./contexts --help
no_gpu ./contexts
gpu_expect 2 "not allowed" ./contexts --block 2048
gpu_expect 2 "CUDA_ERROR_INVALID_IMAGE" ./contexts 2 --module ../tests/data/plain_p2.pgm
first gpu_check_large ./contexts --check-only --threads 1 --size 1
first gpu_check_large ./contexts --check-only --threads 3 --size 1000003 --reps 5 --blocks 3 --block 96
first gpu_check_large ./contexts --check-only --push-pop --threads 16 --size 100 --reps 0
first gpu_check_large ./contexts --threads 4 --size 2^16 --iters 2
# under the sanitizer, one run of every way with 2 threads: each context and module costs
# about half a minute there
sanitize_only ./contexts --check-only --threads 2 --size 1000 --reps 5 --blocks 3 --block 96
# the leak check must see a thread that does not free its array (4 x 4 MiB, beyond the slack)
mutant "contexts: push-pop threads never free their arrays" contexts.c \
    's/    CU_CHECK(lb_cu.cuMemFreeAsync(d_x, stream));//' ./contexts 3 --check-only --threads 4 --size 2^20
# the check must reach every thread of the grid-stride kernel: at 10 x 2^20 elements the cost
# budget samples every 16th element, which on a 64-thread grid met only 4 threads; thread 5 of 64
# leaving its elements alone must be seen
mutant "contexts: one thread of the grid never multiplies" contexts_kernels.cu \
    's|        float v = x\[i\];|        if (i % (gridDim.x * blockDim.x) == 5) continue;\n        float v = x[i];|' \
    ./contexts 1 --check-only --size 2^20

bad_input 2 "unknown argument '--bogus'" ./debugging --bogus
bad_input 2 '--bug must be 0..4' ./debugging --bug 5
bad_input 2 '--bug must be 0..4' ./debugging --bug -1
bad_input 2 '--probe takes ROW,COL' ./debugging --probe 3
bad_input 2 "--probe: '1,2,3' is not X or XxY" ./debugging --probe 1,2,3
bad_input 2 "--probe: '2^40,1': each number must be 0 to 2^31-1" ./debugging --probe 2^40,1
bad_input 2 '--probe 1008,0: no such thread (the grid covers 1008 rows and 704' ./debugging --probe 1008,0
bad_input 2 '--size 5000x5000x5000: at most 2^32 multiply-adds (the CPU checks' ./debugging --size 5000
bad_input 2 '--size takes N or M,N,K' ./debugging --size 3,4
bad_input 0 'usage: debugging ' ./debugging --help
no_gpu ./debugging
no_gpu ./debugging --bug 2
gpu_check_large ./debugging --check-only --size 1
gpu_check ./debugging --check-only --size 100,70,50
gpu_check ./debugging --check-only --size 33,65,17
gpu_check_large ./debugging --size 256 --iters 2
gpu_expect 0 "probe C\[5\]\[3\]: thread (3,5) of block (0,0), inside C" ./debugging --check-only --size 40,30,50 --probe 5,3
gpu_expect 0 "cpu   C\[39\]\[29\] tile  3" ./debugging --check-only --size 40,30,50 --probe 39,29
# The lab's promise: compute-sanitizer finds each planted bug, and nothing in the correct kernel.
for tool in memcheck racecheck synccheck initcheck; do
    sanitizer_expect $tool clean "" ./debugging --check-only --size 100,70,50
done
sanitizer_expect memcheck report "Invalid __global__ write" ./debugging --bug 1 --check-only --size 100,70,50
sanitizer_expect racecheck report "Race reported" ./debugging --bug 2 --check-only --size 100,70,50
sanitizer_expect racecheck report "Race reported" ./debugging --bug 3 --check-only --size 100,70,50
sanitizer_expect memcheck report "Invalid __global__ write" ./debugging --bug 4 --check-only --size 100,70,50
# the result check sees bugs 1 and 4 at this size (a wrong or missing element) without any tool
gpu_expect 1 "FAIL" ./debugging --bug 4 --check-only --size 100,70,50
