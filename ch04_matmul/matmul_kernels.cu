/* matmul_kernels.cu - SGEMM kernels, from naive to register-blocked: C = A @ B.
 *
 *   A is (M,K), B is (K,N), C is (M,N), row-major fp32, any M, N, K >= 1.
 *
 *   1  naive: one thread per element of C, each reads a row of A and a column of B from
 *      global memory (2K loads per 2K flops)
 *   2  shared-memory tiles: a block loads a TILE x TILE tile of A and of B once, and every
 *      thread of the block reads them TILE times from shared memory (TILE = 16, make TILE=32)
 *   3  2D register blocking: 64x64 tile per block, 4x4 outputs per thread kept in registers;
 *      each value read from shared memory feeds 4 FMAs instead of 1
 *   4  128x128 tile, 8x8 outputs per thread, 16-byte (float4) global loads, the A tile
 *      stored transposed so that a thread reads its 8 A values as two float4
 *   5  as 4, with each thread's 8x8 split into four 4x4 quads 64 apart (conflict-free
 *      shared-memory reads) and double buffering: the next tiles are fetched from global
 *      memory into registers while the current ones are multiplied
 *   6  as 5, with the tiles copied by cp.async (global -> shared without registers) three
 *      K steps ahead, K steps of 16, and blocks launched in groups of rows so that the
 *      blocks running together reuse the same panels of A and B from L2
 *   7  back to version 5's register double buffering, with 128 threads of 8x16 outputs in
 *      2x2 warp tiles: more FMAs per shared-memory read (cuBLAS's own FP32 tile shape)
 *   8  a 128x256 tile per block of 8 warps, one block per SM (up to 255 registers a thread);
 *      cp.async stages with the A tile transposed on the way by 4-byte copies
 *   9  as 8, with the next k's fragments read into registers while this k's FMAs run
 *  10  version 9's body (tile8_body) with the tile and a split of K chosen by the matrix's shape
 *  11  version 9's tile with 16 x 8 outputs a thread in a 'z' of lanes, K's remainder first,
 *      two stages switched by an XOR and no branch inside the loop (the published kernels
 *      that reach cuBLAS in FP32 are built so)
 *
 * No tensor cores: every product is an FFMA on the FP32 cores, like cuBLAS's default sgemm.
 */
#include "matmul_kernels.h"
#include "lb_tensor_core.cuh" /* cp.async */

#ifndef TILE
#define TILE 16 /* version 2's tile edge; make TILE=32 rebuilds with 32 */
#endif
static_assert(TILE == 8 || TILE == 16 || TILE == 32, "TILE must be 8, 16 or 32");

/* Each version's launcher follows its kernel: the grid, the block and any setup that kernel
 * needs, one function each (launchN after kernel N); the table launchers[] at the end lists
 * them, and matmul_launch runs the one asked for. */
static unsigned int cdiv(int a, int b) { return (unsigned int)((a + b - 1) / b); }
/* 16-byte loads need every row to start 16-byte aligned: K and N multiples of 4 */
static bool rows_16b_aligned(int n, int k) { return k % 4 == 0 && n % 4 == 0; }

/* ---------------------------------------------------------------- 1: naive */

/* grid.x runs over the N columns of C and grid.y over the M rows. threadIdx.x is the
 * fastest-changing index within a warp, so the 32 threads of a warp hold 32 neighbouring
 * columns: their reads B[k][col] are one coalesced 128-byte line, their reads A[row][k]
 * the same address (a broadcast), their writes C[row][col] one line.
 * The transposed-result trap: with row from .x and col from .y, a warp's threads hold 32
 * rows of one column, every B read is the same address but every C write and A read is N
 * or K floats apart (32 transactions instead of 1), and if the grid is still sized as
 * (N/16, M/16) while M != N, part of C is never computed: the poisoned output catches it. */
__global__ void matmul_kernel1(const float *A, const float *B, float *C, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}

/* a block of o->block x o->block threads (--block), one thread per element of C */
static cudaError_t launch1(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    matmul_kernel1<<<dim3(cdiv(n, o->block), cdiv(m, o->block)), dim3(o->block, o->block)>>>(d_a, d_b, d_c, m, n, k);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 2: shared-memory tiles */

/* The block (T x T threads) computes a T x T tile of C. For each step of T along K it
 * copies a T x T tile of A and one of B into shared memory, each thread copying one
 * element of each, then every thread reads a row of the A tile and a column of the B tile
 * from there: each global element is now loaded once per block instead of once per thread,
 * T times fewer global loads. blockDim must equal (T, T): the tile and the block are coupled. */
template <int T> __global__ void matmul_kernel2(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        /* out-of-range elements (M, N or K not a multiple of T) load as 0: they add nothing */
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads(); /* wait until the whole tile is loaded before anyone reads it */
#pragma unroll
        for (int kk = 0; kk < T; kk++) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads(); /* wait until everyone has read the tile before the next loop overwrites it */
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

/* T x T threads for a T x T tile; the tile is TILE, the build's (make TILE=32), unless --sweep
 * asks for another (o->tile: 8, 16 or 32) */
template <int T> static cudaError_t launch2_tile(const float *d_a, const float *d_b, float *d_c, int m, int n, int k)
{
    matmul_kernel2<T><<<dim3(cdiv(n, T), cdiv(m, T)), dim3(T, T)>>>(d_a, d_b, d_c, m, n, k);
    return cudaGetLastError();
}
static cudaError_t launch2(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    switch (o->tile ? o->tile : TILE) {
    case 8: return launch2_tile<8>(d_a, d_b, d_c, m, n, k);
    case 16: return launch2_tile<16>(d_a, d_b, d_c, m, n, k);
    case 32: return launch2_tile<32>(d_a, d_b, d_c, m, n, k);
    default: return cudaErrorInvalidValue;
    }
}

/* ---------------------------------------------------------------- helpers for 3-5 */

/* 4 consecutive floats p[r][c..c+3] of a rows x cols row-major matrix, 0 outside it.
 * VEC: cols % 4 == 0, so the 4 are 16-byte aligned and one float4 load fetches them. */
template <bool VEC> __device__ __forceinline__ float4 load4(const float *p, int r, int c, int rows, int cols)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r >= rows) return v;
    const float *q = p + (size_t)r * cols + c;
    if (VEC && c + 3 < cols) return *reinterpret_cast<const float4 *>(q);
    if (c + 0 < cols) v.x = q[0];
    if (c + 1 < cols) v.y = q[1];
    if (c + 2 < cols) v.z = q[2];
    if (c + 3 < cols) v.w = q[3];
    return v;
}

template <bool VEC> __device__ __forceinline__ void store4(float *p, int r, int c, int rows, int cols, float4 v)
{
    if (r >= rows) return;
    float *q = p + (size_t)r * cols + c;
    if (VEC && c + 3 < cols) {
        *reinterpret_cast<float4 *>(q) = v;
        return;
    }
    if (c + 0 < cols) q[0] = v.x;
    if (c + 1 < cols) q[1] = v.y;
    if (c + 2 < cols) q[2] = v.z;
    if (c + 3 < cols) q[3] = v.w;
}

/* acc += a b^T for a thread's 8 values of A (in a0, a1) and 8 of B (in b0, b1): 64 FMAs.
 * (forceinline: acc stays in registers, every index is a compile-time constant) */
__device__ __forceinline__ void outer_8x8(float (&acc)[8][8], float4 a0, float4 a1, float4 b0, float4 b1)
{
    float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
    float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] += a[i] * b[j];
}

