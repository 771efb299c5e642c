#!/usr/bin/env bash
# tests/add_version.sh - make ch04_matmul/README.md exercise 4's three edits to a copy of matmul
# (a kernel and its launcher in launchers[], MATMUL_VERSIONS, a row in versions[]) and check that
# the copy builds, lists version 12 in --help and runs it; and that a half-done edit (the row
# without the count) stops the build with the _Static_assert's message.
#   bash tests/add_version.sh <work folder>      exit 0 pass, 77 no GPU to run it, else fail
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:?usage: add_version.sh WORK_DIR}
rm -rf "$WORK" && mkdir -p "$WORK/ch04_matmul" || exit 3
cp -r "$ROOT/common" "$WORK/common"
cp "$ROOT"/ch04_matmul/{Makefile,matmul.c,matmul_kernels.cu,matmul_kernels.h} "$WORK/ch04_matmul/"
cd "$WORK/ch04_matmul" || exit 3
fail() { echo "add_version: $*"; exit 1; }

# 1. the kernel (a copy of version 1's, renamed) and its launcher above the launchers table,
#    and the launcher at the end of launchers[]
kernel='__global__ void matmul_kernel12(const float *A, const float *B, float *C, int M, int N, int K)\n{\n    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;\n    if (row >= M || col >= N) return;\n    float acc = 0.0f;\n    for (int k = 0; k < K; k++) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];\n    C[(size_t)row * N + col] = acc;\n}\nstatic cudaError_t launch12(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)\n{\n    (void)o;\n    matmul_kernel12<<<dim3(cdiv(n, 16), cdiv(m, 16)), dim3(16, 16)>>>(d_a, d_b, d_c, m, n, k);\n    return cudaGetLastError();\n}\n'
grep -q '^/\* -* launchers \*/$' matmul_kernels.cu || fail "the launchers section is not where the README says"
sed -i "/^\/\* -* launchers \*\/\$/i $kernel" matmul_kernels.cu
grep -q 'launch11};$' matmul_kernels.cu || fail "launchers[] does not end with launch11 where the README says"
sed -i 's/launch11};$/launch11, launch12};/' matmul_kernels.cu
# 3. the row, first without 2.: the build must stop, naming MATMUL_VERSIONS
grep -q '^    {11, "zmap_16x8"' matmul.c || fail "matmul.c's last version row is not where the README says"
sed -i '/^    {11, "zmap_16x8"/a\    {12, "quads_k16", "4x4 quads, K steps of 16", LB_OLDEST_SM, run_kernel},' matmul.c
if make matmul.o >build1.log 2>&1; then fail "a row without MATMUL_VERSIONS built"; fi
grep -q "MATMUL_VERSIONS" build1.log || { cat build1.log; fail "the half-done edit's error does not name MATMUL_VERSIONS"; }
# 2. the count
grep -q '^#define MATMUL_VERSIONS 12$' matmul_kernels.h || fail "MATMUL_VERSIONS is not 12 in matmul_kernels.h"
sed -i 's/^#define MATMUL_VERSIONS 12$/#define MATMUL_VERSIONS 13/' matmul_kernels.h
make matmul >build2.log 2>&1 || { tail -20 build2.log; fail "the copy with version 12 does not build"; }
grep -q 'warning' build2.log && { grep warning build2.log; fail "the copy builds with warnings"; }
./matmul --help | grep -qE '^ +12  quads_k16 +4x4 quads, K steps of 16$' || fail "--help does not list version 12"
./matmul 13 >/dev/null 2>&1; [ $? = 2 ] || fail "version 13 is not refused"
./matmul 12 --check-only --size 100,37,65
