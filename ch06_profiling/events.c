/* events.c - one kernel timed three ways, and why only two of them are right.
 *
 *   x is n floats (default 2^24); the kernel does x[i] = a*x[i] + b, reps times per element.
 *   build: make ch06      run: ./events [--size N] [--reps R] [--iters I]
 *
 * The ways:
 *   host clock, no synchronize   t0; launch; t1: a launch only queues the kernel and returns,
 *                                so this measures the launch call, not the kernel
 *   host clock + synchronize     t0; launch; cudaDeviceSynchronize(); t1: the kernel as the
 *                                CPU waits for it, plus the launch and the wake-up
 *   CUDA events                  record, launch, record on the GPU's own timeline: the kernel
 * and two effects: the very first launch in a process also loads the module (lazy loading)
 * and warms up the context, so it is much slower; and the mean of repeats moves with every
 * outlier while the median does not.
 */
#define _POSIX_C_SOURCE 200809L
#include "labbook.h"
#include "events_kernels.h"

#include <math.h>
#include <string.h>

#define A_COEF 0.999f
#define B_COEF 0.001f

/* ---------------------------------------------------------------- CPU reference */

static float busy_cpu(float v, int reps)
{
    for (int r = 0; r < reps; r++) v = fmaf(A_COEF, v, B_COEF); /* fmaf: one rounding, as __fmaf_rn */
    return v;
}

/* ---------------------------------------------------------------- statistics */

typedef struct {
    double median, mean, min, max;
} stats;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static stats summarize(double *t, int n)
{
    stats s = {0, 0, t[0], t[0]};
    for (int i = 0; i < n; i++) s.mean += t[i] / n;
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    s.min = t[0];
    s.max = t[n - 1];
    s.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    return s;
}

/* ---------------------------------------------------------------- main */

