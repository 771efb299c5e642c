/* occupancy.c - how many blocks fit on an SM, what limits them, and what that does to speed.
 *
 *   y = f(x) over n floats (default 2^24) with two kernels (occupancy_kernels.cu), the
 *   versions in the table versions[] below: 1 light (y = 2x + 1, few registers), 2 register-
 *   heavy (16 independent FMA chains per element).
 *   build: make ch06      run: ./occupancy [version] [--smem BYTES] [--size N]
 *
 * For each block size from 32 to 1024 threads the program prints the occupancy API's answer
 * (cudaOccupancyMaxActiveBlocksPerMultiprocessor: blocks per SM, hence active warps), which
 * resource sets that limit (threads, blocks, registers or shared memory: each computed from
 * the device's limits and the kernel's registers), and the measured time. --smem gives each
 * block that much dynamic shared memory, unused, to show shared memory as the limit.
 */
#include "labbook.h"
#include "occupancy_kernels.h"

#include <math.h>

/* ---------------------------------------------------------------- CPU reference */

static float occupancy_cpu(int version, float v, int work)
{
    if (version == 1) return fmaf(2.0f, v, 1.0f);
    float acc[OCCUPANCY_CHAINS], s = 0.0f;
    for (int c = 0; c < OCCUPANCY_CHAINS; c++) acc[c] = v + (float)c;
    for (int r = 0; r < work; r++)
        for (int c = 0; c < OCCUPANCY_CHAINS; c++) acc[c] = fmaf(acc[c], 0.999f, 0.001f * (float)(c + 1));
    for (int c = 0; c < OCCUPANCY_CHAINS; c++) s += acc[c];
    return s;
}

/* ---------------------------------------------------------------- the limits, by resource */

typedef struct {
    int by_threads, by_blocks, by_regs, by_smem;
} limits;

static limits resource_limits(const struct cudaDeviceProp *p, int block, int regs, size_t smem_per_block, int reserved)
{
    limits l;
    int warps = (block + 31) / 32;
    l.by_threads = p->maxThreadsPerMultiProcessor / block;
    l.by_blocks = p->maxBlocksPerMultiProcessor;
    /* registers are handed out per warp in units of 256 */
    int regs_per_warp = ((regs * 32 + 255) / 256) * 256;
    l.by_regs = regs * block > p->regsPerBlock ? 0 : p->regsPerMultiprocessor / (regs_per_warp * warps);
    size_t smem = smem_per_block + (size_t)reserved; /* the system reserves a little per block */
    l.by_smem = (int)(p->sharedMemPerMultiprocessor / smem);
    return l;
}

static const char *limiter(const limits *l)
{
    int m = l->by_threads;
    const char *name = "threads";
    if (l->by_blocks < m) {
        m = l->by_blocks;
        name = "blocks per SM";
    }
    if (l->by_regs < m) {
        m = l->by_regs;
        name = "registers";
    }
    if (l->by_smem < m) {
        name = "shared memory";
    }
    return name;
}

static int min_limit(const limits *l)
{
    int m = l->by_threads;
    if (l->by_blocks < m) m = l->by_blocks;
    if (l->by_regs < m) m = l->by_regs;
    if (l->by_smem < m) m = l->by_smem;
    return m;
}

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int version;
    const float *d_x;
    float *d_y;
    size_t n;
    int work, block;
    size_t smem;
} occ_job;

static cudaError_t run_kernel(void *ctx)
{
    occ_job *j = (occ_job *)ctx;
    return occupancy_launch(j->version, j->d_x, j->d_y, j->n, j->work, j->block, j->smem);
}

