/* tensor_gemm.c - C = A B on the tensor cores: wmma, mma.sync, then wgmma fed by TMA, vs cuBLAS.
 *
 *   A is (M,K) row-major, B is (K,N) column-major, C is (M,N) row-major; A and B bf16 (or fp32
 *   used as tf32 with --type tf32, or fp8 e4m3 with per-tensor scales with --type fp8),
 *   accumulated in fp32 and written in fp32 (bf16 for fp8). Default M = N = K = 4096.
 *   build: make ch10      run: ./tensor_gemm [version] [--size N | --size M,N,K] [--type tf32|fp8]
 *
 * versions: the table versions[] below (0 cuBLAS, 1 wmma, 2 mma.sync, 3 wgmma + TMA, 4 warp-
 * specialised, 5 persistent, 6 clusters with TMA multicast, 7 wgmma kept queued, 8 both 6 and
 * 7, 9 C out through shared memory by TMA stores, 10 both 6 and 9 in a Hilbert curve's order,
 * 11 stream-K over the last wave, 12 ping-pong consumers), listed by ./tensor_gemm --help; the
 * kernels, in the same order, are in tensor_gemm_kernels.cu and tensor_gemm_hopper.cu. 3-12 need
 * an H100/H200 and a build for sm_90 (the default without a GPU, or on one).
 *
 * The inputs are drawn in [-1, 1) and rounded to bf16 (or tf32) here, so the GPU multiplies
 * exactly the numbers the CPU reference does and every product is exact in fp32: what differs
 * is only how K products are summed. The CPU sums in double.
 * Tolerance: |got - want| <= K 2^-20 + 2^-16 |want|. Summing K terms of size <= 1 in fp32
 * rounds about K times by at most 2^-24 |partial sum|; K 2^-20 leaves room for the tensor
 * cores' own order and truncation, while one lost 16-deep k step (an error near 2) fails.
 * Buffers: A and B are zero-padded to whole tiles (tensor_gemm_kernels.h); C is exactly (M,N).
 *
 * fp8 (--type fp8): each input tensor gets a scale s, the power of two that brings its largest
 * magnitude to at most 448 (e4m3's largest), and is stored as the e4m3 codes of x / s; C = s_A
 * s_B (codes A)(codes B). The CPU multiplies the same values (code x s, exact in float), so again
 * only the sums differ, but the tensor cores add fp8 products in a narrower accumulator than
 * fp32 (DeepSeek-V3's report: about 14 bits kept on Hopper): the tolerance is fp8's own
 * (fp8_abs_tol), and C is bf16, rounded once as it leaves (REL_TOL_BF16_OUT). Version 0 is then
 * cuBLASLt's fp8 product with the same scales and a bf16 D.
 */
#include <cublasLt.h>
#include <cublas_v2.h>
#include "labbook.h"
#include "tensor_gemm_kernels.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- number formats */

/* bf16: lb_bf16_bits and lb_bf16_value (common/labbook.c) */
/* tf32 keeps 10 bits of mantissa in an fp32 container: round away the low 13 bits. */
static float tf32_value(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0xFFF + ((u >> 13) & 1);
    u &= ~0x1FFFu;
    memcpy(&x, &u, 4);
    return x;
}

/* ---------------------------------------------------------------- CPU reference */

/* C[r][c] = sum_k A[r][k] B[c][k] (B stored as N rows of K), summed in double:
 * lb_gemm_reference and lb_gemm_check (common/labbook.c) with LB_B_N_BY_K */

static double abs_tol(int K) { return K * 9.5367431640625e-07; } /* K 2^-20 */
#define REL_TOL 1.52587890625e-05                                /* 2^-16 */
/* fp8: a wgmma adds its 32 products into the accumulator, which on Hopper keeps about 14 bits
 * when the inputs are fp8: an error up to 2^-14 of the sum so far at each of the K / 32 steps,
 * adding up like a random walk: sqrt(K / 32) 2^-14 sum |a b|, doubled for margin. With inputs
 * uniform in [-1, 1), sum |a b| is K / 4 within a few percent at these K (1.25 K / 4 here). At
 * K = 4096: 1.8, where C's elements are about 21 and a lost k step errs by about 2. A bound to
 * measure against the GPU before trusting it (NOTES). */
