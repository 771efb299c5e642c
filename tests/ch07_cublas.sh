# tests/ch07_cublas.sh - cases for ch07_cublas, sourced by tests/run.sh (helpers are defined there).
host_test test_svd_pca
for p in cublas_basics monte_carlo_pi monte_carlo_integral fft fft_conv svd_pca thrust_basics; do
    bad_input 2 "unknown argument '--bogus'" ./$p --bogus
    bad_input 0 "usage: $p " ./$p --help
    no_gpu ./$p
done

bad_input 2 '--size must be positive (got 0)' ./cublas_basics --size 0
bad_input 2 '--size takes N or M,N,K' ./cublas_basics --size 3,4
bad_input 2 '--size: each dimension at most 65536' ./cublas_basics --size 70000,10,10
bad_input 2 '--vec must be 1..2^31-1 (cuBLAS counts in int)' ./cublas_basics --vec 0
bad_input 2 '--vec must be 1..2^31-1 (cuBLAS counts in int)' ./cublas_basics --vec 2^31
bad_input 2 "unknown argument '1'" ./cublas_basics 1
gpu_check ./cublas_basics --check-only --size 1 --vec 1
gpu_check ./cublas_basics --check-only --size 17,33,65 --vec 1000 --tf32
gpu_check_large ./cublas_basics --check-only --size 1000,1023,777 --vec 2^20+3 --tf32
gpu_check_large ./cublas_basics --size 256 --vec 4096 --iters 2 --tf32
first gpu_check_large ./cublas_basics --check-only

bad_input 2 "version '0' does not exist (1..2)" ./monte_carlo_pi 0
bad_input 2 "version '3' does not exist (1..2)" ./monte_carlo_pi 3
bad_input 2 '--size: at most 2^40 points' ./monte_carlo_pi --size 2^41
bad_input 2 '--size must be positive (got 0)' ./monte_carlo_pi --size 0
gpu_check ./monte_carlo_pi --check-only --size 1
gpu_check_large ./monte_carlo_pi --check-only --size 2^20+3
gpu_check ./monte_carlo_pi --check-only --size 1000003 --seed 7
gpu_check_large ./monte_carlo_pi 2 --check-only --size 2^27+1
gpu_check_large ./monte_carlo_pi --size 2^24 --iters 2
gpu_check_large ./monte_carlo_pi --check-only --size 2^28+5
gpu_check_large ./monte_carlo_pi 2 --check-only --size 2^24 --seed 99
# a planted bug: version 2 draws from the wrong streams (subsequence 2 x thread id). The count
# stays within 5 sd of pi and reproducible; only the CPU's exact count catches it
mutant "monte_carlo_pi 2 draws from the wrong Philox streams" monte_carlo_pi_kernels.cu \
    's/curand_init(seed, tid, 0, &state);/curand_init(seed, 2ull * tid, 0, \&state);/' ./monte_carlo_pi 2 --check-only --size 1000003

bad_input 2 '--size: at least 2 points (the check needs a sample variance)' ./monte_carlo_integral --size 1
bad_input 2 '--size: at most 2^40 points' ./monte_carlo_integral --size 2^41
gpu_check ./monte_carlo_integral --check-only --size 1000
gpu_check_large ./monte_carlo_integral --check-only --size 2^20+3 --seed 99
gpu_check_large ./monte_carlo_integral --size 2^20 --iters 2

bad_input 2 '--size must be a power of two from 1024 to 2^27' ./fft --size 1000
bad_input 2 '--size must be a power of two from 1024 to 2^27' ./fft --size 2^28
bad_input 2 '--size must be a power of two from 1024 to 2^27' ./fft --size 512
gpu_check ./fft --check-only --size 1024
gpu_check_large ./fft --size 2^14 --iters 2
gpu_check_large ./fft --check-only
# a planted bug: the timed plan transforms one batch too few; the throughput check catches it
mutant "fft throughput plan one batch short" fft.c \
    's/dist_out, real ? CUFFT_R2C : CUFFT_C2C, batch)/dist_out, real ? CUFFT_R2C : CUFFT_C2C, batch - 1)/' ./fft --size 2^12 --iters 1

