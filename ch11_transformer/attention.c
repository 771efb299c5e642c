/* attention.c - the attention of a transformer, O = softmax(Q K^T / sqrt(D)) V for every batch
 * and head, from the library way (the scores written out between two cuBLAS products) to
 * FlashAttention on Hopper's tensor cores, each against the CPU and, in the same run, version 0.
 *
 *   Q, K, V and O are B x H x S x D bf16 (each head an S x D row-major matrix; default 4 x 16 x
 *   4096 x 128, D 64 or 128); Q and K uniform in [-A, A] (--amplitude A, default 2: logits of
 *   spread A^2 / 3 after the scaling), V in [-1, 1], from --seed. --causal: query i sees keys
 *   0..i only. Every version accumulates in fp32 and writes O in bf16, as PyTorch does.
 *   build: make ch11 (or `make` here)   run: ./attention [version] [--size S] [--batch B]
 *          [--heads H] [--dim D] [--causal]
 *
 * versions: the table versions[] below (0 cuBLAS + our softmax, 1 naive, 2 flash in fp32 on the
 * CUDA cores, 3 mma.sync, 4 wgmma with TMA, 5 FlashAttention-3's schedule, 6 5 persistent, 7 5 with three consumers at D = 64), listed by
 * ./attention --help; the kernels are in
 * attention_kernels.cu (0-3) and attention_hopper.cu (4-7, sm_90a). TFLOP/s counts 4 B H S^2 D, halved when causal (the products a causal
 * attention needs), for every version alike.
 * Checked: rows of O (all of them when the CPU can afford it, else a random row in every band
 * of 64 queries of every head, and each head's first row) against the CPU in double, within a
 * bound from the bf16 and fp32 arithmetic (below); and where version 0 ran, every element
 * against version 0's O.
 */
#include <cublas_v2.h> /* before labbook.h: CUBLAS_CHECK */
#include "labbook.h"
#include "attention_kernels.h"
#include "attention_cpu.h" /* the CPU reference and the bound (host-only: tests/emu uses it too) */

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- CPU reference */

/* attention_row_cpu, attention_rows_cpu and attention_bound: attention_cpu.c */

/* ---------------------------------------------------------------- the versions */

typedef struct {
    attention_problem p;
    int version;     /* the version run_kernel launches */
    cublasHandle_t handle;
    float *scores;   /* version 0: B H S x S scaled logits */
    uint16_t *probs; /* version 0: their softmax, bf16 */
} attention_job;

/* Version 0, the library way: per head, S = Q K^T / sqrt(D) by one strided-batched cuBLAS
 * product over all B H heads, written out in fp32 (B H S^2 floats); our softmax over each row
 * of S (masked above the diagonal when causal) into bf16 probabilities P; then O = P V by a
 * second batched product. cuBLAS is column-major: a row-major X (rows x cols) is its col-major
 * X^T, so S^T = K Q^T ("T" on K, "N" on Q) and O^T = V^T P^T ("N", "N"). Causal or not, both
 * products compute every element: the library has no triangular attention. */
