/* vecadd.c - vector add C = A + B in the seven steps of every CUDA program.
 *
 *   A, B, C are float vectors of n elements (default n = 1,048,576).
 *   build: make ch03 (or `make` in this folder)      run: ./vecadd [version] [--size N] [--block B]
 *
 * versions (kernels in vecadd_kernels.cu):
 *   0  cudaMemcpy device to device moving the same bytes: the ceiling, not an add
 *   1  one thread per element (the book's kernel)
 *   2  one float4 (16-byte load) per thread
 *   3  four float4 per thread, loads issued before the adds
 *
 * The seven steps: 1 allocate host memory, 2 allocate device memory, 3 copy the inputs in,
 * 4 launch the kernel, 5 copy the result out, 6 verify on the CPU, 7 free everything.
 * The program then times each kernel (CUDA events, median of --iters) and reports GB/s
 * against the memcpy measured in the same run, and the end-to-end time with the copies.
 */
#include "labbook.h"
#include "vecadd_kernels.h"

#include <string.h>

#define N_VERSIONS 4
static const char *const version_title[N_VERSIONS] = {
    "cudaMemcpy D2D (ceiling)", "one thread per element", "float4 per thread", "4 x float4 per thread"};
static const char *const version_name[N_VERSIONS] = {"memcpy", "thread_per_elem", "float4", "float4x4"};

/* ---------------------------------------------------------------- CPU reference */

static void vecadd_cpu(const float *a, const float *b, float *c, size_t n)
{
    for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

/* ---------------------------------------------------------------- timing jobs */

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
    "vecadd", "C = A + B on n floats: the seven steps, kernel GB/s vs cudaMemcpy",
    "versions:\n"
    "  0  cudaMemcpy D2D moving the same bytes (the ceiling)\n"
    "  1  one thread per element (the book's kernel)\n"
    "  2  one float4 per thread\n"
    "  3  four float4 per thread, loads before adds\n"
    "With no version, all are run and compared.\n",
    LB_USE_ALL, NULL, 0};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 20}, 1}, .max_size_dims = 1, .block = 256, .iters = 20,
                    .seed = 1, .version = -1, .max_version = N_VERSIONS - 1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0], bytes = n * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_check_block(&program, &gpu, args.block);
    /* the three vectors, plus the memcpy ceiling's two buffers of 1.5 vectors when timing */
    lb_require_device_memory(3 * bytes + (args.check_only ? 0 : 3 * bytes), "vecadd");
    if (!args.quiet)
        printf("vecadd: C = A + B, fp32, n=%zu (%.1f MB moved per add), %s (%s), seed %llu\n", n,
               3.0 * bytes / 1e6, gpu.prop.name, gpu.sm, args.seed);

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

    int first = args.version < 0 ? 0 : args.version, last = args.version < 0 ? N_VERSIONS - 1 : args.version;
    double moved = 3.0 * (double)bytes;             /* two reads and one write per element */
    float memcpy_ms = 0.0f;
    double memcpy_gbps = args.check_only ? 0.0 : lb_memcpy_ceiling_gbps((size_t)moved, args.iters, &memcpy_ms);
    float ms[N_VERSIONS] = {0};
    lb_check check[N_VERSIONS];
    int failures = 0;

    for (int v = (first == 0 ? 1 : first); v <= last; v++) {
        vecadd_job job = {v, d_a, d_b, d_c, n, args.block};
        /* poison C: an element the kernel forgets to write stays NaN and fails the check */
        lb_poison_device(d_c, bytes);
        /* 4. launch the kernel */
        CUDA_CHECK(run_kernel(&job));
        /* 5. copy the result back (cudaMemcpy waits for the kernel to finish first) */
        CUDA_CHECK(cudaMemcpy(h_c, d_c, bytes, cudaMemcpyDeviceToHost));
        /* 6. verify: one float add is exact in IEEE arithmetic, so demand equality */
        check[v] = lb_check_f32(version_name[v], h_c, h_ref, n, 0.0, 0.0, args.quiet);
        failures += check[v].n_bad != 0;
        if (!args.check_only) ms[v] = lb_time_ms(run_kernel, &job, 3, args.iters);
    }

    /* the end-to-end time: copies in, kernel, copy out (pageable memory, as in the steps) */
    float e2e_ms = 0.0f;
    int e2e_version = args.version > 0 ? args.version : 1;
    if (!args.check_only) {
        end_to_end_job e2e = {{e2e_version, d_a, d_b, d_c, n, args.block}, h_a, h_b, h_c};
        e2e_ms = lb_time_ms(run_end_to_end, &e2e, 1, args.iters < 5 ? args.iters : 5);
    }

    char sz[32], buf[96];
    snprintf(sz, sizeof sz, "%zu", n);
    int best = -1;
    if (!args.quiet) printf(" ver  kernel                          ms       GB/s   vs memcpy   check\n");
    for (int v = first; v <= last; v++) {
        int is_copy = (v == 0);
        if (is_copy && args.check_only) continue;
        double t = is_copy ? memcpy_ms : ms[v];
        double gbps = is_copy ? memcpy_gbps : (t > 0 ? moved / (t * 1e6) : 0.0);
        double ratio = memcpy_gbps > 0 ? gbps / memcpy_gbps : 0.0;
        const char *verdict = is_copy ? "-" : lb_check_summary(&check[v], buf, sizeof buf);
        if (!is_copy && (best < 0 || ms[v] < ms[best])) best = v;
        if (!args.quiet) {
            if (args.check_only) printf("  %2d  %-26s         -          -         -   %s\n", v, version_title[v], verdict);
            else printf("  %2d  %-26s %9.4f %10.1f %9.2f   %s\n", v, version_title[v], t, gbps, ratio, verdict);
        }
        if (!args.check_only) {
            lb_result r = {"vecadd", v, version_name[v], sz, t, "gbps", gbps, "memcpy", ratio,
                           is_copy ? -1 : check[v].n_bad == 0};
            lb_print_result(&r);
        }
    }
    if (!args.check_only && !args.quiet)
        printf("end to end with pageable copies (version %d): %.3f ms, of which the kernel is %.1f%%\n",
               e2e_version, e2e_ms, 100.0 * ms[e2e_version] / e2e_ms);
    if (args.quiet) {
        if (args.check_only || best < 0)
            printf("vecadd: n=%zu, %s\n", n, failures ? "FAIL" : "all versions PASS");
        else
            printf("vecadd: n=%zu, best %s %.4f ms = %.0f GB/s = %.2fx memcpy, %s\n", n,
                   version_name[best], ms[best], moved / (ms[best] * 1e6),
                   moved / (ms[best] * 1e6) / memcpy_gbps, failures ? "FAIL" : "all PASS");
    }

    /* 7. free device and host memory */
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_c));
    free(h_a); free(h_b); free(h_c); free(h_ref);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
