/* thrust_basics.c - Thrust (book ch8) from a C host: the book's dot product three ways, saxpy
 * with a functor, the max-scan, a 64-bit sum, sort and sort_by_key, reduce_by_key; each checked
 * against the CPU and timed against the library a user would otherwise call.
 *
 *   vectors of --size floats (default 2^26, x and y uniform in [-1, 1) from --seed); the sorts
 *   on --sort-size 32-bit keys (default 2^28)
 *   build: make ch07      run: ./thrust_basics [0-3] [--size N] [--sort-size N]
 *
 *   versions (the dot product; with none given, the other algorithms run too):
 *     0  cublasSdot                  the baseline
 *     1  transform, then reduce      two passes: the n products go to memory and back
 *     2  inner_product               Thrust's own name for it
 *     3  transform_reduce (zipped)   one pass: the product is formed inside the reduction
 *
 * The Thrust calls are in thrust_basics_kernels.cu behind C launchers (Thrust is C++ templates).
 * Checks: saxpy, the scan, the sums and the sorts exactly; the dot within lb_dot_tolerance of
 * the sum in double, and against cublasSdot (at the default size the tolerance is about 0.045:
 * a single lost product larger than that fails, which is 81% of them; labbook.h says why). Rates: GB/s of the bytes that must move (each input
 * read once, each output written once) against a cudaMemcpy of as many bytes in the same run;
 * for the sorts, keys per second against CUB's radix sort (cub::DeviceRadixSort), Thrust both with
 * its temporary storage from a cache (the sort alone, as CUB is timed) and as a plain call
 * that allocates it each time.
 */
#include <cublas_v2.h>
#include "labbook.h"
#include "thrust_basics_kernels.h"

#include <math.h>
#include <string.h>

/* ================================================================ the jobs lb_time_ms runs */

typedef struct {
    cublasHandle_t blas;
    size_t n;
    float *x, *y, *z, *tmp; /* x, y inputs; z the saxpy / scan output; tmp the two-pass products */
    float dot;              /* the dot's result, on the host */
    int *ints, *keys, *run_keys, *run_sums;
    long long sum;
    size_t runs;
} vec_job;

static cudaError_t run_dot(void *ctx, int way)
{
    vec_job *j = ctx;
    if (way == DOT_CUBLAS) {
        CUBLAS_CHECK(cublasSdot(j->blas, (int)j->n, j->x, 1, j->y, 1, &j->dot));
        return cudaGetLastError();
    }
    return thrust_dot(way, j->x, j->y, j->tmp, j->n, &j->dot);
}
static cudaError_t run_cublas(void *ctx) { return run_dot(ctx, DOT_CUBLAS); }
static cudaError_t run_two_pass(void *ctx) { return run_dot(ctx, DOT_TRANSFORM_THEN_REDUCE); }
static cudaError_t run_inner(void *ctx) { return run_dot(ctx, DOT_INNER_PRODUCT); }
static cudaError_t run_fused(void *ctx) { return run_dot(ctx, DOT_TRANSFORM_REDUCE); }

static const lb_version versions[] = {
    {0, "cublas", "cublasSdot", LB_OLDEST_SM, run_cublas},
    {1, "two_pass", "transform, then reduce", LB_OLDEST_SM, run_two_pass},
    {2, "inner_product", "inner_product", LB_OLDEST_SM, run_inner},
    {3, "fused", "transform_reduce, zipped", LB_OLDEST_SM, run_fused},
};
_Static_assert(sizeof versions / sizeof versions[0] == THRUST_BASICS_VERSIONS, "one table row per way");

#define SAXPY_A 2.5f
static cudaError_t run_saxpy(void *ctx)
{
    vec_job *j = ctx;
    return thrust_saxpy(SAXPY_A, j->x, j->z, j->n);
}
static cudaError_t run_max_scan(void *ctx)
{
    vec_job *j = ctx;
    return thrust_max_scan(j->x, j->z, j->n);
}
static cudaError_t run_sum(void *ctx)
{
    vec_job *j = ctx;
    return thrust_sum_ints(j->ints, j->n, &j->sum);
}
static cudaError_t run_runs(void *ctx)
{
    vec_job *j = ctx;
    return thrust_sum_runs(j->keys, j->ints, j->n, j->run_keys, j->run_sums, &j->runs);
}

