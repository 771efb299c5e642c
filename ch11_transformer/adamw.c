/* adamw.c - one AdamW step over every tensor of a model (GPT-2 small: 148 tensors, 124 million
 * parameters), a launch per tensor against one launch over all of them, against the copy of the
 * same bytes: each parameter reads p, g, m, v and writes p, m, v, 28 bytes.
 *
 *   --sizes N,N,...   the tensors' sizes instead of GPT-2 small's (odd ones test the tails)
 *   p, g uniform in [-1, 1), m in [-0.1, 0.1), v in [0, 0.01) from --seed; lr 1e-3 and the step
 *   count read on the device; weight decay 0.01, decoupled (AdamW).
 *   build: make ch11 (or `make` here)   run: ./adamw [version] [--sizes N,N,...] [--steps K]
 *
 * versions: the table versions[] below (0 the copy, 1 a launch per tensor, 2-4 one launch),
 * listed by ./adamw --help; the kernels are in adamw_kernels.cu.
 * Checked: --steps steps (default 3, from step 1: the bias corrections are largest there) of
 * every p, m and v against the same steps in double on the CPU.
 */
#include "labbook.h"
#include "adamw_kernels.h"

#include <math.h>
#include <string.h>

#define ADAMW_LR 1e-3f
#define ADAMW_WD 0.01f
#define ADAMW_MAX_TENSORS 4096

/* ---------------------------------------------------------------- the model's tensors */

/* GPT-2 small: the token and position embeddings, 12 blocks (two layer norms, the attention's
 * qkv and output projections, the MLP's two layers, each weight with its bias), the last norm */
static int gpt2_sizes(long long *n)
{
    int k = 0;
    n[k++] = 50257LL * 768, n[k++] = 1024LL * 768;
    for (int layer = 0; layer < 12; layer++) {
        n[k++] = 768, n[k++] = 768;              /* ln_1 */
        n[k++] = 768LL * 2304, n[k++] = 2304;    /* attn.c_attn */
        n[k++] = 768LL * 768, n[k++] = 768;      /* attn.c_proj */
        n[k++] = 768, n[k++] = 768;              /* ln_2 */
        n[k++] = 768LL * 3072, n[k++] = 3072;    /* mlp.c_fc */
        n[k++] = 3072LL * 768, n[k++] = 768;     /* mlp.c_proj */
    }
    n[k++] = 768, n[k++] = 768; /* ln_f */
    return k;
}

/* "1,3,1000003": the sizes, each 1..2^31, at most ADAMW_MAX_TENSORS of them; -1 if malformed */
static int parse_sizes(const char *text, long long *n)
{
    char buf[8192];
    if (strlen(text) >= sizeof buf) return -1;
    strcpy(buf, text);
    /* field by field with strchr, not strtok: strtok would fold an empty field ("3,,4", ",3",
     * "3,") into its neighbours and accept it */
    int k = 0;
    for (char *tok = buf;; k++) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        long long v;
        if (k == ADAMW_MAX_TENSORS || *tok == '\0' || lb_parse_i64(tok, &v) || v < 1 || v > (1LL << 31)) return -1;
        n[k] = v;
        if (!comma) return k + 1;
        tok = comma + 1;
    }
}

/* ---------------------------------------------------------------- CPU reference and check */

/* `steps` AdamW steps of one element in double, from step 1, with the same g each step; *tol
 * gets its bound for p, m and v: at each step 16 ulps of the largest term, and for p also 0.5 c2
 * ulps of the step (the GPU's 1 / (1 - powf(beta2, t)) carries powf's few ulps of beta2^t, close
 * to 1, relative to 1 - beta2^t: times c2, halved by the square root), added over the steps */
typedef struct {
    double c1[101], c2[101]; /* step t's bias corrections 1 / (1 - beta^t), for t = 1..100 */
} corrections;
static corrections make_corrections(void)
{
    corrections c;
    for (int t = 1; t <= 100; t++) c.c1[t] = 1.0 / (1.0 - pow((double)0.9f, t)), c.c2[t] = 1.0 / (1.0 - pow((double)0.999f, t));
    return c;
}

static void adamw_cpu(double *p, double g, double *m, double *v, int steps, const corrections *c, double tol[3])
{
    const double b1 = (double)0.9f, b2 = (double)0.999f, eps = 5.96e-8, lr = ADAMW_LR, wd = ADAMW_WD;
    tol[0] = tol[1] = tol[2] = 0.0;
    for (int t = 1; t <= steps; t++) {
        double c1 = c->c1[t], c2 = c->c2[t];
        tol[1] += 16.0 * eps * (fabs(*m) + fabs(g));
        tol[2] += 16.0 * eps * (fabs(*v) + g * g);
        *m = b1 * *m + (1.0 - b1) * g;
        *v = b2 * *v + (1.0 - b2) * g * g;
        double step = *m * c1 / (sqrt(*v * c2) + 1e-8) + wd * *p;
        tol[0] += 16.0 * eps * (fabs(*p) + lr * (fabs(*m * c1) / (sqrt(*v * c2) + 1e-8) + wd * fabs(*p)) * (2.0 + 0.5 * c2));
        *p -= lr * step;
    }
}