static double fp8_abs_tol(int K) { return sqrt(K / 32.0) * 0x1p-13 * 1.25 * K / 4.0; }
static double tol_abs(tg_type type, int K) { return type == TG_FP8 ? fp8_abs_tol(K) : abs_tol(K); }
/* fp8's C is bf16: rounding to nearest moves a value by at most 2^-9 of it (8 bits of mantissa);
 * 2^-8 leaves room for a sum the accumulation already moved across a rounding boundary */
#define REL_TOL_BF16_OUT 3.90625e-03 /* 2^-8 */
static double tol_rel(tg_type type) { return type == TG_FP8 ? REL_TOL_BF16_OUT : REL_TOL; }

/* ---------------------------------------------------------------- the versions */

/* cuBLASLt's fp8 product (version 0 for --type fp8): what it needs, made once outside the timing */
typedef struct {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    void *workspace;
    size_t workspace_bytes;
    float *scale_a, *scale_b; /* device, one allocation each; cuBLASLt's A is our B (see run_cublas) */
    void *d_padded;           /* where N is not a multiple of 8: D with rows of np, copied into C */
} tg_lt;

typedef struct {
    cublasHandle_t handle;
    tg_gemm g;
    int version; /* the version run_kernel launches */
    tg_lt lt;    /* --type fp8's version 0 */
} tg_job;

/* D = A B + 0 x C by cuBLASLt with algorithm algo: reads no C, so none is passed (NULL, as PyTorch's
 * fp8 product passes it). D is our C, or (N not a multiple of 8) the product over all np rows of
 * the padded B (its rows past N are zeros) into a padded D, whose first N columns are then copied
 * into C: on an H100 cuBLASLt's heuristic refused fp8 at N = 1023 and N = 1
 * (CUBLAS_STATUS_NOT_SUPPORTED), with D's rows padded as well, and accepted N = 200, 300, 1016. */
static cublasStatus_t lt_fp8_matmul(const tg_lt *l, const tg_gemm *g, const cublasLtMatmulAlgo_t *algo)
{
    const float one = 1.0f, zero = 0.0f;
    void *d = l->d_padded ? l->d_padded : g->c;
    cublasStatus_t st = cublasLtMatmul(l->lt, l->desc, &one, g->b, l->a, g->a, l->b, &zero, NULL, l->c, d, l->c, algo,
                                       l->workspace, l->workspace_bytes, 0);
    if (st != CUBLAS_STATUS_SUCCESS || !l->d_padded) return st;
    size_t row = (size_t)g->n * 2, padded_row = (size_t)g->np * 2; /* bf16 */
    return cudaMemcpy2DAsync(g->c, row, l->d_padded, padded_row, row, g->m, cudaMemcpyDeviceToDevice, 0) == cudaSuccess
               ? CUBLAS_STATUS_SUCCESS
               : CUBLAS_STATUS_EXECUTION_FAILED;
}

/* fp8: the same TN product by cuBLASLt, A and B e4m3 with their scales' pointers, bf16 out; fast
 * accumulation (each wgmma's sums kept in the tensor cores' fp8 accumulator, as our kernels keep
 * them) so that both sides add the same way */
