/* labbook.c - the shared helpers declared in labbook.h that talk to the GPU or print results:
 * errors, GPU presence, versions, data, checking, timing and the report. The command line is
 * in lb_args.c, the PNG writer and PGM reader in lb_image.c. */
#define _POSIX_C_SOURCE 200809L
#include "labbook.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

/* ================================================================ errors */

void lb_die(int exit_code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(exit_code);
}

/* "sm_90" -> 90, or 0 when the name is not of that form. */
static int sm_number(const char *sm)
{
    int n = 0;
    if (sscanf(sm, "sm_%d", &n) == 1) return n;
    if (sscanf(sm, "compute_%d", &n) == 1) return n;
    return 0;
}

LB_NORETURN static void no_gpu_exit(const char *why)
{
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    fprintf(stderr, "no NVIDIA GPU/driver found (%s)", why);
    if (cvd) fprintf(stderr, "; CUDA_VISIBLE_DEVICES=\"%s\"", cvd);
    fprintf(stderr, "; run `make env` to see what is missing\n");
    exit(LB_EXIT_NO_GPU);
}

LB_NORETURN static void wrong_arch_exit(void)
{
    int dev = 0, major = 0, minor = 0;
    char name[256] = "the GPU";
    struct cudaDeviceProp prop;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
        snprintf(name, sizeof name, "%s", prop.name);
        major = prop.major;
        minor = prop.minor;
    }
    fprintf(stderr,
            "no kernel image for this device: %s is sm_%d%d but this program was built for %s; "
            "rebuild with `make clean && make ARCH=sm_%d%d` (or plain `make`, which detects the GPU)\n",
            name, major, minor, LB_ARCH_NAME, major, minor);
    exit(LB_EXIT_NO_GPU);
}

void lb_cuda_fail(cudaError_t err, const char *call, const char *file, int line)
{
    switch (err) {
    case cudaErrorInsufficientDriver:
        no_gpu_exit("the CUDA driver is missing or older than this program's CUDA runtime");
    case cudaErrorNoDevice: no_gpu_exit("no CUDA-capable device is visible");
    case cudaErrorStubLibrary: no_gpu_exit("only the toolkit's stub libcuda.so was found, not the real driver");
    case cudaErrorDevicesUnavailable: no_gpu_exit("every CUDA device is busy or in exclusive/prohibited compute mode");
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorUnsupportedPtxVersion: wrong_arch_exit();
    default: break;
    }
    fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s\n", file, line, cudaGetErrorName(err), cudaGetErrorString(err),
            call);
    if (err == cudaErrorMemoryAllocation) {
        fprintf(stderr, "the problem is too large for the device's memory: try a smaller --size\n");
        exit(LB_EXIT_USAGE);
    }
    exit(LB_EXIT_CUDA);
}

void lb_lib_fail(const char *lib, int code, const char *name, const char *text, const char *call, const char *file,
                 int line)
{
    fprintf(stderr, "%s:%d: %s error %s (%d: %s) in %s\n", file, line, lib, name, code, text, call);
    exit(LB_EXIT_CUDA);
}

/* ================================================================ GPU presence */

void lb_gpu_init(lb_gpu *gpu)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) lb_cuda_fail(err, "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
    if (count == 0) no_gpu_exit("no CUDA-capable device is visible");
    gpu->device = 0;
    CUDA_CHECK(cudaSetDevice(gpu->device));
    CUDA_CHECK(cudaGetDeviceProperties(&gpu->prop, gpu->device));
    snprintf(gpu->sm, sizeof gpu->sm, "sm_%d%d", gpu->prop.major, gpu->prop.minor);
    gpu->cc = gpu->prop.major * 10 + gpu->prop.minor;
    /* The build embeds machine code for LB_ARCH and PTX for it; a newer GPU can compile that
     * PTX, an older one cannot run it at all, so say so now rather than at the first launch. */
    int built = sm_number(LB_ARCH_NAME);
    if (built > 0 && gpu->cc < built) wrong_arch_exit();
    CUDA_CHECK(cudaFree(0)); /* create the context now, so its cost stays out of timings */
}

static double gib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

