/* labbook.c - the shared helpers declared in labbook.h (C11, built with gcc into every program). */
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
    case cudaErrorNoDevice:
        no_gpu_exit("no CUDA-capable device is visible");
    case cudaErrorStubLibrary:
        no_gpu_exit("only the toolkit's stub libcuda.so was found, not the real driver");
    case cudaErrorDevicesUnavailable:
        no_gpu_exit("every CUDA device is busy or in exclusive/prohibited compute mode");
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorUnsupportedPtxVersion:
        wrong_arch_exit();
    default:
        break;
    }
    fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s\n", file, line, cudaGetErrorName(err),
            cudaGetErrorString(err), call);
    if (err == cudaErrorMemoryAllocation) {
        fprintf(stderr, "the problem is too large for the device's memory: try a smaller --size\n");
        exit(LB_EXIT_USAGE);
    }
    exit(LB_EXIT_CUDA);
}

void lb_lib_fail(const char *lib, int code, const char *name, const char *text, const char *call,
                 const char *file, int line)
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
    /* The build embeds machine code for LB_ARCH and PTX for it; a newer GPU can compile that
     * PTX, an older one cannot run it at all, so say so now rather than at the first launch. */
    int built = sm_number(LB_ARCH_NAME), have = gpu->prop.major * 10 + gpu->prop.minor;
    if (built > 0 && have < built) wrong_arch_exit();
    CUDA_CHECK(cudaFree(0)); /* create the context now, so its cost stays out of timings */
}

static double gib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

void lb_require_device_memory(size_t bytes, const char *what)
{
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (bytes > free_b)
        lb_die(LB_EXIT_USAGE, "size too large: %s needs %.2f GiB of device memory, %.2f GiB free "
               "(of %.2f GiB)", what, gib(bytes), gib(free_b), gib(total_b));
}

void *lb_host_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        lb_die(LB_EXIT_USAGE, "size too large: %s needs %.2f GiB of host memory and malloc failed",
               what, gib(bytes));
    return p;
}

/* ================================================================ arguments */

#define LB_MAX_VALUE (1LL << 62)

