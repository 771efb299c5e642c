/* debugging.c - the book's broken matrix kernel turned into a lab: find the planted bug.
 *
 *   C = A @ B, A is (M,K), B is (K,N), C is (M,N), row-major; default M,N,K = 1000,700,500
 *   (not multiples of the 16x16 tile, and M > N: the bugs need both to show).
 *   build: make ch06 (make debug for cuda-gdb)
 *   run:   ./debugging [--bug N] [--probe ROW,COL] [--size M,N,K]
 *
 * --bug picks the kernel (debugging_kernels.cu says what each bug is):
 *   0  correct (the default)
 *   1  out-of-bounds write              compute-sanitizer --tool memcheck finds it
 *   2  missing __syncthreads: a race    compute-sanitizer --tool racecheck
 *   3  uninitialized shared memory      compute-sanitizer --tool racecheck (read before write)
 *   4  wrong index mapping              compute-sanitizer --tool memcheck (and the check)
 * --probe ROW,COL makes the thread that computes C[ROW][COL] print each tile's contribution
 * and where it stores (device printf); this program then prints the CPU's contributions
 * beside them. Every element is checked against a CPU reference (double accumulation).
 * NVTX ranges name the phases for Nsight Systems.
 */
#include "labbook.h"
#include "debugging_kernels.h"
#include <nvtx3/nvToolsExt.h>

/* ---------------------------------------------------------------- CPU reference */

static void matmul_cpu(const float *A, const float *B, float *C, int M, int N, int K)
{
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++) acc += (double)A[(size_t)r * K + k] * (double)B[(size_t)k * N + c];
            C[(size_t)r * N + c] = (float)acc;
        }
}

/* What each tile of K adds to C[r][c]: the numbers the probe prints, computed on the CPU. */
static void print_cpu_probe(const float *A, const float *B, int N, int K, int r, int c)
{
    double sum = 0.0;
    for (int t = 0; t < K; t += DEBUG_TILE) {
        double part = 0.0;
        for (int k = t; k < K && k < t + DEBUG_TILE; k++)
            part += (double)A[(size_t)r * K + k] * (double)B[(size_t)k * N + c];
        sum += part;
        printf("cpu   C[%d][%d] tile %2d (k %d..%d): adds %12.6f, sum %12.6f\n", r, c, t / DEBUG_TILE, t,
               t + DEBUG_TILE - 1, part, sum);
    }
}

/* |error| <= K * 2^-22 + 1e-5 |want|: a few times the rounding of a length-K fp32 dot product
 * of values in [-1, 1]; a missed tile or a wrong element gives errors of order 1. */
static double abs_tol(int K) { return K * 2.384185791015625e-07; }

/* ---------------------------------------------------------------- main */

static const char *const bug_names[DEBUG_BUGS + 1] = {"correct", "out-of-bounds write", "missing __syncthreads (race)",
                                                      "uninitialized shared memory", "wrong index mapping"};
static const char *const bug_tools[DEBUG_BUGS + 1] = {"", "memcheck", "racecheck", "racecheck", "memcheck"};

typedef struct {
    int bug;
    const float *d_a, *d_b;
    float *d_c;
    int m, n, k;
} mm_job;

static cudaError_t run_kernel(void *ctx)
{
    mm_job *j = (mm_job *)ctx;
    return debug_matmul_launch(j->bug, j->d_a, j->d_b, j->d_c, j->m, j->n, j->k, -1, -1);
}

