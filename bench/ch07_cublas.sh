# bench/ch07_cublas.sh - what `make bench` measures in ch07_cublas (sourced by bench/run.sh)
measure ./cublas_basics --tf32
measure ./fft
measure ./fft_conv
measure ./monte_carlo_pi
measure ./monte_carlo_integral
# the SVD routes: the book's size, square 256..4096, tall and wide
measure ./svd_pca
measure ./svd_pca --size 256
measure ./svd_pca --size 1024
measure ./svd_pca --size 2048 --iters 3
measure ./svd_pca --size 4096 --iters 3
measure ./svd_pca --size 4096,1024
measure ./svd_pca --size 1024,4096
# the PCA picture of the chapter README (no RESULT lines: the run checks, prints and draws)
measure ./svd_pca --pca ../datasets/digits.csv --png "../bench/$slug-pca-digits.png"
measure ./thrust_basics
measure bash build_cost.sh
