/* dnn_fused_kernels.cu - the fused training step's one GEMM kernel, with its epilogues.
 *
 *   fused_gemm_kernel<BM, BN, QM, QN>   C = op(A) op(B) on a BM x BN tile per block; each thread
 *       holds QM x QN quads (4 x 4 outputs each) in registers; K in steps of FUSED_BK through
 *       shared memory, the next step's loads issued before this step's arithmetic. Optionally K
 *       is split over blockIdx.z: each part writes its sums to a workspace, and the last part to
 *       finish adds all parts in a fixed order and runs the epilogue (so the result is the same
 *       bit for bit whichever part finishes last). Then the epilogue (see dnn_fused_kernels.h):
 *       store, activation, activation gradient, or the optimizer's update of [W; b].
 * Why fuse: at batch 128 a 784-1024-10 step is ten kernels of a few microseconds around cuBLAS;
 * here it is six, and no gradient makes a round trip through memory before the update.
 */
#include "dnn_fused_kernels.h"
#include "dnn_math.cuh" /* activate, activate_grad, sgd_update, adam_update */
#include "lb_tensor_core.cuh" /* to_tf32, mma_tf32 */

#define FUSED_BK 16

/* Where a thread's loads go. The elements of the A tile (BM x BK) and of the B tile (BK x BN)
 * are dealt out so that consecutive threads read consecutive addresses (along k for a row-major
 * A, along m for a transposed one; the same for B): the loads coalesce whichever the layout.
 * THREADS being a multiple of BK, BM and BN, one of a thread's two coordinates is the same for
 * all its elements and the other steps evenly, so a few integers say where all of them are, and
 * the batch's rows, gathered through the permutation, are looked up once, before the K loop. */
template <int BM, int BN, int THREADS> struct tile_loader {
    const float *a_row[BM * FUSED_BK / THREADS]; /* a_trans 0: the start of each element's row m */
    int a_m, a_k, a_dm, a_dk;                    /* element i: m = a_m + i a_dm, k = k0 + a_k + i a_dk (in the tile) */
    int b_k, b_n, b_dk, b_dn;                    /* the same for B */
};

template <int BM, int BN, int THREADS>
__device__ __forceinline__ void loader_init(tile_loader<BM, BN, THREADS> &L, const fused_gemm &p, int m0, int n0,
                                            int tid)
{
    /* a_trans 0: consecutive threads along k (BK of them per row), so a thread's elements are
     * THREADS / BK rows apart; a_trans 1: along m, its elements THREADS / BM k apart */
    L.a_m = m0 + (p.a_trans ? tid % BM : tid / FUSED_BK), L.a_k = p.a_trans ? tid / BM : tid % FUSED_BK;
    L.a_dm = p.a_trans ? 0 : THREADS / FUSED_BK, L.a_dk = p.a_trans ? THREADS / BM : 0;
    L.b_n = n0 + (p.b_trans ? tid / FUSED_BK : tid % BN), L.b_k = p.b_trans ? tid % FUSED_BK : tid / BN;
    L.b_dn = p.b_trans ? THREADS / FUSED_BK : 0, L.b_dk = p.b_trans ? 0 : THREADS / BN;
    const int cursor = p.a_perm ? p.state->cursor : 0;
#pragma unroll
    for (int i = 0; i < BM * FUSED_BK / THREADS; i++) {
        int m = L.a_m + i * L.a_dm;
        int r = m < p.M ? (p.a_perm ? p.a_perm[cursor + m] : m) : 0; /* the batch's row m */
        L.a_row[i] = p.A + (size_t)r * p.lda;
    }
}

/* the tiles' elements for the K step from k0 (this block's part of K ends at k_end): 0 outside
 * the matrix, 1 on the ones line (the bias's input) */
template <int BM, int BN, int THREADS>
__device__ __forceinline__ void load_step(const tile_loader<BM, BN, THREADS> &L, const fused_gemm &p, int k0, int k_end,
                                          float *ra, float *rb)
{
#pragma unroll
    for (int i = 0; i < BM * FUSED_BK / THREADS; i++) {
        int m = L.a_m + i * L.a_dm, k = k0 + L.a_k + i * L.a_dk;
        float v = 0.0f;
        if (m < p.M && k < k_end) {
            if (p.a_ones && (p.a_trans ? m == p.M - 1 : k == p.K - 1))
                v = 1.0f;
            else
                v = p.a_trans ? p.A[(size_t)k * p.lda + m] : L.a_row[i][k];
        }
        ra[i] = v;
    }
#pragma unroll
    for (int i = 0; i < FUSED_BK * BN / THREADS; i++) {
        int k = k0 + L.b_k + i * L.b_dk, n = L.b_n + i * L.b_dn;
        rb[i] = (k < k_end && n < p.N) ? p.B[p.b_trans ? (size_t)n * p.ldb + k : (size_t)k * p.ldb + n] : 0.0f;
    }
}