/* ---------------------------------------------------------------- 3: 2D register blocking */

#define MATMUL3_BM 64
#define MATMUL3_BN 64
#define MATMUL3_BK 8
/* 256 threads as 16 x 16; thread (ty, tx) owns C rows ty*4..+3, columns tx*4..+3 of the tile */
__global__ void __launch_bounds__(256) matmul_kernel3(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[MATMUL3_BM][MATMUL3_BK];
    __shared__ float Bs[MATMUL3_BK][MATMUL3_BN];
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    int row0 = blockIdx.y * MATMUL3_BM, col0 = blockIdx.x * MATMUL3_BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += MATMUL3_BK) {
        /* 512 elements of each tile, 2 per thread; a warp loads 4 rows of 8 (A) or half a row (B) */
        for (int i = tid; i < MATMUL3_BM * MATMUL3_BK; i += 256) {
            int r = i / MATMUL3_BK, c = i % MATMUL3_BK;
            As[r][c] = (row0 + r < M && k0 + c < K) ? A[(size_t)(row0 + r) * K + k0 + c] : 0.0f;
        }
        for (int i = tid; i < MATMUL3_BK * MATMUL3_BN; i += 256) {
            int r = i / MATMUL3_BN, c = i % MATMUL3_BN;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(size_t)(k0 + r) * N + col0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < MATMUL3_BK; kk++) {
            float a[4], b[4]; /* 8 shared-memory reads feed 16 FMAs */
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = As[ty * 4 + i][kk];
#pragma unroll
            for (int j = 0; j < 4; j++) b[j] = Bs[kk][tx * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int r = row0 + ty * 4 + i, c = col0 + tx * 4 + j;
            if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];
        }
}

static cudaError_t launch3(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    (void)o;
    matmul_kernel3<<<dim3(cdiv(n, MATMUL3_BN), cdiv(m, MATMUL3_BM)), 256>>>(d_a, d_b, d_c, m, n, k);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 4: 8x8 per thread, float4 */

#define MATMUL_BIG_BM 128
#define MATMUL_BIG_BN 128
#define MATMUL_BIG_BK 8
/* Each thread loads one float4 of the A tile (row tid/2, k (tid%2)*4..+3) and one of the
 * B tile (k tid/32, columns (tid%32)*4..+3): 256 x 4 = 1024 = 128 x 8 elements each. */
template <bool VEC>
__global__ void __launch_bounds__(256) matmul_kernel4(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(16) float As[MATMUL_BIG_BK][MATMUL_BIG_BM]; /* transposed: As[k][m] */
    __shared__ __align__(16) float Bs[MATMUL_BIG_BK][MATMUL_BIG_BN];
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    int row0 = blockIdx.y * MATMUL_BIG_BM, col0 = blockIdx.x * MATMUL_BIG_BN;
    int a_r = tid / 2, a_c = (tid % 2) * 4, b_r = tid / 32, b_c = (tid % 32) * 4;
    float acc[8][8] = {};
    for (int k0 = 0; k0 < K; k0 += MATMUL_BIG_BK) {
        float4 av = load4<VEC>(A, row0 + a_r, k0 + a_c, M, K);
        As[a_c + 0][a_r] = av.x;
        As[a_c + 1][a_r] = av.y;
        As[a_c + 2][a_r] = av.z;
        As[a_c + 3][a_r] = av.w;
        *reinterpret_cast<float4 *>(&Bs[b_r][b_c]) = load4<VEC>(B, k0 + b_r, col0 + b_c, K, N);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < MATMUL_BIG_BK; kk++) {
            /* a thread's 8 A values are contiguous in the transposed tile: two float4 */
            float4 a0 = *reinterpret_cast<const float4 *>(&As[kk][ty * 8]);
            float4 a1 = *reinterpret_cast<const float4 *>(&As[kk][ty * 8 + 4]);
            float4 b0 = *reinterpret_cast<const float4 *>(&Bs[kk][tx * 8]);
            float4 b1 = *reinterpret_cast<const float4 *>(&Bs[kk][tx * 8 + 4]);
            outer_8x8(acc, a0, a1, b0, b1);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int r = row0 + ty * 8 + i;
        store4<VEC>(C, r, col0 + tx * 8, M, N, make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
        store4<VEC>(C, r, col0 + tx * 8 + 4, M, N, make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]));
    }
}

/* Versions 4, 5 and 7: a 128x128 tile of C per block; the kernel built with 16-byte loads when
 * every row allows them (rows_16b_aligned), else the one with 4-byte loads */
typedef void (*matmul_kernel_fn)(const float *, const float *, float *, int, int, int);
static cudaError_t launch_128x128(matmul_kernel_fn vec, matmul_kernel_fn plain, int threads, const float *d_a,
                                  const float *d_b, float *d_c, int m, int n, int k)
{
    dim3 grid(cdiv(n, MATMUL_BIG_BN), cdiv(m, MATMUL_BIG_BM));
    (rows_16b_aligned(n, k) ? vec : plain)<<<grid, threads>>>(d_a, d_b, d_c, m, n, k);
    return cudaGetLastError();
}

static cudaError_t launch4(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    (void)o;
    return launch_128x128(matmul_kernel4<true>, matmul_kernel4<false>, 256, d_a, d_b, d_c, m, n, k);
}

/* ---------------------------------------------------------------- 5: quads + double buffering */

/* Thread (ty, tx) owns rows {ty*4..+3, 64+ty*4..+3} and columns {tx*4..+3, 64+tx*4..+3}.
 * In version 4 the 16 threads of a half-warp read float4s 32 bytes apart (tx*8), two of
 * them per bank group: 2-way bank conflicts. Here they read float4s 16 bytes apart: 256
 * contiguous bytes, no conflict. Two shared buffers: while the tiles of step k are
 * multiplied from one, the loads for step k+1 are already in flight to registers and go
 * to the other, so one barrier per step suffices and the load latency hides behind FMAs. */
template <bool VEC>
__global__ void __launch_bounds__(256) matmul_kernel5(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][MATMUL_BIG_BK][MATMUL_BIG_BM];
    __shared__ __align__(16) float Bs[2][MATMUL_BIG_BK][MATMUL_BIG_BN];
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    int row0 = blockIdx.y * MATMUL_BIG_BM, col0 = blockIdx.x * MATMUL_BIG_BN;
    int a_r = tid / 2, a_c = (tid % 2) * 4, b_r = tid / 32, b_c = (tid % 32) * 4;
    float acc[8][8] = {};

    float4 av = load4<VEC>(A, row0 + a_r, a_c, M, K);
    float4 bv = load4<VEC>(B, b_r, col0 + b_c, K, N);
    As[0][a_c + 0][a_r] = av.x;
    As[0][a_c + 1][a_r] = av.y;
    As[0][a_c + 2][a_r] = av.z;
    As[0][a_c + 3][a_r] = av.w;
    *reinterpret_cast<float4 *>(&Bs[0][b_r][b_c]) = bv;
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += MATMUL_BIG_BK) {
        bool more = k0 + MATMUL_BIG_BK < K;
        if (more) { /* issue the next step's loads now; they are used after the FMAs */
            av = load4<VEC>(A, row0 + a_r, k0 + MATMUL_BIG_BK + a_c, M, K);
            bv = load4<VEC>(B, k0 + MATMUL_BIG_BK + b_r, col0 + b_c, K, N);
        }
#pragma unroll
        for (int kk = 0; kk < MATMUL_BIG_BK; kk++) {
            float4 a0 = *reinterpret_cast<const float4 *>(&As[buf][kk][ty * 4]);
            float4 a1 = *reinterpret_cast<const float4 *>(&As[buf][kk][64 + ty * 4]);
            float4 b0 = *reinterpret_cast<const float4 *>(&Bs[buf][kk][tx * 4]);
            float4 b1 = *reinterpret_cast<const float4 *>(&Bs[buf][kk][64 + tx * 4]);
            outer_8x8(acc, a0, a1, b0, b1);
        }
        if (more) { /* the other buffer was last read before the previous barrier: free */
            As[buf ^ 1][a_c + 0][a_r] = av.x;
            As[buf ^ 1][a_c + 1][a_r] = av.y;
            As[buf ^ 1][a_c + 2][a_r] = av.z;
            As[buf ^ 1][a_c + 3][a_r] = av.w;
            *reinterpret_cast<float4 *>(&Bs[buf ^ 1][b_r][b_c]) = bv;
        }
        __syncthreads(); /* the next tiles are in place, and nobody reads this buffer any more */
        buf ^= 1;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        store4<VEC>(C, r, col0 + tx * 4, M, N, make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
        store4<VEC>(C, r, col0 + 64 + tx * 4, M, N, make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]));
    }
}