/* The sorts: every run starts from the same unsorted keys (and values 0..n-1), copied in first;
 * Thrust's and CUB's runs include the same copy, so they stay comparable. Three ways: CUB with
 * the temporary storage allocated once, outside the timing; Thrust with its temporary storage
 * from a cache (the same: allocated by the first call, reused); Thrust as a plain call, which
 * allocates and frees its temporary storage inside every call. */
enum { SORT_CUB, SORT_THRUST_CACHED, SORT_THRUST_ALLOCATING, SORT_WAYS };
typedef struct {
    size_t n;
    int pairs, way;
    unsigned *orig_keys, *orig_vals; /* the input, never changed */
    unsigned *keys, *vals;           /* Thrust sorts these in place; CUB reads them */
    unsigned *out_keys, *out_vals;   /* CUB's output */
    void *temp;                      /* CUB's temporary storage */
    size_t temp_bytes;
} sort_job;

static cudaError_t run_sort(void *ctx)
{
    sort_job *j = ctx;
    cudaError_t err = cudaMemcpyAsync(j->keys, j->orig_keys, j->n * sizeof(unsigned), cudaMemcpyDeviceToDevice, 0);
    if (err == cudaSuccess && j->pairs)
        err = cudaMemcpyAsync(j->vals, j->orig_vals, j->n * sizeof(unsigned), cudaMemcpyDeviceToDevice, 0);
    if (err != cudaSuccess) return err;
    if (j->way == SORT_CUB)
        return cub_sort(j->keys, j->out_keys, j->pairs ? j->vals : NULL, j->pairs ? j->out_vals : NULL, j->n, j->temp,
                        j->temp_bytes);
    int cached = j->way == SORT_THRUST_CACHED;
    return j->pairs ? thrust_sort_pairs(j->keys, j->vals, j->n, cached) : thrust_sort_keys(j->keys, j->n, cached);
}

/* ================================================================ CPU references and checks */

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* Sorted pairs, checked in O(n) without sorting on the CPU: the keys do not decrease, the values
 * are a permutation of 0..n-1 (each seen once), and each key is the input key at the position
 * its value names. Together: the output is the input, reordered, in order. */
static int check_sorted_pairs(const unsigned *keys, const unsigned *vals, const unsigned *orig, size_t n, int quiet)
{
    unsigned char *seen = calloc(n ? n : 1, 1);
    if (!seen) lb_die(LB_EXIT_USAGE, "thrust_basics: out of host memory for the sort check");
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = vals[i] < n && !seen[vals[i]] && keys[i] == orig[vals[i]] && (i == 0 || keys[i - 1] <= keys[i]);
        if (vals[i] < n) seen[vals[i]] = 1;
        if (!ok && bad++ == 0) first = i;
    }
    free(seen);
    if (bad && !quiet)
        fprintf(stderr, "    %zu of %zu sorted pairs wrong, the first at %zu: key %u, value %u\n", bad, n, first,
                keys[first], vals[first]);
    return bad == 0;
}

/* Keys alone: the same sequence as the checked pairs' keys (a sorted sequence is unique), and
 * at sizes where it is quick, the same as qsort's. */
static int check_sorted_keys(const unsigned *keys, const unsigned *want, const unsigned *orig, size_t n, int quiet)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += keys[i] != want[i];
    if (n <= (1u << 22)) {
        unsigned *q = lb_host_alloc(n * sizeof(unsigned) + 1, "qsort's copy");
        memcpy(q, orig, n * sizeof(unsigned));
        qsort(q, n, sizeof(unsigned), cmp_unsigned);
        for (size_t i = 0; i < n; i++) bad += keys[i] != q[i];
        free(q);
    }
    if (bad && !quiet) fprintf(stderr, "    %zu sorted keys differ from the reference\n", bad);
    return bad == 0;
}

/* runs of equal consecutive keys and their sums, as reduce_by_key defines them */
static size_t sum_runs_cpu(const int *keys, const int *vals, size_t n, int *run_keys, int *run_sums)
{
    size_t r = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || keys[i] != keys[i - 1]) run_keys[r] = keys[i], run_sums[r++] = 0;
        run_sums[r - 1] += vals[i];
    }
    return r;
}

/* ================================================================ the tables */

typedef struct {
    const lb_program *prog;
    const lb_args *args;
    const lb_gpu *gpu;
    lb_rng *rng;
    int failures;
} run_ctx;

