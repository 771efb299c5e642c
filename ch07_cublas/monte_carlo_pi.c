/* monte_carlo_pi.c - pi from random points in the unit square, with cuRAND two ways.
 *
 *   n points (default 2^34) uniform in (0,1]^2; the share inside the quarter circle is pi/4.
 *   build: make ch07      run: ./monte_carlo_pi [1|2] [--size N] [--seed S]
 *
 * Versions (the table versions[] below):
 *   1  cuRAND host API: curandGenerateUniform fills memory (in chunks of 2^27 points), then
 *      a kernel counts; the baseline: every number makes a round trip through memory
 *   2  fused, cuRAND device API: each thread runs its own Philox4_32_10 subsequence
 *      (curand_init(seed, thread id, 0, &state)) and counts as it draws; nothing but the
 *      count reaches memory
 * Checks: the estimate must be within 5 standard deviations of pi (the count is binomial:
 * sd of the estimate = 4 sqrt(p (1 - p) / n), p = pi/4), and up to 2^24 points the count must
 * equal the CPU's exactly: version 1's numbers are copied back and counted; version 2's are
 * generated again on the CPU by the same Philox4_32_10 streams (lb_philox4x32_10 in common/)
 * and counted. The window alone would pass any count at n = 1, or a kernel drawing from the
 * wrong stream. Version 2 must also give the same count when run twice.
 */
#include <curand.h>
#include "labbook.h"
#include "monte_carlo_pi_kernels.h"

#include <math.h>

#define CHUNK_POINTS (1ull << 27)  /* version 1's buffer: 2^27 points = 1 GB of floats */
#define FUSED_THREADS (1ull << 19) /* version 2 spreads n over this many threads, whatever the GPU */
#define PI 3.14159265358979323846

/* ---------------------------------------------------------------- CPU reference */

/* x^2 + y^2 <= 1, each operation rounded as written (the build turns off fused multiply-add
 * for host code, and the kernels say the same with __fmul_rn/__fadd_rn): exact agreement */
static int inside_cpu(float x, float y) { return x * x + y * y <= 1.0f; }

static unsigned long long count_inside_cpu(const float *xy, size_t n_points)
{
    unsigned long long c = 0;
    for (size_t i = 0; i < n_points; i++) c += inside_cpu(xy[2 * i], xy[2 * i + 1]);
    return c;
}

/* curand_uniform's float in (0, 1] from 32 random bits: x * 2^-32 + 2^-33 (the product is
 * exact, so one rounding, as on the GPU) */
static float uniform_cpu(uint32_t x) { return (float)x * 0x1p-32f + 0x1p-33f; }

/* Version 2's count, drawn on the CPU: thread t owns points t * per_thread ...; its k-th
 * curand_uniform4 is Philox on counter {k, 0, t, 0} with key = the seed (see the kernel) */
static unsigned long long count_fused_cpu(unsigned long long seed, unsigned long long n, unsigned int per_thread)
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    unsigned long long c = 0;
    for (unsigned long long t = 0; t * per_thread < n; t++) {
        unsigned long long mine = n - t * per_thread < per_thread ? n - t * per_thread : per_thread;
        for (unsigned int k = 0; 2 * k < mine; k++) {
            const uint32_t ctr[4] = {k, 0, (uint32_t)t, (uint32_t)(t >> 32)};
            uint32_t r[4];
            lb_philox4x32_10(ctr, key, r);
            c += inside_cpu(uniform_cpu(r[0]), uniform_cpu(r[1]));
            if (2 * k + 1 < mine) c += inside_cpu(uniform_cpu(r[2]), uniform_cpu(r[3]));
        }
    }
    return c;
}

/* ---------------------------------------------------------------- the two versions */

typedef struct {
    int version;
    unsigned long long n, seed;
    curandGenerator_t gen; /* version 1 */
    float *d_xy;           /* version 1's chunk buffer */
    unsigned long long *d_count;
} pi_job;

static unsigned int fused_per_thread(unsigned long long n)
{
    unsigned long long p = (n + FUSED_THREADS - 1) / FUSED_THREADS;
    return (unsigned int)(p + (p & 1)); /* even: whole pairs of points per Philox call */
}

/* Version 1: cuRAND's host API fills a buffer, a kernel counts, chunk after chunk. */
static cudaError_t run_host_api(void *ctx)
{
    pi_job *j = (pi_job *)ctx;
    cudaError_t e = cudaMemsetAsync(j->d_count, 0, sizeof(unsigned long long), 0);
    if (e) return e;
    /* restart the generator's sequence, so every run draws the same numbers */
    CURAND_CHECK(curandSetGeneratorOffset(j->gen, 0));
    for (unsigned long long done = 0; done < j->n; done += CHUNK_POINTS) {
        size_t pts = j->n - done < CHUNK_POINTS ? (size_t)(j->n - done) : (size_t)CHUNK_POINTS;
        CURAND_CHECK(curandGenerateUniform(j->gen, j->d_xy, 2 * pts));
        e = count_inside_launch(j->d_xy, pts, j->d_count);
        if (e) return e;
    }
    return cudaSuccess;
}