static cudaError_t launch5(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    (void)o;
    return launch_128x128(matmul_kernel5<true>, matmul_kernel5<false>, 256, d_a, d_b, d_c, m, n, k);
}

/* ---------------------------------------------------------------- 6: cp.async pipeline */

#ifndef K6_BK
#define K6_BK 16 /* tunable: K step per stage (make K6_BK=8 or 32) */
#endif
#ifndef K6_STAGES
#define K6_STAGES 3 /* tunable: tiles in flight (2 = double buffering) */
#endif
#ifndef K6_GROUP
#define K6_GROUP 8 /* tunable: rows of blocks per group in the launch order, 0 = plain order */
#endif
#ifndef K6_MINB
#define K6_MINB 2 /* tunable: blocks per SM the register budget must allow */
#endif
#define MATMUL6_A_STRIDE (K6_BK + 4) /* padding: rows 4 apart land in different banks */
#define MATMUL6_STAGE_FLOATS (MATMUL_BIG_BM * MATMUL6_A_STRIDE + K6_BK * MATMUL_BIG_BN)

/* Block (pid_m, pid_n) of C for launch-order number pid. The plain order walks a whole row
 * of blocks (all of B) before moving down; the grouped order walks GROUP rows of blocks
 * column by column, so the blocks resident together share fewer panels of A and B and
 * find them in the 60 MB L2 more often. */
__device__ __forceinline__ void block_coords(int &pid_m, int &pid_n)
{
    if (K6_GROUP <= 0) {
        pid_m = blockIdx.y;
        pid_n = blockIdx.x;
        return;
    }
    int pid = blockIdx.y * gridDim.x + blockIdx.x;
    int per_group = K6_GROUP * gridDim.x;
    int first_m = (pid / per_group) * K6_GROUP;
    int rows = min((int)gridDim.y - first_m, K6_GROUP);
    pid_m = first_m + (pid % per_group) % rows;
    pid_n = (pid % per_group) / rows;
}

/* cp.async (sm_80+, lb_tensor_core.cuh): the copy engine moves global memory straight to shared
 * memory, no registers in between, and the thread goes on. src_bytes < size fills the rest with
 * zeros: that is how out-of-range elements become 0 without a branch. A build for an older GPU
 * (make ARCH=sm_75) has no cp.async: there the wrappers stop the kernel, and versions 6 and up
 * are listed as unavailable (their min_sm in matmul.c), so they never run. */

/* Copy 4 floats p[r][c..c+3] of a rows x cols matrix to dst, zeros outside. */
template <bool VEC> __device__ __forceinline__ void copy4(float *dst, const float *p, int r, int c, int rows, int cols)
{
    bool row_ok = r < rows;
    const float *src = p + (row_ok ? (size_t)r * cols + c : 0);
    if (VEC) { /* cols % 4 == 0: the 4 are all inside or all outside */
        cp_async16(dst, src, row_ok && c < cols ? 16 : 0);
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            bool ok = row_ok && c + i < cols;
            cp_async4(dst + i, ok ? src + i : p, ok ? 4 : 0);
        }
    }
}

/* Start copying the K step at k0: the A tile (128 x BK) into As[m][k] (not transposed:
 * cp.async moves contiguous bytes) and the B tile (BK x 128) into Bs[k][n]. */
template <bool VEC>
__device__ __forceinline__ void load_stage(float *stage, const float *A, const float *B, int row0, int col0, int k0,
                                           int M, int N, int K)
{
    float *As = stage, *Bs = stage + MATMUL_BIG_BM * MATMUL6_A_STRIDE;
    int tid = threadIdx.x;
#pragma unroll
    for (int idx = tid; idx < MATMUL_BIG_BM * K6_BK / 4; idx += 256) {
        int r = idx / (K6_BK / 4), c = (idx % (K6_BK / 4)) * 4;
        copy4<VEC>(&As[r * MATMUL6_A_STRIDE + c], A, row0 + r, k0 + c, M, K);
    }
#pragma unroll
    for (int idx = tid; idx < K6_BK * MATMUL_BIG_BN / 4; idx += 256) {
        int r = idx / (MATMUL_BIG_BN / 4), c = (idx % (MATMUL_BIG_BN / 4)) * 4;
        copy4<VEC>(&Bs[r * MATMUL_BIG_BN + c], B, k0 + r, col0 + c, K, N);
    }
}

/* As version 5 (same 4x4 quads), but the tiles arrive by cp.async, STAGES steps ahead:
 * while step t is multiplied, steps t+1 .. t+STAGES-1 are already on their way. Per step of
 * BK = 16, a thread reads its 8 rows of A as float4 along k (4 steps at once) and 2 float4
 * of B per k. __launch_bounds__(256, 2): at most 128 registers, two blocks per SM. */
template <bool VEC>
__global__ void __launch_bounds__(256, K6_MINB)
    matmul_kernel6(const float *A, const float *B, float *C, int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    int pid_m, pid_n;
    block_coords(pid_m, pid_n);
    int row0 = pid_m * MATMUL_BIG_BM, col0 = pid_n * MATMUL_BIG_BN;
    int steps = (K + K6_BK - 1) / K6_BK;
    float acc[8][8] = {};

    /* fill the pipeline: one commit group per stage, even when empty, so that
     * "wait until at most STAGES-2 groups are pending" always means "step t has landed" */
#pragma unroll
    for (int s = 0; s < K6_STAGES - 1; s++) {
        if (s < steps) load_stage<VEC>(smem + s * MATMUL6_STAGE_FLOATS, A, B, row0, col0, s * K6_BK, M, N, K);
        cp_async_commit();
    }
    for (int t = 0; t < steps; t++) {
        cp_async_wait<K6_STAGES - 2>(); /* my copies for step t are done ... */
        __syncthreads();                /* ... and everyone's; and step t-1's stage is free */
        int next = t + K6_STAGES - 1;
        if (next < steps)
            load_stage<VEC>(smem + (next % K6_STAGES) * MATMUL6_STAGE_FLOATS, A, B, row0, col0, next * K6_BK, M, N, K);
        cp_async_commit();

        const float *As = smem + (t % K6_STAGES) * MATMUL6_STAGE_FLOATS, *Bs = As + MATMUL_BIG_BM * MATMUL6_A_STRIDE;
#pragma unroll
        for (int kk = 0; kk < K6_BK; kk += 4) {
            float4 a4[8]; /* a4[i] = A[row i][kk..kk+3] */
#pragma unroll
            for (int i = 0; i < 8; i++) {
                int r = i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4;
                a4[i] = *reinterpret_cast<const float4 *>(&As[r * MATMUL6_A_STRIDE + kk]);
            }
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float4 b0 = *reinterpret_cast<const float4 *>(&Bs[(kk + q) * MATMUL_BIG_BN + tx * 4]);
                float4 b1 = *reinterpret_cast<const float4 *>(&Bs[(kk + q) * MATMUL_BIG_BN + 64 + tx * 4]);
                float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    float a = q == 0 ? a4[i].x : q == 1 ? a4[i].y : q == 2 ? a4[i].z : a4[i].w;
#pragma unroll
                    for (int j = 0; j < 8; j++) acc[i][j] += a * b[j];
                }
            }
        }
    }
    cp_async_wait<0>();
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        store4<VEC>(C, r, col0 + tx * 4, M, N, make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
        store4<VEC>(C, r, col0 + 64 + tx * 4, M, N, make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]));
    }
}