static double gbps(double bytes, float ms) { return ms > 0 ? bytes / (ms * 1e6) : 0.0; }

/* The dot product, the chosen ways: one table against cublasSdot. */
static void dot_table(lb_report *rep, run_ctx *c, vec_job *j, const float *h_x, const float *h_y)
{
    size_t n = j->n;
    double want = 0, sum_abs = 0;
    for (size_t i = 0; i < n; i++) want += (double)h_x[i] * h_y[i], sum_abs += fabs((double)h_x[i] * h_y[i]);
    /* Thrust's reductions are CUB's: each thread adds its share of a grid of at least one full
     * wave (SMs x 2048 threads), then a tree in the block and one across the blocks' results.
     * The chain of additions behind the result: at most that share plus two trees. */
    double wave = (double)c->gpu->prop.multiProcessorCount * c->gpu->prop.maxThreadsPerMultiProcessor;
    double tol = lb_dot_tolerance(h_x, h_y, n, ceil((double)n / wave) + 2.0 * log2((double)n + 1.0) + 1.0);
    float cublas_dot = NAN;
    CUDA_CHECK(run_cublas(j));
    cublas_dot = j->dot;
    char size[32];
    snprintf(size, sizeof size, "%zu", n);
    lb_report_ceiling(rep, 8 * n, c->args->iters);
    lb_report_table(rep, size, "the dot product: 2 n floats read, one float back to the host");
    for (int v = 0; v < THRUST_BASICS_VERSIONS; v++) {
        if (!lb_version_wanted(c->prog, c->args, c->gpu, v)) continue;
        j->dot = NAN; /* poisoned: a way that never wrote its result fails */
        CUDA_CHECK(versions[v].run(j));
        double err = fabs(j->dot - want), err_cublas = fabs((double)j->dot - cublas_dot);
        int pass = err <= tol && err_cublas <= 2 * tol; /* NaN fails */
        char verdict[128];
        snprintf(verdict, sizeof verdict, "%s (err %.1e, tol %.1e)", pass ? "PASS" : "FAIL", err, tol);
        if (!pass && !c->args->quiet)
            fprintf(stderr, "    %s: got %.9g, double sum %.9g, cublasSdot %.9g (sum of |terms| %.3g)\n",
                    versions[v].name, j->dot, want, cublas_dot, sum_abs);
        float ms = c->args->check_only ? 0.0f : lb_time_ms(versions[v].run, j, 2, c->args->iters);
        lb_report_row(rep, v, NULL, ms, gbps(8.0 * n, ms), pass, verdict);
    }
}

/* One algorithm against a cudaMemcpy moving the same bytes: a table of two rows. */
static void memcpy_table(run_ctx *c, const char *name, const char *label, size_t bytes, lb_work_fn fn, void *job,
                         int pass, const char *verdict)
{
    char size[32];
    snprintf(size, sizeof size, "%zu", ((vec_job *)job)->n);
    lb_report rep = lb_report_vs_memcpy(c->prog, c->args);
    lb_report_table(&rep, size, NULL);
    float ms = 0.0f;
    if (!c->args->check_only) {
        float copy_ms = 0.0f;
        rep.base_value = lb_memcpy_ceiling_gbps(bytes, c->args->iters, &copy_ms);
        lb_report_note(&rep, "cudaMemcpy D2D (same bytes)", copy_ms, rep.base_value, NULL);
        ms = lb_time_ms(fn, job, 2, c->args->iters);
    }
    lb_report_item(&rep, name, label, ms, gbps((double)bytes, ms), pass, verdict);
    c->failures += rep.failures;
}

/* saxpy (device_ptr, and the book's device_vector round trip), the max-scan, the 64-bit sum and
 * reduce_by_key, each checked exactly, then timed */