static void lt_fp8_setup(tg_lt *l, const tg_gemm *g, float scale_a, float scale_b)
{
    CUBLAS_CHECK(cublasLtCreate(&l->lt));
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&l->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    int8_t fast = 1;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    /* each scale in an allocation of its own (aligned as cudaMalloc aligns): cuBLASLt's A is our
     * B, so its A scale is B's */
    CUDA_CHECK(cudaMalloc((void **)&l->scale_a, sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&l->scale_b, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(l->scale_a, &scale_a, sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(l->scale_b, &scale_b, sizeof(float), cudaMemcpyHostToDevice));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &l->scale_b,
                                                sizeof l->scale_b));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &l->scale_a,
                                                sizeof l->scale_a));
    /* column-major, as cuBLASLt sees our row-major buffers: our B (N rows of kp) is its kp x N A,
     * transposed; our A its kp x M B; our C (M rows of N) its N x M D */
    int width = g->n % 8 ? g->np : g->n; /* the padded width where N is not a multiple of 8 */
    if (width != g->n) CUDA_CHECK(cudaMalloc(&l->d_padded, (size_t)width * g->m * 2));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l->a, CUDA_R_8F_E4M3, g->k, width, g->kp));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l->b, CUDA_R_8F_E4M3, g->k, g->m, g->kp));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l->c, CUDA_R_16BF, width, g->m, width));
    l->workspace_bytes = (size_t)32 << 20;
    CUDA_CHECK(cudaMalloc(&l->workspace, l->workspace_bytes));
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &l->workspace_bytes, sizeof l->workspace_bytes));
    /* the heuristic's candidates, best first; the first that runs is version 0 (a candidate may
     * still be refused when run, for what only the call sees: cuBLASLt's own samples try the
     * next one then). Tried once here, outside the timing, on the real buffers. */
    enum { CANDIDATES = 8 };
    cublasLtMatmulHeuristicResult_t found[CANDIDATES];
    int count = 0;
    CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(l->lt, l->desc, l->a, l->b, l->c, l->c, pref, CANDIDATES, found, &count));
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    if (count < 1) lb_die(LB_EXIT_CUDA, "tensor_gemm: cuBLASLt offers no fp8 algorithm for %dx%dx%d", g->m, g->n, g->k);
    cublasStatus_t first = CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < count; i++) {
        cublasStatus_t st = lt_fp8_matmul(l, g, &found[i].algo);
        if (st == CUBLAS_STATUS_SUCCESS) {
            CUDA_CHECK(cudaDeviceSynchronize());
            l->algo = found[i].algo;
            return;
        }
        if (i == 0) first = st;
    }
    lb_die(LB_EXIT_CUDA, "tensor_gemm: cuBLASLt refuses every one of its %d fp8 algorithms for %dx%dx%d (the first: %s)",
           count, g->m, g->n, g->k, cublasGetStatusString(first));
}
static void lt_fp8_free(tg_lt *l)
{
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(l->a));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(l->b));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(l->c));
    CUBLAS_CHECK(cublasLtMatmulDescDestroy(l->desc));
    CUBLAS_CHECK(cublasLtDestroy(l->lt));
    CUDA_CHECK(cudaFree(l->workspace));
    CUDA_CHECK(cudaFree(l->scale_a));
    CUDA_CHECK(cudaFree(l->scale_b));
    CUDA_CHECK(cudaFree(l->d_padded));
}
static cudaError_t run_cublaslt_fp8(tg_job *j)
{
    CUBLAS_CHECK(lt_fp8_matmul(&j->lt, &j->g, &j->lt.algo));
    return cudaGetLastError();
}

/* cuBLAS is column-major: our row-major C (M,N) is its C^T (N,M) = B^T A^T. Our B (N rows of
 * K) is, to cuBLAS, a K x N matrix used transposed ("T"); our A (M rows of K) is a K x M matrix
 * used as is ("N"): the "TN" product, both operands K-major as in the kernels. The leading
 * dimension is the padded kp; m, n and k are the true sizes. */