void lb_require_device_memory(size_t bytes, const char *what)
{
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (bytes > free_b)
        lb_die(LB_EXIT_USAGE,
               "size too large: %s needs %.2f GiB of device memory, %.2f GiB free "
               "(of %.2f GiB)",
               what, gib(bytes), gib(free_b), gib(total_b));
}

void *lb_host_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        lb_die(LB_EXIT_USAGE, "size too large: %s needs %.2f GiB of host memory and malloc failed", what, gib(bytes));
    return p;
}

/* Blocks of `block` threads that fill the GPU once (for grid-stride kernels). */
unsigned int lb_resident_blocks(const void *kernel, int block, size_t smem)
{
    int dev, sms, per_sm;
    if (cudaGetDevice(&dev) || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, smem) || per_sm < 1)
        return 1024; /* a safe guess if the device cannot be asked */
    return (unsigned int)(sms * per_sm);
}

/* ================================================================ versions */

int lb_version_wanted(const lb_program *prog, const lb_args *args, const lb_gpu *gpu, int number)
{
    const lb_version *v = lb_version_of(prog, number);
    if (!v || (args->version >= 0 && args->version != number)) return 0;
    /* too old a GPU, or a build for an older target than the version needs: that build left the
     * version's instructions out, and its PTX, compiled for a newer GPU, still lacks them */
    char why[320];
    int built = sm_number(LB_ARCH_NAME);
    if (v->min_sm > gpu->cc)
        snprintf(why, sizeof why, "this GPU (%s) is %s", gpu->prop.name, gpu->sm);
    else if (built > 0 && v->min_sm > built)
        snprintf(why, sizeof why, "this program was built for %s (make clean && make ARCH=%s)", LB_ARCH_NAME, gpu->sm);
    else
        return 1;
    if (args->version == number) /* asked for by number: say why not, exit 2 */
        lb_die(LB_EXIT_USAGE, "%s: version %d (%s) needs sm_%d or newer; %s", prog->name, number, v->title, v->min_sm,
               why);
    if (!args->quiet) printf("  %2d  %-30s skipped: needs sm_%d or newer; %s\n", number, v->title, v->min_sm, why);
    return 0;
}

int lb_version_runs(const lb_program *prog, const lb_args *args, const lb_gpu *gpu, int number, const char *why_not)
{
    if (!lb_version_wanted(prog, args, gpu, number)) return 0;
    if (!why_not) return 1;
    const lb_version *v = lb_version_of(prog, number);
    if (args->version == number) lb_die(LB_EXIT_USAGE, "%s: version %d (%s): %s", prog->name, number, v->title, why_not);
    if (!args->quiet) printf("  %2d  %-30s skipped: %s\n", number, v->title, why_not);
    return 0;
}

const char *lb_sm90a_unavailable(int built_for_sm90a)
{
    if (!built_for_sm90a) return "wgmma needs a build for sm_90 (Hopper), which compiles it for sm_90a";
    int dev, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        return "no device";
    if (major != 9 || minor != 0) return "wgmma is Hopper's alone (sm_90a); this GPU is not sm_90";
    return NULL;
}

void lb_check_block(const lb_program *prog, const lb_gpu *gpu, int block)
{
    if (block < 1 || block > gpu->prop.maxThreadsPerBlock)
        lb_usage_error(prog, "--block %d is not allowed on %s (1..%d threads per block)", block, gpu->prop.name,
                       gpu->prop.maxThreadsPerBlock);
}

/* ================================================================ data */

/* The seed goes through splitmix64's mixer before it becomes the counter: with the counter set
 * to seed * step, seed s + 1's stream would be seed s's one draw later (and --seeds' runs would
 * share their data). Mixed, neighbouring seeds start far apart on the counter's circle. */
void lb_rng_seed(lb_rng *r, unsigned long long seed)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    r->s = z ^ (z >> 31);
}

uint64_t lb_rng_next(lb_rng *r)
{
    /* splitmix64 (Steele, Lea, Flood 2014): a counter pushed through a strong mixer. */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
 * SC 2011), as cuRAND computes it: ten rounds, each two 32x32 -> 64-bit multiplications whose
 * halves are mixed with the other words and the key; the key is bumped by two Weyl constants
 * between rounds. A counter-based generator: any element of any stream is one call away. */
void lb_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