static void algorithm_tables(run_ctx *c, vec_job *j, const float *h_x, const float *h_y)
{
    size_t n = j->n;
    float *h_z = lb_host_alloc(n * sizeof(float), "z"), *h_want = lb_host_alloc(n * sizeof(float), "z wanted");
    int quiet = c->args->quiet;

    CUDA_CHECK(cudaMemcpy(j->z, j->y, n * sizeof(float), cudaMemcpyDeviceToDevice));
    CUDA_CHECK(run_saxpy(j));
    CUDA_CHECK(cudaMemcpy(h_z, j->z, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) h_want[i] = fmaf(SAXPY_A, h_x[i], h_y[i]);
    lb_check ck = lb_check_f32("saxpy", h_z, h_want, n, 0.0, 0.0, quiet);
    memcpy(h_z, h_y, n * sizeof(float));
    CUDA_CHECK(thrust_saxpy_host(SAXPY_A, h_x, h_z, n));
    lb_check ck_host = lb_check_f32("saxpy from host arrays", h_z, h_want, n, 0.0, 0.0, quiet);
    char verdict[96];
    snprintf(verdict, sizeof verdict, "%s (exact; from host arrays too)",
             ck.n_bad == 0 && ck_host.n_bad == 0 ? "PASS" : "FAIL");
    memcpy_table(c, "saxpy", "transform, saxpy functor", 12 * n, run_saxpy, j, ck.n_bad == 0 && ck_host.n_bad == 0,
                 verdict);

    lb_poison_device(j->z, n * sizeof(float));
    CUDA_CHECK(run_max_scan(j));
    CUDA_CHECK(cudaMemcpy(h_z, j->z, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) h_want[i] = i == 0 || h_x[i] > h_want[i - 1] ? h_x[i] : h_want[i - 1];
    ck = lb_check_f32("max-scan", h_z, h_want, n, 0.0, 0.0, quiet);
    memcpy_table(c, "max_scan", "inclusive_scan, maximum", 8 * n, run_max_scan, j, ck.n_bad == 0,
                 ck.n_bad == 0 ? "PASS (exact)" : "FAIL");

    /* ints in [-1000, 1000]: the sum needs 64 bits beyond about 2^21 elements */
    int *h_ints = lb_host_alloc(n * sizeof(int), "ints"), *h_keys = lb_host_alloc(n * sizeof(int), "keys");
    long long want_sum = 0;
    for (size_t i = 0; i < n; i++) h_ints[i] = (int)(lb_rng_next(c->rng) % 2001) - 1000, want_sum += h_ints[i];
    CUDA_CHECK(cudaMemcpy(j->ints, h_ints, n * sizeof(int), cudaMemcpyHostToDevice));
    j->sum = -1;
    CUDA_CHECK(run_sum(j));
    int pass = j->sum == want_sum;
    if (!pass && !quiet) fprintf(stderr, "    sum: got %lld, want %lld\n", j->sum, want_sum);
    memcpy_table(c, "reduce_int64", "reduce, int into 64 bits", 4 * n, run_sum, j, pass,
                 pass ? "PASS (exact)" : "FAIL");

    /* keys in runs of 1..64 equal values; a key value comes back later as a separate run */
    for (size_t i = 0, run_left = 0, key = 0; i < n; i++) {
        if (run_left == 0) run_left = 1 + lb_rng_next(c->rng) % 64, key = lb_rng_next(c->rng) % 1000;
        h_keys[i] = (int)key, run_left--;
    }
    int *want_keys = lb_host_alloc(n * sizeof(int), "run keys"), *want_sums = lb_host_alloc(n * sizeof(int), "sums");
    int *got_keys = lb_host_alloc(n * sizeof(int), "run keys"), *got_sums = lb_host_alloc(n * sizeof(int), "sums");
    size_t want_runs = sum_runs_cpu(h_keys, h_ints, n, want_keys, want_sums);
    CUDA_CHECK(cudaMemcpy(j->keys, h_keys, n * sizeof(int), cudaMemcpyHostToDevice));
    lb_poison_device(j->run_keys, n * sizeof(int));
    lb_poison_device(j->run_sums, n * sizeof(int));
    CUDA_CHECK(run_runs(j));
    pass = j->runs == want_runs;
    if (pass) {
        CUDA_CHECK(cudaMemcpy(got_keys, j->run_keys, want_runs * sizeof(int), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(got_sums, j->run_sums, want_runs * sizeof(int), cudaMemcpyDeviceToHost));
        pass = lb_check_i32("run keys", got_keys, want_keys, want_runs, quiet).n_bad == 0 &&
               lb_check_i32("run sums", got_sums, want_sums, want_runs, quiet).n_bad == 0;
    } else if (!quiet) {
        fprintf(stderr, "    reduce_by_key: %zu runs, want %zu\n", j->runs, want_runs);
    }
    snprintf(verdict, sizeof verdict, "%s (exact, %zu runs)", pass ? "PASS" : "FAIL", want_runs);
    memcpy_table(c, "reduce_by_key", "reduce_by_key, int", 8 * n + 8 * want_runs, run_runs, j, pass, verdict);
    free(h_z), free(h_want), free(h_ints), free(h_keys);
    free(want_keys), free(want_sums), free(got_keys), free(got_sums);
}

/* sort and sort_by_key against CUB's radix sort: M keys/s, two tables */
static void sort_tables(run_ctx *c, size_t n)
{
    unsigned *h_orig = lb_host_alloc(n * sizeof(unsigned) + 1, "keys");
    unsigned *h_keys = lb_host_alloc(n * sizeof(unsigned) + 1, "sorted keys");
    unsigned *h_vals = lb_host_alloc(n * sizeof(unsigned) + 1, "sorted values");
    unsigned *h_pair_keys = lb_host_alloc(n * sizeof(unsigned) + 1, "sorted pair keys");
    for (size_t i = 0; i < n; i++) h_orig[i] = (unsigned)lb_rng_next(c->rng);
    sort_job j = {.n = n};
    unsigned **bufs[] = {&j.orig_keys, &j.orig_vals, &j.keys, &j.vals, &j.out_keys, &j.out_vals};
    for (int b = 0; b < 6; b++) CUDA_CHECK(cudaMalloc((void **)bufs[b], n * sizeof(unsigned) + 1));
    CUDA_CHECK(cudaMemcpy(j.orig_keys, h_orig, n * sizeof(unsigned), cudaMemcpyHostToDevice));
    for (size_t i = 0; i < n; i++) h_vals[i] = (unsigned)i; /* values: where each key started */
    CUDA_CHECK(cudaMemcpy(j.orig_vals, h_vals, n * sizeof(unsigned), cudaMemcpyHostToDevice));
    size_t keys_bytes = 0, pairs_bytes = 0;
    CUDA_CHECK(cub_sort_temp_bytes(n, 0, &keys_bytes));
    CUDA_CHECK(cub_sort_temp_bytes(n, 1, &pairs_bytes));
    j.temp_bytes = keys_bytes > pairs_bytes ? keys_bytes : pairs_bytes;
    CUDA_CHECK(cudaMalloc(&j.temp, j.temp_bytes ? j.temp_bytes : 1));

    char size[32];
    snprintf(size, sizeof size, "%zu", n);
    for (int pairs = 1; pairs >= 0; pairs--) { /* pairs first: its check makes the keys' reference */
        lb_report rep = {.prog = c->prog,
                         .args = c->args,
                         .unit = "mkeys_s",
                         .unit_head = "M keys/s",
                         .base = pairs ? "cub_sort_pairs" : "cub_sort_keys",
                         .base_head = "vs CUB"};
        lb_report_table(&rep, size, pairs ? "sort_by_key: 32-bit keys with 32-bit values" : "sort: 32-bit keys");
        static const char *const names[2][SORT_WAYS] = {
            {"cub_sort_keys", "thrust_sort_cached", "thrust_sort_allocating"},
            {"cub_sort_pairs", "thrust_sort_by_key_cached", "thrust_sort_by_key_allocating"}};
        static const char *const labels[2][SORT_WAYS] = {
            {"CUB DeviceRadixSort::SortKeys", "thrust::sort, cached temp", "thrust::sort, allocating"},
            {"CUB DeviceRadixSort::SortPairs", "thrust::sort_by_key, cached", "thrust::sort_by_key, allocating"}};
        for (int way = 0; way < SORT_WAYS; way++) {
            int use_cub = way == SORT_CUB;
            j.pairs = pairs, j.way = way;
            lb_poison_device(use_cub ? j.out_keys : j.keys, n * sizeof(unsigned));
            lb_poison_device(use_cub ? j.out_vals : j.vals, n * sizeof(unsigned));
            CUDA_CHECK(run_sort(&j));
            CUDA_CHECK(cudaMemcpy(h_keys, use_cub ? j.out_keys : j.keys, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
            int pass;
            if (pairs) {
                CUDA_CHECK(
                    cudaMemcpy(h_vals, use_cub ? j.out_vals : j.vals, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
                pass = check_sorted_pairs(h_keys, h_vals, h_orig, n, c->args->quiet);
                if (pass && use_cub) memcpy(h_pair_keys, h_keys, n * sizeof(unsigned));
            } else {
                pass = check_sorted_keys(h_keys, h_pair_keys, h_orig, n, c->args->quiet);
            }
            float ms = c->args->check_only ? 0.0f : lb_time_ms(run_sort, &j, 1, c->args->iters);
            lb_report_item(&rep, names[pairs][way], labels[pairs][way], ms, ms > 0 ? n / (ms * 1e3) : 0.0, pass,
                           pass ? (pairs ? "PASS (exact, O(n) check)" : "PASS (exact)") : "FAIL");
        }
        c->failures += rep.failures;
    }
    for (int b = 0; b < 6; b++) CUDA_CHECK(cudaFree(*bufs[b]));
    CUDA_CHECK(cudaFree(j.temp));
    CUDA_CHECK(thrust_cache_release());
    free(h_orig), free(h_keys), free(h_vals), free(h_pair_keys);
}

/* ================================================================ main */

static long long sort_size = 1LL << 28;
static const lb_opt options[] = {
    {"--sort-size", LB_OPT_I64, &sort_size, "keys to sort (the dot and the other algorithms use --size)"},
};
static const lb_program program = {
    .name = "thrust_basics",
    .synopsis = "Thrust from C: dot three ways, saxpy, max-scan, sum, sort, sort_by_key, reduce_by_key",
    .details = "Timed: the algorithm on device data; the sorts include copying the unsorted input in (both).\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 1,
    .versions = versions,
    .n_versions = THRUST_BASICS_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1LL << 26}, 1}, .max_size_dims = 1, .iters = 10, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    if (args.size.v[0] > (1LL << 31) - 1) lb_usage_error(&program, "--size: at most 2^31-1 (cuBLAS counts in int)");
    if (sort_size < 1 || sort_size > (1LL << 30)) lb_usage_error(&program, "--sort-size must be 1..2^30");
    size_t n = (size_t)args.size.v[0], sort_n = (size_t)sort_size;
    int all = args.version < 0;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    /* vectors: x, y, z, tmp (floats) and four int arrays; sorts: six key/value arrays, CUB's
     * temporary storage and Thrust's own (about as much again) */
    lb_require_device_memory(32 * n, "the vectors");
    if (all) lb_require_device_memory(40 * sort_n, "the sort's keys, values and temporary storage");
    if (!args.quiet)
        printf("thrust_basics: n = %zu%s, %s (%s), seed %llu\n", n, all ? "" : " (one dot product way)", gpu.prop.name,
               gpu.sm, args.seed);
    if (!args.quiet && all) printf("sorts: %zu keys\n", sort_n);
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    float *h_x = lb_host_alloc(n * sizeof(float), "x"), *h_y = lb_host_alloc(n * sizeof(float), "y");
    lb_fill_uniform(h_x, n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_y, n, -1.0f, 1.0f, &rng);
    vec_job j = {.n = n};
    CUBLAS_CHECK(cublasCreate(&j.blas));
    float **fbufs[] = {&j.x, &j.y, &j.z, &j.tmp};
    int **ibufs[] = {&j.ints, &j.keys, &j.run_keys, &j.run_sums};
    for (int b = 0; b < 4; b++) CUDA_CHECK(cudaMalloc((void **)fbufs[b], n * sizeof(float)));
    for (int b = 0; b < 4; b++) CUDA_CHECK(cudaMalloc((void **)ibufs[b], n * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(j.x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(j.y, h_y, n * sizeof(float), cudaMemcpyHostToDevice));

    run_ctx c = {&program, &args, &gpu, &rng, 0};
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "gbps",
                     .unit_head = "GB/s",
                     .base = "cublas",
                     .base_head = "vs cuBLAS",
                     .ceiling_head = "vs memcpy"};
    dot_table(&rep, &c, &j, h_x, h_y);
    /* the other tables report their rows alone; with --quiet, the dot's summary counts them */
    if (all) {
        algorithm_tables(&c, &j, h_x, h_y);
        sort_tables(&c, sort_n);
    }
    rep.failures += c.failures;

    for (int b = 0; b < 4; b++) CUDA_CHECK(cudaFree(*fbufs[b]));
    for (int b = 0; b < 4; b++) CUDA_CHECK(cudaFree(*ibufs[b]));
    CUBLAS_CHECK(cublasDestroy(j.blas));
    free(h_x), free(h_y);
    return lb_report_finish(&rep);
}