/* more than 48 KB of shared memory per block must be asked for once per kernel */
template <bool VEC> static cudaError_t launch6_vec(const float *d_a, const float *d_b, float *d_c, int m, int n, int k)
{
    static int configured = 0;
    size_t bytes = sizeof(float) * K6_STAGES * MATMUL6_STAGE_FLOATS;
    if (!configured) {
        cudaError_t e =
            cudaFuncSetAttribute(matmul_kernel6<VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
        if (e != cudaSuccess) return e;
        configured = 1;
    }
    matmul_kernel6<VEC><<<dim3(cdiv(n, MATMUL_BIG_BN), cdiv(m, MATMUL_BIG_BM)), 256, bytes>>>(d_a, d_b, d_c, m, n, k);
    return cudaGetLastError();
}
static cudaError_t launch6(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    (void)o;
    return rows_16b_aligned(n, k) ? launch6_vec<true>(d_a, d_b, d_c, m, n, k)
                                  : launch6_vec<false>(d_a, d_b, d_c, m, n, k);
}

/* ---------------------------------------------------------------- 7: 8x16 per thread, warp tiles */

/* 128 threads (4 warps as 2 x 2) compute the 128x128 tile: each warp a 64x64 quarter, each
 * thread 8 rows x 16 columns of it, as 4-wide pieces spread over the warp's area:
 *   rows    wr*64 + lr*4 + {0..3}  and  wr*64 + 32 + lr*4 + {0..3}     (lr = lane / 4)
 *   columns wc*64 + lc*4 + 16*q + {0..3}, q = 0..3                     (lc = lane % 4)
 * Per k a thread reads 2 float4 of A and 4 of B (24 values) for 128 FMAs: 5.3 FMAs per
 * value read from shared memory, against 4 in version 5; and a warp's reads are 8 or 4
 * neighbouring float4, one conflict-free access each. This is the shape cuBLAS's own FP32
 * kernels use (128x128 tile, 2x2 warps). The tiles are double-buffered through registers
 * as in version 5. About 200 registers per thread: 2 blocks (8 warps) per SM. */
template <bool VEC>
__global__ void __launch_bounds__(128) matmul_kernel7(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][MATMUL_BIG_BK][MATMUL_BIG_BM]; /* transposed: As[k][m] */
    __shared__ __align__(16) float Bs[2][MATMUL_BIG_BK][MATMUL_BIG_BN];
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int wr = warp / 2, wc = warp % 2, lr = lane / 4, lc = lane % 4;
    int row0 = blockIdx.y * MATMUL_BIG_BM, col0 = blockIdx.x * MATMUL_BIG_BN;
    float acc[8][16] = {};
    float4 av[2], bv[2];

#define MATMUL7_LOAD(k0)                                                     \
    _Pragma("unroll") for (int i = 0; i < 2; i++)                            \
    {                                                                        \
        int idx = tid + i * 128;                                             \
        av[i] = load4<VEC>(A, row0 + idx / 2, (k0) + (idx % 2) * 4, M, K);   \
        bv[i] = load4<VEC>(B, (k0) + idx / 32, col0 + (idx % 32) * 4, K, N); \
    }
#define MATMUL7_STORE(b)                                                       \
    _Pragma("unroll") for (int i = 0; i < 2; i++)                              \
    {                                                                          \
        int idx = tid + i * 128, r = idx / 2, c = (idx % 2) * 4;               \
        As[b][c + 0][r] = av[i].x;                                             \
        As[b][c + 1][r] = av[i].y;                                             \
        As[b][c + 2][r] = av[i].z;                                             \
        As[b][c + 3][r] = av[i].w;                                             \
        *reinterpret_cast<float4 *>(&Bs[b][idx / 32][(idx % 32) * 4]) = bv[i]; \
    }

    MATMUL7_LOAD(0)
    MATMUL7_STORE(0)
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += MATMUL_BIG_BK) {
        bool more = k0 + MATMUL_BIG_BK < K;
        if (more) {
            MATMUL7_LOAD(k0 + MATMUL_BIG_BK)
        }
#pragma unroll
        for (int kk = 0; kk < MATMUL_BIG_BK; kk++) {
            float a[8], b[16];
            float4 t0 = *reinterpret_cast<const float4 *>(&As[buf][kk][wr * 64 + lr * 4]);
            float4 t1 = *reinterpret_cast<const float4 *>(&As[buf][kk][wr * 64 + 32 + lr * 4]);
            a[0] = t0.x;
            a[1] = t0.y;
            a[2] = t0.z;
            a[3] = t0.w;
            a[4] = t1.x;
            a[5] = t1.y;
            a[6] = t1.z;
            a[7] = t1.w;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float4 u = *reinterpret_cast<const float4 *>(&Bs[buf][kk][wc * 64 + lc * 4 + 16 * q]);
                b[4 * q + 0] = u.x;
                b[4 * q + 1] = u.y;
                b[4 * q + 2] = u.z;
                b[4 * q + 3] = u.w;
            }
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 16; j++) acc[i][j] += a[i] * b[j];
        }
        if (more) {
            MATMUL7_STORE(buf ^ 1)
        }
        __syncthreads();
        buf ^= 1;
    }
#undef MATMUL7_LOAD
#undef MATMUL7_STORE
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int r = row0 + wr * 64 + (i < 4 ? lr * 4 + i : 32 + lr * 4 + i - 4);
#pragma unroll
        for (int q = 0; q < 4; q++)
            store4<VEC>(C, r, col0 + wc * 64 + lc * 4 + 16 * q, M, N,
                        make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]));
    }
}

static cudaError_t launch7(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    (void)o;
    return launch_128x128(matmul_kernel7<true>, matmul_kernel7<false>, 128, d_a, d_b, d_c, m, n, k);
}

/* ---------------------------------------------------------------- 8-10: 128x256 tiles, one block per SM */

/* One kernel template serves versions 8, 9 and 10:
 *   8   a 128x256 tile per block of 256 threads (8 warps as 2 x 4, each 64x64, each thread
 *       8x16 as in version 7), one block per SM with up to 255 registers per thread; the
 *       tiles arrive by cp.async, K8_STAGES steps ahead, and the A tile is transposed on the
 *       way: 4-byte copies, each to its transposed place (version 6 could not transpose);
 *   9   as 8, with the fragments double-buffered in registers: the 24 values of step k+1
 *       are read from shared memory while the 128 FMAs of step k run, so no FMA waits for a
 *       shared load (DBUF);
 *   10  version 9's kernel with the tile (128x256, 128x128 or 64x128) and a split of K
 *       chosen by the shape: a matrix of few tiles (M = 128 rows, say) leaves SMs idle, so
 *       K is cut into `splits` parts, one block each, added into C with atomics (SPLIT).
 * The warp layout is version 7's: lane (lr, lc) = (lane / 4, lane % 4) owns rows
 * lr*4 + 32*i + {0..3} and columns lc*4 + 16*j + {0..3} of its warp's piece, so a warp's
 * shared loads are 8 (A) or 4 (B) neighbouring float4s: one conflict-free access each. */