/* One term: 123, 2^20, 1e6, 4k, 4M, 4G. Advances *p. */
static int parse_term(const char **p, long long *out)
{
    const char *s = *p;
    if (!isdigit((unsigned char)*s)) return -1;
    long long v = 0;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (*s - '0');
        if (v > LB_MAX_VALUE) return -1;
        s++;
    }
    if (*s == '^' || *s == 'e' || *s == 'E') {
        long long base = (*s == '^') ? v : 10, mult = (*s == '^') ? 1 : v;
        s++;
        if (!isdigit((unsigned char)*s)) return -1;
        long long e = 0;
        while (isdigit((unsigned char)*s)) {
            e = e * 10 + (*s - '0');
            if (e > 62) return -1;
            s++;
        }
        v = mult;
        for (long long i = 0; i < e; i++) {
            if (base != 0 && v > LB_MAX_VALUE / (base ? base : 1)) return -1;
            v *= base;
        }
    } else if (*s && strchr("kKmMgG", *s)) {
        int shift = (*s == 'k' || *s == 'K') ? 10 : (*s == 'm' || *s == 'M') ? 20 : 30;
        if (v > (LB_MAX_VALUE >> shift)) return -1;
        v <<= shift;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

int lb_parse_i64(const char *s, long long *out)
{
    if (!s) return -1;
    int neg = 0;
    if (*s == '-') { neg = 1; s++; }
    long long v;
    if (parse_term(&s, &v)) return -1;
    while (*s == '+' || *s == '-') {
        char op = *s++;
        long long t;
        if (parse_term(&s, &t)) return -1;
        v = (op == '+') ? v + t : v - t;
        if (v > LB_MAX_VALUE || v < -LB_MAX_VALUE) return -1;
    }
    if (*s) return -1;
    *out = neg ? -v : v;
    return 0;
}

int lb_parse_dims(const char *s, lb_dims *out, int max_dims)
{
    lb_dims d = {{0, 0, 0}, 0};
    char buf[128];
    if (!s || strlen(s) >= sizeof buf || max_dims < 1 || max_dims > 3) return -1;
    strcpy(buf, s);
    char *start = buf;
    for (;;) {
        char *sep = start + strcspn(start, ",x");
        char last = *sep;
        *sep = '\0';
        if (d.n == max_dims || lb_parse_i64(start, &d.v[d.n])) return -1;
        d.n++;
        if (!last) break;
        start = sep + 1;
    }
    *out = d;
    return 0;
}

static void print_dims(FILE *f, const lb_dims *d)
{
    for (int i = 0; i < d->n; i++) fprintf(f, i ? ",%lld" : "%lld", d->v[i]);
}

static void print_usage(const lb_program *prog, const lb_args *a, FILE *f)
{
    unsigned u = prog->uses;
    fprintf(f, "usage: %s%s [options]\n  %s\n\noptions:\n", prog->name,
            (u & LB_USE_VERSION) ? " [version]" : "", prog->synopsis);
    if (u & LB_USE_SIZE) {
        static const char *const forms[] = {"N", "N", "N|WxH", "N|M,N,K"};
        fprintf(f, "  -n, --size %-10s problem size (default ", forms[a->max_size_dims]);
        print_dims(f, &a->size);
        fprintf(f, "); numbers may be written 1000, 2^20+3, 1e6, 4M\n");
    }
    if (u & LB_USE_BLOCK) fprintf(f, "  --block N             threads per block (default %d)\n", a->block);
    if (u & LB_USE_ITERS) fprintf(f, "  --iters N             timed repeats, median reported (default %d)\n", a->iters);
    if (u & LB_USE_SEED) fprintf(f, "  --seed S              random seed for the inputs (default %llu)\n", a->seed);
    if (u & LB_USE_CHECK_ONLY) fprintf(f, "  --check-only          verify against the CPU reference, don't time\n");
    if (u & LB_USE_QUIET) fprintf(f, "  --quiet               print one summary line\n");
    for (int i = 0; i < prog->n_opts; i++) {
        const lb_opt *o = &prog->opts[i];
        char left[64];
        const char *arg = o->kind == LB_OPT_FLAG ? "" : o->kind == LB_OPT_DIMS ? " X[,Y]"
                        : o->kind == LB_OPT_STRING ? " S" : o->kind == LB_OPT_DOUBLE ? " X" : " N";
        snprintf(left, sizeof left, "%s%s", o->name, arg);
        fprintf(f, "  %-21s %s", left, o->help);
        switch (o->kind) {
        /* a default of -1 means "chosen by the program": its help text says how */
        case LB_OPT_INT: if (*(int *)o->dst != -1) fprintf(f, " (default %d)", *(int *)o->dst); break;
        case LB_OPT_I64: if (*(long long *)o->dst != -1) fprintf(f, " (default %lld)", *(long long *)o->dst); break;
        case LB_OPT_DOUBLE: if (*(double *)o->dst != -1.0) fprintf(f, " (default %g)", *(double *)o->dst); break;
        case LB_OPT_STRING:
            if (*(const char **)o->dst) fprintf(f, " (default %s)", *(const char **)o->dst);
            break;
        case LB_OPT_DIMS:
            if (((lb_dims *)o->dst)->n == 0) break;   /* no default: off unless given */
            fprintf(f, " (default ");
            print_dims(f, (lb_dims *)o->dst);
            fprintf(f, ")");
            break;
        case LB_OPT_FLAG: break;
        }
        fputc('\n', f);
    }
    fprintf(f, "  -h, --help            this text\n");
    if (prog->details) fprintf(f, "\n%s", prog->details);
    fprintf(f, "\nexit: 0 pass, 1 wrong result, 2 bad input, 3 CUDA error, 77 no usable GPU\n");
}

void lb_usage_error(const lb_program *prog, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s%s [options]   (%s --help lists them, with the defaults)\n",
            prog->name, (prog->uses & LB_USE_VERSION) ? " [version]" : "", prog->name);
    exit(LB_EXIT_USAGE);
}

/* "--size=4" or "--size 4": return the value text, or exit 2 when it is missing. */
static const char *take_value(const lb_program *prog, const char *flag, const char *inline_val,
                              int argc, char **argv, int *i)
{
    if (inline_val) return inline_val;
    if (*i + 1 >= argc) lb_usage_error(prog, "%s needs a value", flag);
    return argv[++*i];
}

static long long positive_value(const lb_program *prog, const char *flag, const char *val,
                                long long max)
{
    long long v;
    if (lb_parse_i64(val, &v)) lb_usage_error(prog, "%s: '%s' is not a number", flag, val);
    if (v <= 0) lb_usage_error(prog, "%s must be positive (got %s)", flag, val);
    if (v > max) lb_usage_error(prog, "%s %s is too large (at most %lld)", flag, val, max);
    return v;
}