/* Every version: number, RESULT name (with the block size added), title, oldest GPU, what runs it. */
static const lb_version versions[] = {
    {1, "light", "light kernel: y = 2x + 1", LB_OLDEST_SM, run_kernel},
    {2, "heavy", "register-heavy: 16 FMA chains", LB_OLDEST_SM, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == OCCUPANCY_VERSIONS,
               "one row in versions[] per version: OCCUPANCY_VERSIONS in occupancy_kernels.h");

/* ---------------------------------------------------------------- main */

static int work = 8;
static long long smem_bytes = 0;
static const lb_opt options[] = {
    {"--smem", LB_OPT_I64, &smem_bytes, "dynamic shared memory per block, in bytes (unused: it only takes room)"},
    {"--work", LB_OPT_INT, &work, "FMAs per chain in kernel 2"},
};
static const lb_program program = {
    .name = "occupancy",
    .synopsis = "blocks per SM from the occupancy API, the limiting resource, and measured time per block size",
    .details = "Each version is measured with every block size from 32 threads up.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 2,
    .versions = versions,
    .n_versions = OCCUPANCY_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 24}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    if (work < 1) lb_usage_error(&program, "--work must be positive");
    if (smem_bytes < 0) lb_usage_error(&program, "--smem must be 0 or positive");
    size_t n = (size_t)args.size.v[0], bytes = n * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    const struct cudaDeviceProp *p = &gpu.prop;
    if ((size_t)smem_bytes > p->sharedMemPerBlockOptin)
        lb_usage_error(&program, "--smem %lld: at most %zu bytes per block on %s", smem_bytes,
                       p->sharedMemPerBlockOptin, p->name);
    int reserved = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, gpu.device));
    lb_require_device_memory(2 * bytes, "x and y");
    if (!args.quiet)
        printf("occupancy: n=%zu, %zu bytes of dynamic shared memory per block, %s (%s): %d threads, %d blocks, "
               "%d registers, %zu KB shared memory per SM\n",
               n, (size_t)smem_bytes, p->name, gpu.sm, p->maxThreadsPerMultiProcessor, p->maxBlocksPerMultiProcessor,
               p->regsPerMultiprocessor, p->sharedMemPerMultiprocessor / 1024);

    float *h_x = lb_host_alloc(bytes, "x"), *h_y = lb_host_alloc(bytes, "y");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_x, n, -1.0f, 1.0f, &rng);
    float *d_x, *d_y;
    CUDA_CHECK(cudaMalloc((void **)&d_x, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_y, bytes));
    CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));

    int failures = 0;
    char sz[32];
    snprintf(sz, sizeof sz, "%zu", n);
    for (int v = 1; v <= OCCUPANCY_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        const lb_version *ver = lb_version_of(&program, v);
        if (!args.quiet) {
            printf("kernel %d (%s)\n", v, ver->name);
            printf("  block  blocks/SM  warps/SM  occupancy  limited by        ms      GB/s   check\n");
        }
        double best_ms = 0;
        int best_block = 0;
        for (int block = 32; block <= p->maxThreadsPerBlock; block *= 2) {
            int blocks = 0, regs = 0;
            size_t static_smem = 0;
            CUDA_CHECK(occupancy_query(v, block, (size_t)smem_bytes, &blocks, &regs, &static_smem));
            limits l = resource_limits(p, block, regs, (size_t)smem_bytes + static_smem, reserved);
            if (block == 32 && !args.quiet)
                printf("  (%d registers per thread, %zu bytes of static shared memory)\n", regs, static_smem);
            int warps = blocks * ((block + 31) / 32);
            double occ = 100.0 * warps / (p->maxThreadsPerMultiProcessor / 32);
            if (blocks == 0) {
                if (!args.quiet)
                    printf("  %5d  %9d  %8d  %8.1f%%  %-14s  cannot run: not one block fits\n", block, 0, 0, 0.0,
                           limiter(&l));
                continue;
            }
            occ_job job = {v, d_x, d_y, n, work, block, (size_t)smem_bytes};
            lb_poison_device(d_y, bytes);
            CUDA_CHECK(ver->run(&job));
            CUDA_CHECK(cudaMemcpy(h_y, d_y, bytes, cudaMemcpyDeviceToHost));
            size_t bad = 0, step = lb_sample_step(n, v == 1 ? 1 : OCCUPANCY_CHAINS * work, 67108864.0);
            for (size_t i = 0; i < n; i = lb_sample_next(i, n, step))
                if (!(h_y[i] == occupancy_cpu(v, h_x[i], work))) { /* same operations: equal; NaN fails */
                    if (!args.quiet && bad < 3) fprintf(stderr, "  mismatch at [%zu]: got %.9g\n", i, h_y[i]);
                    bad++;
                }
            failures += bad != 0;
            double ms = args.check_only ? 0.0 : lb_time_ms(ver->run, &job, 2, args.iters);
            if (!args.quiet) {
                printf("  %5d  %9d  %8d  %8.1f%%  %-14s", block, blocks, warps, occ, limiter(&l));
                if (args.check_only)
                    printf("         -         -   %s\n", bad ? "FAIL" : "PASS");
                else
                    printf(" %9.4f %9.1f   %s\n", ms, 2.0 * bytes / (ms * 1e6), bad ? "FAIL" : "PASS");
                if (min_limit(&l) != blocks)
                    printf("         (the per-resource estimate says %d blocks; the API's %d is the one to trust)\n",
                           min_limit(&l), blocks);
            }
            if (!args.check_only) {
                char name[64];
                if (smem_bytes)
                    snprintf(name, sizeof name, "%s_block%d_smem%lld", ver->name, block, smem_bytes);
                else
                    snprintf(name, sizeof name, "%s_block%d", ver->name, block);
                lb_result r = {"occupancy", v, name, sz, ms, "occupancy_pct", occ, NULL, 0.0, !bad};
                lb_print_result(&r, args.quiet);
                if (best_block == 0 || ms < best_ms) {
                    best_ms = ms;
                    best_block = block;
                }
            }
        }
        if (!args.quiet && !args.check_only) printf("  fastest block size for kernel %d: %d threads\n", v, best_block);
        if (args.quiet && !args.check_only)
            printf("occupancy: kernel %d (%s) fastest with %d threads per block, %s\n", v, ver->name, best_block,
                   failures ? "FAIL" : "PASS");
    }
    if (args.quiet && args.check_only) printf("occupancy: %s\n", failures ? "FAIL" : "PASS");

    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    free(h_x);
    free(h_y);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