#ifndef K8_STAGES
#define K8_STAGES 3 /* tunable: shared-memory stages (2 = double buffering) */
#endif
static_assert(K8_STAGES >= 2 && K8_STAGES <= 6, "K8_STAGES must be 2..6");
#ifndef K8_BK
#define K8_BK 8 /* tunable: K step per stage (8 or 16) */
#endif
static_assert(K8_BK == 8 || K8_BK == 16, "K8_BK must be 8 or 16");
#define K8_THREADS 256 /* 8 warps */

/* The shared memory of one stage: the A tile transposed, As[k][m] with a row stride of
 * BM + 4, then the B tile Bs[k][n]. The padding keeps the transposing copies free of bank
 * conflicts: with K8_BK = 8, lanes 2j and 2j+1 copy k = c and k = c + 4 of the same row m,
 * which without padding share a bank (128 floats apart); 4 floats of padding per row move
 * k + 4 by 16 banks, and the 16 rows of a warp fill the other 16 (with K8_BK = 16, two of a
 * warp's 4 k-quads still share banks: 2-way, on copies that are few next to the FMAs). */
template <int BM, int BN> struct Tile8 {
    static constexpr int A_STRIDE = BM + 4;
    static constexpr int STAGE_FLOATS = K8_BK * A_STRIDE + K8_BK * BN;
    static constexpr int WM = BM / 2, WN = BN / 4;   /* a warp's piece of C */
    static constexpr int MI = WM / 32, NJ = WN / 16; /* a thread's 4x4 quads, down and across */
    static_assert(WM % 32 == 0 && WN % 16 == 0, "tile too small for 8 warps of 8 x 4 lanes");
};

/* Start copying the K step at k0 into one stage: BM x 8 of A, transposed, and 8 x BN of B.
 * Elements outside the matrices, or at k >= k_end (the end of this block's part of K), are
 * filled with zeros by the copy itself. */
template <int BM, int BN, bool VEC>
__device__ __forceinline__ void load_stage8(float *stage, const float *A, const float *B, int row0, int col0, int k0,
                                            int k_end, int M, int N, int K)
{
    typedef Tile8<BM, BN> T;
    float *As = stage, *Bs = stage + K8_BK * T::A_STRIDE;
    constexpr int A_QUADS = BM * K8_BK / 4, B_QUADS = K8_BK * BN / 4; /* float4s per tile */
#pragma unroll
    for (int p = 0; p < (A_QUADS + K8_THREADS - 1) / K8_THREADS; p++) {
        int idx = threadIdx.x + p * K8_THREADS;
        if (idx >= A_QUADS) break;
        int r = idx / (K8_BK / 4), c = (idx % (K8_BK / 4)) * 4; /* row r of the tile, k = c..c+3 */
        bool row_ok = row0 + r < M;
        const float *src = A + (row_ok ? (size_t)(row0 + r) * K + k0 + c : 0);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            bool ok = row_ok && k0 + c + i < k_end;
            cp_async4(&As[(c + i) * T::A_STRIDE + r], ok ? src + i : A, ok ? 4 : 0);
        }
    }
#pragma unroll
    for (int p = 0; p < (B_QUADS + K8_THREADS - 1) / K8_THREADS; p++) {
        int idx = threadIdx.x + p * K8_THREADS;
        if (idx >= B_QUADS) break;
        int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
        copy4<VEC>(&Bs[r * BN + c], B, k0 + r, col0 + c, k_end, N);
    }
}

/* A thread's fragments for one k: its MI float4s of A and NJ float4s of B (24 values for
 * the 128x256 tile), read from a stage at the offsets a_off (in As's row) and b_off. */
template <int BM, int BN>
__device__ __forceinline__ void load_frag8(float4 (&a)[Tile8<BM, BN>::MI], float4 (&b)[Tile8<BM, BN>::NJ],
                                           const float *stage, int kk, int a_off, int b_off)
{
    typedef Tile8<BM, BN> T;
#pragma unroll
    for (int i = 0; i < T::MI; i++) a[i] = *reinterpret_cast<const float4 *>(&stage[kk * T::A_STRIDE + a_off + 32 * i]);
#pragma unroll
    for (int j = 0; j < T::NJ; j++)
        b[j] = *reinterpret_cast<const float4 *>(&stage[K8_BK * T::A_STRIDE + kk * BN + b_off + 16 * j]);
}

