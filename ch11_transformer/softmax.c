/* softmax.c - Y = softmax(X) along each row, the row operation of attention and of every
 * classifier's output, from a thread per row to a row held in registers, against a
 * device-to-device cudaMemcpy of the same bytes (one read of X, one write of Y).
 *
 *   X and Y are rows x cols floats, row-major (default 16384 x 4096: 256 MiB each); X uniform in
 *   [-A, A] from --seed (--amplitude A, default 10; 0 makes every row's values equal), a share
 *   of its entries -inf with --masked F (a mask, as attention's; every row keeps one finite).
 *   build: make ch11 (or `make` here)   run: ./softmax [version] [--size ROWSxCOLS] [--amplitude A]
 *
 * versions: the table versions[] below (0 the copy, 1 a thread per row ... 5 the row in
 * registers), listed by ./softmax --help; the kernels are in softmax_kernels.cu.
 * Checked: every element against the CPU's softmax in double, within a bound from the float
 * arithmetic (below). GB/s counts 2 x rows x cols x 4 bytes, the least any version must move.
 */
#include "labbook.h"
#include "softmax_kernels.h"

#include <math.h>

/* ---------------------------------------------------------------- CPU reference */

/* In double: the row's max m, then exp(x - m) / sum; m_out keeps each row's max for the
 * tolerance. A -inf entry gives 0 (exp(-inf) = 0). */
static void softmax_cpu(const float *x, float *y, double *m_out, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        double m = -INFINITY, s = 0.0;
        for (int c = 0; c < cols; c++) m = fmax(m, xr[c]);
        for (int c = 0; c < cols; c++) s += exp((double)xr[c] - m);
        for (int c = 0; c < cols; c++) y[(size_t)r * cols + c] = (float)(exp((double)xr[c] - m) / s);
        m_out[r] = m;
    }
}

/* The bound on one output y = e / s, relative to it, in float ulps (2^-24):
 *   the exponential: __expf is ex2.approx of (x - m) log2(e), whose rounding grows with |x - m|:
 *   about |x - m| ulps, and 2 of its own; the sum: s is a sum of cols positive terms in float, in
 *   some order; its roundings have random signs, about sqrt(chain) ulps for a chain of additions,
 *   and the longest chain is cols (a thread that sums its row alone); 8 sqrt(cols) is far from
 *   a false alarm and below one lost term of a 4097-wide row (1 / 4097 = 2.4e-4, against 6e-5);
 *   then the subtraction, the reciprocal and the product: a few ulps more. Outputs below the
 *   smallest normal float (2^-126) may be flushed to 0: that much absolute. */
typedef struct {
    const float *x;
    const double *row_max;
    const float *want;
    int cols;
} softmax_tol;
static double softmax_tolerance(size_t i, const void *ctx)
{
    const softmax_tol *t = (const softmax_tol *)ctx;
    double dx = fabs((double)t->x[i] - t->row_max[i / (size_t)t->cols]);
    if (!isfinite(dx)) dx = 0.0; /* a masked entry: its output is 0, exactly */
    double ulps = 8.0 + 8.0 * sqrt((double)t->cols) + 1.5 * dx;
    return ulps * 5.96e-8 * fabs((double)t->want[i]) + 2.0 * 1.1754944e-38;
}

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int version;
    const float *d_x;
    float *d_y;
    int rows, cols;
} softmax_job;

static cudaError_t run_kernel(void *ctx)
{
    softmax_job *j = (softmax_job *)ctx;
    return softmax_launch(j->version, j->d_x, j->d_y, j->rows, j->cols);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. Version 0 is no softmax:
 * the device-to-device copy of as many bytes, the floor of the time. To add a version: the
 * kernel and its launcher in softmax_kernels.cu (and in launchers[]), SOFTMAX_VERSIONS in
 * softmax_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "memcpy", "cudaMemcpy D2D (the floor)", LB_OLDEST_SM, NULL},
    {1, "thread_per_row", "a thread per row, 3 passes", LB_OLDEST_SM, run_kernel},
    {2, "block_shared", "a block per row, shared trees", LB_OLDEST_SM, run_kernel},
    {3, "warp_shuffle", "a warp per row, shuffles", LB_OLDEST_SM, run_kernel},
    {4, "warp_online", "warp, online max+sum, float4", LB_OLDEST_SM, run_kernel},
    {5, "block_regs", "a block per row, in registers", LB_OLDEST_SM, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == SOFTMAX_VERSIONS,
               "one row in versions[] per version: SOFTMAX_VERSIONS in softmax_kernels.h");

/* ---------------------------------------------------------------- inputs */

/* uniform in [-a, a]; then each entry -inf with probability `masked`, but a row keeps at least
 * one finite entry (a row of -inf alone has no softmax: PyTorch gives NaN) */