static void parse_own_option(const lb_program *prog, const lb_opt *o, const char *val)
{
    switch (o->kind) {
    case LB_OPT_FLAG: *(int *)o->dst = 1; break;
    case LB_OPT_STRING: *(const char **)o->dst = val; break;
    case LB_OPT_INT: {
        long long v;
        if (lb_parse_i64(val, &v) || v < -2147483647LL || v > 2147483647LL)
            lb_usage_error(prog, "%s: '%s' is not a valid integer", o->name, val);
        *(int *)o->dst = (int)v;
        break;
    }
    case LB_OPT_I64: {
        long long v;
        if (lb_parse_i64(val, &v)) lb_usage_error(prog, "%s: '%s' is not a valid integer", o->name, val);
        *(long long *)o->dst = v;
        break;
    }
    case LB_OPT_DOUBLE: {
        char *end;
        errno = 0;
        double v = strtod(val, &end);
        if (end == val || *end || errno || !isfinite(v))
            lb_usage_error(prog, "%s: '%s' is not a number", o->name, val);
        *(double *)o->dst = v;
        break;
    }
    case LB_OPT_DIMS: {
        lb_dims *d = (lb_dims *)o->dst;
        lb_dims parsed;
        if (lb_parse_dims(val, &parsed, 3))
            lb_usage_error(prog, "%s: '%s' is not X, XxY or XxYxZ", o->name, val);
        *d = parsed;
        break;
    }
    }
}

/* --quiet promises one summary line, so it silences the RESULT lines too */
static int results_quiet;

void lb_parse_args(const lb_program *prog, lb_args *a, int argc, char **argv)
{
    unsigned u = prog->uses;
    if (a->max_size_dims < 1) a->max_size_dims = 1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char flag[64];
        const char *inline_val = NULL;
        /* split "--flag=value" */
        const char *eq = strchr(arg, '=');
        if (arg[0] == '-' && arg[1] == '-' && eq && (size_t)(eq - arg) < sizeof flag) {
            memcpy(flag, arg, (size_t)(eq - arg));
            flag[eq - arg] = '\0';
            inline_val = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", arg);
        }

        if (!strcmp(flag, "-h") || !strcmp(flag, "--help")) {
            print_usage(prog, a, stdout);
            exit(LB_EXIT_PASS);
        } else if ((u & LB_USE_SIZE) && (!strcmp(flag, "-n") || !strcmp(flag, "--size"))) {
            const char *v = take_value(prog, flag, inline_val, argc, argv, &i);
            lb_dims d;
            if (lb_parse_dims(v, &d, a->max_size_dims))
                lb_usage_error(prog, "%s: '%s' is not a size (%s)", flag, v,
                               a->max_size_dims > 1 ? "N or M,N,K" : "one number, e.g. 2^20+3");
            for (int k = 0; k < d.n; k++)
                if (d.v[k] <= 0) lb_usage_error(prog, "%s must be positive (got %s)", flag, v);
            a->size = d;
        } else if ((u & LB_USE_BLOCK) && !strcmp(flag, "--block")) {
            a->block = (int)positive_value(prog, flag, take_value(prog, flag, inline_val, argc, argv, &i), 1 << 20);
        } else if ((u & LB_USE_ITERS) && !strcmp(flag, "--iters")) {
            a->iters = (int)positive_value(prog, flag, take_value(prog, flag, inline_val, argc, argv, &i), 1000000);
        } else if ((u & LB_USE_SEED) && !strcmp(flag, "--seed")) {
            const char *v = take_value(prog, flag, inline_val, argc, argv, &i);
            long long s;
            if (lb_parse_i64(v, &s) || s < 0) lb_usage_error(prog, "--seed: '%s' is not a non-negative integer", v);
            a->seed = (unsigned long long)s;
        } else if ((u & LB_USE_CHECK_ONLY) && !strcmp(flag, "--check-only")) {
            a->check_only = 1;
        } else if ((u & LB_USE_QUIET) && !strcmp(flag, "--quiet")) {
            a->quiet = 1;
            results_quiet = 1;
        } else if ((u & LB_USE_VERSION) && isdigit((unsigned char)arg[0])) {
            long long v;
            if (lb_parse_i64(arg, &v) || v < a->min_version || v > a->max_version)
                lb_usage_error(prog, "version '%s' does not exist (%d..%d)", arg, a->min_version, a->max_version);
            a->version = (int)v;
        } else {
            const lb_opt *o = NULL;
            for (int k = 0; k < prog->n_opts; k++)
                if (!strcmp(flag, prog->opts[k].name)) o = &prog->opts[k];
            if (!o) lb_usage_error(prog, "unknown argument '%s'", arg);
            if (o->kind == LB_OPT_FLAG) {
                if (inline_val) lb_usage_error(prog, "%s takes no value", flag);
                parse_own_option(prog, o, NULL);
            } else {
                parse_own_option(prog, o, take_value(prog, flag, inline_val, argc, argv, &i));
            }
        }
    }
}