__device__ __forceinline__ float part(float4 v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

/* acc += a b^T: (MI*4) x (NJ*4) FMAs, every index a compile-time constant */
template <int MI, int NJ>
__device__ __forceinline__ void outer_quads(float (&acc)[MI * 4][NJ * 4], const float4 (&a)[MI], const float4 (&b)[NJ])
{
#pragma unroll
    for (int i = 0; i < MI * 4; i++)
#pragma unroll
        for (int j = 0; j < NJ * 4; j++) acc[i][j] += part(a[i / 4], i % 4) * part(b[j / 4], j % 4);
}

/* C[r][c..c+3] += v, by atomics: the blocks of a split K add their parts in any order
 * (so the last bits of C may differ from run to run). sm_90 adds a float4 in one atomic. */
template <bool VEC> __device__ __forceinline__ void add4(float *p, int r, int c, int rows, int cols, float4 v)
{
    if (r >= rows) return;
    float *q = p + (size_t)r * cols + c;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (VEC && c + 3 < cols) {
        atomicAdd(reinterpret_cast<float4 *>(q), v);
        return;
    }
#endif
    if (c + 0 < cols) atomicAdd(q + 0, v.x);
    if (c + 1 < cols) atomicAdd(q + 1, v.y);
    if (c + 2 < cols) atomicAdd(q + 2, v.z);
    if (c + 3 < cols) atomicAdd(q + 3, v.w);
}

/* The body of versions 8-10: block (x, y, z) computes the BM x BN tile (y, x) of C over K's part
 * z: k in [z * k_chunk, min(K, (z + 1) * k_chunk)). DBUF: the next k's fragments read while
 * this k's FMAs run; SPLIT: the parts added into C by atomics. Each version is its own kernel
 * below (matmul_kernel8, 9, 10), with its own launch bounds. */
template <int BM, int BN, bool VEC, bool DBUF, bool SPLIT>
__device__ __forceinline__ void tile8_body(const float *A, const float *B, float *C, int M, int N, int K, int k_chunk)
{
    typedef Tile8<BM, BN> T;
    constexpr int S = K8_STAGES;
    extern __shared__ __align__(16) float smem[];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int wr = warp / 4, wc = warp % 4, lr = lane / 4, lc = lane % 4;
    int a_off = wr * T::WM + lr * 4, b_off = wc * T::WN + lc * 4; /* the thread's first row and column */
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int k_begin = blockIdx.z * k_chunk, k_end = min(K, k_begin + k_chunk);
    int steps = (k_end - k_begin + K8_BK - 1) / K8_BK;
    float acc[T::MI * 4][T::NJ * 4] = {};
    float4 fa[2][T::MI], fb[2][T::NJ];

    /* fill the pipeline: stages 0..S-1, one commit group each, even when empty, so that the
     * count of groups still pending always says which step has landed */
#pragma unroll
    for (int s = 0; s < S; s++) {
        if (s < steps)
            load_stage8<BM, BN, VEC>(smem + s * T::STAGE_FLOATS, A, B, row0, col0, k_begin + s * K8_BK, k_end, M, N, K);
        cp_async_commit();
    }
    cp_async_wait<S - 1>(); /* my copies for step 0 are done ... */
    __syncthreads();        /* ... and everyone's */
    if (DBUF) load_frag8<BM, BN>(fa[0], fb[0], smem, 0, a_off, b_off);

    int slot = 0; /* the stage that holds step t */
    for (int t = 0; t < steps; t++) {
        const float *stage = smem + slot * T::STAGE_FLOATS;
        int next_slot = slot + 1 == S ? 0 : slot + 1;
        bool more = t + 1 < steps;
        /* After the barrier every thread has read all of step t from `slot`, so step t + S
         * may be copied there; step t + 1 must have landed: of the groups committed, for steps
         * up to t + S - 1, at most S - 2 may still be pending. */
#define MATMUL8_NEXT_STAGE()                                                                                           \
    cp_async_wait<S - 2>();                                                                                            \
    __syncthreads();                                                                                                   \
    if (t + S < steps)                                                                                                 \
        load_stage8<BM, BN, VEC>(smem + slot * T::STAGE_FLOATS, A, B, row0, col0, k_begin + (t + S) * K8_BK, k_end, M, \
                                 N, K);                                                                                \
    cp_async_commit();
        if (DBUF) {
#pragma unroll
            for (int kk = 0; kk < K8_BK; kk++) {
                int cur = kk % 2, nxt = 1 - cur; /* K8_BK is even: step t+1's k = 0 is in fa[0] again */
                if (kk < K8_BK - 1) {
                    load_frag8<BM, BN>(fa[nxt], fb[nxt], stage, kk + 1, a_off, b_off);
                } else if (more) { /* the last k of this step: its fragments are in registers already */
                    MATMUL8_NEXT_STAGE()
                    load_frag8<BM, BN>(fa[nxt], fb[nxt], smem + next_slot * T::STAGE_FLOATS, 0, a_off, b_off);
                }
                outer_quads<T::MI, T::NJ>(acc, fa[cur], fb[cur]);
            }
        } else {
#pragma unroll
            for (int kk = 0; kk < K8_BK; kk++) {
                load_frag8<BM, BN>(fa[0], fb[0], stage, kk, a_off, b_off);
                outer_quads<T::MI, T::NJ>(acc, fa[0], fb[0]);
            }
            if (more) {
                MATMUL8_NEXT_STAGE()
            }
        }
#undef MATMUL8_NEXT_STAGE
        slot = next_slot;
    }

#pragma unroll
    for (int i = 0; i < T::MI * 4; i++) {
        int r = row0 + a_off + 32 * (i / 4) + i % 4;
#pragma unroll
        for (int j = 0; j < T::NJ; j++) {
            int c = col0 + b_off + 16 * j;
            float4 v = make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
            if (SPLIT)
                add4<VEC>(C, r, c, M, N, v);
            else
                store4<VEC>(C, r, c, M, N, v);
        }
    }
}

/* version 8: the 128x256 tile, fragments read as they are used. MINB 1: one block an SM, so the
 * register budget allows up to 255 registers a thread */
template <bool VEC>
__global__ void __launch_bounds__(K8_THREADS, 1)
    matmul_kernel8(const float *A, const float *B, float *C, int M, int N, int K, int k_chunk)
{
    tile8_body<128, 256, VEC, false, false>(A, B, C, M, N, K, k_chunk);
}
/* version 9: the same tile with the fragments double-buffered */
template <bool VEC>
__global__ void __launch_bounds__(K8_THREADS, 1)
    matmul_kernel9(const float *A, const float *B, float *C, int M, int N, int K, int k_chunk)
{
    tile8_body<128, 256, VEC, true, false>(A, B, C, M, N, K, k_chunk);
}
/* version 10: the tile and the parts of K its plan chose, fragments double-buffered; MINB 2 for
 * the smaller tiles (two blocks an SM: at most 128 registers a thread) */
template <int BM, int BN, int MINB, bool VEC, bool SPLIT>
__global__ void __launch_bounds__(K8_THREADS, MINB)
    matmul_kernel10(const float *A, const float *B, float *C, int M, int N, int K, int k_chunk)
{
    tile8_body<BM, BN, VEC, true, SPLIT>(A, B, C, M, N, K, k_chunk);
}

/* Launch one of versions 8-11's kernels for one tiling: kernels[vec][split] (split: K in parts
 * added into C). Versions 8-10's shared memory is dynamic, BYTES (3 stages of the 128x256 tile:
 * 37 KB; more than 48 KB must be asked for once per kernel: configured[vec][split] remembers);
 * version 11's is static (BYTES 0). */
typedef void (*tile_kernel)(const float *, const float *, float *, int, int, int, int);
template <int BM, int BN, size_t BYTES = sizeof(float) * K8_STAGES *Tile8<BM, BN>::STAGE_FLOATS>
static cudaError_t launch_tile8(tile_kernel const kernels[2][2], bool configured[2][2], const float *d_a,
                                const float *d_b, float *d_c, int m, int n, int k, int splits)
{
    size_t bytes = BYTES;
    bool vec = n % 4 == 0; /* 16-byte copies of B need every row of B 16-byte aligned */
    bool split = splits > 1;
    int k_chunk = split ? ((k + splits - 1) / splits + K8_BK - 1) / K8_BK * K8_BK : k;
    if (split) splits = (k + k_chunk - 1) / k_chunk; /* no empty parts */
    dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM, splits);
    tile_kernel kernel = kernels[vec][split];
    if (!kernel) return cudaErrorInvalidValue; /* no split version of this kernel */
    if (bytes && !configured[vec][split]) {
        cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
        if (e != cudaSuccess) return e;
        configured[vec][split] = true;
    }
    if (split) { /* the parts are added into C: it starts at zero */
        cudaError_t e = cudaMemsetAsync(d_c, 0, sizeof(float) * (size_t)m * n);
        if (e != cudaSuccess) return e;
    }
    kernel<<<grid, K8_THREADS, bytes>>>(d_a, d_b, d_c, m, n, k, k_chunk);
    return cudaGetLastError();
}

static cudaError_t launch8(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    (void)o;
    static tile_kernel const kernels[2][2] = {{matmul_kernel8<false>, NULL}, {matmul_kernel8<true>, NULL}};
    static bool configured[2][2];
    return launch_tile8<128, 256>(kernels, configured, d_a, d_b, d_c, m, n, k, 1);
}
static cudaError_t launch9(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    (void)o;
    static tile_kernel const kernels[2][2] = {{matmul_kernel9<false>, NULL}, {matmul_kernel9<true>, NULL}};
    static bool configured[2][2];
    return launch_tile8<128, 256>(kernels, configured, d_a, d_b, d_c, m, n, k, 1);
}

/* ---------------------------------------------------------------- 10: the tiling chosen by shape */

/* The tiles version 10 chooses from, largest first. */
static const struct {
    int bm, bn;
} tiles10[] = {{128, 256}, {128, 128}, {64, 128}};
#define K10_MAX_SPLITS 16 /* K in at most 16 parts ... */
#define K10_MIN_CHUNK 48  /* ... of at least 48 (6 steps of 8) */

