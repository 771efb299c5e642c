/* attention_backward.c - the gradients of attention, dQ, dK and dV from dO, on the GPU, against
 * the CPU in double and the library way.
 *
 *   O = softmax(Q K^T / sqrt(D)) V (attention.c's forward) for B batches of H heads, S x D each,
 *   bf16 in and out, fp32 arithmetic. A training step needs, given the loss's gradient dO, the
 *   gradients of Q, K and V: with P recomputed from the forward's log-sum-exp of each row,
 *   dP = dO V^T, delta = rowsum(dO o O) and dS = P o (dP - delta) / sqrt(D), they are dV = P^T dO,
 *   dQ = dS K and dK = dS^T Q. Causal: only the pairs the forward saw.
 *   build: make ch11 (or `make` here)
 *   run:   ./attention_backward [version] [--size S] [--batch B] [--heads H] [--dim D] [--causal]
 *
 * versions: the table versions[] below (0 cuBLAS around our row kernel, 1 flash in fp32 on the
 * CUDA cores, 2 flash with mma.sync, 3 with wgmma on sm_90a, 4 FlashAttention-3's backward), listed by ./attention_backward --help; the kernels are in
 * attention_backward_kernels.cu and attention_backward_hopper.cu. A program of its own rather than a mode of ./attention: its own
 * version table, its own inputs (dO) and checks, and the forward it needs is attention's, linked
 * in (attention_kernels.cu, run once with its log-sum-exps before the versions). TFLOP/s counts
 * 2.5 times the forward's 4 B H S^2 D (halved when causal): the five S x S x D products of a
 * backward pass against the forward's two, as PyTorch's and FlashAttention's benchmarks count.
 * Checked: every element of dQ, dK and dV of whole heads (all of them when the CPU can afford it,
 * else the first and the last) against the CPU in double, within a bound from the bf16 and fp32
 * arithmetic (attention_cpu.c); and, where version 0 ran, every element against version 0's.
 */
#include <cublas_v2.h> /* before labbook.h: CUBLAS_CHECK */
#include "labbook.h"
#include "attention_kernels.h"
#include "attention_backward_kernels.h"
#include "attention_cpu.h" /* the CPU reference and the bound (host-only: tests/emu uses them too) */

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- the versions */

typedef struct {
    attention_bwd_problem p;
    int version; /* the version run_kernel launches */
    cublasHandle_t handle;
    float *s, *dp;     /* version 0: B H S x S scaled logits and dO V^T */
    uint16_t *P, *dS;  /* version 0: P and dS in bf16 */
} attention_bwd_job;

/* Version 0, the library way: per head, S = Q K^T / sqrt(D) and dP = dO V^T by strided-batched
 * cuBLAS products over all B H heads (fp32, B H S^2 floats each), delta and our row kernel (P
 * from S and the log-sum-exps, dS = P (dP - delta) / sqrt(D), both bf16), then dV = P^T dO,
 * dQ = dS K and dK = dS^T Q by three more products. cuBLAS is column-major: a row-major X (rows x
 * cols) is its col-major X^T, so S^T = K Q^T, dP^T = V dO^T, dV^T = dO^T P, dQ^T = K^T dS^T and
 * dK^T = Q^T dS. Every product computes every element, causal or not. */
static cudaError_t run_library(void *ctx)
{
    attention_bwd_job *j = (attention_bwd_job *)ctx;
    const attention_bwd_problem *p = &j->p;
    int S = p->seq, D = p->dim, heads = p->batch * p->heads;
    long long hd = (long long)S * D, ss = (long long)S * S;
    const float scale = (float)(1.0 / sqrt((double)D)), one = 1.0f, zero = 0.0f;
    cublasHandle_t h = j->handle;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, S, S, D, &scale, p->k, CUDA_R_16BF, D, hd,
                                            p->q, CUDA_R_16BF, D, hd, &zero, j->s, CUDA_R_32F, S, ss, heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, S, S, D, &one, p->v, CUDA_R_16BF, D, hd,
                                            p->d_o, CUDA_R_16BF, D, hd, &zero, j->dp, CUDA_R_32F, S, ss, heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    cudaError_t e = attention_bwd_delta_launch(p);
    if (e == cudaSuccess)
        e = attention_bwd_rows_launch(j->s, j->dp, p->lse, p->delta, j->P, j->dS, (long long)heads * S, S, D, p->causal);
    if (e != cudaSuccess) return e;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, D, S, S, &one, p->d_o, CUDA_R_16BF, D, hd,
                                            j->P, CUDA_R_16BF, S, ss, &zero, p->dv, CUDA_R_16BF, D, hd, heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, D, S, S, &one, p->k, CUDA_R_16BF, D, hd,
                                            j->dS, CUDA_R_16BF, S, ss, &zero, p->dq, CUDA_R_16BF, D, hd, heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, D, S, S, &one, p->q, CUDA_R_16BF, D, hd,
                                            j->dS, CUDA_R_16BF, S, ss, &zero, p->dk, CUDA_R_16BF, D, hd, heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return cudaGetLastError();
}

