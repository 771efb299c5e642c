/* contexts.c - host threads and CUDA contexts (the book's chapter 5: "contexts", "multiple
 * contexts for host-side concurrency").
 *
 *   T host threads (default 10), each with its own array of N floats (default 2^20) in pinned
 *   memory: allocate device memory, copy the array in, run the multiply kernel (reps FMAs per
 *   element on a small grid, --blocks x --block threads), copy it back, free. Four ways:
 *     0  serial     one thread does the T arrays one after another (the baseline)
 *     1  streams    T threads share the runtime's primary context, a non-blocking stream each
 *     2  contexts   T threads each create their own context (cuCtxCreate), load the module into
 *                   it, launch, destroy it: the book's multi-kernel_multi-thread
 *     3  push-pop   one context, created once; each thread pushes it (cuCtxPushCurrent), works
 *                   on its own stream and pops it: the book's simple_context_create (--push-pop)
 *   build: make ch06      run: ./contexts [0-3] [--threads T] [--size N] [--reps R] [--blocks B]
 *
 * Every thread's array is checked against the CPU; the memory pool's bytes in use and the
 * contexts alive before and after a way's runs must be the same (nothing leaked); each kernel is
 * timed with events in its own thread, and the overlap is the kernels' summed time over the time from the first thread's
 * start to the last one's end: about 1 when they take turns, up to T when all run at once.
 * The cost of creating and destroying one context is measured on its own. NVTX ranges name
 * each thread's work for Nsight Systems.
 */
#define _POSIX_C_SOURCE 200809L
#include "lb_driver.h"
#include "labbook.h"
#include "contexts_kernels.h"
#include <nvtx3/nvToolsExt.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h> /* access */

/* ---------------------------------------------------------------- CPU reference */

static float mult_cpu(float v, int reps)
{
    for (int r = 0; r < reps; r++) v = fmaf(MULT_A, v, MULT_B); /* fmaf: one rounding, as __fmaf_rn */
    return v;
}

/* ---------------------------------------------------------------- one thread's work */

enum { MODE_SERIAL, MODE_STREAMS, MODE_CONTEXTS, MODE_PUSH_POP, N_MODES };

typedef struct {
    int mode, n, reps, blocks, threads;
    CUdevice dev;
    const char *module_path; /* the fatbin the driver-API ways load */
    CUcontext shared_ctx;    /* push-pop: the one created context ... */
    CUfunction shared_fn;    /* ... and the kernel loaded into it */
} setup;

typedef struct {
    const setup *s;
    int index;
    const float *h_in;     /* pinned */
    float *h_out;          /* pinned */
    double t_start, t_end; /* host clock (ms) around the GPU work, for the overlap */
    float kernel_ms;       /* the kernel alone, by events on its stream */
} task;

/* Serial and streams: the runtime API in the primary context. cudaMallocAsync/cudaFreeAsync
 * are ordered in the stream; a plain cudaFree would wait for the whole device, every other
 * thread's kernel included, and so take the overlap away. */
