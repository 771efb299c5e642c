#!/usr/bin/env bash
# build_cost.sh - what Thrust's templates cost to build: the time nvcc takes for
# thrust_basics_kernels.cu against svd_pca_kernels.cu (plain kernels, same flags), and the
# sizes of the objects and programs. Run in ch07_cublas after `make` (bench/ch07_cublas.sh does);
# prints RESULT lines like the programs.
set -eu
cd "$(dirname "$0")"
ms_to_build() {   # ms_to_build <object>: rebuild it alone with make's own rule, in ms
    local t0 t1
    rm -f "$1"
    t0=$(date +%s%N)
    make -s "$1" >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
make -s thrust_basics svd_pca >/dev/null
thrust_ms=$(ms_to_build thrust_basics_kernels.o)
plain_ms=$(ms_to_build svd_pca_kernels.o)
kib() { echo $(($(stat -c %s "$1") / 1024)); }
echo "build_cost: nvcc on thrust_basics_kernels.cu ${thrust_ms} ms, on svd_pca_kernels.cu ${plain_ms} ms"
echo "build_cost: objects $(kib thrust_basics_kernels.o) KiB and $(kib svd_pca_kernels.o) KiB;" \
    "programs thrust_basics $(kib thrust_basics) KiB, svd_pca $(kib svd_pca) KiB"
ratio=$(awk -v a="$plain_ms" -v b="$thrust_ms" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
echo "RESULT prog=thrust_basics name=compile_plain_kernels size=1 ms=$plain_ms build_s=$(awk -v m="$plain_ms" 'BEGIN { printf "%.2f", m / 1000 }') check=none"
echo "RESULT prog=thrust_basics name=compile_thrust_kernels size=1 ms=$thrust_ms build_s=$(awk -v m="$thrust_ms" 'BEGIN { printf "%.2f", m / 1000 }') base=compile_plain_kernels ratio=$ratio check=none"
for f in svd_pca_kernels.o thrust_basics_kernels.o svd_pca thrust_basics; do
    echo "RESULT prog=thrust_basics name=${f/./_}_bytes size=1 ms=0 kib=$(kib "$f") check=none"
done