unsigned int lb_resident_blocks(const void *kernel, int block, size_t smem)
{
    int dev, sms, per_sm;
    if (cudaGetDevice(&dev) || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, smem) || per_sm < 1)
        return 1024;   /* a safe guess if the device cannot be asked */
    return (unsigned int)(sms * per_sm);
}

void lb_size_mnk(const lb_program *prog, const lb_args *args, int *M, int *N, int *K)
{
    if (args->size.n == 2) lb_usage_error(prog, "--size takes N or M,N,K");
    long long d[3];
    for (int i = 0; i < 3; i++) {
        d[i] = args->size.n == 3 ? args->size.v[i] : args->size.v[0];
        if (d[i] > 65536) lb_usage_error(prog, "--size: each dimension at most 65536");
    }
    *M = (int)d[0], *N = (int)d[1], *K = (int)d[2];
}

void lb_check_block(const lb_program *prog, const lb_gpu *gpu, int block)
{
    if (block < 1 || block > gpu->prop.maxThreadsPerBlock)
        lb_usage_error(prog, "--block %d is not allowed on %s (1..%d threads per block)", block,
                       gpu->prop.name, gpu->prop.maxThreadsPerBlock);
}

/* ================================================================ data */

void lb_rng_seed(lb_rng *r, unsigned long long seed) { r->s = seed * 0x9E3779B97F4A7C15ull + 1; }

uint64_t lb_rng_next(lb_rng *r)
{
    /* splitmix64 (Steele, Lea, Flood 2014): a counter pushed through a strong mixer. */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
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

void lb_poison_host(void *p, size_t bytes) { memset(p, 0xFF, bytes); }

void lb_poison_device(void *d, size_t bytes) { CUDA_CHECK(cudaMemset(d, 0xFF, bytes)); }

/* ================================================================ checking */

#define LB_SHOW_MISMATCHES 5

lb_check lb_check_f32(const char *what, const float *got, const float *want, size_t n,
                      double atol, double rtol, int quiet)
{
    lb_check c = {0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i], err = fabs(g - w);
        /* written as !(err <= tol) so that a NaN, which compares false, is a mismatch */
        int ok = isfinite(g) && isfinite(w) && err <= atol + rtol * fabs(w);
        if (isfinite(err)) {
            if (err > c.max_abs_err) c.max_abs_err = err;
            if (w != 0.0 && err / fabs(w) > c.max_rel_err) c.max_rel_err = err / fabs(w);
        } else {
            c.max_abs_err = c.max_rel_err = INFINITY;
        }
        if (!ok) {
            if (!quiet && c.n_bad < LB_SHOW_MISMATCHES)
                fprintf(stderr, "  %s mismatch at [%zu]: got %.9g, want %.9g (tolerance %.3g)\n",
                        what, i, g, w, atol + rtol * fabs(w));
            c.n_bad++;
        }
    }
    if (!quiet && c.n_bad)
        fprintf(stderr, "  %s: %zu of %zu wrong, max abs err %.3g, max rel err %.3g\n", what,
                c.n_bad, n, c.max_abs_err, c.max_rel_err);
    return c;
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

float lb_time_ms(lb_work_fn fn, void *ctx, int warmup, int iters)
{
    cudaEvent_t start, stop;
    if (iters < 1) iters = 1;
    float *ms = (float *)lb_host_alloc(sizeof(float) * (size_t)iters, "timing samples");
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < warmup; i++) CUDA_CHECK(fn(ctx));
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < iters; i++) {
        CUDA_CHECK(cudaEventRecord(start, 0));
        CUDA_CHECK(fn(ctx));
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    qsort(ms, (size_t)iters, sizeof(float), cmp_float);
    float median = (iters % 2) ? ms[iters / 2] : 0.5f * (ms[iters / 2 - 1] + ms[iters / 2]);
    free(ms);
    return median;
}