float lb_rng_uniform(lb_rng *r, float lo, float hi)
{
    /* top 24 bits -> [0, 1) exactly representable in float */
    float u = (float)(lb_rng_next(r) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

void lb_fill_uniform(float *x, size_t n, float lo, float hi, lb_rng *r)
{
    for (size_t i = 0; i < n; i++) x[i] = lb_rng_uniform(r, lo, hi);
}

uint16_t lb_bf16_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7FFF + ((u >> 16) & 1); /* round to nearest, ties to even, then keep the top half */
    return (uint16_t)(u >> 16);
}
float lb_bf16_value(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}
void lb_bf16_uniform(uint16_t *bits, float *values, size_t n, float a, lb_rng *rng)
{
    for (size_t i = 0; i < n; i++) {
        bits[i] = lb_bf16_bits(lb_rng_uniform(rng, -a, a));
        values[i] = lb_bf16_value(bits[i]);
    }
}

/* e4m3: the value's binade (exponent E, 1.m 2^E) gives its quantum 2^(E-3), or 2^-9 below the
 * smallest normal 2^-6; x / quantum rounded to the nearest integer, ties to even (rint in the
 * default rounding mode), is then exact in double, and so is the code it encodes to. */
uint8_t lb_e4m3_bits(float x)
{
    if (isnan(x)) return 0x7F;
    uint8_t sign = signbit(x) ? 0x80 : 0x00;
    double a = fabs((double)x);
    if (a >= 448.0) return sign | 0x7E; /* saturated (and 448 itself) */
    int e;
    frexp(a, &e); /* a = f 2^e, f in [0.5, 1): the binade's exponent is e - 1 */
    double quantum = e - 1 < -6 ? 0x1p-9 : ldexp(1.0, e - 1 - 3);
    double r = rint(a / quantum) * quantum; /* may round up into the next binade: still a code */
    if (r == 0.0) return sign;
    if (r < 0x1p-6) return sign | (uint8_t)(r / 0x1p-9); /* subnormal: m 2^-9 */
    frexp(r, &e);
    int E = e - 1, m = (int)((r / ldexp(1.0, E) - 1.0) * 8.0);
    return sign | (uint8_t)((E + 7) << 3 | m);
}
float lb_e4m3_value(uint8_t b)
{
    int exp = (b >> 3) & 0xF, m = b & 7;
    if (exp == 0xF && m == 7) return NAN;
    double v = exp == 0 ? m * 0x1p-9 : (1.0 + m / 8.0) * ldexp(1.0, exp - 7);
    return (float)(b & 0x80 ? -v : v);
}

void lb_poison_host(void *p, size_t bytes) { memset(p, 0xFF, bytes); }

void lb_poison_device(void *d, size_t bytes) { CUDA_CHECK(cudaMemset(d, 0xFF, bytes)); }

cudaError_t lb_malloc_guarded(void **d, size_t bytes)
{
    cudaError_t err = cudaMalloc(d, bytes + LB_GUARD_BYTES);
    if (err != cudaSuccess) return err;
    err = cudaMemset((char *)*d + bytes, 0xFF, LB_GUARD_BYTES);
    if (err != cudaSuccess) cudaFree(*d);
    return err;
}

/* ================================================================ checking */

#define LB_SHOW_MISMATCHES 5

lb_check lb_check_f32_bound(const char *what, const float *got, const float *want, size_t n, lb_tolerance_fn tol,
                            const void *ctx, int quiet)
{
    lb_check c = {0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i], err = fabs(g - w), t = tol(i, ctx);
        /* written as !(err <= tol) so that a NaN, which compares false, is a mismatch */
        int ok = isfinite(g) && isfinite(w) && err <= t;
        if (isfinite(err)) {
            if (err > c.max_abs_err) c.max_abs_err = err;
            if (w != 0.0 && err / fabs(w) > c.max_rel_err) c.max_rel_err = err / fabs(w);
        } else {
            c.max_abs_err = c.max_rel_err = INFINITY;
        }
        if (!ok) {
            if (!quiet && c.n_bad < LB_SHOW_MISMATCHES)
                fprintf(stderr, "  %s mismatch at [%zu]: got %.9g, want %.9g (tolerance %.3g)\n", what, i, g, w, t);
            c.n_bad++;
        }
    }
    if (!quiet && c.n_bad)
        fprintf(stderr, "  %s: %zu of %zu wrong, max abs err %.3g, max rel err %.3g\n", what, c.n_bad, n, c.max_abs_err,
                c.max_rel_err);
    return c;
}

