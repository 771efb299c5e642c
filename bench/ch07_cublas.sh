# bench/ch07_cublas.sh - what `make bench` measures in ch07_cublas (sourced by bench/run.sh)
measure ./cublas_basics --tf32
measure ./fft
measure ./fft_conv
measure ./monte_carlo_pi
measure ./monte_carlo_integral
