# bench/ch04_matmul.sh - what `make bench` measures in ch04_matmul (sourced by bench/run.sh)
measure ./matmul --size 4096
measure ./matmul --size 2048
measure ./matmul --size 1024
# shapes a network meets (ch09's layers: a batch of 128 or 256 rows): few tiles, so version
# 10 splits K
for shape in 128,1024,784 256,1024,1024 128,1024,4096 256,4096,1024 128,4096,4096; do
    measure ./matmul --size $shape
done
measure ./life --size 16384 --gens 100 --no-png
measure ./life --no-png
# --boards: 8 boards serial vs a stream each; the gain shrinks as each board fills the GPU
for side in 128 512 1024 4096; do
    measure ./life --boards 8 --size $side --gens 20
done
# small boards, where a launch per generation costs more than the generation: versions 4-6
for side in 32 128; do
    measure ./life --size $side --gens 1000 --no-png
done