static int reps = 200;
static const lb_opt options[] = {
    {"--reps", LB_OPT_INT, &reps, "multiply-adds per element inside the kernel"},
};
static const lb_program program = {
    .name = "events",
    .synopsis = "a kernel timed with a host clock (without and with synchronize) and with CUDA events",
    .details = NULL,
    .uses = LB_USE_SIZE | LB_USE_BLOCK | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 1,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 24}, 1}, .max_size_dims = 1, .block = 256, .iters = 50, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    if (reps < 1) lb_usage_error(&program, "--reps must be positive");
    size_t n = (size_t)args.size.v[0], bytes = n * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_check_block(&program, &gpu, args.block);
    lb_require_device_memory(bytes, "x");
    if (!args.quiet)
        printf("events: x = a*x + b %d times on n=%zu floats, %s (%s), seed %llu\n", reps, n, gpu.prop.name, gpu.sm,
               args.seed);

    float *h_x = lb_host_alloc(bytes, "x"), *h_got = lb_host_alloc(bytes, "the result");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_x, n, -1.0f, 1.0f, &rng);
    float *d_x;
    CUDA_CHECK(cudaMalloc((void **)&d_x, bytes));
    CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));

    /* The first launch of this kernel in the process, timed from the host (with synchronize):
     * it is also the run that is verified below. */
    double t0 = lb_wall_ms();
    CUDA_CHECK(busy_launch(d_x, n, reps, A_COEF, B_COEF, args.block));
    CUDA_CHECK(cudaDeviceSynchronize());
    double first_ms = lb_wall_ms() - t0;

    /* verify: every element when that costs under 2^26 FMAs on the CPU, else an even sample and the last */
    CUDA_CHECK(cudaMemcpy(h_got, d_x, bytes, cudaMemcpyDeviceToHost));
    size_t step = lb_sample_step(n, reps, 67108864.0), checked = 0, bad = 0;
    for (size_t i = 0; i < n; i = lb_sample_next(i, n, step)) {
        float want = busy_cpu(h_x[i], reps);
        checked++;
        if (!(h_got[i] == want)) { /* the same FMAs in the same order: equal; NaN fails */
            if (!args.quiet && bad < 5)
                fprintf(stderr, "  mismatch at [%zu]: got %.9g, want %.9g\n", i, h_got[i], want);
            bad++;
        }
    }
    if (!args.quiet) printf("check: %zu elements compared with the CPU: %s\n", checked, bad ? "FAIL" : "PASS (exact)");
    if (args.check_only) {
        if (args.quiet) printf("events: n=%zu, %s\n", n, bad ? "FAIL" : "PASS");
        CUDA_CHECK(cudaFree(d_x));
        free(h_x);
        free(h_got);
        return bad ? LB_EXIT_FAIL : LB_EXIT_PASS;
    }

    int iters = args.iters;
    double *no_sync = lb_host_alloc(sizeof(double) * iters, "samples"),
           *with_sync = lb_host_alloc(sizeof(double) * iters, "samples");
    double *by_events = lb_host_alloc(sizeof(double) * iters, "samples");
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < iters; i++) {
        /* 1: the host clock around the launch alone */
        t0 = lb_wall_ms();
        CUDA_CHECK(busy_launch(d_x, n, reps, A_COEF, B_COEF, args.block));
        no_sync[i] = lb_wall_ms() - t0;
        CUDA_CHECK(cudaDeviceSynchronize()); /* (not timed: so that runs do not overlap) */
        /* 2: the host clock around launch + synchronize */
        t0 = lb_wall_ms();
        CUDA_CHECK(busy_launch(d_x, n, reps, A_COEF, B_COEF, args.block));
        CUDA_CHECK(cudaDeviceSynchronize());
        with_sync[i] = lb_wall_ms() - t0;
        /* 3: events recorded into the stream before and after the kernel */
        CUDA_CHECK(cudaEventRecord(start, 0));
        CUDA_CHECK(busy_launch(d_x, n, reps, A_COEF, B_COEF, args.block));
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        by_events[i] = ms;
    }
    stats s1 = summarize(no_sync, iters), s2 = summarize(with_sync, iters), s3 = summarize(by_events, iters);

    char sz[32];
    snprintf(sz, sizeof sz, "%zu", n);
    if (!args.quiet) {
        printf(" method                              median ms    mean ms     min ms     max ms\n");
        printf(" host clock, no synchronize        %10.4f %10.4f %10.4f %10.4f\n", s1.median, s1.mean, s1.min, s1.max);
        printf(" host clock + synchronize          %10.4f %10.4f %10.4f %10.4f\n", s2.median, s2.mean, s2.min, s2.max);
        printf(" CUDA events                       %10.4f %10.4f %10.4f %10.4f\n", s3.median, s3.mean, s3.min, s3.max);
        printf(" first launch in the process       %10.4f          -          -          -\n", first_ms);
        printf("what each measures:\n");
        printf("  no synchronize: only the launch call returning (%.1f%% of the kernel's event time): the kernel\n"
               "    was still running when the clock stopped\n",
               100.0 * s1.median / s3.median);
        printf(
            "  + synchronize: the kernel as the CPU waits for it, plus launch and wake-up (%.4f ms more than events)\n",
            s2.median - s3.median);
        printf("  events: the kernel between two points on the GPU's own timeline: the number to report\n");
        printf("  first launch: %.1fx a later one: module loading and warm-up; always time after a warm-up run\n",
               first_ms / s2.median);
        printf(
            "  mean vs median over %d repeats: %.4f vs %.4f ms (events); the mean follows outliers, the median not\n",
            iters, s3.mean, s3.median);
    }
    /* ratio: as everywhere, the baseline's time over the row's (here: how many times faster
     * than the events say each method makes the kernel look) */
    lb_result r1 = {"events", -1,       "host_no_sync",        sz,  s1.median, "mean_ms",
                    s1.mean,  "events", s3.median / s1.median, !bad};
    lb_result r2 = {"events", -1,       "host_sync",           sz,  s2.median, "mean_ms",
                    s2.mean,  "events", s3.median / s2.median, !bad};
    lb_result r3 = {"events", -1, "events", sz, s3.median, "mean_ms", s3.mean, "events", 1.0, !bad};
    lb_result r4 = {"events", -1,       "first_launch",       sz,  first_ms, "mean_ms",
                    first_ms, "events", s3.median / first_ms, !bad};
    lb_print_result(&r1, args.quiet);
    lb_print_result(&r2, args.quiet);
    lb_print_result(&r3, args.quiet);
    lb_print_result(&r4, args.quiet);
    if (args.quiet)
        printf("events: n=%zu, kernel %.4f ms by events, %.4f ms by host clock + sync, %.4f ms without sync, %s\n", n,
               s3.median, s2.median, s1.median, bad ? "FAIL" : "PASS");

    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(d_x));
    free(h_x);
    free(h_got);
    free(no_sync);
    free(with_sync);
    free(by_events);
    return bad ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
