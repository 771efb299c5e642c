/* streams.c - overlapping copies and kernels with CUDA streams (the book's chapter 5).
 *
 *   K arrays of M floats (default 200 x 2^20, 800 MB), in pinned host memory; each is copied
 *   to the GPU, processed (--reps FMAs per element) and copied back.
 *   build: make ch06      run: ./streams [--arrays K] [--size M] [--streams S] [--chunks C] [--reps R]
 *
 * Schedules, each verified and timed:
 *   the parts alone      all copies in, the kernel over everything, all copies out, one
 *                        at a time: their maximum is the bound for any overlap, their sum
 *                        what no overlap costs
 *   serial, K arrays     copy in, kernel, copy out for one array after the other, default stream
 *   streams, K arrays    array k on stream k % S: one array's kernel runs while the next is
 *                        copied in and the previous copied out (copy engines both ways)
 *   pipeline             the same data as one array cut into C chunks over S streams
 * The pipeline is compared with the bound: the goal is within 1.2x of it. NVTX ranges name
 * each schedule for Nsight Systems.
 *
 * --per-stream-events (the book's multi-kernel_events): the arrays over streams again, with a
 * start and an end event around every kernel in its own stream; prints the mean and spread of
 * the kernels' times and how many ran at once, then polls an event with cudaEventQuery and
 * counts the CPU work done while the GPU was still busy.
 */
#include "labbook.h"
#include "streams_kernels.h"
#include <nvtx3/nvToolsExt.h>

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- CPU reference */

static float work_cpu(float v, int reps)
{
    for (int r = 0; r < reps; r++) v = fmaf(WORK_A, v, WORK_B); /* as __fmaf_rn on the GPU */
    return v;
}

/* ---------------------------------------------------------------- schedules */

typedef struct {
    const float *h_in; /* pinned */
    float *h_out;      /* pinned */
    float *d;          /* device */
    size_t total;      /* floats */
    int reps;
    cudaStream_t *streams;
} buffers;

/* Cut the data into `chunks` pieces; piece c goes on stream c % n_streams (n_streams 0: the
 * default stream). Each piece: copy in, kernel, copy out, queued in that order on its
 * stream, so they run in order there while other streams' pieces interleave. */
static cudaError_t run_chunked(const buffers *b, size_t chunks, int n_streams)
{
    size_t per = (b->total + chunks - 1) / chunks;
    for (size_t c = 0; c < chunks; c++) {
        size_t off = c * per;
        if (off >= b->total) break;
        size_t len = b->total - off < per ? b->total - off : per;
        cudaStream_t s = n_streams ? b->streams[c % (size_t)n_streams] : 0;
        cudaError_t e = cudaMemcpyAsync(b->d + off, b->h_in + off, len * sizeof(float), cudaMemcpyHostToDevice, s);
        if (!e) e = work_launch(b->d + off, len, b->reps, s);
        if (!e) e = cudaMemcpyAsync(b->h_out + off, b->d + off, len * sizeof(float), cudaMemcpyDeviceToHost, s);
        if (e) return e;
    }
    return cudaSuccess;
}

typedef struct {
    const buffers *b;
    int part;
    size_t chunks;
    int n_streams;
} sched_job;

enum { PART_H2D, PART_KERNEL, PART_D2H, SCHEDULE };

static cudaError_t run_schedule(void *ctx)
{
    sched_job *j = (sched_job *)ctx;
    const buffers *b = j->b;
    size_t bytes = b->total * sizeof(float);
    switch (j->part) {
    case PART_H2D: return cudaMemcpyAsync(b->d, b->h_in, bytes, cudaMemcpyHostToDevice, 0);
    case PART_KERNEL: return work_launch(b->d, b->total, b->reps, 0);
    case PART_D2H: return cudaMemcpyAsync(b->h_out, b->d, bytes, cudaMemcpyDeviceToHost, 0);
    default: return run_chunked(b, j->chunks, j->n_streams);
    }
}

/* Time a schedule: events on the legacy default stream, which waits for every (blocking)
 * stream's earlier work, so the stop event marks the end of all of it. */
static float time_schedule(sched_job *j, int iters, const char *label)
{
    nvtxRangePushA(label);
    float ms = lb_time_ms(run_schedule, j, 1, iters);
    nvtxRangePop();
    return ms;
}