typedef struct { void *dst; const void *src; size_t bytes; } memcpy_job;

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
    CUDA_CHECK(cudaMemset((void *)j.src, 0x5A, j.bytes));   /* real bytes, not an untouched page */
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

/* ================================================================ reporting */

void lb_print_result(const lb_result *r)
{
    if (results_quiet) return;
    printf("RESULT prog=%s", r->prog);
    if (r->ver >= 0) printf(" ver=%d", r->ver);
    printf(" name=%s size=%s ms=%.4f %s=%.4g", r->name, r->size, r->ms, r->unit, r->value);
    if (r->base) printf(" base=%s ratio=%.3f", r->base, r->ratio);
    printf(" check=%s\n", r->pass > 0 ? "PASS" : r->pass == 0 ? "FAIL" : "none");
    fflush(stdout);
}

/* ================================================================ pictures */

/* A PNG is a signature and chunks (length, type, data, CRC-32). The pixels go in IDAT as a
 * zlib stream; we use deflate's "stored" blocks (no compression), which any decoder reads. */

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return crc;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);  p[3] = (unsigned char)v;
}

static int write_chunk(FILE *f, const char *type, const unsigned char *data, uint32_t len)
{
    unsigned char hdr[8];
    put_be32(hdr, len);
    memcpy(hdr + 4, type, 4);
    uint32_t crc = crc_update(0xFFFFFFFFu, hdr + 4, 4);
    crc = crc_update(crc, data, len) ^ 0xFFFFFFFFu;
    unsigned char tail[4];
    put_be32(tail, crc);
    if (fwrite(hdr, 1, 8, f) != 8) return -1;
    if (len && fwrite(data, 1, len, f) != len) return -1;
    return fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

/* The zlib stream is collected in a buffer and flushed as one IDAT chunk when it fills. */
#define PNG_IDAT_BYTES (1u << 20)
typedef struct { FILE *f; unsigned char *buf; uint32_t len; int err; } idat_writer;

static void idat_put(idat_writer *w, const unsigned char *p, size_t n)
{
    while (n && !w->err) {
        size_t room = PNG_IDAT_BYTES - w->len, k = n < room ? n : room;
        memcpy(w->buf + w->len, p, k);
        w->len += (uint32_t)k; p += k; n -= k;
        if (w->len == PNG_IDAT_BYTES) {
            if (write_chunk(w->f, "IDAT", w->buf, w->len)) w->err = 1;
            w->len = 0;
        }
    }
}

/* Adler-32 sums; the modulo is taken every 5552 bytes, the most that cannot overflow 32 bits */
static void adler_update(uint32_t *a1, uint32_t *a2, const unsigned char *p, size_t n)
{
    while (n) {
        size_t k = n < 5552 ? n : 5552;
        for (size_t i = 0; i < k; i++) {
            *a1 += p[i];
            *a2 += *a1;
        }
        *a1 %= 65521u;
        *a2 %= 65521u;
        p += k;
        n -= k;
    }
}

int lb_write_png(const char *path, int width, int height, int channels,
                 const unsigned char *pixels, const unsigned char *palette)
{
    if (width <= 0 || height <= 0 || (channels != 1 && channels != 3) || (palette && channels != 1)) {
        errno = EINVAL;
        return -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    crc_init();
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    unsigned char ihdr[13];
    put_be32(ihdr, (uint32_t)width);
    put_be32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8;                                         /* bits per sample */
    ihdr[9] = palette ? 3 : (channels == 3 ? 2 : 0);     /* indexed, RGB or grey */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;                  /* deflate, no filter set, no interlace */
    int err = fwrite(signature, 1, 8, f) != 8 || write_chunk(f, "IHDR", ihdr, 13);
    if (!err && palette) err = write_chunk(f, "PLTE", palette, 256 * 3);

    idat_writer w = {f, (unsigned char *)malloc(PNG_IDAT_BYTES), 0, err};
    if (!w.buf) w.err = 1;
    /* raw data: each row is a filter-type byte (0 = none) then the row's bytes */
    size_t row = (size_t)width * (size_t)channels, raw_total = (size_t)height * (row + 1);
    size_t raw_done = 0, block_left = 0;
    uint32_t a1 = 1, a2 = 0;                             /* Adler-32 of the raw data */
    const unsigned char zlib_header[2] = {0x78, 0x01};
    idat_put(&w, zlib_header, 2);
    for (int y = 0; y < height && !w.err; y++) {
        const unsigned char zero = 0;
        const unsigned char *src[2] = {&zero, pixels + (size_t)y * row};
        size_t len[2] = {1, row};
        for (int part = 0; part < 2; part++) {
            const unsigned char *p = src[part];
            size_t n = len[part];
            while (n) {
                if (block_left == 0) {   /* start a stored block of up to 65535 bytes */
                    size_t left = raw_total - raw_done;
                    block_left = left < 65535 ? left : 65535;
                    unsigned char bh[5] = {(unsigned char)(left == block_left), 0, 0, 0, 0};
                    bh[1] = (unsigned char)(block_left & 0xFF); bh[2] = (unsigned char)(block_left >> 8);
                    bh[3] = (unsigned char)(~block_left & 0xFF); bh[4] = (unsigned char)((~block_left >> 8) & 0xFF);
                    idat_put(&w, bh, 5);
                }
                size_t k = n < block_left ? n : block_left;
                idat_put(&w, p, k);
                adler_update(&a1, &a2, p, k);
                p += k; n -= k; block_left -= k; raw_done += k;
            }
        }
    }
    unsigned char adler[4];
    put_be32(adler, (a2 << 16) | a1);
    idat_put(&w, adler, 4);
    if (!w.err && w.len && write_chunk(f, "IDAT", w.buf, w.len)) w.err = 1;
    if (!w.err && write_chunk(f, "IEND", NULL, 0)) w.err = 1;
    free(w.buf);
    if (fclose(f) != 0) w.err = 1;
    if (w.err && !errno) errno = EIO;
    return w.err ? -1 : 0;
}

/* ---------------------------------------------------------------- PGM reader */

/* The next header number of a PGM: skip whitespace and '#' comments, read digits. */
static int pgm_number(FILE *f, long *out)
{
    int c = fgetc(f);
    for (;;) {
        while (c != EOF && isspace(c)) c = fgetc(f);
        if (c != '#') break;
        while (c != EOF && c != '\n') c = fgetc(f);
    }
    if (c == EOF || !isdigit(c)) return -1;
    long v = 0;
    while (c != EOF && isdigit(c)) {
        if (v > 100000000) return -1;
        v = v * 10 + (c - '0');
        c = fgetc(f);
    }
    if (c == EOF || !isspace(c)) return -1;   /* exactly one whitespace byte ends the header */
    *out = v;
    return 0;
}

unsigned char *lb_read_pgm(const char *path, int *width, int *height, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    unsigned char *px = NULL;
    char magic[2];
    long w, h, maxval;
    if (fread(magic, 1, 2, f) != 2 || magic[0] != 'P' || magic[1] != '5') {
        snprintf(err, err_len, "%s: not a binary PGM (the file must start with P5)", path);
    } else if (pgm_number(f, &w) || pgm_number(f, &h) || pgm_number(f, &maxval)) {
        snprintf(err, err_len, "%s: malformed PGM header (expected P5, width, height, maxval)", path);
    } else if (w < 1 || h < 1 || w > 65536 || h > 65536) {
        snprintf(err, err_len, "%s: size %ldx%ld (each side must be 1..65536)", path, w, h);
    } else if (maxval < 1 || maxval > 255) {
        snprintf(err, err_len, "%s: maxval %ld: only 8-bit PGM (maxval 1..255) is supported", path, maxval);
    } else if (!(px = malloc((size_t)w * (size_t)h))) {
        snprintf(err, err_len, "%s: out of memory for %ldx%ld pixels", path, w, h);
    } else {
        size_t got = fread(px, 1, (size_t)w * (size_t)h, f);
        if (got != (size_t)w * (size_t)h) {
            snprintf(err, err_len, "%s: truncated: %zu of %zu pixel bytes", path, got, (size_t)w * (size_t)h);
            free(px);
            px = NULL;
        } else {
            *width = (int)w;
            *height = (int)h;
        }
    }
    fclose(f);
    return px;
}