static void run_task_runtime(task *t, cudaStream_t stream)
{
    size_t bytes = (size_t)t->s->n * sizeof(float);
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    float *d_x;
    t->t_start = lb_wall_ms();
    CUDA_CHECK(cudaMallocAsync((void **)&d_x, bytes, stream));
    CUDA_CHECK(cudaMemcpyAsync(d_x, t->h_in, bytes, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaEventRecord(start, stream));
    CUDA_CHECK(mult_launch(d_x, t->s->n, t->s->reps, t->s->blocks, t->s->threads, stream));
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaMemcpyAsync(t->h_out, d_x, bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaFreeAsync(d_x, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    t->t_end = lb_wall_ms();
    CUDA_CHECK(cudaEventElapsedTime(&t->kernel_ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
}

/* the contexts created and not yet destroyed, for the leak check (way 2's threads change it) */
static atomic_int live_contexts;

/* Contexts and push-pop: the same steps in the driver API, in whatever context is current. */
static void run_task_driver(task *t, CUfunction fn, CUstream stream)
{
    size_t bytes = (size_t)t->s->n * sizeof(float);
    CUevent start, stop;
    CU_CHECK(lb_cu.cuEventCreate(&start, CU_EVENT_DEFAULT));
    CU_CHECK(lb_cu.cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CUdeviceptr d_x;
    int n = t->s->n, reps = t->s->reps;
    void *params[] = {&d_x, &n, &reps}; /* the kernel's arguments, by address */
    t->t_start = lb_wall_ms();
    CU_CHECK(lb_cu.cuMemAllocAsync(&d_x, bytes, stream));
    CU_CHECK(lb_cu.cuMemcpyHtoDAsync(d_x, t->h_in, bytes, stream));
    CU_CHECK(lb_cu.cuEventRecord(start, stream));
    CU_CHECK(
        lb_cu.cuLaunchKernel(fn, (unsigned)t->s->blocks, 1, 1, (unsigned)t->s->threads, 1, 1, 0, stream, params, NULL));
    CU_CHECK(lb_cu.cuEventRecord(stop, stream));
    CU_CHECK(lb_cu.cuMemcpyDtoHAsync(t->h_out, d_x, bytes, stream));
    CU_CHECK(lb_cu.cuMemFreeAsync(d_x, stream));
    CU_CHECK(lb_cu.cuStreamSynchronize(stream));
    t->t_end = lb_wall_ms();
    CU_CHECK(lb_cu.cuEventElapsedTime(&t->kernel_ms, start, stop));
    CU_CHECK(lb_cu.cuEventDestroy(start));
    CU_CHECK(lb_cu.cuEventDestroy(stop));
}

/* the module's kernel in the current context */
static CUmodule load_module(const char *path, CUfunction *fn)
{
    CUmodule mod;
    CU_CHECK(lb_cu.cuModuleLoad(&mod, path));
    CU_CHECK(lb_cu.cuModuleGetFunction(fn, mod, "mult_kernel"));
    return mod;
}

/* The thread bodies, one per way. Each names its work for Nsight Systems. */
static void *streams_thread(void *arg)
{
    task *t = (task *)arg;
    nvtxRangePushA("streams: thread");
    cudaStream_t stream;
    CUDA_CHECK(cudaSetDevice(0)); /* a new thread starts on device 0 anyway; said, not assumed */
    /* non-blocking: does not wait for (or hold up) the legacy default stream */
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    run_task_runtime(t, stream);
    CUDA_CHECK(cudaStreamDestroy(stream));
    nvtxRangePop();
    return NULL;
}

static void *contexts_thread(void *arg)
{
    task *t = (task *)arg;
    nvtxRangePushA("contexts: thread");
    CUcontext ctx;
    CUfunction fn;
    /* a context of its own, current in this thread from here on; CUDA 13's cuCtxCreate takes
     * an optional params struct (NULL: none) before the flags */
    CU_CHECK(lb_cu.cuCtxCreate(&ctx, NULL, 0, t->s->dev));
    atomic_fetch_add(&live_contexts, 1);
    CUmodule mod = load_module(t->s->module_path, &fn); /* modules belong to a context: load it again */
    run_task_driver(t, fn, NULL);                       /* the context's own default stream */
    CU_CHECK(lb_cu.cuModuleUnload(mod));
    CU_CHECK(lb_cu.cuCtxDestroy(ctx)); /* frees whatever the context still held */
    atomic_fetch_sub(&live_contexts, 1);
    nvtxRangePop();
    return NULL;
}

static void *push_pop_thread(void *arg)
{
    task *t = (task *)arg;
    nvtxRangePushA("push-pop: thread");
    CU_CHECK(lb_cu.cuCtxPushCurrent(t->s->shared_ctx)); /* the shared context, current here now */
    CUstream stream;
    CU_CHECK(lb_cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    run_task_driver(t, t->s->shared_fn, stream);
    CU_CHECK(lb_cu.cuStreamDestroy(stream));
    CUcontext popped;
    CU_CHECK(lb_cu.cuCtxPopCurrent(&popped)); /* and no longer: the thread leaves it as it found it */
    nvtxRangePop();
    return NULL;
}

/* One run of a way over all T tasks; returns its wall time in ms. */
static double run_mode(const setup *s, task *tasks, int n_tasks)
{
    static void *(*const body[N_MODES])(void *) = {NULL, streams_thread, contexts_thread, push_pop_thread};
    pthread_t *th = lb_host_alloc(sizeof(pthread_t) * (size_t)n_tasks, "the threads");
    double t0 = lb_wall_ms();
    if (s->mode == MODE_SERIAL) {
        nvtxRangePushA("serial: one thread");
        for (int k = 0; k < n_tasks; k++) run_task_runtime(&tasks[k], 0);
        nvtxRangePop();
    } else {
        for (int k = 0; k < n_tasks; k++) {
            int e = pthread_create(&th[k], NULL, body[s->mode], &tasks[k]);
            if (e) lb_die(LB_EXIT_CUDA, "contexts: cannot start host thread %d: %s", k, strerror(e));
        }
        for (int k = 0; k < n_tasks; k++) pthread_join(th[k], NULL);
    }
    double ms = lb_wall_ms() - t0;
    free(th);
    return ms;
}

/* ---------------------------------------------------------------- checks and measures */

static size_t gcd_of(size_t a, size_t b)
{
    while (b) {
        size_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* every task's output against the CPU (a sample within a cost budget, and the last element).
 * The kernel is a grid-stride loop: element i belongs to thread i mod (blocks x block). A step
 * sharing a factor with that count would land on a few threads only (a step of 16 on a 64-thread
 * grid sees threads 0, 16, 32 and 48, never the other 60), so the step is moved to the next
 * number that shares none: the samples then walk through every thread of the grid. */
static size_t check_tasks(const task *tasks, int n_tasks, int quiet)
{
    size_t bad = 0, n = (size_t)tasks[0].s->n;
    size_t grid_threads = (size_t)tasks[0].s->blocks * (size_t)tasks[0].s->threads;
    size_t step = lb_sample_step(n * (size_t)n_tasks, tasks[0].s->reps + 1, 33554432.0);
    while (step > 1 && gcd_of(step, grid_threads) != 1) step++;
    for (int k = 0; k < n_tasks; k++)
        for (size_t i = 0; i < n; i = lb_sample_next(i, n, step)) {
            float want = mult_cpu(tasks[k].h_in[i], tasks[k].s->reps), got = tasks[k].h_out[i];
            if (!(got == want)) { /* the same FMAs in the same order: equal; NaN (poison) fails */
                if (!quiet && bad < 3) fprintf(stderr, "  thread %d, [%zu]: got %.9g, want %.9g\n", k, i, got, want);
                bad++;
            }
        }
    return bad;
}

/* Kernels running at once, on average: their summed time over the span from the first task's
 * start to the last task's end (copies included, so one at a time gives a little under 1). */
static double overlap_of(const task *tasks, int n_tasks)
{
    double first = tasks[0].t_start, last = tasks[0].t_end, busy = 0;
    for (int k = 0; k < n_tasks; k++) {
        first = fmin(first, tasks[k].t_start);
        last = fmax(last, tasks[k].t_end);
        busy += tasks[k].kernel_ms;
    }
    return last > first ? busy / (last - first) : 0.0;
}

static double mean_kernel_ms(const task *tasks, int n_tasks)
{
    double sum = 0;
    for (int k = 0; k < n_tasks; k++) sum += tasks[k].kernel_ms;
    return sum / n_tasks;
}

/* What the leak check reads, all of it this process's own, so that another program on the GPU
 * cannot change it (the device's free memory could): the bytes in use from the device's memory
 * pool, where every array here comes from (cudaMallocAsync, cuMemAllocAsync: the pool counts
 * this process's allocations exactly, and keeps memory it got from the device for reuse, so an
 * array never freed need not show in the free memory at all, only here), and the contexts this
 * program created and has not destroyed (a context never destroyed keeps its memory, module
 * and streams until the process ends): way 2's threads count them in live_contexts. */
typedef struct {
    unsigned long long pool_used;
    int contexts;
} process_usage;

static process_usage read_usage(void)
{
    process_usage u;
    cudaMemPool_t pool;
    CUDA_CHECK(cudaDeviceSynchronize()); /* stream-ordered frees land first */
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &u.pool_used));
    u.contexts = atomic_load(&live_contexts);
    return u;
}

/* the bytes a way's runs left in use (the contexts they left alive are counted beside it) */
static double leaked_bytes(process_usage before, process_usage after)
{
    return fmax(0.0, (double)after.pool_used - (double)before.pool_used);
}

/* The book's question "what does a context cost?": create + destroy one, and load the module
 * into it, on this thread, each the median of `iters`. */
static void time_context(const setup *s, int iters, double *create_destroy_ms, double *module_ms)
{
    double *a = lb_host_alloc(sizeof(double) * (size_t)iters * 2, "samples"), *b = a + iters;
    for (int i = 0; i < iters; i++) {
        CUcontext ctx, popped;
        CUfunction fn;
        double t0 = lb_wall_ms();
        CU_CHECK(lb_cu.cuCtxCreate(&ctx, NULL, 0, s->dev));
        double t1 = lb_wall_ms();
        CUmodule mod = load_module(s->module_path, &fn);
        double t2 = lb_wall_ms();
        CU_CHECK(lb_cu.cuModuleUnload(mod));
        CU_CHECK(lb_cu.cuCtxPopCurrent(&popped));
        double t3 = lb_wall_ms();
        CU_CHECK(lb_cu.cuCtxDestroy(ctx));
        a[i] = (t1 - t0) + (lb_wall_ms() - t3);
        b[i] = t2 - t1;
    }
    *create_destroy_ms = lb_median(a, iters);
    *module_ms = lb_median(b, iters);
    free(a);
}

/* ---------------------------------------------------------------- main */

static const lb_version versions[] = {
    {0, "serial", "one thread, the T arrays in turn", LB_OLDEST_SM, NULL},
    {1, "streams", "T threads, one context, a stream each", LB_OLDEST_SM, NULL},
    {2, "contexts", "T threads, a context each (cuCtxCreate)", LB_OLDEST_SM, NULL},
    {3, "push_pop", "T threads, one context pushed/popped", LB_OLDEST_SM, NULL},
};
_Static_assert(sizeof versions / sizeof versions[0] == N_MODES, "one table row per way");

static int n_threads = 10, reps = 50, blocks = 1, push_pop = 0;
static const char *module_path = "contexts_kernels.fatbin";
static const lb_opt options[] = {
    {"--threads", LB_OPT_INT, &n_threads, "host threads T, one array each"},
    {"--reps", LB_OPT_INT, &reps, "multiply-adds per element in the kernel"},
    {"--blocks", LB_OPT_INT, &blocks, "blocks of each kernel's grid (small: several kernels fit at once)"},
    {"--push-pop", LB_OPT_FLAG, &push_pop, "only way 3: one context pushed and popped by each thread"},
    {"--module", LB_OPT_STRING, &module_path, "the kernel's fatbin for ways 2 and 3 (built by make)"},
};
static const lb_program program = {
    .name = "contexts",
    .synopsis = "host threads sharing one context (a stream each) vs a context each vs one context pushed and popped",
    .details = "--size is N, the floats of each thread's array; --block the threads of each block.\n",
    .uses = LB_USE_ALL,
    .opts = options,
    .n_opts = 5,
    .versions = versions,
    .n_versions = N_MODES,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 20}, 1}, .max_size_dims = 1, .block = 64, .iters = 3, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    if (push_pop) {
        if (args.version >= 0 && args.version != MODE_PUSH_POP)
            lb_usage_error(&program, "--push-pop is way 3; it cannot be combined with way %d", args.version);
        args.version = MODE_PUSH_POP;
    }
    if (n_threads < 1 || n_threads > 256) lb_usage_error(&program, "--threads must be 1..256");
    if (reps < 0 || reps > 1000000) lb_usage_error(&program, "--reps must be 0..1000000");
    if (blocks < 1 || blocks > 65535) lb_usage_error(&program, "--blocks must be 1..65535");
    if (args.size.v[0] > (1 << 28)) lb_usage_error(&program, "--size: at most 2^28 floats per thread");
    int n = (int)args.size.v[0];
    size_t bytes = (size_t)n * sizeof(float), all_bytes = bytes * (size_t)n_threads;
    /* before the GPU: a missing module is a build step away (or the wrong folder) */
    struct stat st;
    if (stat(module_path, &st) != 0)
        lb_die(LB_EXIT_USAGE, "contexts: cannot open %s, the kernel's module; %s", module_path,
               access("contexts.c", F_OK) ? "run it from ch06_profiling, where make builds it"
                                          : "build it with `make` here");
    if (S_ISDIR(st.st_mode)) lb_die(LB_EXIT_USAGE, "contexts: --module %s is a folder, not a module file", module_path);
    if (st.st_size == 0) lb_die(LB_EXIT_USAGE, "contexts: --module %s is empty", module_path);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_check_block(&program, &gpu, args.block);
    lb_require_device_memory(all_bytes, "the arrays");
    lb_driver_load();
    setup s = {0, n, reps, blocks, args.block, 0, module_path, NULL, NULL};
    CU_CHECK(lb_cu.cuDeviceGet(&s.dev, gpu.device));

    /* pinned host memory, "portable": pinned for every context, not only the one that made it */
    float *h_in, *h_out;
    cudaError_t e = cudaHostAlloc((void **)&h_in, all_bytes, cudaHostAllocPortable);
    if (e == cudaSuccess) e = cudaHostAlloc((void **)&h_out, all_bytes, cudaHostAllocPortable);
    if (e == cudaErrorMemoryAllocation)
        lb_die(LB_EXIT_USAGE, "size too large: 2 x %.2f GiB of pinned host memory could not be allocated",
               all_bytes / 1073741824.0);
    CUDA_CHECK(e);
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_in, (size_t)n * n_threads, -1.0f, 1.0f, &rng);
    task *tasks = lb_host_alloc(sizeof(task) * (size_t)n_threads, "the tasks");
    for (int k = 0; k < n_threads; k++) tasks[k] = (task){&s, k, h_in + (size_t)k * n, h_out + (size_t)k * n, 0, 0, 0};

    /* push-pop's one context: created (and so made current) here, the module loaded into it,
     * then popped, so that this thread is back in the primary context the runtime uses */
    CUcontext popped;
    CUmodule shared_mod;
    CU_CHECK(lb_cu.cuCtxCreate(&s.shared_ctx, NULL, 0, s.dev));
    shared_mod = load_module(module_path, &s.shared_fn);
    CU_CHECK(lb_cu.cuCtxPopCurrent(&popped));

    if (!args.quiet)
        printf("contexts: %d threads x %d floats, %d FMAs per element, kernels of %d x %d threads, %s (%s)\n",
               n_threads, n, reps, blocks, args.block, gpu.prop.name, gpu.sm);
    char size[48];
    snprintf(size, sizeof size, "%dx%d", n_threads, n);
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "arrays_s",
                     .unit_head = "arrays/s",
                     .base = "serial",
                     .base_head = "vs serial"};
    lb_report_table(&rep, size, NULL);
    double overlap[N_MODES] = {0}, kernel_ms[N_MODES] = {0};
    int ran[N_MODES] = {0};
    for (int m = 0; m < N_MODES; m++) {
        if (!lb_version_wanted(&program, &args, &gpu, m)) continue;
        s.mode = m;
        /* the first run warms up (module loading, the memory pool) and is checked */
        lb_poison_host(h_out, all_bytes);
        run_mode(&s, tasks, n_threads);
        size_t bad = check_tasks(tasks, n_threads, args.quiet);
        /* then the runs that count, between two readings of what this process holds */
        int runs = args.check_only ? 1 : args.iters;
        double *wall = lb_host_alloc(sizeof(double) * (size_t)runs, "samples");
        process_usage before = read_usage();
        for (int i = 0; i < runs; i++) {
            wall[i] = run_mode(&s, tasks, n_threads);
            overlap[m] += overlap_of(tasks, n_threads) / runs;
            kernel_ms[m] += mean_kernel_ms(tasks, n_threads) / runs;
        }
        process_usage after = read_usage();
        bad += check_tasks(tasks, n_threads, args.quiet);
        double leaked_mib = leaked_bytes(before, after) / 1048576.0;
        int contexts_left = after.contexts - before.contexts;
        int leak = leaked_mib > 0 || contexts_left != 0;
        if (leak && !args.quiet)
            fprintf(stderr, "  %s: %.1f MiB still in use and %d contexts still alive after %d runs: a leak\n",
                    versions[m].name, leaked_mib, contexts_left, runs);
        double ms = lb_median(wall, runs);
        char verdict[96];
        snprintf(verdict, sizeof verdict, "%s (overlap %.1fx, %.1f MiB leaked)", bad || leak ? "FAIL" : "PASS",
                 overlap[m], leaked_mib);
        lb_report_row(&rep, m, NULL, ms, n_threads / (ms / 1000.0), !(bad || leak), verdict);
        ran[m] = 1;
        free(wall);
    }
    if (!args.check_only) {
        double create_ms, module_ms;
        time_context(&s, args.iters < 3 ? 3 : args.iters, &create_ms, &module_ms);
        for (int m = 0; m < N_MODES; m++) {
            if (!ran[m]) continue;
            char name[48];
            snprintf(name, sizeof name, "overlap_%s", versions[m].name);
            lb_result r = {"contexts", m, name, size, kernel_ms[m], "x", overlap[m], NULL, 0.0, -1};
            lb_print_result(&r, args.quiet);
        }
        lb_result rc = {"contexts", -1, "ctx_create_destroy", size, create_ms, "ms", create_ms, NULL, 0.0, -1};
        lb_result rm = {"contexts", -1, "module_load", size, module_ms, "ms", module_ms, NULL, 0.0, -1};
        lb_print_result(&rc, args.quiet);
        lb_print_result(&rm, args.quiet);
        if (!args.quiet) {
            printf("one kernel alone: ");
            for (int m = 0; m < N_MODES; m++)
                if (ran[m]) printf("%s %.3f ms  ", versions[m].name, kernel_ms[m]);
            printf("(by events, the mean over the threads)\n");
            printf("a context: %.2f ms to create and destroy, %.2f ms more to load the module into it "
                   "(median of %d)\n",
                   create_ms, module_ms, args.iters < 3 ? 3 : args.iters);
        }
    }

    CU_CHECK(lb_cu.cuCtxPushCurrent(s.shared_ctx));
    CU_CHECK(lb_cu.cuModuleUnload(shared_mod));
    CU_CHECK(lb_cu.cuCtxPopCurrent(&popped));
    CU_CHECK(lb_cu.cuCtxDestroy(s.shared_ctx));
    CUDA_CHECK(cudaFreeHost(h_in));
    CUDA_CHECK(cudaFreeHost(h_out));
    free(tasks);
    return lb_report_finish(&rep);
}
