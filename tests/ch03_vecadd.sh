# tests/ch03_vecadd.sh - cases for ch03_vecadd, sourced by tests/run.sh (helpers are defined there).
host_test test_mandelbrot

host_test tunables_notice.sh
for p in vecadd elementwise map_reduce mandelbrot; do
    bad_input 2 "unknown argument '--bogus'" ./$p --bogus
    bad_input 2 "--size must be positive (got 0)" ./$p --size 0
    bad_input 2 "--size must be positive (got -5)" ./$p --size -5
    bad_input 2 "--size: '12abc' is not a size" ./$p --size 12abc
    bad_input 2 "--iters must be positive (got 0)" ./$p --iters 0
    bad_input 0 "usage: $p " ./$p --help
    no_gpu ./$p
done
bad_input 2 "version '4' does not exist (0..3)" ./vecadd 4
bad_input 2 "one version at a time (got 1, then '2')" ./vecadd 1 2
bad_input 2 "--size: '18446744073709551621' is too large" ./vecadd --size 18446744073709551621
bad_input 2 "--quiet takes no value" ./vecadd --quiet=1
bad_input 2 "--check-only takes no value" ./vecadd --check-only=0
bad_input 2 "--size: '100x' is not a size (N or WxH)" ./mandelbrot --size 100x
bad_input 2 "--png needs a file name (--no-png writes none)" ./mandelbrot --png ""
bad_input 2 "--size: '1e30' is too large" ./vecadd --size 1e30
bad_input 2 "--window '0,1e400,0,1': the corners must be finite numbers" ./mandelbrot --window 0,1e400,0,1
bad_input 2 "--png 'no-such-folder/m.png': no folder 'no-such-folder'" ./mandelbrot --png no-such-folder/m.png
bad_input 2 '--block must be positive (got 0)' ./vecadd --block 0
bad_input 2 "--block: 'x' is not a number" ./elementwise --block x
bad_input 2 "version '4' does not exist (0..3)" ./mandelbrot 4
bad_input 2 '--size: at most 16384x16384 pixels' ./mandelbrot --size 16385
bad_input 2 '--size must be positive (got 100x0, read as width x height)' ./mandelbrot --size 100x0
bad_input 2 '--size must be positive (got 0x10, read as width x height)' ./mandelbrot --size 0x10
bad_input 2 "--window '1,0,0,1' is not xmin,xmax,ymin,ymax with min < max" ./mandelbrot --window 1,0,0,1
bad_input 2 "--window '1,2,3' is not xmin,xmax,ymin,ymax with min < max" ./mandelbrot --window 1,2,3
bad_input 2 '--max-iter must be positive' ./mandelbrot --max-iter 0
bad_input 2 '--amdahl times the run: not with --check-only' ./mandelbrot --amdahl --check-only
bad_input 2 '--cpu-only runs the CPU alone: no version, --amdahl or --check-only with it' ./mandelbrot 1 --cpu-only
# the CPU alone runs anywhere, GPU or not
bad_input 0 'the compute is p = ' ./mandelbrot --cpu-only --size 100x37 --png "$LOG_DIR/mandelbrot-cpu.png"
bad_input 2 "version '7' does not exist (0..6)" ./map_reduce 7
bad_input 2 '--expr "a*x+": expected a number, a, x, y, a function or ( at ""' ./map_reduce --expr "a*x+"
bad_input 2 '--expr "sin(x": missing ) after sin(' ./map_reduce --expr "sin(x"
bad_input 2 '--expr "2x": unexpected "x"' ./map_reduce --expr 2x
bad_input 2 '--expr "system(1)": expected a number' ./map_reduce --expr "system(1)"
bad_input 2 '--size: at most 2^28' ./map_reduce --size 2^28+1
bad_input 2 'nested too deeply (at most 64 levels' ./map_reduce --expr "$(printf '(%.0s' $(seq 100))x$(printf ')%.0s' $(seq 100))"
bad_input 2 'nested too deeply (at most 64 levels' ./map_reduce --expr "$(printf -- '-%.0s' $(seq 100))x"
bad_input 2 'the number "1e39" is outside float'"'"'s range' ./map_reduce --expr "1e39*x"

gpu_expect 2 "not allowed" ./vecadd --block 2048
gpu_expect 2 "needs" ./vecadd --size 2^40
gpu_expect 2 "needs" ./elementwise --size 2^40
# under the sanitizer (make sanitize): 1, 5 and 2^20+3; the sizes between in the plain tests only
for n in 1 5 2^20+3; do
    gpu_check ./vecadd --check-only --size $n
done
for n in 2 3 4 31 1000; do
    gpu_check_large ./vecadd --check-only --size $n
done
gpu_check ./vecadd --check-only --size 2^20+3 --block 96
gpu_check ./vecadd --check-only --size 100001 --block 1000
gpu_check_large ./vecadd 3 --check-only --size 2^22+1 --block 32
gpu_check ./vecadd --size 2^16 --iters 3
gpu_check ./elementwise --check-only --size 1
gpu_check ./elementwise --check-only --size 2^20+3 --block 100
gpu_check ./elementwise --size 2^16 --iters 3

for n in 1 2049 2^20+3; do
    gpu_check ./map_reduce --check-only --size $n
done
for n in 2 31 1000 2048; do
    gpu_check_large ./map_reduce --check-only --size $n
done
gpu_check_large ./map_reduce --check-only --size 2^24+5
gpu_check ./map_reduce 6 --check-only --size 100003 --a -1.5 --expr "sqrt(fabs(x))*exp(-y*y) + sin(a*x)/(2+cos(y))"
# binary minus, with cancellation: (x + 1) - (y + 1) keeps the absolute error of its operands
gpu_check ./map_reduce 6 --check-only --size 100003 --expr "(x + 1) - (y + 1) - x*y/(3 - y)"
# the --expr tolerance has no absolute floor: a kernel writing 0 fails even where the values are tiny
mutant "map_reduce --expr kernel writes 0" map_reduce.c 's/"        z\[i\] = %s;\\n"/"        z[i] = 0.0f * (%s);\\n"/' \
    ./map_reduce 6 --check-only --size 1000 --expr "x*y*1e-9"
gpu_check ./map_reduce --size 2^20 --iters 3
# NaN never passes: sqrt of the negative half of x
gpu_expect 1 "FAIL" ./map_reduce 6 --check-only --size 1000 --expr "sqrt(x)"
# the dot's tolerance must see every 1000th product dropped
mutant "map_reduce dot drops every 1000th product" map_reduce_kernels.cu \
    's/        acc = red(acc, map(x\[i\], y\[i\]));/        if (i % 1000 != 999) acc = red(acc, map(x[i], y[i]));/' \
    ./map_reduce 1 --check-only --size 2^22+1
gpu_expect 0 "amdahl_gpu" ./mandelbrot --amdahl --size 256 --iters 2 --no-png
gpu_check ./mandelbrot --check-only --size 1 --no-png
gpu_check ./mandelbrot --check-only --size 333x777 --no-png
gpu_check ./mandelbrot --check-only --size 17x1 --no-png
gpu_check_large ./mandelbrot --check-only --no-png
gpu_check ./mandelbrot --check-only --size 300x200 --max-iter 1000 --window -0.75,-0.73,0.1,0.12 --no-png
gpu_check ./mandelbrot --size 64 --iters 2 --png "$LOG_DIR/mandelbrot-test.png"
# vectors that fit in L2 are reported as L2 speeds, never as the memory's
gpu_expect 0 "size=65536_l2" ./vecadd --size 2^16 --iters 2
