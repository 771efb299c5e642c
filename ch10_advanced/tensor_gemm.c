/* tensor_gemm.c - C = A B on the tensor cores: wmma, mma.sync, then wgmma fed by TMA, vs cuBLAS.
 *
 *   A is (M,K) row-major, B is (K,N) column-major, C is (M,N) row-major; A and B bf16 (or fp32
 *   used as tf32 with --type tf32), accumulated and written in fp32. Default M = N = K = 4096.
 *   build: make ch10      run: ./tensor_gemm [version] [--size N | --size M,N,K] [--type tf32]
 *
 * versions: the table versions[] below (0 cuBLAS, 1 wmma, 2 mma.sync, 3 wgmma + TMA, 4 warp-
 * specialised, 5 persistent, 6 clusters with TMA multicast, 7 wgmma kept queued, 8 both 6 and
 * 7, 9 C out through shared memory by TMA stores), listed by ./tensor_gemm --help;
 * the kernels, in the same order, are in tensor_gemm_kernels.cu. 3-9 need an H100/H200 and a
 * build for sm_90 (the default without a GPU, or on one).
 *
 * The inputs are drawn in [-1, 1) and rounded to bf16 (or tf32) here, so the GPU multiplies
 * exactly the numbers the CPU reference does and every product is exact in fp32: what differs
 * is only how K products are summed. The CPU sums in double.
 * Tolerance: |got - want| <= K 2^-20 + 2^-16 |want|. Summing K terms of size <= 1 in fp32
 * rounds about K times by at most 2^-24 |partial sum|; K 2^-20 leaves room for the tensor
 * cores' own order and truncation, while one lost 16-deep k step (an error near 2) fails.
 * Buffers: A and B are zero-padded to whole tiles (tensor_gemm_kernels.h); C is exactly (M,N).
 */
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

/* ---------------------------------------------------------------- the versions */

typedef struct {
    cublasHandle_t handle;
    tg_gemm g;
    int version; /* the version run_kernel launches */
} tg_job;

/* cuBLAS is column-major: our row-major C (M,N) is its C^T (N,M) = B^T A^T. Our B (N rows of
 * K) is, to cuBLAS, a K x N matrix used transposed ("T"); our A (M rows of K) is a K x M matrix
 * used as is ("N"): the "TN" product, both operands K-major as in the kernels. The leading
 * dimension is the padded kp; m, n and k are the true sizes. */