static int sm_count(void)
{
    static int sms = 0; /* asked once: the timed calls do not pay for the query */
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
            sms = 1;
    }
    return sms;
}

/* The rule, from a sweep of every tile and 1-16 parts over 1024^3 and four layer shapes on
 * the H200 (NOTES.md): about one block per SM in one wave is best, and a bigger tile with
 * more parts beats a smaller one with fewer. So: the largest tile whose blocks fill nine
 * tenths of the SMs; or else the largest tile that fills them with 2..16 parts of K, each
 * at least 48 deep; or else the smallest tile, with as many parts as fill the SMs. */
extern "C" matmul_tiling matmul_choose_tiling(int m, int n, int k)
{
    int sms = sm_count(), count = (int)(sizeof tiles10 / sizeof tiles10[0]);
    long tiles = 1;
    for (int i = 0; i < count; i++) {
        tiles = (long)((m + tiles10[i].bm - 1) / tiles10[i].bm) * ((n + tiles10[i].bn - 1) / tiles10[i].bn);
        if (tiles * 10 >= 9L * sms) return (matmul_tiling){tiles10[i].bm, tiles10[i].bn, 1};
        long splits = sms / tiles;
        if (splits >= 2 && splits <= K10_MAX_SPLITS && (k + splits - 1) / splits >= K10_MIN_CHUNK)
            return (matmul_tiling){tiles10[i].bm, tiles10[i].bn, (int)splits};
    }
    long splits = sms / tiles, most = k / K10_MIN_CHUNK; /* tiles: of the smallest tile */
    if (splits > most) splits = most;
    if (splits < 1) splits = 1;
    return (matmul_tiling){tiles10[count - 1].bm, tiles10[count - 1].bn, (int)splits};
}

extern "C" int matmul_tiling_supported(matmul_tiling t)
{
    for (size_t i = 0; i < sizeof tiles10 / sizeof tiles10[0]; i++)
        if (t.bm == tiles10[i].bm && t.bn == tiles10[i].bn) return t.splits >= 1;
    return 0;
}

/* version 10's kernel for one tile: [vec][split] */
template <int BM, int BN, int MINB>
static cudaError_t launch_tile10(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, int splits)
{
    static tile_kernel const kernels[2][2] = {
        {matmul_kernel10<BM, BN, MINB, false, false>, matmul_kernel10<BM, BN, MINB, false, true>},
        {matmul_kernel10<BM, BN, MINB, true, false>, matmul_kernel10<BM, BN, MINB, true, true>}};
    static bool configured[2][2];
    return launch_tile8<BM, BN>(kernels, configured, d_a, d_b, d_c, m, n, k, splits);
}

static cudaError_t launch_tiling(matmul_tiling t, const float *d_a, const float *d_b, float *d_c, int m, int n, int k)
{
    if (t.bm == 128 && t.bn == 256) return launch_tile10<128, 256, 1>(d_a, d_b, d_c, m, n, k, t.splits);
    if (t.bm == 128 && t.bn == 128) return launch_tile10<128, 128, 2>(d_a, d_b, d_c, m, n, k, t.splits);
    if (t.bm == 64 && t.bn == 128) return launch_tile10<64, 128, 2>(d_a, d_b, d_c, m, n, k, t.splits);
    return cudaErrorInvalidValue;
}

/* version 10: its own plan for the shape (matmul_choose_tiling), or --tiling's (o->plan) */
static cudaError_t launch10(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    matmul_tiling plan = o->plan.bm ? o->plan : matmul_choose_tiling(m, n, k);
    return launch_tiling(plan, d_a, d_b, d_c, m, n, k);
}

/* ---------------------------------------------------------------- 11: 16 x 8 a thread, no branch in the loop */

#define K11_BM 128
#define K11_BN 256
#define K11_A_STRIDE (K11_BM + 4) /* floats from one k to the next in the transposed A tile (4 of padding) */
#define K11_STAGE 2048            /* floats from a stage to the other (8 KiB), for A and for B alike */
#define K11_B 4096                /* floats: B's two stages follow A's two */

/* A thread's copies of one K step, fixed before the loop: A's rows a_row + 32 i (i = 0..3) at
 * k = a_k, one float each, transposed into As[a_k][row]; B's k rows b_k and b_k + 4 at columns
 * b_col..b_col + 3. Rows and columns outside C are copied as zeros (source size 0), from an
 * address inside the matrix. */
typedef struct {
    const float *a, *b;         /* A's row row0 at k = a_k; B's row b_k at the block's first column */
    int a_off[4], b_off;        /* from a and b to this thread's rows and columns (0 where outside) */
    int a_bytes[4], b_bytes[4]; /* 4 (16 for VEC's float4 of B) inside, 0 outside */
    int a_dst, b_dst;           /* where the copies land in a stage (floats) */
} copy11;

template <bool VEC>
__device__ __forceinline__ copy11 plan_copies11(const float *A, const float *B, int M, int N, int K, int row0, int col0,
                                                int k0, int k_len)
{
    copy11 c;
    int a_k = threadIdx.x % 8, a_row = threadIdx.x / 8, b_k = threadIdx.x / 64, b_col = threadIdx.x % 64 * 4;
    /* the block's k run from k0, k_len of them. With fewer than 8 (one step, no later ones) a
     * thread's k may be past them: its copies read nothing (source size 0), and their address
     * stays inside the matrix all the same */
    c.a = A + (size_t)row0 * K + k0 + (a_k < k_len ? a_k : 0);
    c.b = B + (size_t)(k0 + (b_k < k_len ? b_k : 0)) * N + col0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        bool ok = row0 + a_row + 32 * i < M;
        c.a_off[i] = ok ? (a_row + 32 * i) * K : 0;
        c.a_bytes[i] = ok ? 4 : 0;
    }
    c.b_off = col0 + b_col < N ? b_col : 0;
#pragma unroll
    for (int i = 0; i < 4; i++) c.b_bytes[i] = VEC ? (col0 + b_col < N ? 16 : 0) : (col0 + b_col + i < N ? 4 : 0);
    c.a_dst = a_k * K11_A_STRIDE + a_row;
    c.b_dst = K11_B + b_k * K11_BN + b_col;
    return c;
}

/* Part `part` (0..3) of the copies of the K step whose first k is c->a / c->b, into the stage at
 * smem + stage: A's row a_row + 32 part, and (parts 0 and 1) B's k row b_k + 4 part. k_left:
 * how many k of this step exist (the first step's remainder; 8 after it), a compile-time 8 in
 * the loop, where no k check is left. */
template <bool VEC>
__device__ __forceinline__ void copy_part11(float *smem, int stage, const copy11 *c, int part, int N, int k_left)
{
    int a_k = threadIdx.x % 8, b_k = threadIdx.x / 64 + 4 * part;
    cp_async4(smem + stage + c->a_dst + 32 * part, c->a + c->a_off[part], a_k < k_left ? c->a_bytes[part] : 0);
    if (part < 2) {
        const float *src = c->b + (size_t)(b_k < k_left ? 4 * part : 0) * N + c->b_off;
        float *dst = smem + stage + c->b_dst + 4 * part * K11_BN;
        if (VEC) {
            cp_async16(dst, src, b_k < k_left ? c->b_bytes[0] : 0);
        } else {
#pragma unroll
            for (int i = 0; i < 4; i++)
                cp_async4(dst + i, c->b_bytes[i] ? src + i : src, b_k < k_left ? c->b_bytes[i] : 0);
        }
    }
}