static cudaError_t run_cublas(void *ctx)
{
    tg_job *j = (tg_job *)ctx;
    if (j->g.type == TG_FP8) return run_cublaslt_fp8(j);
    const float one = 1.0f, zero = 0.0f;
    int bf16 = j->g.type == TG_BF16;
    cudaDataType_t in = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasGemmEx(j->handle, CUBLAS_OP_T, CUBLAS_OP_N, j->g.n, j->g.m, j->g.k, &one, j->g.b, in, j->g.kp,
                              j->g.a, in, j->g.kp, &zero, j->g.c, CUDA_R_32F, j->g.n,
                              bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    return cudaGetLastError();
}

static cudaError_t run_kernel(void *ctx)
{
    tg_job *j = (tg_job *)ctx;
    return tensor_gemm_launch(j->version, &j->g);
}

/* Every version, once (tensor_gemm_kernels.cu has 1-2, tensor_gemm_hopper.cu 3-12, in the same
 * order). To add one: its kernel and launcher with a row in tensor_gemm_kernels.cu's
 * launchers[], TENSOR_GEMM_VERSIONS, and a row here. */
static const lb_version versions[] = {
    {0, "cublas", "cuBLAS GemmEx (fp8: cuBLASLt)", LB_OLDEST_SM, run_cublas},
    {1, "wmma", "wmma, warp per 16x16, global", 80, run_kernel},
    {2, "mma_sync", "mma.sync+ldmatrix, cp.async x2", 80, run_kernel},
    {3, "wgmma_tma", "wgmma 64x256, TMA, 1 stage", 90, run_kernel},
    {4, "warp_spec", "producer + 2 consumers, 4 stages", 90, run_kernel},
    {5, "persistent", "4, persistent, grouped order", 90, run_kernel},
    {6, "multicast", "5, clusters of 2, B multicast", 90, run_kernel},
    {7, "wgmma_queued", "5, next wgmma queued early", 90, run_kernel},
    {8, "mcast_queued", "6 + 7: multicast, wgmma queued", 90, run_kernel},
    {9, "tma_store", "5, C out by TMA stores", 90, run_kernel},
    {10, "hilbert_mcast", "6 + 9, Hilbert order of tiles", 90, run_kernel},
    {11, "stream_k", "9, last wave split along K", 90, run_kernel},
    {12, "pingpong", "consumers' own 128x128 tiles, in turn", 90, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == TENSOR_GEMM_VERSIONS,
               "one row in versions[] per version: TENSOR_GEMM_VERSIONS in tensor_gemm_kernels.h");

static double tflops(int m, int n, int k, double ms) { return 2.0 * m * n * (double)k / (ms * 1e9); }

/* ---------------------------------------------------------------- inputs */

/* fp8's per-tensor scale: the smallest power of two s with amax / s <= 448 (e4m3's largest), so
 * that x / s and code x s are exact in float */
static float fp8_scale(const float *h, size_t n)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(h[i]));
    return amax > 0.0f ? ldexpf(1.0f, (int)ceil(log2(amax / 448.0))) : 1.0f;
}

/* Random values in [-1, 1), rounded to the input type; h holds them as floats for the CPU (fp8:
 * code x scale, the value the codes stand for). Returns the scale (1 but for fp8). */
static float fill_inputs(float *h, size_t n, tg_type type, lb_rng *rng)
{
    lb_fill_uniform(h, n, -1.0f, 1.0f, rng);
    float s = type == TG_FP8 ? fp8_scale(h, n) : 1.0f;
    for (size_t i = 0; i < n; i++)
        h[i] = type == TG_BF16  ? lb_bf16_value(lb_bf16_bits(h[i]))
               : type == TG_FP8 ? lb_e4m3_value(lb_e4m3_bits(h[i] / s)) * s
                                : tf32_value(h[i]);
    return s;
}

/* rows x cols of h into a zeroed device buffer of rows_p x cols_p (bf16 bits, fp32, or the e4m3
 * codes of h / scale), NaN after its end (lb_malloc_guarded): the pads are for reading, what lies
 * past them is not. */
static void *upload_padded(const float *h, int rows, int cols, int rows_p, int cols_p, tg_type type, float scale)
{
    size_t elem = (size_t)tensor_gemm_elem_bytes(type), pitch = elem * (size_t)cols_p;
    void *d;
    CUDA_CHECK(lb_malloc_guarded(&d, pitch * (size_t)rows_p));
    CUDA_CHECK(cudaMemset(d, 0, pitch * (size_t)rows_p)); /* the pads add zero products */
    void *packed = lb_host_alloc(elem * (size_t)rows * cols, "the packed input");
    for (size_t i = 0; i < (size_t)rows * cols; i++) {
        if (type == TG_BF16)
            ((uint16_t *)packed)[i] = lb_bf16_bits(h[i]);
        else if (type == TG_FP8)
            ((uint8_t *)packed)[i] = lb_e4m3_bits(h[i] / scale); /* exact: h is code x scale */
        else
            ((float *)packed)[i] = h[i];
    }
    CUDA_CHECK(cudaMemcpy2D(d, pitch, packed, elem * cols, elem * cols, rows, cudaMemcpyHostToDevice));
    free(packed);
    return d;
}

static int round_up(int x, int to) { return (x + to - 1) / to * to; }