static cudaError_t run_kernel(void *ctx)
{
    attention_bwd_job *j = (attention_bwd_job *)ctx;
    return attention_bwd_launch(j->version, &j->p);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. To add one: its kernel
 * and launcher in attention_backward_kernels.cu with a row in its launchers[],
 * ATTENTION_BWD_VERSIONS, and a row here. */
static const lb_version versions[] = {
    {0, "cublas", "cuBLAS, S and dP in memory, our rows", 80, run_library},
    {1, "flash_simt", "flash, fp32 CUDA cores, dQ by atomics", LB_OLDEST_SM, run_kernel},
    {2, "flash_mma", "flash, mma.sync bf16, dQ by atomics", 80, run_kernel},
    {3, "flash_wgmma", "flash, wgmma bf16, one warpgroup", 90, run_kernel},
    {4, "flash_fa3", "flash, wgmma, TMA producer, 2 consumers", 90, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == ATTENTION_BWD_VERSIONS,
               "one row in versions[] per version: ATTENTION_BWD_VERSIONS in attention_backward_kernels.h");

/* ---------------------------------------------------------------- inputs and checks */

/* The CPU's gradients of the checked heads: every head when that costs at most ~2^30
 * multiply-adds, else the first and the last; whole heads (every element of dQ, dK and dV) while
 * two cost at most ~2^34, and past that dQ alone on a random row in every band of 64 queries of
 * the two heads and each head's first row (a row of dQ needs only its own row of P: O(S D), where
 * dK and dV need every row's), with dK and dV then held to version 0's, which runs as the
 * reference (bwd_reference.whole 0). Each element's bound takes the head's worst logit error, from
 * its rows' forward in double. */
#define BWD_CHECK_BAND 64
typedef struct {
    int whole;                  /* 1: whole heads; 0: dQ rows (rows[]) only */
    size_t seq;                 /* S */
    size_t n_heads, *heads;     /* which heads */
    size_t n_rows;              /* rows checked a head: S when whole */
    int *rows;                  /* whole 0: the rows of dQ checked in each head */
    double *want[3], *bound[3]; /* dQ, dK, dV: n_heads x n_rows x D each (dK, dV only when whole) */
} bwd_reference;

/* which heads are checked (*n_heads: all, or 2), and whether whole */
static void check_plan(size_t S, size_t D, size_t heads, int causal, size_t *n_heads, int *whole)
{
    double per_head = 6.0 * (double)S * (causal ? S / 2.0 + 1 : (double)S) * (double)D;
    *n_heads = per_head * (double)heads <= 1073741824.0 || heads == 1 ? heads : 2;
    *whole = per_head * (double)*n_heads <= 17179869184.0;
}

static bwd_reference reference_heads(const attention_cpu_inputs *in, const float *d_o, unsigned long long seed)
{
    size_t S = (size_t)in->seq, D = (size_t)in->dim, hn = S * D, heads = (size_t)in->batch * in->heads;
    bwd_reference r = {0};
    r.seq = S;
    check_plan(S, D, heads, in->causal, &r.n_heads, &r.whole);
    r.heads = lb_host_alloc(sizeof(size_t) * r.n_heads, "the checked heads");
    for (size_t t = 0; t < r.n_heads; t++) r.heads[t] = r.n_heads == heads ? t : t * (heads - 1);
    r.n_rows = S;
    if (!r.whole) { /* a random row in each band of 64, and row 0 */
        size_t bands = (S + BWD_CHECK_BAND - 1) / BWD_CHECK_BAND;
        r.rows = lb_host_alloc(sizeof(int) * (bands + 1), "the checked rows");
        lb_rng rng;
        lb_rng_seed(&rng, seed);
        r.n_rows = 0;
        for (size_t b = 0; b < bands; b++) {
            size_t first = b * BWD_CHECK_BAND, len = S - first < BWD_CHECK_BAND ? S - first : BWD_CHECK_BAND;
            int i = (int)(first + lb_rng_next(&rng) % len);
            if (b == 0 && i != 0) r.rows[r.n_rows++] = 0;
            r.rows[r.n_rows++] = i;
        }
    }
    size_t rn = r.n_rows * D; /* a head's checked elements of each gradient */
    for (int g = 0; g < (r.whole ? 3 : 1); g++) {
        r.want[g] = lb_host_alloc(sizeof(double) * r.n_heads * rn, "the reference gradients");
        r.bound[g] = lb_host_alloc(sizeof(double) * r.n_heads * rn, "their bounds");
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t t = 0; t < r.n_heads; t++) {
        size_t h = r.heads[t];
        double *mag = malloc(sizeof(double) * 3 * hn), *lse = malloc(sizeof(double) * S),
               *scratch = malloc(sizeof(double) * 2 * S), *o = malloc(sizeof(double) * D),
               *m = malloc(sizeof(double) * D), *s = malloc(sizeof(double) * S);
        if (!mag || !lse || !scratch || !o || !m || !s)
            lb_die(LB_EXIT_USAGE, "attention_backward: out of host memory for the CPU reference");
        double worst = 0.0, err;
        for (size_t i = 0; i < S; i++) {
            attention_row_cpu(in, h * S + i, o, m, &err, s, NULL);
            worst = fmax(worst, err);
        }
        if (r.whole)
            attention_backward_head_cpu(in, d_o + h * hn, h, r.want[0] + t * rn, r.want[1] + t * rn,
                                        r.want[2] + t * rn, lse, scratch, mag);
        else
            attention_backward_dq_rows_cpu(in, d_o + h * hn, h, r.rows, (int)r.n_rows, r.want[0] + t * rn, mag,
                                           scratch);
        for (int g = 0; g < (r.whole ? 3 : 1); g++)
            for (size_t e = 0; e < rn; e++)
                r.bound[g][t * rn + e] =
                    attention_backward_bound(r.want[g][t * rn + e], mag[g * hn + e], worst, in->dim, in->seq);
        free(mag), free(lse), free(scratch), free(o), free(m), free(s);
    }
    return r;
}

typedef struct {
    const double *bound;
} bound_ctx;
static double bound_of(size_t i, const void *ctx) { return ((const bound_ctx *)ctx)->bound[i]; }

static const char *grad_names[3] = {"dQ", "dK", "dV"};

/* A version's gradients (bf16 bits, all of them copied back) on the checked heads: every element,
 * or dQ's checked rows */
static lb_check check_heads(uint16_t *const got_bits[3], const bwd_reference *r, size_t dim, int quiet)
{
    lb_check all = {0};
    size_t rn = r->n_rows * dim, hn = r->seq * dim;
    float *got = lb_host_alloc(sizeof(float) * r->n_heads * rn, "the checked elements"),
          *want = lb_host_alloc(sizeof(float) * r->n_heads * rn, "");
    for (int g = 0; g < (r->whole ? 3 : 1); g++) {
        for (size_t t = 0; t < r->n_heads; t++)
            for (size_t e = 0; e < rn; e++) {
                size_t row = r->whole ? e / dim : (size_t)r->rows[e / dim];
                got[t * rn + e] = lb_bf16_value(got_bits[g][r->heads[t] * hn + row * dim + e % dim]);
                want[t * rn + e] = (float)r->want[g][t * rn + e];
            }
        bound_ctx b = {r->bound[g]};
        lb_check c = lb_check_f32_bound(grad_names[g], got, want, r->n_heads * rn, bound_of, &b, quiet);
        all.n_bad += c.n_bad;
        all.max_abs_err = fmax(all.max_abs_err, c.max_abs_err);
    }
    free(got);
    free(want);
    return all;
}

/* Every element against version 0's: both carry their own roundings; twice the largest bound the
 * checked heads saw, and 2^-7 of the value */
static lb_check check_vs_library(uint16_t *const got_bits[3], uint16_t *const lib_bits[3], size_t n, double atol,
                                 int quiet)
{
    lb_check all = {0};
    float *got = lb_host_alloc(sizeof(float) * n, "a gradient"), *want = lb_host_alloc(sizeof(float) * n, "");
    for (int g = 0; g < 3; g++) {
        for (size_t i = 0; i < n; i++) got[i] = lb_bf16_value(got_bits[g][i]), want[i] = lb_bf16_value(lib_bits[g][i]);
        char what[32];
        snprintf(what, sizeof what, "%s vs version 0", grad_names[g]);
        lb_check c = lb_check_f32(what, got, want, n, atol, 0x1.0p-7, quiet);
        all.n_bad += c.n_bad;
        all.max_abs_err = fmax(all.max_abs_err, c.max_abs_err);
    }
    free(got);
    free(want);
    return all;
}

/* ---------------------------------------------------------------- main */

/* the program's own flags, with their defaults */
typedef struct {
    long long batch, heads, dim;
    int causal;
    double amplitude;
} bwd_options;

static const lb_program program_template = {
    .name = "attention_backward",
    .synopsis = "dQ, dK, dV of O = softmax(Q K^T / sqrt(D)) V from dO, bf16 in and out: cuBLAS with S and dP in "
                "memory, flash on the CUDA cores, with mma.sync and with wgmma",
    .details = "--size is S, the sequence length (default 1024, at most 65536). Q, K, V and dO uniform (Q and K in\n"
               "[-amplitude, amplitude], V and dO in [-1, 1]); O and the log-sum-exps from attention's forward.\n"
               "Version 0 writes 12 bytes a score (S, dP, P, dS): B H S^2 of each.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .versions = versions,
    .n_versions = ATTENTION_BWD_VERSIONS,
};

/* The forward that gives O and the log-sum-exps: the fastest version this GPU runs (attention's
 * own checks hold it to the CPU), once, outside any timing */
static void run_forward(attention_problem *f, const lb_gpu *gpu)
{
    int best = 2;
    if (gpu->prop.major >= 8) best = 3;
    if (!attention_unavailable(5)) best = 5;
    CUDA_CHECK(attention_prepare(f));
    CUDA_CHECK(attention_launch(best, f));
    CUDA_CHECK(cudaDeviceSynchronize());
    attention_release(f);
}

int main(int argc, char **argv)
{
    /* ---- setup: arguments (checked before the GPU is touched), GPU, cuBLAS, inputs */
    bwd_options o = {.batch = 4, .heads = 16, .dim = 128, .causal = 0, .amplitude = 2.0};
    const lb_opt opts[] = {
        {"--batch", LB_OPT_I64, &o.batch, "B, sequences in the batch"},
        {"--heads", LB_OPT_I64, &o.heads, "H, heads"},
        {"--dim", LB_OPT_I64, &o.dim, "D, a head's dimension: 64 or 128"},
        {"--causal", LB_OPT_FLAG, &o.causal, "query i sees keys 0..i only"},
        {"--amplitude", LB_OPT_DOUBLE, &o.amplitude, "Q and K uniform in [-value, value] (logits' spread value^2 / 3)"},
    };
    lb_program program = program_template;
    program.opts = opts, program.n_opts = sizeof opts / sizeof opts[0];
    lb_args args = {.size = {{1024}, 1}, .max_size_dims = 1, .iters = 10, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    long long seq = args.size.v[0];
    if (seq < 1 || seq > ATTENTION_MAX_SEQ)
        lb_usage_error(&program, "--size: S must be 1..%d (got %lld)", ATTENTION_MAX_SEQ, seq);
    if (o.dim != 64 && o.dim != 128) lb_usage_error(&program, "--dim must be 64 or 128 (got %lld)", o.dim);
    if (o.batch < 1 || o.heads < 1 || o.batch * o.heads > 65535)
        lb_usage_error(&program, "--batch and --heads must be positive, B x H at most 65535 (got %lld x %lld)", o.batch,
                       o.heads);
    if (!(o.amplitude > 0.0 && o.amplitude <= 100.0)) lb_usage_error(&program, "--amplitude must be in (0, 100]");
    size_t heads = (size_t)(o.batch * o.heads), n = heads * (size_t)seq * (size_t)o.dim, rows = heads * (size_t)seq;
    if (n > ((size_t)1 << 31)) lb_usage_error(&program, "B x H x S x D must be at most 2^31 (got %zu)", n);
    size_t checked_heads;
    int whole;
    check_plan((size_t)seq, (size_t)o.dim, heads, o.causal, &checked_heads, &whole);
    /* past whole heads on the CPU, version 0's dK and dV are the reference: it runs in any case */
    int run_library_version = args.version <= 0 || !whole;
    size_t scores = run_library_version ? heads * (size_t)seq * (size_t)seq : 0;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    if (!whole && gpu.prop.major < 8)
        lb_usage_error(&program, "at S = %lld dK and dV are checked against version 0, which needs sm_80 or newer", seq);
    lb_require_device_memory(2 * 8 * n + 4 * n + 8 * rows + 12 * scores,
                             run_library_version ? "the tensors and version 0's S, dP, P and dS" : "the tensors");
    if (!args.quiet)
        printf("attention_backward: dQ, dK, dV from dO, bf16, B=%lld H=%lld S=%lld D=%lld%s, Q and K in [-%g, %g], "
               "%s (%s), seed %llu\n",
               o.batch, o.heads, seq, o.dim, o.causal ? ", causal" : "", o.amplitude, o.amplitude, gpu.prop.name, gpu.sm,
               args.seed);

    /* Q, K, V, dO: made on the host (their values kept for the CPU), NaN after their ends */
    uint16_t *h_bits = lb_host_alloc(2 * n, "an input's bits"), *d_in[4];
    float *h_in[4];
    const char *in_names[4] = {"Q", "K", "V", "dO"};
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    for (int t = 0; t < 4; t++) {
        h_in[t] = lb_host_alloc(4 * n, in_names[t]);
        lb_bf16_uniform(h_bits, h_in[t], n, t < 2 ? (float)o.amplitude : 1.0f, &rng);
        CUDA_CHECK(lb_malloc_guarded((void **)&d_in[t], 2 * n));
        CUDA_CHECK(cudaMemcpy(d_in[t], h_bits, 2 * n, cudaMemcpyHostToDevice));
    }
    uint16_t *d_o, *d_grad[3];
    float *d_lse;
    CUDA_CHECK(lb_malloc_guarded((void **)&d_o, 2 * n));
    CUDA_CHECK(lb_malloc_guarded((void **)&d_lse, sizeof(float) * rows));
    for (int g = 0; g < 3; g++) CUDA_CHECK(cudaMalloc((void **)&d_grad[g], 2 * n));
    attention_problem f = {d_in[0], d_in[1], d_in[2], d_o, (int)o.batch, (int)o.heads, (int)seq, (int)o.dim,
                           o.causal, d_lse, NULL, 0, 0};
    run_forward(&f, &gpu);

    attention_bwd_job job = {.p = {d_in[0], d_in[1], d_in[2], d_o, d_in[3], d_lse, d_grad[0], d_grad[1], d_grad[2],
                                   NULL, NULL, (int)o.batch, (int)o.heads, (int)seq, (int)o.dim, o.causal, NULL, 0, 0}};
    CUDA_CHECK(cudaMalloc((void **)&job.p.delta, sizeof(float) * rows));
    CUDA_CHECK(cudaMalloc((void **)&job.p.dq_acc, sizeof(float) * n));
    CUDA_CHECK(attention_bwd_prepare(&job.p)); /* version 4's tensor maps: once, outside the timing */
    if (run_library_version) {
        CUBLAS_CHECK(cublasCreate(&job.handle));
        CUDA_CHECK(cudaMalloc((void **)&job.s, 4 * scores));
        CUDA_CHECK(cudaMalloc((void **)&job.dp, 4 * scores));
        CUDA_CHECK(cudaMalloc((void **)&job.P, 2 * scores));
        CUDA_CHECK(cudaMalloc((void **)&job.dS, 2 * scores));
    }

    attention_cpu_inputs in = {h_in[0], h_in[1], h_in[2], (int)o.batch, (int)o.heads, (int)seq, (int)o.dim, o.causal};
    bwd_reference ref = reference_heads(&in, h_in[3], args.seed);
    double worst_bound = 0.0;
    for (int g = 0; g < (ref.whole ? 3 : 1); g++)
        for (size_t i = 0; i < ref.n_heads * ref.n_rows * (size_t)o.dim; i++)
            worst_bound = fmax(worst_bound, ref.bound[g][i]);
    if (!args.quiet && !ref.whole)
        printf("checked: dQ on %zu rows of heads %zu and %zu against the CPU, dK and dV against version 0 (whole "
               "heads would take too long on the CPU at this size)\n",
               ref.n_rows, ref.heads[0], ref.heads[ref.n_heads - 1]);

    /* ---- check and time each version against version 0, the library way */
    char sz[64];
    snprintf(sz, sizeof sz, "%lldx%lldx%lldx%lld%s", o.batch, o.heads, seq, o.dim, o.causal ? "_causal" : "");
    lb_report rep = lb_report_vs_cublas(&program, &args);
    lb_report_table(&rep, sz, NULL);
    double flops = 2.5 * 4.0 * (double)heads * (double)seq * (double)seq * (double)o.dim * (o.causal ? 0.5 : 1.0);
    uint16_t *h_grad[3], *h_lib[3] = {NULL, NULL, NULL};
    for (int g = 0; g < 3; g++) {
        h_grad[g] = lb_host_alloc(2 * n, "a gradient");
        if (run_library_version) h_lib[g] = lb_host_alloc(2 * n, "version 0's gradient");
    }
    int have_lib = 0; /* version 0 ran: its gradients are the second reference */
    for (int v = 0; v < ATTENTION_BWD_VERSIONS; v++) {
        int reference_only = v == 0 && !ref.whole && args.version > 0; /* version 0 for the check alone */
        if (!reference_only && !lb_version_runs(&program, &args, &gpu, v, attention_bwd_unavailable(v))) continue;
        job.version = v;
        for (int g = 0; g < 3; g++) lb_poison_device(d_grad[g], 2 * n); /* NaN bits: an element never written fails */
        CUDA_CHECK(versions[v].run(&job));
        uint16_t **dst = v == 0 ? h_lib : h_grad;
        for (int g = 0; g < 3; g++) CUDA_CHECK(cudaMemcpy(dst[g], d_grad[g], 2 * n, cudaMemcpyDeviceToHost));
        lb_check c = check_heads(dst, &ref, (size_t)o.dim, args.quiet);
        if (v > 0 && have_lib) {
            lb_check all = check_vs_library(h_grad, h_lib, n, 2.0 * worst_bound, args.quiet);
            c.n_bad += all.n_bad;
            c.max_abs_err = fmax(c.max_abs_err, all.max_abs_err);
        }
        have_lib |= v == 0;
        if (reference_only) {
            if (c.n_bad) lb_die(LB_EXIT_FAIL, "attention_backward: version 0, the reference of dK and dV, fails its check");
            continue;
        }
        float ms = args.check_only ? 0.0f : lb_time_ms(versions[v].run, &job, 2, args.iters);
        char verdict[96];
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? flops / (ms * 1e9) : 0.0, c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
    }

    if (run_library_version) {
        CUBLAS_CHECK(cublasDestroy(job.handle));
        CUDA_CHECK(cudaFree(job.s));
        CUDA_CHECK(cudaFree(job.dp));
        CUDA_CHECK(cudaFree(job.P));
        CUDA_CHECK(cudaFree(job.dS));
    }
    for (int t = 0; t < 4; t++) {
        CUDA_CHECK(cudaFree(d_in[t]));
        free(h_in[t]);
    }
    for (int g = 0; g < 3; g++) {
        CUDA_CHECK(cudaFree(d_grad[g]));
        free(h_grad[g]), free(h_lib[g]), free(ref.want[g]), free(ref.bound[g]);
    }
    CUDA_CHECK(cudaFree(d_o));
    CUDA_CHECK(cudaFree(d_lse));
    CUDA_CHECK(cudaFree(job.p.delta));
    CUDA_CHECK(cudaFree(job.p.dq_acc));
    attention_bwd_release(&job.p);
    free(h_bits), free(ref.heads), free(ref.rows);
    return lb_report_finish(&rep);
}