/* The fragments of k: 16 values of A (rows a_frag + 16 i .. + 3) and 8 of B (columns b_frag +
 * 32 j .. + 3), as 4 and 2 float4 reads */
__device__ __forceinline__ void load_frags11(float (&a)[16], float (&b)[8], const float *smem, int stage, int k,
                                             int a_frag, int b_frag)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float4 v = *reinterpret_cast<const float4 *>(smem + stage + k * K11_A_STRIDE + a_frag + 16 * i);
        a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < 2; j++) {
        float4 v = *reinterpret_cast<const float4 *>(smem + stage + K11_B + k * K11_BN + b_frag + 32 * j);
        b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
    }
}

__device__ __forceinline__ void fma16x8(float (&acc)[16][8], const float (&a)[16], const float (&b)[8])
{
#pragma unroll
    for (int i = 0; i < 16; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

/* Version 11: version 9's tile (128 x 256, 8 warps of 64 x 64, one block an SM), arranged as the
 * published FP32 kernels that reach cuBLAS are (NOTES: the loops' SASS side by side):
 *  - a thread's 16 x 8 outputs: rows in four float4 of A 16 apart, columns in two float4 of B 32
 *    apart; the lanes of a warp in a 'z' (lane / 2 % 8 across, lane / 16 * 2 + lane % 2 down), so
 *    that a warp's float4 reads of A hit 4 addresses and of B 8;
 *  - K's remainder first: the first step is the K % 8 (or 8) leading k, so every later step is
 *    whole and the loop checks no k; rows and columns outside C are each thread's fixed source
 *    sizes of 0;
 *  - two stages, the other one's offset an XOR away, one barrier a step; the next step's copies
 *    issued in its first four k, the next k's fragments read while this k's FMAs run;
 *  - the loop covers every step but the last, which runs after it without copies: nothing inside
 *    the loop branches.
 * SPLIT (products too small to fill the GPU, as version 10 does): block z takes k_chunk of K from
 * z k_chunk and adds its sums into C (zeroed first) by float4 atomics. */
template <bool VEC, bool SPLIT>
__global__ void __launch_bounds__(K8_THREADS, 1)
    matmul_kernel11(const float *A, const float *B, float *C, int M, int N, int K, int k_chunk)
{
    __shared__ __align__(16) float smem[4 * K11_STAGE];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int tx = lane / 2 % 8, ty = lane / 16 * 2 + lane % 2;
    int row0 = blockIdx.y * K11_BM, col0 = blockIdx.x * K11_BN;
    int a_frag = warp / 4 * 64 + ty * 4, b_frag = warp % 4 * 64 + tx * 4;
    int k0 = SPLIT ? blockIdx.z * k_chunk : 0, k_len = SPLIT ? min(k_chunk, K - k0) : K;
    copy11 c = plan_copies11<VEC>(A, B, M, N, K, row0, col0, k0, k_len);
    int steps = (k_len + 7) / 8, first = k_len - (steps - 1) * 8;

    /* the first step, K's remainder, into stage 0; then every step is 8 k */
#pragma unroll
    for (int part = 0; part < 4; part++) copy_part11<VEC>(smem, 0, &c, part, N, first);
    c.a += first;
    c.b += (size_t)first * N;
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    float acc[16][8] = {}, a[2][16], b[2][8];
    int stage = 0;
    load_frags11(a[0], b[0], smem, stage, 0, a_frag, b_frag);
    for (int t = 0; t < steps - 1; t++) {
#pragma unroll
        for (int k = 0; k < 8; k++) {
            if (k < 4) copy_part11<VEC>(smem, stage ^ K11_STAGE, &c, k, N, 8); /* step t + 1, a part a k */
            if (k == 7) { /* step t + 1 has landed for everyone, and everyone is done reading step t */
                cp_async_commit();
                cp_async_wait<0>();
                __syncthreads();
                stage ^= K11_STAGE;
                c.a += 8;
                c.b += (size_t)8 * N;
                load_frags11(a[0], b[0], smem, stage, 0, a_frag, b_frag);
            } else {
                load_frags11(a[(k + 1) % 2], b[(k + 1) % 2], smem, stage, k + 1, a_frag, b_frag);
            }
            fma16x8(acc, a[k % 2], b[k % 2]);
        }
    }
#pragma unroll
    for (int k = 0; k < 8; k++) { /* the last step: nothing to copy */
        if (k < 7) load_frags11(a[(k + 1) % 2], b[(k + 1) % 2], smem, stage, k + 1, a_frag, b_frag);
        fma16x8(acc, a[k % 2], b[k % 2]);
    }

#pragma unroll
    for (int i = 0; i < 16; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int r = row0 + a_frag + 16 * (i / 4) + i % 4, col = col0 + b_frag + 32 * j;
            float4 v = make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
            if (SPLIT)
                add4<VEC>(C, r, col, M, N, v);
            else
                store4<VEC>(C, r, col, M, N, v);
        }
}

/* Version 11's grid: one block a 128 x 256 tile, and, where those tiles are too few to fill the
 * GPU, K cut into parts as version 10 cuts it (each at least 48 deep), up to K11_MAX_SPLITS
 * parts: a 128 x 1024 result is 4 tiles, and 16 parts of K fill 64 of the H200's 132 SMs, 32
 * fill 128. */
#ifndef K11_MAX_SPLITS
#define K11_MAX_SPLITS 32 /* tunable: the most parts of K */
#endif
static_assert(K11_MAX_SPLITS >= 1 && K11_MAX_SPLITS <= 256, "K11_MAX_SPLITS must be 1..256");
static cudaError_t launch11(const float *d_a, const float *d_b, float *d_c, int m, int n, int k, const matmul_opts *o)
{
    (void)o;
    long tiles = (long)cdiv(n, K11_BN) * cdiv(m, K11_BM), splits = 1;
    if (tiles * 10 < 9L * sm_count()) { /* too few tiles to fill the GPU: K in parts too */
        splits = sm_count() / tiles;
        if (splits > K11_MAX_SPLITS) splits = K11_MAX_SPLITS;
        if (splits > k / K10_MIN_CHUNK) splits = k / K10_MIN_CHUNK;
        if (splits < 1) splits = 1;
    }
    static tile_kernel const kernels[2][2] = {{matmul_kernel11<false, false>, matmul_kernel11<false, true>},
                                              {matmul_kernel11<true, false>, matmul_kernel11<true, true>}};
    static bool configured[2][2];
    return launch_tile8<K11_BM, K11_BN, 0>(kernels, configured, d_a, d_b, d_c, m, n, k, (int)splits);
}

/* ---------------------------------------------------------------- launchers */

extern "C" int matmul_tile(void) { return TILE; }

/* launchers[v] runs version v: to add a version, its kernel and launcher above this table, and
 * its launcher at the end of it */
typedef cudaError_t (*launcher)(const float *, const float *, float *, int, int, int, const matmul_opts *);
static const launcher launchers[] = {NULL,    launch1, launch2, launch3, launch4,  launch5,
                                     launch6, launch7, launch8, launch9, launch10, launch11};
static_assert(sizeof launchers / sizeof launchers[0] == MATMUL_VERSIONS,
              "one launcher per version: MATMUL_VERSIONS in matmul_kernels.h");

extern "C" cudaError_t matmul_launch(int version, const float *d_a, const float *d_b, float *d_c, int m, int n, int k,
                                     const matmul_opts *o)
{
    if (version < 1 || version >= MATMUL_VERSIONS) return cudaErrorInvalidValue;
    return launchers[version](d_a, d_b, d_c, m, n, k, o);
}
