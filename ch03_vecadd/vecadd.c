/* vecadd.c - vector add C = A + B in the seven steps of every CUDA program.
 *
 *   A, B, C are float vectors of n elements (default n = 1,048,576).
 *   build: make ch03 (or `make` in this folder)      run: ./vecadd [version] [--size N] [--block B]
 *
 * versions: the table versions[] below (0 the memcpy ceiling, 1 the book's kernel, 2-3 wider
 * loads), listed by ./vecadd --help; the kernels are in vecadd_kernels.cu.
 *
 * The seven steps: 1 allocate host memory, 2 allocate device memory, 3 copy the inputs in,
 * 4 launch the kernel, 5 copy the result out, 6 verify on the CPU, 7 free everything.
 * The program then times each kernel (CUDA events, median of --iters) and reports GB/s
 * against the memcpy measured in the same run, and the end-to-end time with the copies.
 */
#include "labbook.h"
#include "vecadd_kernels.h"

#include <string.h>

/* ---------------------------------------------------------------- CPU reference */

static void vecadd_cpu(const float *a, const float *b, float *c, size_t n)
{
    for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

/* ---------------------------------------------------------------- the versions */

/* One launch, for the timing helpers (lb_time_ms calls run(&job) again and again). */
typedef struct {
    int version;
    const float *d_a, *d_b;
    float *d_c;
    size_t n;
    int block;
} vecadd_job;

static cudaError_t run_kernel(void *ctx)
{
    vecadd_job *j = (vecadd_job *)ctx;
    return vecadd_launch(j->version, j->d_a, j->d_b, j->d_c, j->n, j->block);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. Version 0 is not an
 * add: the device-to-device copy of as many bytes, measured by lb_memcpy_ceiling_gbps.
 * To add a version: the kernel and its case in vecadd_launch, VECADD_VERSIONS in
 * vecadd_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "memcpy", "cudaMemcpy D2D (ceiling)", LB_OLDEST_SM, NULL},
    {1, "thread_per_elem", "one thread per element", LB_OLDEST_SM, run_kernel},
    {2, "float4", "float4 per thread", LB_OLDEST_SM, run_kernel},
    {3, "float4x4", "4 x float4 per thread", LB_OLDEST_SM, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == VECADD_VERSIONS,
               "one row in versions[] per version: VECADD_VERSIONS in vecadd_kernels.h");

/* Steps 3-5 together, the time a caller of a "GPU vector add" function really waits. */
typedef struct {
    vecadd_job k;
    const float *h_a, *h_b;
    float *h_c;
} end_to_end_job;

static cudaError_t run_end_to_end(void *ctx)
{
    end_to_end_job *j = (end_to_end_job *)ctx;
    size_t bytes = j->k.n * sizeof(float);
    cudaError_t e;
    if ((e = cudaMemcpy((void *)j->k.d_a, j->h_a, bytes, cudaMemcpyHostToDevice))) return e;
    if ((e = cudaMemcpy((void *)j->k.d_b, j->h_b, bytes, cudaMemcpyHostToDevice))) return e;
    if ((e = run_kernel(&j->k))) return e;
    return cudaMemcpy(j->h_c, j->k.d_c, bytes, cudaMemcpyDeviceToHost);
}

/* ---------------------------------------------------------------- main */

static const lb_program program = {
    .name = "vecadd",
    .synopsis = "C = A + B on n floats: the seven steps, kernel GB/s vs cudaMemcpy",
    .uses = LB_USE_ALL,
    .versions = versions,
    .n_versions = VECADD_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 20}, 1}, .max_size_dims = 1, .block = 256, .iters = 20, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0], bytes = n * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_check_block(&program, &gpu, args.block);
    /* the three vectors, plus the memcpy ceiling's two buffers of 1.5 vectors when timing */
    lb_require_device_memory(3 * bytes + (args.check_only ? 0 : 3 * bytes), "vecadd");
    if (!args.quiet)
        printf("vecadd: C = A + B, fp32, n=%zu (%.1f MB moved per add), %s (%s), seed %llu\n", n, 3.0 * bytes / 1e6,
               gpu.prop.name, gpu.sm, args.seed);

    /* 1. allocate host memory and make random inputs */
    float *h_a = lb_host_alloc(bytes, "A"), *h_b = lb_host_alloc(bytes, "B");
    float *h_c = lb_host_alloc(bytes, "C"), *h_ref = lb_host_alloc(bytes, "the reference");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_a, n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_b, n, -1.0f, 1.0f, &rng);
    vecadd_cpu(h_a, h_b, h_ref, n);

    /* 2. allocate device memory */
    float *d_a, *d_b, *d_c;
    CUDA_CHECK(cudaMalloc((void **)&d_a, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_b, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_c, bytes));

    /* 3. copy the inputs to the device */
    CUDA_CHECK(cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice));

    /* Three vectors that fit in L2 (the default 2^20: 12.6 MB, against 60 MB on an H200) stay
     * there between timed runs: those GB/s are L2's, not DRAM's. Say so in the table and in
     * the RESULT size ("1048576_l2"), so they are never read as the memory's speed. */
    double moved = 3.0 * (double)bytes; /* two reads and one write per element */
    int in_l2 = moved <= (double)gpu.prop.l2CacheSize;
    char sz[32], heading[160];
    snprintf(sz, sizeof sz, in_l2 ? "%zu_l2" : "%zu", n);
    snprintf(heading, sizeof heading,
             "the vectors (%.1f MB) fit in the %.0f MB L2: L2 speeds, not DRAM's (--size 2^28 for DRAM)", moved / 1e6,
             gpu.prop.l2CacheSize / 1e6);
    lb_report rep = lb_report_vs_memcpy(&program, &args);
    lb_report_table(&rep, sz, in_l2 ? heading : NULL);
    lb_report_memcpy_version(&rep, (size_t)moved); /* version 0, the ceiling: a copy moving the same bytes */

    float ms[VECADD_VERSIONS] = {0};
    for (int v = 1; v < VECADD_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        /* poison C: an element the kernel forgets to write stays NaN and fails the check */
        lb_poison_device(d_c, bytes);
        /* 4. launch the kernel */
        CUDA_CHECK(vecadd_launch(v, d_a, d_b, d_c, n, args.block));
        /* 5. copy the result back (cudaMemcpy waits for the kernel to finish first) */
        CUDA_CHECK(cudaMemcpy(h_c, d_c, bytes, cudaMemcpyDeviceToHost));
        /* 6. verify: one float add is exact in IEEE arithmetic, so demand equality */
        lb_check check = lb_check_f32(versions[v].name, h_c, h_ref, n, 0.0, 0.0, args.quiet);

        /* time it: the same launch, repeated between CUDA events */
        vecadd_job job = {v, d_a, d_b, d_c, n, args.block};
        if (!args.check_only) ms[v] = lb_time_ms(versions[v].run, &job, 3, args.iters);
        char verdict[96];
        lb_report_row(&rep, v, NULL, ms[v], ms[v] > 0 ? moved / (ms[v] * 1e6) : 0.0, check.n_bad == 0,
                      lb_check_summary(&check, verdict, sizeof verdict));
    }

    /* the end-to-end time: copies in, kernel, copy out (pageable memory, as in the steps) */
    int e2e_version = args.version > 0 ? args.version : 1;
    if (!args.check_only && !args.quiet) {
        end_to_end_job e2e = {{e2e_version, d_a, d_b, d_c, n, args.block}, h_a, h_b, h_c};
        float e2e_ms = lb_time_ms(run_end_to_end, &e2e, 1, args.iters < 5 ? args.iters : 5);
        printf("end to end with pageable copies (version %d): %.3f ms, of which the kernel is %.1f%%\n", e2e_version,
               e2e_ms, 100.0 * ms[e2e_version] / e2e_ms);
    }

    /* 7. free device and host memory */
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_c));
    free(h_a);
    free(h_b);
    free(h_c);
    free(h_ref);
    return lb_report_finish(&rep);
}