typedef struct {
    const float *want;
    double atol, rtol;
} abs_rel;
static double abs_rel_tolerance(size_t i, const void *ctx)
{
    const abs_rel *t = (const abs_rel *)ctx;
    return t->atol + t->rtol * fabs((double)t->want[i]);
}

lb_check lb_check_f32(const char *what, const float *got, const float *want, size_t n, double atol, double rtol,
                      int quiet)
{
    abs_rel t = {want, atol, rtol};
    return lb_check_f32_bound(what, got, want, n, abs_rel_tolerance, &t, quiet);
}

lb_check lb_check_rows_cols(const char *what, const float *C, int M, int N, lb_element_fn want, const void *ctx,
                            double atol, double rtol, lb_rng *rng, int quiet)
{
    lb_check total = {0, 0.0, 0.0};
    size_t longest = (size_t)(M > N ? M : N);
    float *got = lb_host_alloc(sizeof(float) * longest, "samples"),
          *ref = lb_host_alloc(sizeof(float) * longest, "samples");
    char label[96];
    /* rows first, one at random in each band of LB_SAMPLE_BAND rows: a kernel's tile of C that
     * is that tall or taller then holds a whole checked row, so one wrong tile cannot hide (8
     * rows at random missed one wrong 128x128 tile of a 4096^2 C 60% of the time); then 8
     * columns at random */
    int bands = (M + LB_SAMPLE_BAND - 1) / LB_SAMPLE_BAND;
    for (int s = 0; s < bands + 8; s++) {
        int is_row = s < bands, len = is_row ? N : M;
        int band_rows = M - s * LB_SAMPLE_BAND < LB_SAMPLE_BAND ? M - s * LB_SAMPLE_BAND : LB_SAMPLE_BAND;
        int idx = is_row ? s * LB_SAMPLE_BAND + (int)(lb_rng_next(rng) % (uint64_t)band_rows)
                         : (int)(lb_rng_next(rng) % (uint64_t)N);
        for (int i = 0; i < len; i++) {
            int r = is_row ? idx : i, c = is_row ? i : idx;
            got[i] = C[(size_t)r * N + c];
            ref[i] = (float)want(ctx, r, c);
        }
        snprintf(label, sizeof label, "%s %s", what, is_row ? "row" : "column");
        lb_check one = lb_check_f32(label, got, ref, (size_t)len, atol, rtol, quiet);
        total.n_bad += one.n_bad;
        if (one.max_abs_err > total.max_abs_err) total.max_abs_err = one.max_abs_err;
        if (one.max_rel_err > total.max_rel_err) total.max_rel_err = one.max_rel_err;
    }
    free(got);
    free(ref);
    return total;
}

lb_check lb_check_i32(const char *what, const int *got, const int *want, size_t n, int quiet)
{
    lb_check c = {0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        if (got[i] == want[i]) continue;
        double err = fabs((double)got[i] - (double)want[i]);
        if (err > c.max_abs_err) c.max_abs_err = err;
        if (!quiet && c.n_bad < LB_SHOW_MISMATCHES)
            fprintf(stderr, "  %s mismatch at [%zu]: got %d, want %d\n", what, i, got[i], want[i]);
        c.n_bad++;
    }
    if (!quiet && c.n_bad)
        fprintf(stderr, "  %s: %zu of %zu wrong, max abs err %.0f\n", what, c.n_bad, n, c.max_abs_err);
    return c;
}

double lb_gemm_element(const lb_gemm *g, int r, int c)
{
    double acc = 0.0;
    const float *a = g->A + (size_t)r * g->K;
    if (g->b == LB_B_N_BY_K) {
        const float *b = g->B + (size_t)c * g->K;
        for (int k = 0; k < g->K; k++) acc += (double)a[k] * (double)b[k];
    } else {
        for (int k = 0; k < g->K; k++) acc += (double)a[k] * (double)g->B[(size_t)k * g->N + c];
    }
    return acc;
}