static cudaError_t run_library(void *ctx)
{
    attention_job *j = (attention_job *)ctx;
    const attention_problem *p = &j->p;
    int S = p->seq, D = p->dim, heads = p->batch * p->heads;
    long long hd = (long long)S * D, ss = (long long)S * S;
    const float scale = (float)(1.0 / sqrt((double)D)), one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(j->handle, CUBLAS_OP_T, CUBLAS_OP_N, S, S, D, &scale, p->k, CUDA_R_16BF, D,
                                            hd, p->q, CUDA_R_16BF, D, hd, &zero, j->scores, CUDA_R_32F, S, ss, heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    cudaError_t e = attention_softmax_launch(j->scores, j->probs, (long long)heads * S, S, p->causal, p->lse);
    if (e != cudaSuccess) return e;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(j->handle, CUBLAS_OP_N, CUBLAS_OP_N, D, S, S, &one, p->v, CUDA_R_16BF, D,
                                            hd, j->probs, CUDA_R_16BF, S, ss, &zero, p->o, CUDA_R_16BF, D, hd, heads,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return cudaGetLastError();
}

static cudaError_t run_kernel(void *ctx)
{
    attention_job *j = (attention_job *)ctx;
    return attention_launch(j->version, &j->p);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. To add one: its kernel
 * and launcher in attention_kernels.cu (or attention_hopper.cu) with a row in its launchers[],
 * ATTENTION_VERSIONS, and a row here. */
static const lb_version versions[] = {
    {0, "cublas", "cuBLAS, S in memory, our softmax", 80, run_library},
    {1, "naive", "a thread per query, fp32", LB_OLDEST_SM, run_kernel},
    {2, "flash_simt", "flash, fp32 CUDA cores, K/V tiles", LB_OLDEST_SM, run_kernel},
    {3, "flash_mma", "flash, mma.sync bf16, cp.async", 80, run_kernel},
    {4, "flash_wgmma", "flash, wgmma + TMA, warp-specialised", 90, run_kernel},
    {5, "flash_fa3", "4, FA3's schedule: ping-pong turns", 90, run_kernel},
    {6, "flash_persist", "5, persistent: a block an SM", 90, run_kernel},
    {7, "flash_3wg", "5, three consumers at D = 64", 90, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == ATTENTION_VERSIONS,
               "one row in versions[] per version: ATTENTION_VERSIONS in attention_kernels.h");

/* ---------------------------------------------------------------- inputs and checks */

/* The CPU's rows of O: every row when that costs at most ~2^29 multiply-adds; else, in every
 * head, one random row in each band of ATT_CHECK_BAND queries, and the head's first row
 * (causal, that row sees one key: O is V's first row). 64 queries is the smallest block of any
 * version (2 and 3; versions 4-7 take 128 or 192, a consumer warpgroup 64), so every block of every
 * version holds a checked row: a block lost, skipped or dealt to the wrong head fails, as
 * lb_check_rows_cols makes sure for a GEMM's tiles. Computed ATT_GROUP rows at a time. */
#define ATT_CHECK_BAND 64
typedef struct {
    size_t n_rows, *rows;         /* which rows of O */
    double *want, *bound;         /* n_rows x D: the CPU's O and each element's bound */
    double *want_lse, *bound_lse; /* n_rows: each row's log-sum-exp and its bound */
} attention_reference;

static attention_reference reference_rows(const attention_cpu_inputs *in, unsigned long long seed)
{
    size_t S = (size_t)in->seq, heads = (size_t)in->batch * in->heads, all = heads * S;
    double per_row = 2.0 * (in->causal ? S / 2.0 + 1 : S) * in->dim;
    int sample = (double)all * per_row > 536870912.0;
    size_t bands = (S + ATT_CHECK_BAND - 1) / ATT_CHECK_BAND, n = 0;
    attention_reference r = {0};
    r.rows = lb_host_alloc(sizeof(size_t) * (sample ? heads * (bands + 1) : all), "the checked rows");
    lb_rng rng;
    lb_rng_seed(&rng, seed);
    for (size_t h = 0; h < heads; h++) {
        if (!sample) {
            for (size_t i = 0; i < S; i++) r.rows[n++] = h * S + i;
            continue;
        }
        for (size_t b = 0; b < bands; b++) {
            size_t first = b * ATT_CHECK_BAND, len = S - first < ATT_CHECK_BAND ? S - first : ATT_CHECK_BAND;
            size_t i = first + lb_rng_next(&rng) % len;
            if (b == 0 && i != 0) r.rows[n++] = h * S; /* the head's first row too */
            r.rows[n++] = h * S + i;
        }
    }
    r.n_rows = n;
    r.want = lb_host_alloc(sizeof(double) * n * in->dim, "the reference rows");
    r.bound = lb_host_alloc(sizeof(double) * n * in->dim, "their bounds");
    r.want_lse = lb_host_alloc(sizeof(double) * n, "the rows' log-sum-exps");
    r.bound_lse = lb_host_alloc(sizeof(double) * n, "their bounds");
    /* groups of ATT_GROUP rows that stay inside one head (rows ascend, heads in order) */
    size_t groups = 0, *start = lb_host_alloc(sizeof(size_t) * (n + 1), "the row groups");
    for (size_t t = 0; t < n; t++)
        if (t == 0 || t - start[groups - 1] == ATT_GROUP || r.rows[t] / S != r.rows[t - 1] / S) start[groups++] = t;
    start[groups] = n;
#pragma omp parallel
    {
        double *mag = malloc(sizeof(double) * ATT_GROUP * in->dim), *s = malloc(sizeof(double) * ATT_GROUP * S);
        if (!mag || !s) lb_die(LB_EXIT_USAGE, "attention: out of host memory for the CPU reference");
#pragma omp for schedule(dynamic, 1)
        for (size_t g = 0; g < groups; g++) {
            size_t t0 = start[g];
            int count = (int)(start[g + 1] - t0);
            double err[ATT_GROUP], *o = r.want + t0 * in->dim;
            attention_rows_cpu(in, r.rows + t0, count, o, mag, err, s, r.want_lse + t0);
            for (int t = 0; t < count; t++) {
                r.bound_lse[t0 + t] = attention_lse_bound(r.want_lse[t0 + t], err[t], in->dim, in->seq);
                for (int d = 0; d < in->dim; d++) {
                    size_t e = (size_t)t * in->dim + d;
                    r.bound[t0 * in->dim + e] = attention_bound(o[e], mag[e], err[t], in->dim, in->seq);
                }
            }
        }
        free(mag);
        free(s);
    }
    free(start);
    return r;
}

/* A version's O (bf16 bits, all of it copied back) on the reference rows, within the bounds */
typedef struct {
    const double *bound;
} bound_ctx;
static double bound_of(size_t i, const void *ctx) { return ((const bound_ctx *)ctx)->bound[i]; }

static lb_check check_rows(const char *name, const uint16_t *o, const attention_reference *r, int dim, int quiet)
{
    size_t n = r->n_rows * dim;
    float *got = lb_host_alloc(sizeof(float) * n, "the checked rows"), *want = lb_host_alloc(sizeof(float) * n, "");
    for (size_t t = 0; t < r->n_rows; t++)
        for (int d = 0; d < dim; d++) {
            got[t * dim + d] = lb_bf16_value(o[r->rows[t] * dim + d]);
            want[t * dim + d] = (float)r->want[t * dim + d];
        }
    bound_ctx b = {r->bound};
    lb_check c = lb_check_f32_bound(name, got, want, n, bound_of, &b, quiet);
    free(got);
    free(want);
    return c;
}

/* --lse: the version's log-sum-exps (floats, all of them copied back) on the reference rows */
static lb_check check_lse(const float *lse, const attention_reference *r, int quiet)
{
    float *got = lb_host_alloc(sizeof(float) * r->n_rows, "the checked rows' lse"),
          *want = lb_host_alloc(sizeof(float) * r->n_rows, "");
    for (size_t t = 0; t < r->n_rows; t++) got[t] = lse[r->rows[t]], want[t] = (float)r->want_lse[t];
    bound_ctx b = {r->bound_lse};
    lb_check c = lb_check_f32_bound("log-sum-exp", got, want, r->n_rows, bound_of, &b, quiet);
    free(got);
    free(want);
    return c;
}

/* Where a version's O is wrong (by check_vs_library's rule, atol and rtol), folded so that a tiling bug shows
 * its shape: the wrong elements counted by the query's place in a block of 128 rows, in bands of
 * 16 (a warp's rows in versions 3-5; a consumer warpgroup's 64 are four bands), and by D's
 * columns in groups of 8 (an mma tile's width; wgmma's 64-column halves are 8 groups). A wrong
 * V half, a consumer's offset or a lost row band reads off these two lines. */
static void print_where_wrong(const char *name, const uint16_t *o, const uint16_t *o0, size_t n, int seq, int dim,
                              double atol, double rtol)
{
    size_t bands[8] = {0}, groups[16] = {0};
    for (size_t i = 0; i < n; i++) {
        double g = lb_bf16_value(o[i]), w = lb_bf16_value(o0[i]);
        if (isfinite(g) && isfinite(w) && fabs(g - w) <= atol + rtol * fabs(w)) continue;
        size_t query = i / (size_t)dim % (size_t)seq;
        bands[query % 128 / 16]++;
        groups[i % (size_t)dim / 8]++;
    }
    fprintf(stderr, "  %s: wrong elements by query row in its block of 128 (bands of 16 rows):", name);
    for (int b = 0; b < 8; b++) fprintf(stderr, " %zu", bands[b]);
    fprintf(stderr, "\n  %s: wrong elements by column of D (groups of 8):", name);
    for (int c = 0; c < dim / 8; c++) fprintf(stderr, " %zu", groups[c]);
    fprintf(stderr, "\n");
}

/* Every element against version 0's O: both carry their own rounding, and a bound needs each
 * element's terms, which only the CPU's rows have; |v| <= 1, so mag <= 1, and twice the bound
 * of an element with mag = 1 (at the largest logit error the sampled rows saw) holds both. */
static lb_check check_vs_library(const char *name, const uint16_t *o, const uint16_t *o0, size_t n, int seq, int dim,
                                 double worst_bound, int quiet)
{
    const double atol = 2.0 * worst_bound, rtol = 0x1.0p-8;
    float *got = lb_host_alloc(sizeof(float) * n, "O"), *want = lb_host_alloc(sizeof(float) * n, "version 0's O");
    for (size_t i = 0; i < n; i++) got[i] = lb_bf16_value(o[i]), want[i] = lb_bf16_value(o0[i]);
    lb_check c = lb_check_f32("vs version 0", got, want, n, atol, rtol, quiet);
    if (c.n_bad && !quiet) print_where_wrong(name, o, o0, n, seq, dim, atol, rtol);
    free(got);
    free(want);
    return c;
}

/* ---------------------------------------------------------------- main */

/* the program's own flags, with their defaults */
typedef struct {
    long long batch, heads, dim;
    int causal, lse;
    double amplitude;
} attention_options;

static const lb_program program_template = {
    .name = "attention",
    .synopsis = "O = softmax(Q K^T / sqrt(D)) V, bf16 in and out: cuBLAS with the scores in memory, naive, "
                "FlashAttention on CUDA cores, mma.sync and wgmma",
    .details =
        "--size is S, the sequence length (default 4096, at most 65536). B x H x S x D bf16 for each of Q, K, V, O.\n"
        "Version 0 writes B H S^2 scores (4 + 2 bytes each): large S needs memory. Versions 4-7 use\n"
        "sm_90a's wgmma and TMA: they need an H100/H200 and a build for sm_90.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .versions = versions,
    .n_versions = ATTENTION_VERSIONS,
};

int main(int argc, char **argv)
{
    /* ---- setup: arguments (checked before the GPU is touched), GPU, cuBLAS, inputs */
    attention_options o = {.batch = 4, .heads = 16, .dim = 128, .causal = 0, .lse = 0, .amplitude = 2.0};
    const lb_opt opts[] = {
        {"--batch", LB_OPT_I64, &o.batch, "B, sequences in the batch"},
        {"--heads", LB_OPT_I64, &o.heads, "H, heads"},
        {"--dim", LB_OPT_I64, &o.dim, "D, a head's dimension: 64 or 128"},
        {"--causal", LB_OPT_FLAG, &o.causal, "query i sees keys 0..i only"},
        {"--amplitude", LB_OPT_DOUBLE, &o.amplitude, "Q and K uniform in [-value, value] (logits' spread value^2 / 3)"},
        {"--lse", LB_OPT_FLAG, &o.lse,
         "every version also writes each row's log-sum-exp (what the backward pass needs): checked, and timed with it"},
    };
    lb_program program = program_template;
    program.opts = opts, program.n_opts = sizeof opts / sizeof opts[0];
    lb_args args = {.size = {{4096}, 1}, .max_size_dims = 1, .iters = 10, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    const long long batch = o.batch, heads = o.heads, dim = o.dim;
    const int causal = o.causal;
    const double amplitude = o.amplitude;
    long long seq = args.size.v[0];
    if (seq < 1 || seq > ATTENTION_MAX_SEQ)
        lb_usage_error(&program, "--size: S must be 1..%d (got %lld)", ATTENTION_MAX_SEQ, seq);
    if (dim != 64 && dim != 128)
        lb_usage_error(&program,
                       "--dim must be 64 or 128 (got %lld): the tensor-core versions' tiles are built for those", dim);
    if (batch < 1 || heads < 1 || batch * heads > 65535)
        lb_usage_error(&program, "--batch and --heads must be positive, B x H at most 65535 (got %lld x %lld)", batch,
                       heads);
    if (!(amplitude > 0.0 && amplitude <= 100.0)) lb_usage_error(&program, "--amplitude must be in (0, 100]");
    size_t n = (size_t)(batch * heads) * (size_t)seq * (size_t)dim;
    if (n > ((size_t)1 << 31)) lb_usage_error(&program, "B x H x S x D must be at most 2^31 (got %zu)", n);
    int run_library_version = args.version <= 0;
    size_t scores = run_library_version ? (size_t)(batch * heads) * (size_t)seq * (size_t)seq : 0;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(4 * 2 * n + 6 * scores,
                             run_library_version ? "Q, K, V, O and version 0's scores" : "Q, K, V and O");
    attention_job job = {
        .p = {.batch = (int)batch, .heads = (int)heads, .seq = (int)seq, .dim = (int)dim, .causal = causal}};
    if (!args.quiet)
        printf("attention: O = softmax(Q K^T / sqrt(D)) V, bf16, B=%lld H=%lld S=%lld D=%lld%s, Q and K in [-%g, %g], "
               "%s (%s), seed %llu\n",
               batch, heads, seq, dim, causal ? ", causal" : "", amplitude, amplitude, gpu.prop.name, gpu.sm,
               args.seed);

    uint16_t *h_bits = lb_host_alloc(2 * n, "an input's bits"), *h_o = lb_host_alloc(2 * n, "O"), *h_o0 = NULL;
    float *h_q = lb_host_alloc(4 * n, "Q"), *h_k = lb_host_alloc(4 * n, "K"), *h_v = lb_host_alloc(4 * n, "V");
    uint16_t *d_in[3];
    float *h_in[3] = {h_q, h_k, h_v};
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    for (int t = 0; t < 3; t++) {
        lb_bf16_uniform(h_bits, h_in[t], n, t < 2 ? (float)amplitude : 1.0f, &rng);
        CUDA_CHECK(lb_malloc_guarded((void **)&d_in[t], 2 * n)); /* NaN past the end: an over-read fails */
        CUDA_CHECK(cudaMemcpy(d_in[t], h_bits, 2 * n, cudaMemcpyHostToDevice));
    }
    job.p.q = d_in[0], job.p.k = d_in[1], job.p.v = d_in[2];
    CUDA_CHECK(cudaMalloc((void **)&job.p.o, 2 * n));
    size_t rows = n / (size_t)dim;
    float *h_lse = NULL;
    if (o.lse) {
        CUDA_CHECK(cudaMalloc((void **)&job.p.lse, sizeof(float) * rows));
        h_lse = lb_host_alloc(sizeof(float) * rows, "the log-sum-exps");
    }
    if (run_library_version) {
        CUBLAS_CHECK(cublasCreate(&job.handle));
        CUDA_CHECK(cudaMalloc((void **)&job.scores, 4 * scores));
        CUDA_CHECK(cudaMalloc((void **)&job.probs, 2 * scores));
        /* NaN until written: a score cuBLAS never wrote fails the check. (It also shows
         * compute-sanitizer's initcheck that the bytes were set before the softmax reads them:
         * at some shapes cuBLAS's sm_90 kernel writes S in a way initcheck does not see: NOTES.) */
        lb_poison_device(job.scores, 4 * scores);
        lb_poison_device(job.probs, 2 * scores);
        h_o0 = lb_host_alloc(2 * n, "version 0's O");
    }
    CUDA_CHECK(attention_prepare(&job.p)); /* versions 4-7's tensor maps: once, outside the timing */

    attention_cpu_inputs in = {h_q, h_k, h_v, (int)batch, (int)heads, (int)seq, (int)dim, causal};
    attention_reference ref = reference_rows(&in, args.seed);
    double worst_bound = 0.0; /* the bound of an element with mag = 1 at the sampled rows' worst logit error */
    for (size_t i = 0; i < ref.n_rows * dim; i++) worst_bound = fmax(worst_bound, ref.bound[i]);

    /* ---- check and time each version against version 0, the library way */
    char sz[64];
    snprintf(sz, sizeof sz, "%lldx%lldx%lldx%lld%s", batch, heads, seq, dim, causal ? "_causal" : "");
    lb_report rep = lb_report_vs_cublas(&program, &args);
    lb_report_table(&rep, sz, NULL);
    double flops = 4.0 * (double)(batch * heads) * (double)seq * (double)seq * (double)dim * (causal ? 0.5 : 1.0);
    int have_o0 = 0; /* version 0 ran: its O is the second reference */
    for (int v = 0; v < ATTENTION_VERSIONS; v++) {
        if (!lb_version_runs(&program, &args, &gpu, v, attention_unavailable(v))) continue;
        job.version = v;
        lb_poison_device(job.p.o, 2 * n); /* NaN bits: a row never written fails */
        if (o.lse) lb_poison_device(job.p.lse, sizeof(float) * rows);
        CUDA_CHECK(versions[v].run(&job));
        CUDA_CHECK(cudaMemcpy(v == 0 ? h_o0 : h_o, job.p.o, 2 * n, cudaMemcpyDeviceToHost));
        lb_check c = check_rows(versions[v].name, v == 0 ? h_o0 : h_o, &ref, (int)dim, args.quiet);
        if (v > 0 && have_o0) {
            lb_check all =
                check_vs_library(versions[v].name, h_o, h_o0, n, (int)seq, (int)dim, worst_bound, args.quiet);
            c.n_bad += all.n_bad;
            c.max_abs_err = fmax(c.max_abs_err, all.max_abs_err);
        }
        if (o.lse) {
            CUDA_CHECK(cudaMemcpy(h_lse, job.p.lse, sizeof(float) * rows, cudaMemcpyDeviceToHost));
            lb_check l = check_lse(h_lse, &ref, args.quiet);
            c.n_bad += l.n_bad;
        }
        have_o0 |= v == 0;
        float ms = args.check_only ? 0.0f : lb_time_ms(versions[v].run, &job, 2, args.iters);
        char verdict[96];
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? flops / (ms * 1e9) : 0.0, c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
    }

    attention_release(&job.p);
    if (run_library_version) {
        CUBLAS_CHECK(cublasDestroy(job.handle));
        CUDA_CHECK(cudaFree(job.scores));
        CUDA_CHECK(cudaFree(job.probs));
    }
    for (int t = 0; t < 3; t++) CUDA_CHECK(cudaFree(d_in[t]));
    CUDA_CHECK(cudaFree(job.p.o));
    CUDA_CHECK(cudaFree(job.p.lse));
    free(h_bits), free(h_o), free(h_o0), free(h_q), free(h_k), free(h_v), free(h_lse);
    free(ref.rows), free(ref.want), free(ref.bound), free(ref.want_lse), free(ref.bound_lse);
    return lb_report_finish(&rep);
}