/* The output after a schedule must be the CPU's: an even sample (cost budget) and the last. */
static size_t check_output(const buffers *b, int quiet)
{
    size_t bad = 0, step = lb_sample_step(b->total, b->reps, 33554432.0);
    for (size_t i = 0; i < b->total; i = lb_sample_next(i, b->total, step)) {
        float want = work_cpu(b->h_in[i], b->reps);
        if (!(b->h_out[i] == want)) { /* the same FMAs: equal; NaN (poison) fails */
            if (!quiet && bad < 3) fprintf(stderr, "  mismatch at [%zu]: got %.9g, want %.9g\n", i, b->h_out[i], want);
            bad++;
        }
    }
    return bad;
}

/* ---------------------------------------------------------------- events per stream */

/* Arrays over streams as run_chunked does, with an event before and after each kernel in that
 * kernel's stream: the pair times the kernel alone, however the streams interleave. */
static cudaError_t run_with_events(const buffers *b, int n_arrays, int n_streams, cudaEvent_t *start, cudaEvent_t *stop)
{
    size_t per = b->total / (size_t)n_arrays;
    for (int k = 0; k < n_arrays; k++) {
        size_t off = (size_t)k * per;
        cudaStream_t s = b->streams[k % n_streams];
        cudaError_t e = cudaMemcpyAsync(b->d + off, b->h_in + off, per * sizeof(float), cudaMemcpyHostToDevice, s);
        if (!e) e = cudaEventRecord(start[k], s);
        if (!e) e = work_launch(b->d + off, per, b->reps, s);
        if (!e) e = cudaEventRecord(stop[k], s);
        if (!e) e = cudaMemcpyAsync(b->h_out + off, b->d + off, per * sizeof(float), cudaMemcpyDeviceToHost, s);
        if (e) return e;
    }
    return cudaSuccess;
}

/* How much can the CPU do while the GPU works? Queue one kernel and an event after it, then
 * poll the event: cudaEventQuery returns cudaErrorNotReady until the GPU gets there, without
 * waiting. Returns the units of CPU work done meanwhile; *gpu_ms is the kernel's time. */
static long long cpu_work_while_gpu_runs(const buffers *b, cudaEvent_t start, cudaEvent_t stop, float *gpu_ms)
{
    volatile double sink = 0;
    long long units = 0;
    CUDA_CHECK(cudaEventRecord(start, 0));
    CUDA_CHECK(work_launch(b->d, b->total, b->reps, 0));
    CUDA_CHECK(cudaEventRecord(stop, 0));
    cudaError_t e;
    while ((e = cudaEventQuery(stop)) == cudaErrorNotReady) {
        for (int i = 0; i < 1000; i++) sink = sink + i * 0.5; /* one unit of "CPU work" */
        units++;
    }
    CUDA_CHECK(e);
    CUDA_CHECK(cudaEventElapsedTime(gpu_ms, start, stop));
    return units;
}

/* --per-stream-events: returns the number of sampled elements that were wrong. */
static size_t per_stream_events(const buffers *b, int n_arrays, int n_streams, const char *size, const lb_args *args)
{
    cudaEvent_t *ev = lb_host_alloc(sizeof(cudaEvent_t) * 2 * (size_t)n_arrays, "the events");
    cudaEvent_t *start = ev, *stop = ev + n_arrays;
    for (int k = 0; k < 2 * n_arrays; k++) CUDA_CHECK(cudaEventCreate(&ev[k]));
    size_t bytes = b->total * sizeof(float);
    lb_poison_host(b->h_out, bytes);
    lb_poison_device(b->d, bytes);
    nvtxRangePushA("per-stream events");
    CUDA_CHECK(run_with_events(b, n_arrays, n_streams, start, stop));
    CUDA_CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    size_t bad = check_output(b, args->quiet);

    /* each kernel's time, and the span from the first kernel's start to the last one's end
     * (events of one device share a clock, whatever their streams) */
    double sum = 0, sum2 = 0, lo = 1e30, hi = 0, span = 0;
    for (int k = 0; k < n_arrays; k++) {
        float ms, end_ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start[k], stop[k]));
        CUDA_CHECK(cudaEventElapsedTime(&end_ms, start[0], stop[k]));
        sum += ms;
        sum2 += (double)ms * ms;
        lo = fmin(lo, ms);
        hi = fmax(hi, ms);
        span = fmax(span, end_ms);
    }
    double earliest = 0; /* a kernel of another stream may have started before array 0's */
    for (int k = 0; k < n_arrays; k++) {
        float before;
        CUDA_CHECK(cudaEventElapsedTime(&before, start[k], start[0]));
        earliest = fmax(earliest, before);
    }
    span += earliest;
    double mean = sum / n_arrays, sd = sqrt(fmax(0.0, sum2 / n_arrays - mean * mean));
    float gpu_ms;
    long long units = cpu_work_while_gpu_runs(b, start[0], stop[0], &gpu_ms);
    if (!args->quiet) {
        printf("per-stream events: %d kernels over %d streams, each timed by its own start/end events\n", n_arrays,
               n_streams);
        printf("  kernel time: mean %.4f ms, spread (std) %.4f ms = %.1f%%, min %.4f, max %.4f\n", mean, sd,
               100.0 * sd / mean, lo, hi);
        printf("  first start to last end: %.3f ms for %.3f ms of kernels: %.1f at once on average\n", span, sum,
               span > 0 ? sum / span : 0.0);
        printf("  cudaEventQuery polling: the CPU did %lld units of work while one %.3f ms kernel ran\n", units,
               gpu_ms);
        printf("  output of every kernel (sampled) against the CPU: %s\n", bad ? "FAIL" : "PASS");
    } else {
        printf("streams: per-stream events, %d kernels, mean %.4f ms, spread %.1f%%, %s\n", n_arrays, mean,
               100.0 * sd / mean, bad ? "FAIL" : "PASS");
    }
    lb_result r1 = {"streams", -1, "kernel_per_stream", size, mean, "spread_pct", 100.0 * sd / mean, NULL, 0.0, !bad};
    lb_result r2 = {"streams", -1, "kernels_at_once", size, span, "x", span > 0 ? sum / span : 0.0, NULL, 0.0, !bad};
    lb_result r3 = {"streams", -1, "cpu_while_gpu", size, gpu_ms, "cpu_units", (double)units, NULL, 0.0, -1};
    lb_print_result(&r1, args->quiet);
    lb_print_result(&r2, args->quiet);
    lb_print_result(&r3, args->quiet);
    for (int k = 0; k < 2 * n_arrays; k++) CUDA_CHECK(cudaEventDestroy(ev[k]));
    free(ev);
    return bad;
}

