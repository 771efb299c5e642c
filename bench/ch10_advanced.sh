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