/* Every element of every tensor: p, m, v from the GPU against the CPU's steps from the same
 * start (h_init: p, g, m, v of each tensor, one after the other), the gradients times `scale`;
 * where the tensors have a bf16 copy (p16), it too: p's bound plus half a bf16 ulp. Returns the
 * mismatches. */
static size_t check_all(const long long *n, int count, float *const *h_init, const adamw_tensor *d, int steps,
                        double scale, int quiet)
{
    size_t bad = 0, offset = 0;
    int shown = 0; /* mismatches printed */
    long long largest = 0;
    for (int k = 0; k < count; k++) largest = n[k] > largest ? n[k] : largest;
    float *got[3];
    for (int a = 0; a < 3; a++) got[a] = lb_host_alloc(sizeof(float) * (size_t)largest, "a tensor's results");
    uint16_t *got16 = lb_host_alloc(sizeof(uint16_t) * (size_t)largest, "a tensor's bf16 copy");
    const char *what = "pmvb"; /* b: p's bf16 copy */
    corrections c = make_corrections();
    for (int k = 0; k < count; k++) {
        CUDA_CHECK(cudaMemcpy(got[0], d[k].p, sizeof(float) * n[k], cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(got[1], d[k].m, sizeof(float) * n[k], cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(got[2], d[k].v, sizeof(float) * n[k], cudaMemcpyDeviceToHost));
        if (d[k].p16) CUDA_CHECK(cudaMemcpy(got16, d[k].p16, sizeof(uint16_t) * n[k], cudaMemcpyDeviceToHost));
        /* the elements are independent: one thread each on the CPU's cores (-fopenmp), the first
         * mismatches printed as they are found */
#pragma omp parallel for reduction(+ : bad) schedule(static)
        for (long long i = 0; i < n[k]; i++) {
            double p = h_init[0][offset + i], g = h_init[1][offset + i] * scale, m = h_init[2][offset + i],
                   v = h_init[3][offset + i], tol[4];
            adamw_cpu(&p, g, &m, &v, steps, &c, tol);
            double want[4] = {p, m, v, p};
            tol[3] = tol[0] + 0x1p-8 * (fabs(p) + tol[0]); /* the bf16 copy: p rounded once more */
            for (int a = 0; a < (d[k].p16 ? 4 : 3); a++) {
                double got_a = a < 3 ? (double)got[a][i] : (double)lb_bf16_value(got16[i]);
                double err = fabs(got_a - (a < 3 ? (float)want[a] : want[a]));
                if (!(err <= tol[a] + 1e-30)) { /* NaN fails */
#pragma omp critical
                    if (!quiet && shown < 5) {
                        fprintf(stderr, "  tensor %d, element %lld, %c: got %.9g, want %.9g (tolerance %.3g)\n", k, i,
                                what[a], got_a, want[a], tol[a]);
                        shown++;
                    }
                    bad++;
                }
            }
        }
        offset += (size_t)n[k];
    }
    for (int a = 0; a < 3; a++) free(got[a]);
    free(got16);
    return bad;
}

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int version;
    const adamw_tensor *h_t, *d_t;
    const adamw_chunk *d_chunks;
    int count, n_chunks;
    adamw_state *d_state;
} adamw_job;

static cudaError_t run_kernel(void *ctx)
{
    adamw_job *j = (adamw_job *)ctx;
    return adamw_launch(j->version, j->h_t, j->d_t, j->d_chunks, j->count, j->n_chunks, ADAMW_WD, j->d_state);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. Version 0 is the
 * device-to-device copy of as many bytes (28 a parameter), the floor. To add a version: the
 * kernel and its launcher in adamw_kernels.cu (and in launchers[]), ADAMW_VERSIONS in
 * adamw_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "memcpy", "cudaMemcpy D2D (the floor)", LB_OLDEST_SM, NULL},
    {1, "per_tensor", "a launch per tensor", LB_OLDEST_SM, run_kernel},
    {2, "multi_tensor", "one launch, a block a chunk", LB_OLDEST_SM, run_kernel},
    {3, "multi_tensor4", "one launch, float4", LB_OLDEST_SM, run_kernel},
    {4, "one_kernel", "as 3, the step count moved in the same kernel", LB_OLDEST_SM, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == ADAMW_VERSIONS,
               "one row in versions[] per version: ADAMW_VERSIONS in adamw_kernels.h");

/* ---------------------------------------------------------------- main */

/* From the same start each time: the tensors as made (h_init: p, g, m, v of each, one after the
 * other), step 0, the rate, and the gradients' factor grad_scale (0: none); returns the state */
static adamw_state restart(const adamw_tensor *h_t, const long long *n, int count, float *const *h_init,
                           adamw_state *d_state, float grad_scale)
{
    size_t offset = 0;
    for (int k = 0; k < count; k++) {
        float *dst[4] = {h_t[k].p, (float *)h_t[k].g, h_t[k].m, h_t[k].v};
        for (int a = 0; a < 4; a++)
            CUDA_CHECK(cudaMemcpy(dst[a], h_init[a] + offset, sizeof(float) * n[k], cudaMemcpyHostToDevice));
        offset += (size_t)n[k];
    }
    adamw_state st = {0, ADAMW_LR, 0, grad_scale};
    CUDA_CHECK(cudaMemcpy(d_state, &st, sizeof st, cudaMemcpyHostToDevice));
    return st;
}
static int steps = 3;
/* a row's verdict: the mismatches, or the steps checked */
static void verdict_of(size_t bad, char *buf, size_t size)
{
    if (bad)
        snprintf(buf, size, "FAIL (%zu wrong)", bad);
    else
        snprintf(buf, size, "PASS (%d steps)", steps);
}

static const char *sizes_text = NULL;
static const lb_opt opts[] = {
    {"--sizes", LB_OPT_STRING, &sizes_text, "the tensors' sizes N,N,... (default GPT-2 small's 148 tensors)"},
    {"--steps", LB_OPT_INT, &steps, "steps checked against the CPU, from step 1"},
};
static const lb_program program = {
    .name = "adamw",
    .synopsis = "one AdamW step over every tensor of a model: a launch per tensor, one launch over all, against "
                "cudaMemcpy",
    .uses = LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = opts,
    .n_opts = sizeof opts / sizeof opts[0],
    .versions = versions,
    .n_versions = ADAMW_VERSIONS,
};

int main(int argc, char **argv)
{
    /* ---- setup: arguments (checked before the GPU is touched), GPU, the tensors */
    lb_args args = {.iters = 20, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    static long long n[ADAMW_MAX_TENSORS];
    int count = sizes_text ? parse_sizes(sizes_text, n) : gpt2_sizes(n);
    if (count < 0)
        lb_usage_error(&program, "--sizes '%s': 1 to %d sizes N,N,..., each 1..2^31", sizes_text, ADAMW_MAX_TENSORS);
    if (steps < 1 || steps > 100) lb_usage_error(&program, "--steps must be 1..100");
    size_t total = 0;
    for (int k = 0; k < count; k++) total += (size_t)n[k];
    if (total > (1ULL << 31)) lb_usage_error(&program, "--sizes: at most 2^31 parameters in all (got %zu)", total);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    /* p, g, m, v of every tensor; the floor's two buffers (28 bytes a parameter) when timing */
    lb_require_device_memory(16 * total + 4 * LB_GUARD_BYTES * (size_t)count + (args.check_only ? 0 : 28 * total),
                             "the tensors");
    if (!args.quiet)
        printf("adamw: one AdamW step, fp32, %d tensors, %zu parameters (%s), lr %g, weight decay %g, chunks of %d, "
               "%s (%s), seed %llu\n",
               count, total, sizes_text ? "--sizes" : "GPT-2 small", ADAMW_LR, ADAMW_WD, adamw_chunk_size(),
               gpu.prop.name, gpu.sm, args.seed);

    float *h_init[4]; /* p, g, m, v of every tensor, one after the other */
    const float lo[4] = {-1.0f, -1.0f, -0.1f, 0.0f}, hi[4] = {1.0f, 1.0f, 0.1f, 0.01f};
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    for (int a = 0; a < 4; a++) {
        h_init[a] = lb_host_alloc(sizeof(float) * total, "the initial tensors");
        lb_fill_uniform(h_init[a], total, lo[a], hi[a], &rng);
    }
    /* a cudaMalloc each, as a framework's tensors are: every pointer 256-byte aligned, no two
     * tensors side by side on purpose; each with NaN after its end, so that a kernel reading past
     * a tensor fails instead of reading the allocator's padding */
    adamw_tensor *h_t = lb_host_alloc(sizeof(adamw_tensor) * count, "the tensor table");
    for (int k = 0; k < count; k++) {
        float *buf[4];
        for (int a = 0; a < 4; a++) CUDA_CHECK(lb_malloc_guarded((void **)&buf[a], sizeof(float) * n[k]));
        h_t[k] = (adamw_tensor){buf[0], buf[1], buf[2], buf[3], n[k], NULL};
    }
    int n_chunks = adamw_chunks(h_t, count, NULL);
    adamw_chunk *h_chunks = lb_host_alloc(sizeof(adamw_chunk) * n_chunks, "the chunks");
    adamw_chunks(h_t, count, h_chunks);
    adamw_tensor *d_t;
    adamw_chunk *d_chunks;
    adamw_state *d_state;
    CUDA_CHECK(cudaMalloc((void **)&d_t, sizeof(adamw_tensor) * count));
    CUDA_CHECK(cudaMalloc((void **)&d_chunks, sizeof(adamw_chunk) * n_chunks));
    CUDA_CHECK(cudaMalloc((void **)&d_state, sizeof(adamw_state)));
    CUDA_CHECK(cudaMemcpy(d_t, h_t, sizeof(adamw_tensor) * count, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_chunks, h_chunks, sizeof(adamw_chunk) * n_chunks, cudaMemcpyHostToDevice));

    /* ---- check and time each version against the copy of the same bytes */
    char sz[48];
    snprintf(sz, sizeof sz, "%zu", total);
    lb_report rep = lb_report_vs_memcpy(&program, &args);
    lb_report_table(&rep, sz, NULL);
    double moved = 28.0 * (double)total;
    lb_report_memcpy_version(&rep, (size_t)moved);
    for (int v = 1; v < ADAMW_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        /* from the same start each time: the tensors as made, step 0 */
        adamw_state st = restart(h_t, n, count, h_init, d_state, 0.0f);
        adamw_job job = {v, h_t, d_t, d_chunks, count, n_chunks, d_state};
        for (int s = 0; s < steps; s++) CUDA_CHECK(run_kernel(&job));
        CUDA_CHECK(cudaMemcpy(&st, d_state, sizeof st, cudaMemcpyDeviceToHost));
        size_t bad = check_all(n, count, h_init, h_t, steps, 1.0, args.quiet) + (st.t != steps) +
                     (st.blocks_done != 0); /* the count too */
        char verdict[64];
        verdict_of(bad, verdict, sizeof verdict);
        float ms = args.check_only ? 0.0f : lb_time_ms(run_kernel, &job, 2, args.iters);
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? moved / (ms * 1e6) : 0.0, bad == 0, verdict);
    }

    /* ---- version 4 as ch12's GPT runs it: the gradients scaled on the device first (a clip by
     * the global norm; 0.5 here, exact in float), and the parameters also written in bf16 */
    adamw_tensor *h_t16 = lb_host_alloc(sizeof(adamw_tensor) * count, "the tensor table");
    for (int k = 0; k < count; k++) {
        h_t16[k] = h_t[k];
        CUDA_CHECK(cudaMalloc((void **)&h_t16[k].p16, sizeof(uint16_t) * n[k]));
        lb_poison_device(h_t16[k].p16, sizeof(uint16_t) * n[k]);
    }
    adamw_tensor *d_t16;
    CUDA_CHECK(cudaMalloc((void **)&d_t16, sizeof(adamw_tensor) * count));
    CUDA_CHECK(cudaMemcpy(d_t16, h_t16, sizeof(adamw_tensor) * count, cudaMemcpyHostToDevice));
    restart(h_t, n, count, h_init, d_state, 0.5f);
    adamw_job job16 = {4, h_t16, d_t16, d_chunks, count, n_chunks, d_state};
    for (int s = 0; s < steps; s++) CUDA_CHECK(run_kernel(&job16));
    size_t bad16 = check_all(n, count, h_init, h_t16, steps, 0.5, args.quiet);
    char verdict16[64];
    verdict_of(bad16, verdict16, sizeof verdict16);
    float ms16 = args.check_only ? 0.0f : lb_time_ms(run_kernel, &job16, 2, args.iters);
    /* 30 bytes a parameter: the 28, and its bf16 copy written */
    lb_report_item(&rep, "scaled_bf16", "4, gradients scaled, bf16 copy written", ms16,
                   ms16 > 0 ? 30.0 * (double)total / (ms16 * 1e6) : 0.0, bad16 == 0, verdict16);
    for (int k = 0; k < count; k++) CUDA_CHECK(cudaFree(h_t16[k].p16));
    CUDA_CHECK(cudaFree(d_t16));
    free(h_t16);

    for (int k = 0; k < count; k++) {
        CUDA_CHECK(cudaFree(h_t[k].p));
        CUDA_CHECK(cudaFree((void *)h_t[k].g));
        CUDA_CHECK(cudaFree(h_t[k].m));
        CUDA_CHECK(cudaFree(h_t[k].v));
    }
    for (int a = 0; a < 4; a++) free(h_init[a]);
    free(h_t);
    free(h_chunks);
    CUDA_CHECK(cudaFree(d_t));
    CUDA_CHECK(cudaFree(d_chunks));
    CUDA_CHECK(cudaFree(d_state));
    return lb_report_finish(&rep);
}