bad_input 2 '--sigma must be in (0, 32]' ./fft_conv --sigma 0
bad_input 2 '--sigma must be in (0, 32]' ./fft_conv --sigma 40
bad_input 2 '--delta must be 1..8192' ./fft_conv --delta -1
bad_input 2 'no-such-file.pgm: cannot open: No such file or directory (run from' ./fft_conv --input no-such-file.pgm
bad_input 2 '../tests/data/plain_p2.pgm: not a binary PGM (the file must start' ./fft_conv --input ../tests/data/plain_p2.pgm
bad_input 2 '../tests/data/truncated.pgm: truncated: 7 of 16 pixel bytes' ./fft_conv --input ../tests/data/truncated.pgm
bad_input 2 '../tests/data/maxval_16bit.pgm: maxval 65535: only 8-bit PGM (maxval' ./fft_conv --input ../tests/data/maxval_16bit.pgm
bad_input 2 '../tests/data/no_size.pgm: malformed PGM header (expected P5, width,' ./fft_conv --input ../tests/data/no_size.pgm
bad_input 2 "--output 'no-such-folder/b.png': no folder 'no-such-folder'" ./fft_conv --output no-such-folder/b.png
gpu_check ./fft_conv --check-only --delta 1 --sigma 0.5 --output ""
gpu_check_large ./fft_conv --check-only --delta 64 --sigma 3 --output ""
gpu_check ./fft_conv --check-only --delta 37 --sigma 9 --output ""
gpu_check_large ./fft_conv --check-only --sigma 2 --output ""
gpu_check_large ./fft_conv --check-only
gpu_check_large ./fft_conv --sigma 4 --iters 3 --output ""
# each path against its own FFTs timed the same way (launched, or as a graph): never faster
alone gpu_check_large bash ../tests/like_for_like.sh fft_path cufft_alone ./fft_conv --iters 5 --output ""
alone gpu_check_large bash ../tests/like_for_like.sh fft_path_graph cufft_alone_graph ./fft_conv --iters 5 --output ""

