# bench/ch10_advanced.sh - what `make bench` measures in ch10_advanced (sourced by bench/run.sh)
measure ./reduce
measure ./scan
measure ./histogram
measure ./atomics
measure ./shuffle
measure ./vector_types
measure ./dynamic_parallelism
# Mariani-Silver pays for its launches; with many iterations per pixel filling squares wins
measure ./dynamic_parallelism --size 1000 --max-iter 8192
measure ./compiled_code
# tensor cores, bf16 in, fp32 out: square sizes, one tall-skinny shape, and the tf32 mode
measure ./tensor_gemm --size 2048
measure ./tensor_gemm --size 4096
measure ./tensor_gemm --size 8192
measure ./tensor_gemm --size 16384,1024,4096
measure ./tensor_gemm --size 4096 --type tf32
measure ./tensor_gemm --size 8192 --type tf32
measure ./tensor_gemm --size 4096 --type fp8
measure ./tensor_gemm --size 8192 --type fp8