/* The epilogue of one row of a thread's outputs (cols: their columns, v: their sums). Everything
 * the row needs is read first, then everything is written:
 * interleaved, each load would have to wait for the store before it (C and the optimizer's state
 * could alias for all the compiler knows), one memory round trip per element. */
template <int W>
__device__ __forceinline__ void epilogue_row(const fused_gemm &p, int m, const int *cols, const float *v, float lr,
                                             float2 adam_c)
{
    float in1[W], in2[W], in3[W];
    const int e = p.epilogue;
#pragma unroll
    for (int j = 0; j < W; j++) {
        int n = cols[j];
        size_t i = (size_t)m * p.ldc + n;
        bool ok = n < p.N;
        in1[j] = ok && (e == FUSED_SGD || e == FUSED_ADAM) ? p.C[i] : 0.0f;
        in2[j] = ok && (e == FUSED_SGD || e == FUSED_ADAM) ? p.opt1[i]
                 : ok && e == FUSED_ACT_GRAD               ? p.act_out[i]
                                                           : 0.0f;
        in3[j] = ok && e == FUSED_ADAM ? p.opt2[i] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < W; j++) {
        int n = cols[j];
        if (n >= p.N) continue;
        size_t i = (size_t)m * p.ldc + n;
        switch (e) {
        case FUSED_STORE: p.C[i] = v[j]; break;
        case FUSED_ACT: p.C[i] = activate(v[j], p.act); break;
        case FUSED_ACT_GRAD: p.C[i] = v[j] * activate_grad(in2[j], p.act); break;
        case FUSED_SGD:
            sgd_update(&in1[j], &in2[j], v[j], lr, p.mu, p.wd);
            p.C[i] = in1[j], p.opt1[i] = in2[j];
            break;
        case FUSED_ADAM:
            adam_update(&in1[j], &in2[j], &in3[j], v[j], lr, p.wd, adam_c);
            p.C[i] = in1[j], p.opt1[i] = in2[j], p.opt2[i] = in3[j];
            break;
        }
    }
}

/* TF32 tensor cores (sm_80 and newer, lb_tensor_core.cuh): mma_tf32 is D = A B + C on a 16 x 8
 * tile, k = 8, by one warp, on operands rounded by to_tf32; its comment gives the fragments. */