bad_input 2 '--size: M and N at most 32768 each, M*N at most 2^28 (got 40000x10)' ./svd_pca --size 40000,10
bad_input 2 '--size: M and N at most 32768 each, M*N at most 2^28 (got 20000x20000)' ./svd_pca --size 20000
bad_input 2 '--rank must be 0..min(M,N) = 10' ./svd_pca --size 10,20 --rank 11
bad_input 2 '--sweeps must be 1..10000' ./svd_pca --sweeps 0
bad_input 2 '--sweeps: 99999999999 is out of range (an int: at most 2147483647 either way)' ./svd_pca --sweeps 99999999999
bad_input 2 "--seed: '4611686018427387905' is too large (at most 2^62)" ./svd_pca --seed 4611686018427387905
bad_input 2 '--png goes with --pca' ./svd_pca --png x.png
bad_input 2 '--components goes with --pca' ./svd_pca --components 3
bad_input 2 "version '3' does not exist (0..2)" ./svd_pca 3
bad_input 2 'svd_pca: no-such.csv: cannot open: No such file or directory' ./svd_pca --pca no-such.csv
bad_input 2 "svd_pca: ../tests/data/nan_field.csv:3: field 2 ('nan') is not a number" ./svd_pca --pca ../tests/data/nan_field.csv
bad_input 2 "svd_pca: ../tests/data/huge_field.csv:2: field 1 ('1e40') is too large for a float" ./svd_pca --pca ../tests/data/huge_field.csv
bad_input 2 "svd_pca: ../tests/data/bad_label.csv:2: label '5' is not a class number 0..1" ./svd_pca --pca ../tests/data/bad_label.csv
bad_input 2 'svd_pca: ../tests/data/one_sample.csv: PCA needs at least 2 samples (has 1)' ./svd_pca --pca ../tests/data/one_sample.csv
bad_input 2 "--png 'no-such-folder/p.png': no folder 'no-such-folder'" ./svd_pca --pca ../datasets/iris.csv --png no-such-folder/p.png
# wide (B = A^T, no copy), tall (B = A by geam), a row, a column, 1x1, square, with the CPU
# reference at all of these sizes
SANITIZE_TOOLS="memcheck synccheck initcheck" gpu_check ./svd_pca --check-only --size 64,200
gpu_check_large ./svd_pca --check-only --size 200,64
gpu_check ./svd_pca --check-only --size 1,50
gpu_check ./svd_pca --check-only --size 50,1
gpu_check_large ./svd_pca --check-only --size 1
gpu_check_large ./svd_pca --check-only --size 257 --seed 3
# racecheck reports shared-memory hazards inside cuBLAS's own syr2k kernel (syevd calls it): not
# in our code, so that kernel is left out of the tools for this case (ch07 NOTES)
SANITIZE_EXCLUDE=syr2k SANITIZE_TOOLS="memcheck synccheck initcheck" gpu_check ./svd_pca --check-only --size 300,131 --rank 7
# racecheck on the same shapes (wide, and tall of rank 7) at smaller sizes: at those above,
# cuSOLVER's own kernels keep it busy 90 s and more than 150 s
SANITIZE_TOOLS=racecheck sanitize_only ./svd_pca --check-only --size 23,40
SANITIZE_EXCLUDE=syr2k SANITIZE_TOOLS=racecheck sanitize_only ./svd_pca --check-only --size 40,23 --rank 5
gpu_check_large ./svd_pca --check-only --size 90,60 --rank 0
gpu_check_large ./svd_pca --size 256 --iters 2
gpu_check_large ./svd_pca --check-only
gpu_check_large ./svd_pca --check-only --size 2048,1000
# a failed convergence is a FAIL with the reason (gesvdj's info), not a wrong answer
gpu_expect 1 'gesvdj did not converge in 1 sweeps' ./svd_pca 1 --check-only --size 200,300 --sweeps 1
# initcheck reports a read of memory nothing wrote inside cuSOLVER's ormqr_cta_kernel on this 150 x 4
# matrix, with U, V and the workspace all zeroed first: cuSOLVER's own scratch (ch07 NOTES); that
# kernel is left out of the tools for this case
SANITIZE_EXCLUDE=ormqr_cta_kernel gpu_check ./svd_pca --check-only --pca ../datasets/iris.csv --png ""
gpu_check_large ./svd_pca --check-only --pca ../datasets/digits.csv
gpu_check_large ./svd_pca 2 --check-only --pca ../datasets/digits.csv --components 64 --png ""
# a planted bug: the eigen route forgets to divide U's columns by their singular values
mutant "svd_pca eigen route without U = B V / S" svd_pca_routes.c \
    's/j->d_inv_s, 1, j->d_u, m)/j->d_inv_s, 0, j->d_u, m)/' ./svd_pca 2 --check-only --size 60,90

bad_input 2 '--sort-size must be 1..2^30' ./thrust_basics --sort-size 0
bad_input 2 '--size: at most 2^31-1 (cuBLAS counts in int)' ./thrust_basics --size 2^31
gpu_check ./thrust_basics --check-only --size 1 --sort-size 1
gpu_check ./thrust_basics --check-only --size 1000 --sort-size 1000
gpu_check_large ./thrust_basics --check-only --size 2^20+3 --sort-size 2^20+3 --seed 7
gpu_check_large ./thrust_basics 3 --check-only --size 1000003
gpu_check_large ./thrust_basics --size 2^20 --sort-size 2^20 --iters 2
# the default dot size (2^26) and sorts past the L2 many times over (2^26 keys; the default 2^28
# takes 40 s of CPU checking for no path the smaller one misses)
first gpu_check_large ./thrust_basics --check-only --sort-size 2^26
# a planted bug: the fused dot stops one pair short
mutant "thrust_basics fused dot one pair short" thrust_basics_kernels.cu \
    's/transform_reduce(pairs, pairs + n,/transform_reduce(pairs, pairs + n - 1,/' ./thrust_basics 3 --check-only --size 1000003
