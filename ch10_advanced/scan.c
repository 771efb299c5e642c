/* scan.c - prefix sums of n values (default 2^28), int32 (checked exactly) and float, inclusive
 * and exclusive, from one-block algorithms to a single pass with decoupled look-back, against
 * cub::DeviceScan.
 *   build: make ch10      run: ./scan [version] [--size N] [--type int|float|both] [--mode inclusive|exclusive|both]
 *
 * Versions: the table versions[] below (0 CUB, 1-2 one block per tile + propagate, 3 reduce-
 * then-scan, 4-5 single pass with decoupled look-back), listed by ./scan --help; the kernels
 * are in scan_kernels.cu.
 * GB/s counts n values read and n written, against a D2D cudaMemcpy of as many bytes and CUB.
 */
#include "labbook.h"
#include "scan_kernels.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- CPU reference */

static void scan_int_cpu(const int *x, size_t n, int exclusive, int *out)
{
    unsigned int run = 0; /* unsigned: wrap-around is defined, as on the GPU */
    for (size_t i = 0; i < n; i++) {
        unsigned int next = run + (unsigned int)x[i];
        out[i] = (int)(exclusive ? run : next);
        run = next;
    }
}

/* prefix sums in double, and the running sum of |x| for the tolerance */
static void scan_float_cpu(const float *x, size_t n, int exclusive, double *out, double *abs_run)
{
    double run = 0.0, a = 0.0;
    for (size_t i = 0; i < n; i++) {
        double next = run + x[i];
        a += fabs((double)x[i]);
        out[i] = exclusive ? run : next;
        abs_run[i] = a;
        run = next;
    }
}

/* Float tolerance for output i: 2^-12 of the sum of |x| up to i, or 0 with --exact. The
 * longest chain of float additions behind an output is the carry handed from tile to tile
 * (n / 1024 or n / 4096 of them) plus about 30 inside a tile; with rounding errors of random
 * sign that grows like sqrt(chain) * 2^-24 * sum|x| < 2^-15 sum|x| at n = 2^28: 2^-12 leaves
 * 8x room. That is also its limit: at 2^28 a prefix is about 10^8 and its rounding alone
 * reaches thousands, as much as a whole tile's sum, so a tile carry lost far from the start
 * hides in it. Hence --exact: inputs 0 or 1 keep every float sum an exact integer (n <= 2^24),
 * and each output must be equal. Integers are always checked exactly. */
static size_t check_float(const float *got, const double *want, const double *abs_run, size_t n, int exact, int quiet)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = exact ? 0.0 : abs_run[i] * 2.44140625e-4 + 1e-30;
        if (!(fabs(got[i] - want[i]) <= tol)) {
            if (!quiet && bad < 3)
                fprintf(stderr, "  [%zu]: got %.9g, want %.9g (tolerance %.2g)\n", i, got[i], want[i], tol);
            bad++;
        }
    }
    return bad;
}

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int v, type, excl;
    const void *in;
    void *out;
    size_t n;
    void *scratch;
    size_t scratch_bytes; /* asked once, at setup: the query is not part of what is timed */
} scan_job;

static cudaError_t run_scan(void *ctx)
{
    scan_job *j = (scan_job *)ctx;
    return scan_launch(j->v, j->type, j->excl, j->in, j->out, j->n, j->scratch, j->scratch_bytes);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it (scan_launch runs CUB
 * for version 0 too). To add one: the kernels and its case in scan_launch (and in
 * scan_scratch_bytes), SCAN_VERSIONS in scan_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "cub", "cub::DeviceScan", LB_OLDEST_SM, run_scan},
    {1, "hillis_steele", "Hillis-Steele + propagate", LB_OLDEST_SM, run_scan},
    {2, "blelloch", "Blelloch + propagate", LB_OLDEST_SM, run_scan},
    {3, "reduce_then_scan", "reduce-then-scan", LB_OLDEST_SM, run_scan},
    {4, "lookback", "decoupled look-back", LB_OLDEST_SM, run_scan},
    {5, "lookback_tuned", "look-back, 16-byte loads", LB_OLDEST_SM, run_scan},
};
_Static_assert(sizeof versions / sizeof versions[0] == SCAN_VERSIONS,
               "one row in versions[] per version: SCAN_VERSIONS in scan_kernels.h");

/* ---------------------------------------------------------------- main */

