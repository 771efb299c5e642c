# bench/ch04_matmul.sh - what `make bench` measures in ch04_matmul (sourced by bench/run.sh)
measure ./matmul --size 4096
measure ./matmul --size 2048
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