float *lb_gemm_reference(const lb_gemm *g)
{
    if ((double)g->M * g->N * g->K > 1073741824.0) return NULL;
    float *ref = lb_host_alloc(sizeof(float) * (size_t)g->M * g->N, "the CPU reference");
    for (int r = 0; r < g->M; r++)
        for (int c = 0; c < g->N; c++) ref[(size_t)r * g->N + c] = (float)lb_gemm_element(g, r, c);
    return ref;
}

static double gemm_element_fn(const void *ctx, int r, int c) { return lb_gemm_element((const lb_gemm *)ctx, r, c); }

lb_check lb_gemm_check(const char *what, const float *C, const lb_gemm *g, const float *ref, double atol, double rtol,
                       lb_rng *rng, int quiet)
{
    if (ref) return lb_check_f32(what, C, ref, (size_t)g->M * g->N, atol, rtol, quiet);
    return lb_check_rows_cols(what, C, g->M, g->N, gemm_element_fn, g, atol, rtol, rng, quiet);
}

size_t lb_sample_step(size_t n, double cost_per_element, double budget)
{
    double affordable = budget / (cost_per_element > 0 ? cost_per_element : 1);
    if ((double)n <= affordable || affordable < 1) return 1;
    return (size_t)((double)n / affordable) + 1;
}

size_t lb_sample_next(size_t i, size_t n, size_t step)
{
    if (i + step < n || i == n - 1) return i + step;
    return n - 1;
}

double lb_dot_tolerance(const float *x, const float *y, size_t n, double chain)
{
    double sq = 0;
    for (size_t i = 0; i < n; i++) sq += (double)x[i] * y[i] * x[i] * y[i];
    return 8.0 * 1.1920929e-07 * sqrt(sq) * sqrt(chain) + 1e-30; /* eps = 2^-23, a float's ulp at 1 */
}

const char *lb_check_summary(const lb_check *c, char *buf, size_t len)
{
    if (c->n_bad)
        snprintf(buf, len, "FAIL (%zu wrong, max abs err %.2g)", c->n_bad, c->max_abs_err);
    else if (c->max_abs_err == 0.0)
        snprintf(buf, len, "PASS (exact)");
    else
        snprintf(buf, len, "PASS (max rel err %.1e)", c->max_rel_err);
    return buf;
}

/* ================================================================ timing */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* one sample: `calls` calls of fn back to back between two events, in ms */
static float time_calls(lb_work_fn fn, void *ctx, int calls, cudaEvent_t start, cudaEvent_t stop)
{
    float ms;
    CUDA_CHECK(cudaEventRecord(start, 0));
    for (int c = 0; c < calls; c++) CUDA_CHECK(fn(ctx));
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms;
}

float lb_time_ms(lb_work_fn fn, void *ctx, int warmup, int iters)
{
    cudaEvent_t start, stop;
    if (iters < 1) iters = 1;
    float *ms = (float *)lb_host_alloc(sizeof(float) * (size_t)iters, "timing samples");
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < warmup; i++) CUDA_CHECK(fn(ctx));
    CUDA_CHECK(cudaDeviceSynchronize());
    /* A sample lasts at least LB_MIN_SAMPLE_MS: a call of tens of microseconds is timed as
     * several calls back to back, divided by their number. Timed alone, the gap between one
     * sample's end and the next launch, and the events' own resolution (about 0.5 us), would
     * be a large part of what is measured, and of the kernel and its baseline alike. */
    float one = time_calls(fn, ctx, 1, start, stop);
    int calls = one >= LB_MIN_SAMPLE_MS ? 1 : (int)(LB_MIN_SAMPLE_MS / (one > 1e-3f ? one : 1e-3f)) + 1;
    if (calls > 1000) calls = 1000;
    for (int i = 0; i < iters; i++) ms[i] = time_calls(fn, ctx, calls, start, stop) / calls;
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    qsort(ms, (size_t)iters, sizeof(float), cmp_float);
    float median = (iters % 2) ? ms[iters / 2] : 0.5f * (ms[iters / 2 - 1] + ms[iters / 2]);
    free(ms);
    return median;
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} memcpy_job;

static cudaError_t run_memcpy(void *ctx)
{
    memcpy_job *j = (memcpy_job *)ctx;
    return cudaMemcpyAsync(j->dst, j->src, j->bytes, cudaMemcpyDeviceToDevice, 0);
}