static const char *type_arg = "both", *mode_arg = "both";
static int exact = 0;
static const lb_opt options[] = {
    {"--type", LB_OPT_STRING, &type_arg, "int, float or both"},
    {"--mode", LB_OPT_STRING, &mode_arg, "inclusive, exclusive or both"},
    {"--exact", LB_OPT_FLAG, &exact,
     "float inputs 0 or 1: every float sum is exact and checked for equality (n <= 2^24)"},
};
static const lb_program program = {
    .name = "scan",
    .synopsis = "prefix sums: Hillis-Steele, Blelloch, reduce-then-scan and a single-pass look-back scan, against CUB",
    .details = "Version 5 is version 4 with 16-byte loads into registers, larger tiles and patient polling.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 3,
    .versions = versions,
    .n_versions = SCAN_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 28}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0];
    if (n > ((size_t)1 << 31)) lb_usage_error(&program, "--size: at most 2^31");
    int t0 = 0, t1 = 1, m0 = 0, m1 = 1;
    if (!strcmp(type_arg, "int"))
        t1 = 0;
    else if (!strcmp(type_arg, "float"))
        t0 = 1;
    else if (strcmp(type_arg, "both"))
        lb_usage_error(&program, "--type must be int, float or both");
    if (!strcmp(mode_arg, "inclusive"))
        m1 = 0;
    else if (!strcmp(mode_arg, "exclusive"))
        m0 = 1;
    else if (strcmp(mode_arg, "both"))
        lb_usage_error(&program, "--mode must be inclusive, exclusive or both");
    if (exact && n > ((size_t)1 << 24))
        lb_usage_error(&program, "--exact needs n <= 2^24 (float sums of 0s and 1s stay exact up to 2^24)");

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t scratch = 0;
    for (int v = 0; v < SCAN_VERSIONS; v++)
        if (scan_scratch_bytes(v, n) > scratch) scratch = scan_scratch_bytes(v, n);
    lb_require_device_memory(8 * n + scratch, "the input and the output");
    if (!args.quiet) printf("scan: n=%zu, %s (%s), seed %llu\n", n, gpu.prop.name, gpu.sm, args.seed);

    void *h_in = lb_host_alloc(4 * n, "the input"), *h_out = lb_host_alloc(4 * n, "the output");
    double *want_f = NULL, *abs_run = NULL;
    int *want_i = NULL;
    void *d_in, *d_out, *d_scratch;
    CUDA_CHECK(cudaMalloc(&d_in, 4 * n));
    CUDA_CHECK(cudaMalloc(&d_out, 4 * n));
    CUDA_CHECK(cudaMalloc(&d_scratch, scratch));
    /* the report: GB/s of n values read and n written, against a copy of as many bytes and CUB;
     * one table per type and mode */
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "gbps",
                     .unit_head = "GB/s",
                     .base = "cub",
                     .base_head = "vs CUB",
                     .ceiling_head = "vs memcpy"};
    lb_report_ceiling(&rep, 8 * n, args.iters);
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    for (int type = t0; type <= t1; type++) {
        /* ints 0..7 (sums up to 7n: exact, and wrap-around is defined anyway); floats in [0, 1),
         * or with --exact 0 or 1 */
        if (type == SCAN_INT)
            for (size_t i = 0; i < n; i++) ((int *)h_in)[i] = (int)(lb_rng_next(&rng) >> 61);
        else if (exact)
            for (size_t i = 0; i < n; i++) ((float *)h_in)[i] = (float)(lb_rng_next(&rng) >> 63);
        else
            lb_fill_uniform((float *)h_in, n, 0.0f, 1.0f, &rng);
        CUDA_CHECK(cudaMemcpy(d_in, h_in, 4 * n, cudaMemcpyHostToDevice));
        for (int excl = m0; excl <= m1; excl++) {
            if (type == SCAN_INT) {
                want_i = want_i ? want_i : lb_host_alloc(4 * n, "the CPU scan");
                scan_int_cpu((const int *)h_in, n, excl, want_i);
            } else {
                want_f = want_f ? want_f : lb_host_alloc(8 * n, "the CPU scan");
                abs_run = abs_run ? abs_run : lb_host_alloc(8 * n, "the CPU scan");
                scan_float_cpu((const float *)h_in, n, excl, want_f, abs_run);
            }
            char what[32], sz[64];
            snprintf(what, sizeof what, "%s %s", type == SCAN_INT ? "int32" : "float",
                     excl ? "exclusive" : "inclusive");
            snprintf(sz, sizeof sz, "%zu_%s_%s", n, type == SCAN_INT ? "int" : "float", excl ? "excl" : "incl");
            lb_report_table(&rep, sz, what);
            for (int v = 0; v < SCAN_VERSIONS; v++) { /* CUB (version 0) always, first: the baseline */
                if (v > 0 && !lb_version_wanted(&program, &args, &gpu, v)) continue;
                scan_job job = {v, type, excl, d_in, d_out, n, d_scratch, scratch};
                lb_poison_device(d_out, 4 * n);
                CUDA_CHECK(versions[v].run(&job));
                CUDA_CHECK(cudaMemcpy(h_out, d_out, 4 * n, cudaMemcpyDeviceToHost));
                size_t bad = type == SCAN_INT ? lb_check_i32(versions[v].name, h_out, want_i, n, args.quiet).n_bad
                                              : check_float(h_out, want_f, abs_run, n, exact, args.quiet);
                float ms = args.check_only ? 0.0f : lb_time_ms(versions[v].run, &job, 2, args.iters);
                char verdict[64];
                if (bad)
                    snprintf(verdict, sizeof verdict, "FAIL (%zu of %zu wrong)", bad, n);
                else
                    snprintf(verdict, sizeof verdict, "PASS%s", type == SCAN_INT || exact ? " (exact)" : "");
                lb_report_row(&rep, v, NULL, ms, ms > 0 ? 8.0 * n / (ms * 1e6) : 0.0, bad == 0, verdict);
            }
        }
    }
    free(h_in);
    free(h_out);
    free(want_i);
    free(want_f);
    free(abs_run);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_scratch));
    return lb_report_finish(&rep);
}
