/* monte_carlo_integral.c - the book's three definite integrals by Monte Carlo, in float and
 * double, against values computed on the CPU by Gauss-Legendre quadrature.
 *
 *   integral of f over [a, b] ~ (b - a) * mean of f(x_i), x_i uniform in [a, b), n points
 *   (default 2^30 per integral and precision), drawn with cuRAND's device API (Philox)
 *   build: make ch07      run: ./monte_carlo_integral [--size N] [--seed S]
 *
 * The check is statistical: the estimate's standard error is (b - a) * sd(f) / sqrt(n), with
 * sd(f) from the same samples, and the estimate must lie within 5 standard errors of the
 * quadrature value (a correct program fails once in 1.7 million seeds). Float evaluates f in
 * single precision; its rounding (about 1e-7 relative) is far below the sampling error.
 */
#include "labbook.h"
#include "monte_carlo_integral_kernels.h"

#include <math.h>

#define FUSED_THREADS (1ull << 19) /* n is spread over this many threads, whatever the GPU */

typedef struct {
    const char *formula;
    double a, b;
    double book; /* the value the book prints for it */
} integral;

static const integral integrals[MC_INTEGRANDS] = {
    {"log(x) sin(x)^2", 11.733, 18.472, 8.9999},
    {"1 / (1 + sinh(2x) log(x)^2)", 0.9, 4.0, 0.584977},
    {"cosh(x) sin(x) / sqrt(x^3 + sin(x)^2)", 1.85, 4.81, -3.34553},
};

/* ---------------------------------------------------------------- CPU reference */

static double f_cpu(int which, double x)
{
    double s = sin(x), l = log(x);
    if (which == 0) return l * s * s;
    if (which == 1) return 1.0 / (1.0 + sinh(2.0 * x) * l * l);
    return cosh(x) * s / sqrt(pow(x, 3.0) + s * s);
}

/* Composite 5-point Gauss-Legendre on 20000 panels: exact for polynomials of degree 9 on each
 * panel, so for these smooth integrands it is accurate to about 1e-13. */
static double quadrature(int which, double a, double b)
{
    static const double xs[5] = {0.0, -0.5384693101056831, 0.5384693101056831, -0.9061798459386640, 0.9061798459386640};
    static const double ws[5] = {0.5688888888888889, 0.4786286704993665, 0.4786286704993665, 0.2369268850561891,
                                 0.2369268850561891};
    const int panels = 20000;
    double h = (b - a) / panels, sum = 0.0;
    for (int i = 0; i < panels; i++) {
        double mid = a + (i + 0.5) * h;
        for (int k = 0; k < 5; k++) sum += ws[k] * f_cpu(which, mid + 0.5 * h * xs[k]);
    }
    return sum * h / 2.0;
}

/* ---------------------------------------------------------------- one estimate */

typedef struct {
    int precision, which;
    double a, b;
    unsigned long long seed, n;
    double *d_sums;
} mc_job;

static unsigned int per_thread(unsigned long long n) { return (unsigned int)((n + FUSED_THREADS - 1) / FUSED_THREADS); }

static cudaError_t run_mc(void *ctx)
{
    mc_job *j = (mc_job *)ctx;
    cudaError_t e = cudaMemsetAsync(j->d_sums, 0, 2 * sizeof(double), 0);
    if (e) return e;
    return mc_integral_launch(j->precision, j->which, j->a, j->b, j->seed, j->n, per_thread(j->n), j->d_sums);
}

/* ---------------------------------------------------------------- main */

static const lb_program program = {
    .name = "monte_carlo_integral",
    .synopsis = "the book's three integrals by Monte Carlo (cuRAND device API, CUDA math API), float and double",
    .details = "--size is the number of points per integral (at most 2^40).\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = NULL,
    .n_opts = 0,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1ll << 30}, 1}, .max_size_dims = 1, .iters = 5, .seed = 1234, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    unsigned long long n = (unsigned long long)args.size.v[0];
    if (n < 2) lb_usage_error(&program, "--size: at least 2 points (the check needs a sample variance)");
    if (n > (1ull << 40)) lb_usage_error(&program, "--size: at most 2^40 points");

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    if (!args.quiet) {
        printf("monte_carlo_integral: %llu points per integral, %s (%s), seed %llu\n", n, gpu.prop.name, gpu.sm,
               args.seed);
        printf(" integral                                   on            prec   estimate       reference (quadrature) "
               "  error/se       ms  G samples/s  check\n");
    }
    double *d_sums;
    CUDA_CHECK(cudaMalloc((void **)&d_sums, 2 * sizeof(double)));
    int all_ok = 1;
    for (int w = 0; w < MC_INTEGRANDS; w++) {
        const integral *in = &integrals[w];
        double ref = quadrature(w, in->a, in->b);
        /* the quadrature must agree with the book's printed digits: a check on this program's formulas */
        if (fabs(ref - in->book) > 1e-4 * fabs(in->book) + 1e-6) {
            fprintf(stderr, "  quadrature %.9f disagrees with the book's %g for %s\n", ref, in->book, in->formula);
            all_ok = 0;
        }
        for (int prec = 32; prec <= 64; prec += 32) {
            mc_job job = {prec, w, in->a, in->b, args.seed, n, d_sums};
            double sums[2];
            CUDA_CHECK(run_mc(&job));
            CUDA_CHECK(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
            double mean = sums[0] / (double)n, var = sums[1] / (double)n - mean * mean;
            if (var < 0) var = 0;
            double width = in->b - in->a, est = width * mean;
            double se = width * sqrt(var / (double)(n - 1));
            double z = se > 0 ? (est - ref) / se : (est == ref ? 0.0 : INFINITY);
            int ok = isfinite(est) && fabs(z) <= 5.0;
            float ms = 0.0f;
            double rate = 0.0;
            if (!args.check_only) {
                ms = lb_time_ms(run_mc, &job, 1, args.iters);
                rate = (double)n / (ms * 1e6);
            }
            if (!args.quiet) {
                printf(" %-40s [%6.3f, %6.3f]  %-6s %13.8f  %13.8f            %+7.2f", in->formula, in->a, in->b,
                       prec == 32 ? "float" : "double", est, ref, z);
                if (!args.check_only)
                    printf("  %8.3f  %10.1f", ms, rate);
                else
                    printf("  %8s  %10s", "-", "-");
                printf("  %s\n", ok ? "PASS" : "FAIL");
            }
            if (!args.check_only) {
                char name[32], sz[32];
                snprintf(name, sizeof name, "f%d_%s", w + 1, prec == 32 ? "float" : "double");
                snprintf(sz, sizeof sz, "%llu", n);
                lb_result r = {"monte_carlo_integral", -1, name, sz, ms, "gsamples_s", rate, NULL, 0.0, ok};
                lb_print_result(&r, args.quiet);
            }
            all_ok &= ok;
        }
    }
    if (!args.quiet)
        printf("error/se: the estimate's distance from the reference in standard errors (|.| <= 5 passes)\n");
    else
        printf("monte_carlo_integral: n=%llu, 3 integrals x 2 precisions, %s\n", n, all_ok ? "PASS" : "FAIL");
    CUDA_CHECK(cudaFree(d_sums));
    return all_ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}