/* C as the GPU wrote it (fp32, or bf16 for fp8) into floats for the checks */
static void c_to_float(float *dst, const void *src, size_t n, tg_type type)
{
    if (tensor_gemm_out_bytes(type) == 4) {
        memcpy(dst, src, sizeof(float) * n);
        return;
    }
    for (size_t i = 0; i < n; i++) dst[i] = lb_bf16_value(((const uint16_t *)src)[i]);
}

/* ---------------------------------------------------------------- checking */

/* A kernel's C against cuBLAS's (both carry rounding error: twice the tolerance), and against
 * the CPU too when the full reference exists. */
static lb_check check_version(const char *name, const float *got, const float *h_cublas, const float *h_cpu, size_t c_n,
                              tg_type type, int K, int quiet)
{
    double tol = tol_abs(type, K), rel = tol_rel(type);
    lb_check c = lb_check_f32(name, got, h_cublas, c_n, 2 * tol, 2 * rel, quiet);
    if (h_cpu) c.n_bad += lb_check_f32("vs CPU", got, h_cpu, c_n, tol, rel, quiet).n_bad;
    return c;
}

/* ---------------------------------------------------------------- main */

static const lb_program program_template = {
    .name = "tensor_gemm",
    .synopsis = "C = A B on the tensor cores (bf16, tf32 or fp8 in, fp32 out; bf16 for fp8): wmma, mma.sync, wgmma + TMA vs cuBLAS",
    .details = "--size is N (square) or M,N,K. A is row-major, B column-major (both K-major), C row-major.\n"
               "Versions 3-12 use sm_90a's wgmma and TMA: they need an H100/H200 (the sm_90 above) and a build\n"
               "for it; a build for any other GPU, a newer one too, leaves them out. 2 is bf16 only.\n"
               "--type fp8: e4m3 inputs with a power-of-two scale a tensor, C in bf16, versions 0 (cuBLASLt) and 3-12.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .versions = versions,
    .n_versions = TENSOR_GEMM_VERSIONS,
};