/* Version 2: one fused kernel draws and counts. */
static cudaError_t run_fused(void *ctx)
{
    pi_job *j = (pi_job *)ctx;
    cudaError_t e = cudaMemsetAsync(j->d_count, 0, sizeof(unsigned long long), 0);
    if (e) return e;
    return pi_fused_launch(j->seed, j->n, fused_per_thread(j->n), j->d_count);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. */
static const lb_version versions[] = {
    {1, "host_api", "host API, then count", LB_OLDEST_SM, run_host_api},
    {2, "fused_philox", "fused device API", LB_OLDEST_SM, run_fused},
};
#define MC_PI_VERSIONS 2 /* no kernels header count: the versions are host code */
_Static_assert(sizeof versions / sizeof versions[0] == MC_PI_VERSIONS, "one row in versions[] per version");

static unsigned long long run_and_count(pi_job *j)
{
    unsigned long long c;
    CUDA_CHECK(versions[j->version - 1].run(j));
    CUDA_CHECK(cudaMemcpy(&c, j->d_count, sizeof c, cudaMemcpyDeviceToHost));
    return c;
}

/* ---------------------------------------------------------------- main */

static const lb_program program = {
    .name = "monte_carlo_pi",
    .synopsis = "pi by Monte Carlo: cuRAND host API (generate, then count) vs a fused device-API kernel",
    .details = "Version 1 is the baseline. --size is the number of points (at most 2^40).\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = NULL,
    .n_opts = 0,
    .versions = versions,
    .n_versions = MC_PI_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1ll << 34}, 1}, .max_size_dims = 1, .iters = 5, .seed = 1234};
    lb_parse_args(&program, &args, argc, argv);
    unsigned long long n = (unsigned long long)args.size.v[0];
    if (n > (1ull << 40)) lb_usage_error(&program, "--size: at most 2^40 points");

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t chunk = n < CHUNK_POINTS ? (size_t)n : (size_t)CHUNK_POINTS;
    lb_require_device_memory(2 * chunk * sizeof(float), "version 1's buffer of random numbers");
    if (!args.quiet) printf("monte_carlo_pi: %llu points, %s (%s), seed %llu\n", n, gpu.prop.name, gpu.sm, args.seed);

    pi_job job = {0, n, args.seed, NULL, NULL, NULL};
    CURAND_CHECK(curandCreateGenerator(&job.gen, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(job.gen, args.seed));
    CUDA_CHECK(cudaMalloc((void **)&job.d_xy, 2 * chunk * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&job.d_count, sizeof(unsigned long long)));

    double sd = 4.0 * sqrt(PI / 4 * (1 - PI / 4) / (double)n);
    char sz[32];
    snprintf(sz, sizeof sz, "%llu", n);
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "gsamples_s",
                     .unit_head = "Gsamples/s",
                     .base = "host_api",
                     .base_head = "vs host API"};
    lb_report_table(&rep, sz, NULL);
    if (args.version == 2) rep.base = NULL, rep.base_value = -1.0; /* no baseline in this run */
    for (int v = 1; v <= MC_PI_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        job.version = v;
        unsigned long long c = run_and_count(&job);
        double est = 4.0 * (double)c / (double)n, z = (est - PI) / sd;
        int ok = fabs(z) <= 5.0; /* a correct program fails this once in 1.7 million seeds */
        const char *extra = "";
        if (n <= (1u << 24)) {
            /* the same numbers, counted on the CPU: must agree exactly */
            unsigned long long cpu;
            if (v == 1) {
                float *h_xy = lb_host_alloc(2 * (size_t)n * sizeof(float), "the points");
                CUDA_CHECK(cudaMemcpy(h_xy, job.d_xy, 2 * (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
                cpu = count_inside_cpu(h_xy, (size_t)n);
                free(h_xy);
            } else {
                cpu = count_fused_cpu(args.seed, n, fused_per_thread(n));
            }
            ok &= cpu == c;
            extra = cpu == c ? ", = CPU count" : ", CPU count differs";
        }
        if (v == 2 && run_and_count(&job) != c) ok = 0, extra = ", not reproducible";
        float ms = args.check_only ? 0.0f : lb_time_ms(versions[v - 1].run, &job, 1, args.iters);
        char verdict[128];
        snprintf(verdict, sizeof verdict, "%s (pi ~ %.9f, error %+.2f sd%s)", ok ? "PASS" : "FAIL", est, z, extra);
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? (double)n / (ms * 1e6) : 0.0, ok, verdict);
    }
    CURAND_CHECK(curandDestroyGenerator(job.gen));
    CUDA_CHECK(cudaFree(job.d_xy));
    CUDA_CHECK(cudaFree(job.d_count));
    return lb_report_finish(&rep);
}