double lb_memcpy_ceiling_gbps(size_t bytes_moved, int iters, float *ms_out)
{
    memcpy_job j;
    j.bytes = bytes_moved / 2;
    if (j.bytes == 0) j.bytes = 1;
    lb_require_device_memory(2 * j.bytes, "the memcpy ceiling");
    CUDA_CHECK(cudaMalloc(&j.dst, j.bytes));
    CUDA_CHECK(cudaMalloc((void **)&j.src, j.bytes));
    CUDA_CHECK(cudaMemset((void *)j.src, 0x5A, j.bytes)); /* real bytes, not an untouched page */
    float ms = lb_time_ms(run_memcpy, &j, 3, iters);
    CUDA_CHECK(cudaFree(j.dst));
    CUDA_CHECK(cudaFree((void *)j.src));
    if (ms_out) *ms_out = ms;
    return 2.0 * (double)j.bytes / (ms * 1e6);
}

double lb_wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double lb_median(double *samples, int n)
{
    qsort(samples, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

/* ================================================================ reporting */

void lb_print_result(const lb_result *r, int quiet)
{
    if (quiet) return; /* --quiet promises one summary line */
    printf("RESULT prog=%s", r->prog);
    if (r->ver >= 0) printf(" ver=%d", r->ver);
    printf(" name=%s size=%s ms=%.4f %s=%.4g", r->name, r->size, r->ms, r->unit, r->value);
    if (r->base) printf(" base=%s ratio=%.3f", r->base, r->ratio);
    printf(" check=%s\n", r->pass > 0 ? "PASS" : r->pass == 0 ? "FAIL" : "none");
    fflush(stdout);
}

void lb_report_table(lb_report *r, const char *size, const char *heading)
{
    r->size = size;
    r->heading = heading;
    r->head_done = 0;
    r->base_value = 0.0;
}

/* One row as it stands in the table: ver (or "-"), label, ms, value, the ratios, the verdict. */
static void print_row(const lb_report *r, int ver, const char *label, double ms, double value, const char *verdict)
{
    char num[16] = "   -";
    if (ver >= 0) snprintf(num, sizeof num, "  %2d", ver);
    if (r->args->check_only) {
        printf("%s  %-30s %10s %10s", num, label, "-", "-");
        if (r->ceiling_head) printf(" %10s", "-");
        if (r->base_head) printf(" %10s", "-");
    } else {
        /* large values without an exponent: 15840, not 1.584e+04 */
        if (value >= 1e4)
            printf("%s  %-30s %10.4f %10.0f", num, label, ms, value);
        else
            printf("%s  %-30s %10.4f %10.4g", num, label, ms, value);
        if (r->ceiling_head && r->ceiling_value > 0)
            printf(" %10.2f", value / r->ceiling_value);
        else if (r->ceiling_head)
            printf(" %10s", "-");
        if (r->base_head && r->base_value > 0)
            printf(" %10.2f", value / r->base_value);
        else if (r->base_head)
            printf(" %10s", "-");
    }
    printf("   %s\n", verdict);
}

/* The column heads, printed before a table's first row, and the memcpy ceiling's row when
 * lb_report_ceiling measured one. */
static void report_head(lb_report *r)
{
    if (r->args->quiet || r->head_done) return;
    r->head_done = 1;
    if (r->heading) printf("%s\n", r->heading);
    printf(" ver  %-30s %10s %10s", "version", "ms", r->unit_head);
    if (r->ceiling_head) printf(" %10s", r->ceiling_head);
    if (r->base_head) printf(" %10s", r->base_head);
    printf("   check\n");
    if (r->ceiling_value > 0) print_row(r, -1, "cudaMemcpy D2D (same bytes)", r->ceiling_ms, r->ceiling_value, "-");
}

/* A row of the current table, after its heads. */
static void report_line(lb_report *r, int ver, const char *label, double ms, double value, const char *verdict)
{
    report_head(r);
    if (!r->args->quiet) print_row(r, ver, label, ms, value, verdict);
}

void lb_report_ceiling(lb_report *r, size_t bytes_moved, int iters)
{
    if (r->args->check_only) return; /* nothing is timed */
    float ms = 0.0f;
    r->ceiling_value = lb_memcpy_ceiling_gbps(bytes_moved, iters, &ms);
    r->ceiling_ms = ms;
}

/* a report whose rows are measured in `unit` against the baseline `base` (its first row) */
static lb_report report_against(const lb_program *prog, const lb_args *args, const char *unit, const char *unit_head,
                                const char *base, const char *base_head)
{
    lb_report r = {.prog = prog, .args = args, .unit = unit, .unit_head = unit_head, .base = base, .base_head = base_head};
    return r;
}

lb_report lb_report_vs_memcpy(const lb_program *prog, const lb_args *args)
{
    return report_against(prog, args, "gbps", "GB/s", "memcpy", "vs memcpy");
}

lb_report lb_report_vs_cublas(const lb_program *prog, const lb_args *args)
{
    return report_against(prog, args, "tflops", "TFLOP/s", "cublas", "vs cuBLAS");
}

void lb_report_memcpy_version(lb_report *r, size_t bytes_moved)
{
    if (r->args->check_only) return; /* nothing is timed */
    float ms = 0.0f;
    double gbps = lb_memcpy_ceiling_gbps(bytes_moved, r->args->iters, &ms);
    lb_report_row(r, 0, NULL, ms, gbps, -1, "-");
}

void lb_report_note(lb_report *r, const char *label, double ms, double value, const char *verdict)
{
    report_line(r, -1, label, ms, value, verdict ? verdict : "-");
}

/* A row and its RESULT line; rows that passed take part in the race for the summary's "best". */
static void report_result(lb_report *r, int ver, const char *name, const char *label, double ms, double value, int pass,
                          const char *verdict)
{
    if (!verdict) verdict = pass > 0 ? "PASS" : pass == 0 ? "FAIL" : "-";
    if (pass == 0) r->failures++;
    report_head(r); /* before the baseline is known: the ceiling's row has no ratio to it */
    /* the baseline's own row: version 0, or the row named base */
    int is_base = ver == 0 || (r->base && !strcmp(name, r->base));
    /* it sets the table's baseline unless the program set one (< 0: none); a run without it
     * (./attention 4) has no ratio at all, rather than one against itself */
    if (r->base_value == 0 && is_base && !r->args->check_only) r->base_value = value;
    report_line(r, ver, label, ms, value, verdict);
    if (r->args->check_only) return;
    double ratio = r->base_value > 0 ? value / r->base_value : 0.0;
    lb_result res = {r->prog->name, ver, name, r->size, ms, r->unit, value, r->base_value > 0 ? r->base : NULL, ratio, pass};
    lb_print_result(&res, r->args->quiet);
    /* the best row that passed, other than the baseline */
    /* best by the ratio to the baseline (comparable across tables), else by the value */
    int better = r->base_value > 0 ? ratio > r->best_ratio : value > r->best_value;
    if (!is_base && pass != 0 && (!r->have_best || better)) {
        r->have_best = 1;
        r->best = ver;
        r->best_ratio = ratio;
        r->best_value = value;
        snprintf(r->best_name, sizeof r->best_name, "%s", name);
        snprintf(r->best_size, sizeof r->best_size, "%s", r->size);
    }
}

void lb_report_row(lb_report *r, int ver, const char *name, double ms, double value, int pass, const char *verdict)
{
    const lb_version *v = lb_version_of(r->prog, ver);
    if (!name) name = v ? v->name : "?";
    report_result(r, ver, name, v ? v->title : name, ms, value, pass, verdict);
}

void lb_report_item(lb_report *r, const char *name, const char *label, double ms, double value, int pass,
                    const char *verdict)
{
    report_result(r, -1, name, label, ms, value, pass, verdict);
}

int lb_report_finish(lb_report *r)
{
    if (r->args->quiet) {
        printf("%s: %s, ", r->prog->name, r->have_best ? r->best_size : r->size);
        if (r->have_best && r->best >= 0)
            printf("best v%d ", r->best);
        else if (r->have_best)
            printf("best ");
        if (r->have_best) printf("%s %.4g %s", r->best_name, r->best_value, r->unit_head);
        if (r->have_best && r->base && r->best_ratio > 0) printf(" = %.2fx %s", r->best_ratio, r->base);
        if (r->have_best) printf(", ");
        printf("%s\n", r->failures ? "FAIL" : "all PASS");
    }
    fflush(stdout);
    return r->failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
