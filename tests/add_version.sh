#!/usr/bin/env bash
# tests/add_version.sh - add a version to a copy of a program the way its chapter says (a launcher
# in its kernels file's launchers[], the count in the kernels header, a row in the program's
# versions[]) and check that the copy builds warning-free, lists the new version in --help, refuses
# the one past it and runs it; and that a half-done edit (the row without the count) stops the
# build with the _Static_assert's message, naming the count.
#   bash tests/add_version.sh matmul|attention|tensor_gemm <work folder>
#   exit 0 pass, 77 no GPU to run the new version, else fail
#   matmul: ch04_matmul/README.md exercise 4 (a kernel of its own, version 12)
#   attention, tensor_gemm: the same three edits; the new version's launcher reuses version 1's
#   kernel (8 and 13), which is what the table has to carry
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROG=${1:?usage: add_version.sh matmul|attention|tensor_gemm WORK_DIR}
WORK=${2:?usage: add_version.sh matmul|attention|tensor_gemm WORK_DIR}
fail() { echo "add_version $PROG: $*"; exit 1; }

case $PROG in
matmul)
    CHAPTER=ch04_matmul NEW=12 COUNT=MATMUL_VERSIONS
    FILES="Makefile matmul.c matmul_kernels.cu matmul_kernels.h"
    # the kernel (a copy of version 1's, renamed) and its launcher, above the launchers table
    MARK='^/\* -* launchers \*/$'
    CODE='__global__ void matmul_kernel12(const float *A, const float *B, float *C, int M, int N, int K)\n{\n    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;\n    if (row >= M || col >= N) return;\n    float acc = 0.0f;\n    for (int k = 0; k < K; k++) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];\n    C[(size_t)row * N + col] = acc;\n}\nstatic cudaError_t launch12(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)\n{\n    (void)o;\n    matmul_kernel12<<<dim3(cdiv(n, 16), cdiv(m, 16)), dim3(16, 16)>>>(d_a, d_b, d_c, m, n, k);\n    return cudaGetLastError();\n}\n'
    LAST_ROW='launch11};$' ROW_EDIT='s/launch11};$/launch11, launch12};/'
    LAST_VERSION='^    {11, "zmap_16x8"'
    NEW_VERSION='    {12, "quads_k16", "4x4 quads, K steps of 16", LB_OLDEST_SM, run_kernel},'
    HELP='^ +12  quads_k16 +4x4 quads, K steps of 16$'
    CHECK="./matmul 12 --check-only --size 100,37,65"
    ;;
attention)
    CHAPTER=ch11_transformer NEW=8 COUNT=ATTENTION_VERSIONS
    FILES="Makefile attention.c attention_cpu.c attention_cpu.h attention_kernels.cu attention_hopper.cu attention_kernels.h attention_device.cuh attention_maps.cuh row_reduce.cuh"
    MARK="^/\* Every version's launcher, and for Hopper's"
    CODE='/* version 8: version 1 once more */\nstatic cudaError_t launch8(const attention_problem *p) { return launch1(p); }\n'
    LAST_ROW='^    {attention_launch7, attention_hopper_unavailable},$'
    ROW_EDIT='/^    {attention_launch7, attention_hopper_unavailable},$/a\    {launch8, NULL},'
    LAST_VERSION='^    {7, "'
    NEW_VERSION='    {8, "naive_again", "version 1 once more", LB_OLDEST_SM, run_kernel},'
    HELP='^ +8  naive_again +version 1 once more$'
    CHECK="./attention 8 --check-only --size 200 --batch 1 --heads 2 --dim 64 --causal"
    ;;
tensor_gemm)
    CHAPTER=ch10_advanced NEW=13 COUNT=TENSOR_GEMM_VERSIONS
    FILES="Makefile tensor_gemm.c tensor_gemm_kernels.cu tensor_gemm_hopper.cu tensor_gemm_kernels.h tensor_gemm_device.cuh"
    MARK="^/\* Every version's launcher, the shape of its work"
    CODE='/* version 13: version 1 once more */\nstatic cudaError_t launch13(const tg_gemm *g) { return launch1(g); }\n'
    LAST_ROW='^    {tensor_gemm_launch12, tensor_gemm_shape12, tensor_gemm_tma_store_unavailable},$'
    ROW_EDIT='/^    {tensor_gemm_launch12, tensor_gemm_shape12, tensor_gemm_tma_store_unavailable},$/a\    {launch13, shape1, NULL},'
    LAST_VERSION='^    {12, "pingpong"'
    NEW_VERSION='    {13, "wmma_again", "version 1 once more", 80, run_kernel},'
    HELP='^ +13  wmma_again +version 1 once more'
    CHECK="./tensor_gemm 13 --check-only --size 100,37,65"
    ;;
*) fail "no such program (matmul, attention, tensor_gemm)" ;;
esac
BIN=$PROG KERNELS=${PROG}_kernels.cu HEADER=${PROG}_kernels.h
rm -rf "$WORK" && mkdir -p "$WORK/$CHAPTER" || exit 3
# with their timestamps, and the chapter's objects if it is built: make rebuilds only what the
# edits touch (the kernels file and the host file), as it would in the chapter
cp -a "$ROOT/common" "$WORK/common"
for f in $FILES; do cp -a "$ROOT/$CHAPTER/$f" "$WORK/$CHAPTER/" || exit 3; done
cp -a "$ROOT/$CHAPTER"/*.o "$ROOT/$CHAPTER"/.build-flags-* "$WORK/$CHAPTER/" 2>/dev/null
cd "$WORK/$CHAPTER" || exit 3

# 1. the launcher (and kernel) above the launchers table, and its row at the end of launchers[]
grep -q "$MARK" "$KERNELS" || fail "the launchers table is not where the chapter says"
sed -i "\#$MARK#i $CODE" "$KERNELS"
grep -q "$LAST_ROW" "$KERNELS" || fail "launchers[] does not end where the chapter says"
sed -i "$ROW_EDIT" "$KERNELS"
# 3. the row, first without 2.: the build must stop, naming the count
grep -q "$LAST_VERSION" "$BIN.c" || fail "$BIN.c's last version row is not where the chapter says"
sed -i "/$LAST_VERSION/a\\$NEW_VERSION" "$BIN.c"
if make "$BIN.o" >build1.log 2>&1; then fail "a row without $COUNT built"; fi
grep -q "$COUNT" build1.log || { cat build1.log; fail "the half-done edit's error does not name $COUNT"; }
# 2. the count
grep -q "^#define $COUNT $NEW" "$HEADER" || fail "$COUNT is not $NEW in $HEADER"
sed -i "s/^#define $COUNT $NEW/#define $COUNT $((NEW + 1))/" "$HEADER"
make "$BIN" >build2.log 2>&1 || { tail -20 build2.log; fail "the copy with version $NEW does not build"; }
grep -q 'warning' build2.log && { grep warning build2.log; fail "the copy builds with warnings"; }
"./$BIN" --help | grep -qE "$HELP" || fail "--help does not list version $NEW"
"./$BIN" $((NEW + 1)) >/dev/null 2>&1
[ $? = 2 ] || fail "version $((NEW + 1)) is not refused"
$CHECK