static int bug = 0;
static lb_dims probe = {{-1, -1}, 0};
static const lb_opt options[] = {
    {"--bug", LB_OPT_INT, &bug,
     "the planted bug: 0 none, 1 out-of-bounds write, 2 race, 3 uninitialized shared, 4 index"},
    {"--probe", LB_OPT_DIMS, &probe, "the thread computing C[X][Y] (row X, column Y) prints what it does"},
};
static const lb_program program = {
    .name = "debugging",
    .synopsis = "a tiled matmul with a bug planted on request, to find with printf, compute-sanitizer and cuda-gdb",
    .details =
        "--size is N (square) or M,N,K (at most 2^32 multiply-adds: the CPU checks every element).\n"
        "Find each bug with: compute-sanitizer --tool memcheck|racecheck|synccheck|initcheck ./debugging --bug N\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 2,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1000, 700, 500}, 3}, .max_size_dims = 3, .iters = 10, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    int M, N, K;
    lb_size_mnk(&program, &args, &M, &N, &K);
    if (bug < 0 || bug > DEBUG_BUGS) lb_usage_error(&program, "--bug must be 0..%d", DEBUG_BUGS);
    if (probe.n == 1) lb_usage_error(&program, "--probe takes ROW,COL");
    if ((double)M * N * K > 4294967296.0)
        lb_usage_error(&program, "--size %dx%dx%d: at most 2^32 multiply-adds (the CPU checks every element)", M, N, K);
    int pr = probe.n ? (int)probe.v[0] : -1, pc = probe.n ? (int)probe.v[1] : -1;
    /* a probe may name a thread just outside C (bug 1's writers), but not past the grid */
    if (probe.n &&
        (pr >= (M + DEBUG_TILE - 1) / DEBUG_TILE * DEBUG_TILE || pc >= (N + DEBUG_TILE - 1) / DEBUG_TILE * DEBUG_TILE))
        lb_usage_error(&program, "--probe %d,%d: no such thread (the grid covers %d rows and %d columns)", pr, pc,
                       (M + DEBUG_TILE - 1) / DEBUG_TILE * DEBUG_TILE, (N + DEBUG_TILE - 1) / DEBUG_TILE * DEBUG_TILE);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t a_n = (size_t)M * K, b_n = (size_t)K * N, c_n = (size_t)M * N;
    lb_require_device_memory(sizeof(float) * (a_n + b_n + c_n), "the matrices");
    if (!args.quiet)
        printf("debugging: C = A @ B, M=%d N=%d K=%d, %dx%d tiles, bug %d: %s, %s (%s), seed %llu\n", M, N, K,
               DEBUG_TILE, DEBUG_TILE, bug, bug_names[bug], gpu.prop.name, gpu.sm, args.seed);

    float *h_a = lb_host_alloc(sizeof(float) * a_n, "A"), *h_b = lb_host_alloc(sizeof(float) * b_n, "B");
    float *h_c = lb_host_alloc(sizeof(float) * c_n, "C"),
          *h_ref = lb_host_alloc(sizeof(float) * c_n, "the CPU reference");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_a, a_n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_b, b_n, -1.0f, 1.0f, &rng);

    nvtxRangePushA("upload");
    float *d_a, *d_b, *d_c;
    CUDA_CHECK(cudaMalloc((void **)&d_a, sizeof(float) * a_n));
    CUDA_CHECK(cudaMalloc((void **)&d_b, sizeof(float) * b_n));
    CUDA_CHECK(cudaMalloc((void **)&d_c, sizeof(float) * c_n));
    CUDA_CHECK(cudaMemcpy(d_a, h_a, sizeof(float) * a_n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_b, h_b, sizeof(float) * b_n, cudaMemcpyHostToDevice));
    lb_poison_device(d_c, sizeof(float) * c_n); /* NaN: an element never written fails */
    nvtxRangePop();

    /* One run, checked. A bad access may stop the kernel: CUDA_CHECK then names the error
     * (illegal address) and exits 3; the sanitizer says where. */
    nvtxRangePushA(bug ? "kernel with a bug" : "kernel");
    CUDA_CHECK(debug_matmul_launch(bug, d_a, d_b, d_c, M, N, K, pr, pc));
    CUDA_CHECK(cudaDeviceSynchronize()); /* also flushes the probe's printf output */
    nvtxRangePop();

    nvtxRangePushA("check");
    CUDA_CHECK(cudaMemcpy(h_c, d_c, sizeof(float) * c_n, cudaMemcpyDeviceToHost));
    matmul_cpu(h_a, h_b, h_ref, M, N, K);
    if (probe.n && pr < M && pc < N) print_cpu_probe(h_a, h_b, N, K, pr, pc);
    lb_check chk = lb_check_f32("C vs CPU", h_c, h_ref, c_n, abs_tol(K), 1e-5, args.quiet);
    nvtxRangePop();
    char summary[160];
    lb_check_summary(&chk, summary, sizeof summary);
    int pass = chk.n_bad == 0;
    if (!args.quiet) {
        printf("check: every element against the CPU: %s\n", summary);
        if (bug)
            printf("bug %d is planted: whatever the check says, `compute-sanitizer --tool %s ./debugging --bug %d` "
                   "finds it (README: Debugging)\n",
                   bug, bug_tools[bug], bug);
    }

    float ms = 0.0f;
    if (!args.check_only && !probe.n) { /* (timing a probe would print its lines iters times) */
        mm_job job = {bug, d_a, d_b, d_c, M, N, K};
        ms = lb_time_ms(run_kernel, &job, 1, args.iters);
        if (!args.quiet)
            printf("kernel: %.4f ms, %.1f GFLOP/s (a teaching kernel: see ch04 for fast ones)\n", ms,
                   2.0 * M * N * (double)K / (ms * 1e6));
    }
    if (args.quiet)
        printf("debugging: bug %d (%s), %dx%dx%d, %s\n", bug, bug_names[bug], M, N, K, pass ? "PASS" : "FAIL");

    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_c));
    free(h_a);
    free(h_b);
    free(h_c);
    free(h_ref);
    return pass ? LB_EXIT_PASS : LB_EXIT_FAIL;
}