/* ---------------------------------------------------------------- main */

static int arrays = 200, n_streams = 16, chunks = 64, reps = 2000, per_stream = 0;
static const lb_opt options[] = {
    {"--arrays", LB_OPT_INT, &arrays, "independent arrays (the book's experiment)"},
    {"--streams", LB_OPT_INT, &n_streams, "streams to spread the work over"},
    {"--chunks", LB_OPT_INT, &chunks, "pieces the pipeline cuts the data into"},
    {"--reps", LB_OPT_INT, &reps, "FMAs per element in the kernel (sets the kernel's share)"},
    {"--per-stream-events", LB_OPT_FLAG, &per_stream, "time every kernel by events in its stream; poll an event"},
};
static const lb_program program = {
    .name = "streams",
    .synopsis =
        "copies and kernels overlapped with streams: serial vs streams vs a chunked pipeline, against the bound",
    .details = "--size is M, the floats per array; the data is arrays x M floats in pinned memory.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 5,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 20}, 1}, .max_size_dims = 1, .iters = 3, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    if (arrays < 1 || n_streams < 1 || chunks < 1 || reps < 0)
        lb_usage_error(&program, "--arrays, --streams and --chunks must be positive, --reps 0 or more");
    if (n_streams > 1024) lb_usage_error(&program, "--streams %d: at most 1024", n_streams);
    size_t total = (size_t)arrays * (size_t)args.size.v[0], bytes = total * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(bytes, "the data");
    buffers b = {NULL, NULL, NULL, total, reps, NULL};
    float *h_in = NULL;
    cudaError_t e = cudaMallocHost((void **)&h_in, bytes);
    if (e == cudaSuccess) e = cudaMallocHost((void **)&b.h_out, bytes);
    if (e == cudaErrorMemoryAllocation)
        lb_die(LB_EXIT_USAGE, "size too large: 2 x %.2f GiB of pinned host memory could not be allocated",
               bytes / 1073741824.0);
    CUDA_CHECK(e);
    CUDA_CHECK(cudaMalloc((void **)&b.d, bytes));
    b.streams = lb_host_alloc(sizeof(cudaStream_t) * (size_t)n_streams, "the streams");
    for (int s = 0; s < n_streams; s++) CUDA_CHECK(cudaStreamCreate(&b.streams[s]));
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_in, total, -1.0f, 1.0f, &rng);
    b.h_in = h_in;
    if (!args.quiet)
        printf("streams: %d arrays x %lld floats = %.0f MB pinned, %d FMAs per element, %d streams, %s (%s)\n", arrays,
               args.size.v[0], bytes / 1e6, reps, n_streams, gpu.prop.name, gpu.sm);

    if (per_stream) {
        char sz[48];
        snprintf(sz, sizeof sz, "%dx%lld", arrays, args.size.v[0]);
        size_t wrong = per_stream_events(&b, arrays, n_streams, sz, &args);
        for (int s = 0; s < n_streams; s++) CUDA_CHECK(cudaStreamDestroy(b.streams[s]));
        free(b.streams);
        CUDA_CHECK(cudaFreeHost(h_in));
        CUDA_CHECK(cudaFreeHost(b.h_out));
        CUDA_CHECK(cudaFree(b.d));
        return wrong ? LB_EXIT_FAIL : LB_EXIT_PASS;
    }

    /* every schedule: poison the output, run it once, check it, then time it */
    struct {
        const char *label, *name;
        int part;
        size_t chunks;
        int n_streams;
    } sched[] = {
        {"copy in alone", "h2d", PART_H2D, 0, 0},
        {"kernel alone", "kernel", PART_KERNEL, 0, 0},
        {"copy out alone", "d2h", PART_D2H, 0, 0},
        {"serial, arrays, default stream", "serial_arrays", SCHEDULE, (size_t)arrays, 0},
        {"arrays over streams", "streams_arrays", SCHEDULE, (size_t)arrays, n_streams},
        {"one array, serial", "serial_whole", SCHEDULE, 1, 0},
        {"pipeline: chunks over streams", "pipeline", SCHEDULE, (size_t)chunks, n_streams},
    };
    enum { N_SCHED = sizeof sched / sizeof sched[0] };
    float ms[N_SCHED] = {0};
    size_t bad = 0;
    for (int k = 0; k < N_SCHED; k++) {
        sched_job j = {&b, sched[k].part, sched[k].chunks, sched[k].n_streams};
        if (sched[k].part == SCHEDULE) {
            lb_poison_host(b.h_out, bytes);
            lb_poison_device(b.d, bytes);
            CUDA_CHECK(run_schedule(&j));
            CUDA_CHECK(cudaDeviceSynchronize());
            size_t wrong = check_output(&b, args.quiet);
            if (wrong && !args.quiet) fprintf(stderr, "  %s: %zu sampled elements wrong\n", sched[k].label, wrong);
            bad += wrong;
        }
        if (!args.check_only) ms[k] = time_schedule(&j, args.iters, sched[k].label);
    }
    if (args.check_only) {
        printf("%s%s\n", args.quiet ? "streams: " : "",
               bad ? "FAIL" : "every schedule's output matches the CPU (sampled): PASS");
    } else {
        double bound = fmax(ms[PART_H2D], fmax(ms[PART_KERNEL], ms[PART_D2H]));
        double sum = ms[PART_H2D] + ms[PART_KERNEL] + ms[PART_D2H];
        char sz[48];
        snprintf(sz, sizeof sz, "%dx%lld", arrays, args.size.v[0]);
        if (!args.quiet) printf(" schedule                              ms    vs bound   overlap\n");
        for (int k = 0; k < N_SCHED; k++) {
            /* overlap: 0 = the parts one after another (their sum), 1 = perfectly hidden (the bound) */
            double overlap = sum > bound ? (sum - ms[k]) / (sum - bound) : 0.0;
            if (!args.quiet) {
                if (sched[k].part == SCHEDULE)
                    printf(" %-32s %9.3f %9.2f %9.2f\n", sched[k].label, ms[k], ms[k] / bound, overlap);
                else
                    printf(" %-32s %9.3f         -         -\n", sched[k].label, ms[k]);
            }
            lb_result r = {"streams",     -1,
                           sched[k].name, sz,
                           ms[k],         "x_bound",
                           ms[k] / bound, NULL,
                           0.0,           sched[k].part == SCHEDULE ? !bad : -1};
            lb_print_result(&r, args.quiet);
        }
        if (!args.quiet)
            printf("bound = max(copy in, kernel, copy out) = %.3f ms; no overlap = their sum = %.3f ms; "
                   "pipeline: %.2fx the bound (goal <= 1.2)\n",
                   bound, sum, ms[N_SCHED - 1] / bound);
        else
            printf("streams: pipeline %.3f ms = %.2fx the bound, serial %.3f ms, %s\n", ms[N_SCHED - 1],
                   ms[N_SCHED - 1] / bound, ms[3], bad ? "FAIL" : "PASS");
    }

    for (int s = 0; s < n_streams; s++) CUDA_CHECK(cudaStreamDestroy(b.streams[s]));
    free(b.streams);
    CUDA_CHECK(cudaFreeHost(h_in));
    CUDA_CHECK(cudaFreeHost(b.h_out));
    CUDA_CHECK(cudaFree(b.d));
    return bad ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