static cudaError_t run_cublas(void *ctx)
{
    tg_job *j = (tg_job *)ctx;
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

/* Every version, once (tensor_gemm_kernels.cu has 1-2, tensor_gemm_hopper.cu 3-9, in the same
 * order). To add one: its kernel and launcher with a row in tensor_gemm_kernels.cu's
 * launchers[], TENSOR_GEMM_VERSIONS, and a row here. */
static const lb_version versions[] = {
    {0, "cublas", "cuBLAS GemmEx (bf16/tf32)", LB_OLDEST_SM, run_cublas},
    {1, "wmma", "wmma, warp per 16x16, global", 80, run_kernel},
    {2, "mma_sync", "mma.sync+ldmatrix, cp.async x2", 80, run_kernel},
    {3, "wgmma_tma", "wgmma 64x256, TMA, 1 stage", 90, run_kernel},
    {4, "warp_spec", "producer + 2 consumers, 4 stages", 90, run_kernel},
    {5, "persistent", "4, persistent, grouped order", 90, run_kernel},
    {6, "multicast", "5, clusters of 2, B multicast", 90, run_kernel},
    {7, "wgmma_queued", "5, next wgmma queued early", 90, run_kernel},
    {8, "mcast_queued", "6 + 7: multicast, wgmma queued", 90, run_kernel},
    {9, "tma_store", "5, C out by TMA stores", 90, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == TENSOR_GEMM_VERSIONS,
               "one row in versions[] per version: TENSOR_GEMM_VERSIONS in tensor_gemm_kernels.h");

static double tflops(int m, int n, int k, double ms) { return 2.0 * m * n * (double)k / (ms * 1e9); }

/* ---------------------------------------------------------------- inputs */

/* Random values in [-1, 1), rounded to the input type; h holds them as floats for the CPU. */
static void fill_inputs(float *h, size_t n, tg_type type, lb_rng *rng)
{
    lb_fill_uniform(h, n, -1.0f, 1.0f, rng);
    for (size_t i = 0; i < n; i++) h[i] = type == TG_BF16 ? lb_bf16_value(lb_bf16_bits(h[i])) : tf32_value(h[i]);
}

/* rows x cols of h into a zeroed device buffer of rows_p x cols_p (bf16 bits or fp32), NaN after
 * its end (lb_malloc_guarded): the pads are for reading, what lies past them is not. */
static void *upload_padded(const float *h, int rows, int cols, int rows_p, int cols_p, tg_type type)
{
    size_t elem = type == TG_BF16 ? 2 : 4, pitch = elem * (size_t)cols_p;
    void *d;
    CUDA_CHECK(lb_malloc_guarded(&d, pitch * (size_t)rows_p));
    CUDA_CHECK(cudaMemset(d, 0, pitch * (size_t)rows_p)); /* the pads add zero products */
    void *packed = lb_host_alloc(elem * (size_t)rows * cols, "the packed input");
    for (size_t i = 0; i < (size_t)rows * cols; i++) {
        if (type == TG_BF16)
            ((uint16_t *)packed)[i] = lb_bf16_bits(h[i]);
        else
            ((float *)packed)[i] = h[i];
    }
    CUDA_CHECK(cudaMemcpy2D(d, pitch, packed, elem * cols, elem * cols, rows, cudaMemcpyHostToDevice));
    free(packed);
    return d;
}

static int round_up(int x, int to) { return (x + to - 1) / to * to; }

/* ---------------------------------------------------------------- checking */

/* A kernel's C against cuBLAS's (both carry rounding error: twice the tolerance), and against
 * the CPU too when the full reference exists. */
static lb_check check_version(const char *name, const float *got, const float *h_cublas, const float *h_cpu, size_t c_n,
                              int K, int quiet)
{
    lb_check c = lb_check_f32(name, got, h_cublas, c_n, 2 * abs_tol(K), 2 * REL_TOL, quiet);
    if (h_cpu) c.n_bad += lb_check_f32("vs CPU", got, h_cpu, c_n, abs_tol(K), REL_TOL, quiet).n_bad;
    return c;
}

/* ---------------------------------------------------------------- main */

static const lb_program program_template = {
    .name = "tensor_gemm",
    .synopsis = "C = A B on the tensor cores (bf16 or tf32 in, fp32 out): wmma, mma.sync, wgmma + TMA vs cuBLAS",
    .details = "--size is N (square) or M,N,K. A is row-major, B column-major (both K-major), C row-major.\n"
               "Versions 3-9 use sm_90a's wgmma and TMA: they need an H100/H200 (the sm_90 above) and a build\n"
               "for it; a build for any other GPU, a newer one too, leaves them out. 2 is bf16 only.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .versions = versions,
    .n_versions = TENSOR_GEMM_VERSIONS,
};

int main(int argc, char **argv)
{
    /* ---- setup: arguments, GPU, cuBLAS, inputs */
    const char *type_arg = "bf16"; /* the program's own flag */
    const lb_opt options[] = {
        {"--type", LB_OPT_STRING, &type_arg, "bf16 or tf32: the inputs' format"},
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
    else
        lb_usage_error(&program, "--type must be bf16 or tf32 (got '%s')", type_arg);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    tg_job job = {.g = {.type = type, .m = M, .n = N, .k = K}};
    job.g.mp = round_up(M, TENSOR_GEMM_PAD_MN), job.g.np = round_up(N, TENSOR_GEMM_PAD_MN);
    job.g.kp = round_up(K, TENSOR_GEMM_PAD_K);
    size_t elem = type == TG_BF16 ? 2 : 4, c_n = (size_t)M * N;
    lb_require_device_memory(elem * ((size_t)job.g.mp + job.g.np) * job.g.kp + sizeof(float) * c_n, "the matrices");
    CUBLAS_CHECK(cublasCreate(&job.handle));
    if (!args.quiet)
        printf("tensor_gemm: C = A B, %s in, fp32 accumulate and out, M=%d N=%d K=%d, %s (%s), seed %llu\n", type_arg,
               M, N, K, gpu.prop.name, gpu.sm, args.seed);

    if (!args.quiet) {
        tg_shape w = tensor_gemm_shape(4, type);
        printf("versions 4-9: %dx%dx%d block tiles, %d threads, %d stages (%d KiB of shared memory); inputs padded "
               "to %dx%dx%d\n",
               w.tile_m, w.tile_n, w.tile_k, w.threads, w.stages, w.smem_bytes / 1024, job.g.mp, job.g.np, job.g.kp);
    }
    float *h_a = lb_host_alloc(sizeof(float) * (size_t)M * K, "A"),
          *h_b = lb_host_alloc(sizeof(float) * (size_t)N * K, "B");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    fill_inputs(h_a, (size_t)M * K, type, &rng);
    fill_inputs(h_b, (size_t)N * K, type, &rng);
    job.g.a = upload_padded(h_a, M, K, job.g.mp, job.g.kp, type);
    job.g.b = upload_padded(h_b, N, K, job.g.np, job.g.kp, type);
    CUDA_CHECK(cudaMalloc((void **)&job.g.c, sizeof(float) * c_n));
    CUDA_CHECK(tensor_gemm_prepare(&job.g)); /* tensor maps: made once, outside the timing */
    float *h_cublas = lb_host_alloc(sizeof(float) * c_n, "cuBLAS's C"), *h_c = lb_host_alloc(sizeof(float) * c_n, "C");
    lb_gemm gemm = {h_a, h_b, M, N, K, LB_B_N_BY_K};
    float *h_cpu = lb_gemm_reference(&gemm); /* NULL when too large */

    char sz[64];
    snprintf(sz, sizeof sz, "%dx%dx%d%s", M, N, K, type == TG_TF32 ? "_tf32" : ""); /* its own bench table */
    lb_report rep = lb_report_vs_cublas(&program, &args);
    lb_report_table(&rep, sz, NULL);

    /* ---- check and time each version; cuBLAS (version 0) always, first: checked against the
     * CPU, its C is then the reference for every kernel, and its time the baseline */
    for (int v = 0; v < TENSOR_GEMM_VERSIONS; v++) {
        if (v > 0 && !lb_version_runs(&program, &args, &gpu, v, tensor_gemm_unavailable(v, type, N))) continue;
        job.version = v;
        lb_poison_device(job.g.c, sizeof(float) * c_n); /* NaN: an element never written fails */
        CUDA_CHECK(versions[v].run(&job));
        CUDA_CHECK(cudaMemcpy(v == 0 ? h_cublas : h_c, job.g.c, sizeof(float) * c_n, cudaMemcpyDeviceToHost));
        lb_check c = v == 0
                         ? lb_gemm_check("cublas vs CPU", h_cublas, &gemm, h_cpu, abs_tol(K), REL_TOL, &rng, args.quiet)
                         : check_version(versions[v].name, h_c, h_cublas, h_cpu, c_n, K, args.quiet);
        float ms = args.check_only ? 0.0f : lb_time_ms(versions[v].run, &job, 2, args.iters);
        char verdict[96];
        lb_report_row(&rep, v, NULL, ms, tflops(M, N, K, ms), c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
    }

    tensor_gemm_release(&job.g);
    CUBLAS_CHECK(cublasDestroy(job.handle));
    CUDA_CHECK(cudaFree((void *)job.g.a));
    CUDA_CHECK(cudaFree((void *)job.g.b));
    CUDA_CHECK(cudaFree(job.g.c));
    free(h_a);
    free(h_b);
    free(h_cublas);
    free(h_c);
    free(h_cpu);
    return lb_report_finish(&rep);
}
