# bench/ch04_matmul.sh - what `make bench` measures in ch04_matmul (sourced by bench/run.sh)
measure ./matmul --size 4096
measure ./matmul --size 2048
