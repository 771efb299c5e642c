# bench/ch03_vecadd.sh - what `make bench` measures in ch03_vecadd (sourced by bench/run.sh)
measure ./vecadd --size 2^28
measure ./vecadd
measure ./elementwise
measure ./mandelbrot --size 8192 --no-png
measure ./mandelbrot --png mandelbrot.png
measure ./map_reduce
measure ./mandelbrot --amdahl --size 2048 --png mandelbrot_amdahl.png