static void make_input(float *x, int rows, int cols, double a, double masked, lb_rng *rng)
{
    for (size_t i = 0; i < (size_t)rows * cols; i++) x[i] = lb_rng_uniform(rng, (float)-a, (float)a);
    if (masked <= 0.0) return;
    for (int r = 0; r < rows; r++) {
        int kept = 0;
        for (int c = 0; c < cols; c++) {
            if ((double)(lb_rng_next(rng) >> 11) * 0x1.0p-53 < masked)
                x[(size_t)r * cols + c] = -INFINITY;
            else
                kept++;
        }
        if (!kept) x[(size_t)r * cols + (int)(lb_rng_next(rng) % (uint64_t)cols)] = 0.0f;
    }
}

/* ---------------------------------------------------------------- main */

static double amplitude = 10.0, masked = 0.0;
static const lb_opt opts[] = {
    {"--amplitude", LB_OPT_DOUBLE, &amplitude, "the inputs uniform in [-value, value] (0: every row's values equal)"},
    {"--masked", LB_OPT_DOUBLE, &masked, "share of X's entries set to -inf, a mask (every row keeps one finite)"},
};
static const lb_program program = {
    .name = "softmax",
    .synopsis = "Y = softmax(X) along each row: a thread, a block, a warp per row, the online softmax, the row in "
                "registers, against cudaMemcpy",
    .details = "--size is ROWSxCOLS (default 16384x4096; N alone: N x N), COLS at most 32768.\n",
    .uses = LB_USE_ALL & ~LB_USE_BLOCK,
    .opts = opts,
    .n_opts = sizeof opts / sizeof opts[0],
    .versions = versions,
    .n_versions = SOFTMAX_VERSIONS,
};

int main(int argc, char **argv)
{
    /* ---- setup: arguments (checked before the GPU is touched), GPU, inputs */
    lb_args args = {.size = {{16384, 4096}, 2}, .max_size_dims = 2, .iters = 20, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    int rows, cols;
    lb_size_rows_cols(&program, &args, SOFTMAX_MAX_COLS, "columns", &rows, &cols);
    if (!(amplitude >= 0.0 && amplitude <= 1e6)) lb_usage_error(&program, "--amplitude must be 0..1e6");
    if (!(masked >= 0.0 && masked < 1.0)) lb_usage_error(&program, "--masked must be in [0, 1)");
    size_t n = (size_t)rows * cols, bytes = n * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    /* X and Y, and the floor's two buffers (the bytes moved, read and written) when timing */
    lb_require_device_memory(2 * bytes + (args.check_only ? 0 : 2 * bytes), "X and Y");
    if (!args.quiet)
        printf("softmax: Y = softmax(X) along rows, fp32, %d x %d, X in [-%g, %g]%s, %s (%s), seed %llu\n", rows, cols,
               amplitude, amplitude, masked > 0 ? " with -inf entries" : "", gpu.prop.name, gpu.sm, args.seed);

    float *h_x = lb_host_alloc(bytes, "X"), *h_y = lb_host_alloc(bytes, "Y"), *h_ref = lb_host_alloc(bytes, "the reference");
    double *row_max = lb_host_alloc(sizeof(double) * rows, "the rows' max");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    make_input(h_x, rows, cols, amplitude, masked, &rng);
    softmax_cpu(h_x, h_ref, row_max, rows, cols);
    float *d_x, *d_y;
    CUDA_CHECK(lb_malloc_guarded((void **)&d_x, bytes)); /* NaN past the end: an over-read fails */
    CUDA_CHECK(cudaMalloc((void **)&d_y, bytes));
    CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));

    /* ---- check and time each version against the copy of the same bytes */
    char sz[48];
    snprintf(sz, sizeof sz, "%dx%d", rows, cols);
    lb_report rep = lb_report_vs_memcpy(&program, &args);
    lb_report_table(&rep, sz, NULL);
    double moved = 2.0 * (double)bytes; /* X read once, Y written once */
    lb_report_memcpy_version(&rep, (size_t)moved);
    softmax_tol tol = {h_x, row_max, h_ref, cols};
    for (int v = 1; v < SOFTMAX_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        lb_poison_device(d_y, bytes); /* an element never written stays NaN and fails */
        softmax_job job = {v, d_x, d_y, rows, cols};
        CUDA_CHECK(run_kernel(&job));
        CUDA_CHECK(cudaMemcpy(h_y, d_y, bytes, cudaMemcpyDeviceToHost));
        lb_check c = lb_check_f32_bound(versions[v].name, h_y, h_ref, n, softmax_tolerance, &tol, args.quiet);
        char verdict[64];
        float ms = args.check_only ? 0.0f : lb_time_ms(run_kernel, &job, 2, args.iters);
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? moved / (ms * 1e6) : 0.0, c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
    }

    free(h_x);
    free(h_y);
    free(h_ref);
    free(row_max);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    return lb_report_finish(&rep);
}