template <int BM, int BN, int QM, int QN, bool TF32>
__global__ void __launch_bounds__((BM / (4 * QM)) * (BN / (4 * QN)))
    fused_gemm_kernel(const __grid_constant__ fused_gemm p, int splits, float *work, int *counters)
{
    constexpr int TX = BN / (4 * QN), TY = BM / (4 * QM), THREADS = TX * TY;
    /* TF32: the same acc[4 QM][4 QN] per thread, as 2 QM x 2 QN tensor-core tiles of 16 x 8 per
     * warp; warps laid out WM x WN over the block's tile */
    constexpr int MT = 2 * QM, NT = 2 * QN, WM = BM / (16 * MT), WN = BN / (8 * NT);
    static_assert(!TF32 || WM * WN * 32 == THREADS, "one warp per 16 MT x 8 NT outputs");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int wm = warp / WN, wn = warp % WN;
    constexpr int A_PER = BM * FUSED_BK / THREADS, B_PER = FUSED_BK * BN / THREADS;
    static_assert(THREADS % FUSED_BK == 0 && THREADS % BM == 0 && THREADS % BN == 0, "see tile_loader");
    /* k-major tiles, so a thread reads its 4 rows (or columns) as one float4; +4 keeps rows 16-byte
     * aligned and spreads the transposing stores over more banks */
    __shared__ __align__(16) float As[FUSED_BK][BM + 4];
    __shared__ __align__(16) float Bs[FUSED_BK][BN + 4];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    tile_loader<BM, BN, THREADS> L;
    loader_init(L, p, m0, n0, tid);
    /* the first layer's first column of tiles also keeps the batch it gathered, for its dW GEMM */
    float *copy = blockIdx.x == 0 ? p.a_copy : NULL;
    /* this block's part of K: whole BK steps, the last part takes what is left */
    const int chunk = ((p.K + splits - 1) / splits + FUSED_BK - 1) / FUSED_BK * FUSED_BK;
    const int k_begin = blockIdx.z * chunk, k_end = min(p.K, k_begin + chunk);

    float acc[4 * QM][4 * QN];
#pragma unroll
    for (int i = 0; i < 4 * QM; i++)
#pragma unroll
        for (int j = 0; j < 4 * QN; j++) acc[i][j] = 0.0f;

    float ra[A_PER], rb[B_PER]; /* the next K step, on its way from global memory */
    load_step(L, p, k_begin, k_end, ra, rb);
    for (int k0 = k_begin; k0 < k_end; k0 += FUSED_BK) {
#pragma unroll
        for (int i = 0; i < A_PER; i++) {
            int m = L.a_m + i * L.a_dm, kk = L.a_k + i * L.a_dk, k = k0 + kk;
            As[kk][m - m0] = ra[i];
            if (copy && m < p.M && k < k_end && k < p.K - 1) copy[(size_t)m * p.lda + k] = ra[i];
        }
#pragma unroll
        for (int i = 0; i < B_PER; i++) Bs[L.b_k + i * L.b_dk][L.b_n + i * L.b_dn - n0] = rb[i];
        __syncthreads();
        /* issue the next step's loads now; they land during this step's math */
        if (k0 + FUSED_BK < k_end) load_step(L, p, k0 + FUSED_BK, k_end, ra, rb);
        if constexpr (TF32) {
#pragma unroll
            for (int k = 0; k < FUSED_BK; k += 8) {
                unsigned a[MT][4], b[NT][2];
#pragma unroll
                for (int mi = 0; mi < MT; mi++) {
                    int r = wm * 16 * MT + mi * 16 + g;
                    a[mi][0] = to_tf32(As[k + t4][r]), a[mi][1] = to_tf32(As[k + t4][r + 8]);
                    a[mi][2] = to_tf32(As[k + t4 + 4][r]), a[mi][3] = to_tf32(As[k + t4 + 4][r + 8]);
                }
#pragma unroll
                for (int ni = 0; ni < NT; ni++) {
                    int c = wn * 8 * NT + ni * 8 + g;
                    b[ni][0] = to_tf32(Bs[k + t4][c]), b[ni][1] = to_tf32(Bs[k + t4 + 4][c]);
                }
#pragma unroll
                for (int mi = 0; mi < MT; mi++)
#pragma unroll
                    for (int ni = 0; ni < NT; ni++)
                        mma_tf32(&acc[2 * mi][2 * ni], &acc[2 * mi][2 * ni + 1], &acc[2 * mi + 1][2 * ni],
                                 &acc[2 * mi + 1][2 * ni + 1], a[mi], b[ni]);
            }
        } else {
#pragma unroll
            for (int k = 0; k < FUSED_BK; k++) {
                float a[4 * QM], b[4 * QN];
#pragma unroll
                for (int q = 0; q < QM; q++) {
                    float4 v = *(const float4 *)&As[k][ty * 4 + q * (BM / QM)];
                    a[4 * q] = v.x, a[4 * q + 1] = v.y, a[4 * q + 2] = v.z, a[4 * q + 3] = v.w;
                }
#pragma unroll
                for (int q = 0; q < QN; q++) {
                    float4 v = *(const float4 *)&Bs[k][tx * 4 + q * (BN / QN)];
                    b[4 * q] = v.x, b[4 * q + 1] = v.y, b[4 * q + 2] = v.z, b[4 * q + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < 4 * QM; i++)
#pragma unroll
                    for (int j = 0; j < 4 * QN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        }
        __syncthreads(); /* everyone is done with this step's tiles before they are overwritten */
    }

    /* split K: park this part's sums; the last part of the tile to arrive adds them all */
    if (splits > 1) {
        __shared__ int is_last;
        const int tile = blockIdx.y * gridDim.x + blockIdx.x;
        float *mine = work + ((size_t)tile * splits + blockIdx.z) * (BM * BN);
#pragma unroll
        for (int i = 0; i < 4 * QM; i++)
#pragma unroll
            for (int j = 0; j < 4 * QN; j++) mine[(i * 4 * QN + j) * THREADS + tid] = acc[i][j]; /* coalesced */
        __threadfence(); /* the sums are visible GPU-wide before the count says so */
        __syncthreads();
        if (tid == 0) is_last = atomicAdd(&counters[tile], 1) == splits - 1;
        __syncthreads();
        if (!is_last) return;
        /* parts 0, 1, ... in order, not in order of arrival: a fixed sum, run after run; a whole
         * part's loads at a time (independent, so they overlap: one round trip per part) */
        const float *parts = work + (size_t)tile * splits * (BM * BN);
#pragma unroll
        for (int i = 0; i < 4 * QM; i++)
#pragma unroll
            for (int j = 0; j < 4 * QN; j++) acc[i][j] = 0.0f;
        for (int z = 0; z < splits; z++)
#pragma unroll
            for (int i = 0; i < 4 * QM; i++)
#pragma unroll
                for (int j = 0; j < 4 * QN; j++)
                    acc[i][j] += __ldcg(&parts[(size_t)z * (BM * BN) + (i * 4 * QN + j) * THREADS + tid]);
        if (tid == 0) counters[tile] = 0; /* ready for the next product */
    }
    float lr = 0.0f;
    float2 adam_c = make_float2(1.0f, 1.0f);
    if (p.epilogue == FUSED_SGD || p.epilogue == FUSED_ADAM) {
        lr = p.state->lr;
        if (p.epilogue == FUSED_ADAM) adam_c = adam_corrections(p.state->t); /* t counts this step already */
    }
    /* where a thread's outputs are: quads of 4 x 4 (FFMA), or the tensor-core fragments' rows
     * g, g + 8 and column pairs 2t, 2t + 1 of each 16 x 8 tile (TF32) */
    int cols[4 * QN];
#pragma unroll
    for (int j = 0; j < 4 * QN; j++)
        cols[j] = TF32 ? n0 + wn * 8 * NT + (j / 2) * 8 + 2 * t4 + j % 2 : n0 + tx * 4 + (j / 4) * (BN / QN) + j % 4;
#pragma unroll
    for (int i = 0; i < 4 * QM; i++) {
        int m = TF32 ? m0 + wm * 16 * MT + (i / 2) * 16 + g + 8 * (i % 2) : m0 + ty * 4 + (i / 4) * (BM / QM) + i % 4;
        if (m < p.M) epilogue_row<4 * QN>(p, m, cols, acc[i], lr, adam_c);
    }
}

static int cdiv(int a, int b) { return (a + b - 1) / b; }
static fused_plan plan_of(int tile, int splits)
{
    fused_plan p = {tile, tile, splits < 1 ? 1 : splits};
    return p;
}

/* Tiles that fill the GPU without a split (the larger the tile, the fewer loads per
 * multiply-add), else K split so that the blocks reach FUSED_SPLIT_FILL times the SMs, each part
 * at least 64 deep: a small product is bound by the latency of its loads, and more blocks per
 * SM keep more of them in flight. 256-thread blocks first (8 warps hide latency), 32 x 32 tiles
 * of 64 threads for the thinnest products (the 10-wide layer). */
#ifndef FUSED_SPLIT_FILL
#define FUSED_SPLIT_FILL 2
#endif
extern "C" fused_plan fused_plan_for(int M, int N, int K, int sms)
{
    const int target = sms * 3 / 4, max_splits = K / 64 > 1 ? K / 64 : 1, room = FUSED_SPLIT_FILL * sms;
    if (cdiv(M, 128) * cdiv(N, 128) >= target) return plan_of(128, 1);
    int tiles64 = cdiv(M, 64) * cdiv(N, 64);
    if (tiles64 >= target) return plan_of(64, 1);
    int s64 = room / tiles64 < max_splits ? room / tiles64 : max_splits;
    if (tiles64 * s64 >= target) return plan_of(64, s64);
    int tiles32 = cdiv(M, 32) * cdiv(N, 32), s32 = room / tiles32 < max_splits ? room / tiles32 : max_splits;
    return plan_of(32, s32);
}

/* With a split, tiles x splits <= FUSED_SPLIT_FILL x SMs (see fused_plan_for): this bounds every plan. */
extern "C" size_t fused_workspace_floats(int sms) { return (size_t)FUSED_SPLIT_FILL * sms * 64 * 64; }
extern "C" size_t fused_counter_ints(int sms) { return (size_t)FUSED_SPLIT_FILL * sms; }

template <bool TF32>
static void launch(const fused_gemm *p, fused_plan plan, float *d_workspace, int *d_counters, cudaStream_t stream)
{
    dim3 grid(cdiv(p->N, plan.tile_n), cdiv(p->M, plan.tile_m), plan.splits);
    if (plan.tile_m == 128)
        fused_gemm_kernel<128, 128, 2, 2, TF32><<<grid, 256, 0, stream>>>(*p, plan.splits, d_workspace, d_counters);
    else if (plan.tile_m == 64)
        fused_gemm_kernel<64, 64, 1, 1, TF32><<<grid, 256, 0, stream>>>(*p, plan.splits, d_workspace, d_counters);
    else
        fused_gemm_kernel<32, 32, 1, 1, TF32><<<grid, 64, 0, stream>>>(*p, plan.splits, d_workspace, d_counters);
}

extern "C" cudaError_t fused_gemm_launch(const fused_gemm *p, fused_plan plan, float *d_workspace, int *d_counters,
                                         cudaStream_t stream)
{
    if (p->tf32)
        launch<true>(p, plan, d_workspace, d_counters, stream);
    else
        launch<false>(p, plan, d_workspace, d_counters, stream);
    return cudaGetLastError();
}