int main(int argc, char **argv)
{
    /* ---- setup: arguments, GPU, cuBLAS, inputs */
    const char *type_arg = "bf16"; /* the program's own flag */
    const lb_opt options[] = {
        {"--type", LB_OPT_STRING, &type_arg, "bf16, tf32 or fp8 (e4m3): the inputs' format"},
    };
    lb_program program = program_template;
    program.opts = options, program.n_opts = sizeof options / sizeof options[0];
    lb_args args = {.size = {{4096}, 1}, .max_size_dims = 3, .iters = 10, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    int M, N, K;
    lb_size_mnk(&program, &args, &M, &N, &K);
    tg_type type;
    if (!strcmp(type_arg, "bf16"))
        type = TG_BF16;
    else if (!strcmp(type_arg, "tf32"))
        type = TG_TF32;
    else if (!strcmp(type_arg, "fp8"))
        type = TG_FP8;
    else
        lb_usage_error(&program, "--type must be bf16, tf32 or fp8 (got '%s')", type_arg);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    if (type == TG_FP8 && gpu.cc < 89)
        lb_die(LB_EXIT_USAGE, "tensor_gemm: --type fp8 needs fp8 tensor cores (sm_89 or later); this GPU is %s",
               gpu.sm);
    tg_job job = {.g = {.type = type, .m = M, .n = N, .k = K}};
    job.g.mp = round_up(M, TENSOR_GEMM_PAD_MN), job.g.np = round_up(N, TENSOR_GEMM_PAD_MN);
    job.g.kp = round_up(K, tensor_gemm_pad_k(type));
    size_t elem = (size_t)tensor_gemm_elem_bytes(type), c_n = (size_t)M * N;
    size_t c_bytes = (size_t)tensor_gemm_out_bytes(type) * c_n;
    lb_require_device_memory(elem * ((size_t)job.g.mp + job.g.np) * job.g.kp + c_bytes, "the matrices");
    CUBLAS_CHECK(cublasCreate(&job.handle));
    if (!args.quiet)
        printf("tensor_gemm: C = A B, %s in, fp32 accumulate, %s out, M=%d N=%d K=%d, %s (%s), seed %llu\n", type_arg,
               type == TG_FP8 ? "bf16" : "fp32", M, N, K, gpu.prop.name, gpu.sm, args.seed);

    if (!args.quiet) {
        tg_shape w = tensor_gemm_shape(4, type);
        printf("versions 4-10: %dx%dx%d block tiles, %d threads, %d stages (%d KiB of shared memory); inputs padded "
               "to %dx%dx%d\n",
               w.tile_m, w.tile_n, w.tile_k, w.threads, w.stages, w.smem_bytes / 1024, job.g.mp, job.g.np, job.g.kp);
    }
    float *h_a = lb_host_alloc(sizeof(float) * (size_t)M * K, "A"),
          *h_b = lb_host_alloc(sizeof(float) * (size_t)N * K, "B");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    float scale_a = fill_inputs(h_a, (size_t)M * K, type, &rng), scale_b = fill_inputs(h_b, (size_t)N * K, type, &rng);
    job.g.a = upload_padded(h_a, M, K, job.g.mp, job.g.kp, type, scale_a);
    job.g.b = upload_padded(h_b, N, K, job.g.np, job.g.kp, type, scale_b);
    job.g.alpha = scale_a * scale_b; /* a power of two: exact */
    CUDA_CHECK(cudaMalloc(&job.g.c, c_bytes));
    if (type == TG_FP8) lt_fp8_setup(&job.lt, &job.g, scale_a, scale_b); /* tries its algorithm on C */
    CUDA_CHECK(tensor_gemm_prepare(&job.g)); /* tensor maps: made once, outside the timing */
    float *h_cublas = lb_host_alloc(sizeof(float) * c_n, "cuBLAS's C"), *h_c = lb_host_alloc(sizeof(float) * c_n, "C");
    void *h_out = lb_host_alloc(c_bytes, "C as the GPU wrote it");
    lb_gemm gemm = {h_a, h_b, M, N, K, LB_B_N_BY_K};
    float *h_cpu = lb_gemm_reference(&gemm); /* NULL when too large */

    char sz[64];
    snprintf(sz, sizeof sz, "%dx%dx%d%s", M, N, K, type == TG_TF32 ? "_tf32" : type == TG_FP8 ? "_fp8" : ""); /* its own bench table */
    lb_report rep = lb_report_vs_cublas(&program, &args);
    lb_report_table(&rep, sz, NULL);

    /* ---- check and time each version; cuBLAS (version 0) always, first: checked against the
     * CPU, its C is then the reference for every kernel, and its time the baseline */
    for (int v = 0; v < TENSOR_GEMM_VERSIONS; v++) {
        if (v > 0 && !lb_version_runs(&program, &args, &gpu, v, tensor_gemm_unavailable(v, type, N))) continue;
        job.version = v;
        lb_poison_device(job.g.c, c_bytes); /* NaN (fp32 and bf16 alike): an element never written fails */
        CUDA_CHECK(versions[v].run(&job));
        CUDA_CHECK(cudaMemcpy(h_out, job.g.c, c_bytes, cudaMemcpyDeviceToHost));
        c_to_float(v == 0 ? h_cublas : h_c, h_out, c_n, type);
        lb_check c = v == 0
                         ? lb_gemm_check("cublas vs CPU", h_cublas, &gemm, h_cpu, tol_abs(type, K), tol_rel(type), &rng, args.quiet)
                         : check_version(versions[v].name, h_c, h_cublas, h_cpu, c_n, type, K, args.quiet);
        float ms = args.check_only ? 0.0f : lb_time_ms(versions[v].run, &job, 2, args.iters);
        char verdict[96];
        lb_report_row(&rep, v, NULL, ms, tflops(M, N, K, ms), c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
    }

    tensor_gemm_release(&job.g);
    if (type == TG_FP8) lt_fp8_free(&job.lt);
    CUBLAS_CHECK(cublasDestroy(job.handle));
    CUDA_CHECK(cudaFree((void *)job.g.a));
    CUDA_CHECK(cudaFree((void *)job.g.b));
    CUDA_CHECK(cudaFree(job.g.c));
    free(h_a);
    free(h_b);
    free(h_cublas);
    free(h_c);
    free(h_out);
    free(h_cpu);
    return lb_report_finish(&rep);
}
