# bench/ch04_matmul.sh - what `make bench` measures in ch04_matmul (sourced by bench/run.sh)
measure ./matmul --size 4096
measure ./matmul --size 2048
measure ./life --size 16384 --gens 100 --no-png
measure ./life --no-png
