/* svd_pca.c - the singular value decomposition A = U S V^T with cuSOLVER, three ways, and
 * principal component analysis (PCA) of a data set with it (the book's ch7).
 *
 *   SVD:  A is (M,N), row-major, random in [-1, 1) from --seed (default M,N = 1000,5000 as in
 *         the book; --rank R makes it a product of (M,R) and (R,N) factors, --rank 0 zeros)
 *   PCA:  --pca FILE (a CSV in the datasets/ layout): centre each feature, SVD, project on the
 *         top components, explained variance, a PNG scatter of the first two coloured by class
 *   build: make ch07      run: ./svd_pca [0|1|2] [--size M,N] [--rank R] [--sweeps S]
 *                             ./svd_pca --pca ../datasets/digits.csv [--png pca.png]
 *
 *   versions (the routes; svd_pca_routes.c explains each):
 *     0  gesvd            bidiagonalisation + QR iteration (the book's), the baseline
 *     1  gesvdj           one-sided Jacobi
 *     2  syrk + syevd     eigenvalues of the Gram matrix B^T B (fast, squares the condition)
 *
 * Checks, in double on the GPU (svd_measure), with eps = 2^-24 and p = max(M,N):
 *   ||A - U S V^T||_F / ||A||_F, max |U^T U - I| and max |V^T V - I| within C eps p (C = 8, 40
 *   for gesvdj: see SVD_TOL_C);
 *   singular values sorted, non-negative, and against a CPU double-precision Jacobi SVD where
 *   that is cheap (small sizes); the solver's info (no convergence: FAIL with the reason).
 * The eigen route is held to what it can do: its U is checked on the columns whose singular
 * value stands above the Gram matrix's rounding (sqrt(tolerance) sigma_max), with the
 * tolerance times (sigma_max / sigma)^2, and its sigma^2 (not sigma) against the reference.
 * Files: svd_pca.c (options, main's phases, PCA), svd_pca_routes.c (the GPU work),
 * svd_pca_cpu.c (references, scatter picture), svd_pca_kernels.cu (small helpers).
 */
#define _POSIX_C_SOURCE 200809L
#include "svd_pca_routes.h"
#include "lb_csv.h"
#include "svd_pca_cpu.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* tolerance = C eps max(M,N): a backward-stable SVD in fp32 is off by a small multiple of eps
 * times a slowly growing function of the size; p is a generous stand-in for that. gesvd and the
 * eigen route measured at most 0.4 eps p (NOTES.md); gesvdj, which stops at its convergence
 * test, up to 13 eps p (U's orthogonality, 257 x 257) and gets its own constant. Any real error
 * (a wrong factor, a lost column) is O(1), far above either. */
#define SVD_TOL_C 8.0
#define GESVDJ_TOL_C 40.0
#define FLT_UNIT_ROUNDOFF 5.9604644775390625e-08 /* 2^-24 */
#define CPU_REFERENCE_BUDGET (1 << 25)           /* p q^2 of the largest Jacobi reference run */

static const lb_version versions[] = {
    {0, "gesvd", "gesvd (QR iteration)", LB_OLDEST_SM, svd_run},
    {1, "gesvdj", "gesvdj (Jacobi)", LB_OLDEST_SM, svd_run},
    {2, "syevd", "syrk + syevd (Gram eigen)", LB_OLDEST_SM, svd_run},
};
_Static_assert(sizeof versions / sizeof versions[0] == SVD_PCA_VERSIONS, "one table row per route");

typedef struct {
    int M, N, rank, sweeps, components;
    const char *pca_path, *png_path;
    char pca_name[64]; /* the data file's name without folder and extension: "digits" */
} svd_options;

/* ================================================================ checks */

static double route_tolerance(int route, int p)
{
    return (route == ROUTE_GESVDJ ? GESVDJ_TOL_C : SVD_TOL_C) * FLT_UNIT_ROUNDOFF * p;
}

/* The verdict on one route's factors: the measurements against the tolerances above. ref: the
 * CPU's singular values (NULL when too costly). Writes a short verdict; returns pass. */
static int judge(const svd_job *j, const float *s, const double *ref, int *u_cols, int quiet, char *verdict, size_t len)
{
    int n = j->n, p = j->m, eigen = j->route == ROUTE_SYEVD, ok = 1;
    double tol = route_tolerance(j->route, p), smax = n ? s[0] : 0.0;
    for (int i = 0; i < n; i++) /* sorted, non-negative; NaN fails */
        if (!(s[i] >= 0.0f) || (i && !(s[i] <= s[i - 1]))) {
            if (!quiet)
                fprintf(stderr, "    S[%d] = %g after S[%d] = %g: not sorted, non-negative\n", i, s[i], i - 1,
                        i ? s[i - 1] : 0.0f);
            ok = 0;
            break;
        }
    /* the eigen route resolves sigma only above sqrt(tol) sigma_max; beyond it, U is noise */
    int cols = n;
    if (eigen)
        while (cols > 0 && !(s[cols - 1] > sqrt(tol) * smax)) cols--;
    double orth_tol = eigen && cols ? tol * pow(smax / s[cols - 1], 2) : tol;
    *u_cols = cols;
    svd_quality q = svd_measure((svd_job *)j, cols);
    ok &= q.resid <= tol && q.orth_v <= tol && q.orth_u <= orth_tol; /* NaN fails */
    if (ref)
        for (int i = 0; i < n; i++) {
            /* sigma is perfectly conditioned (moves at most ||dA||_2), sigma^2 from a Gram too */
            double err =
                eigen ? fabs((double)s[i] * s[i] - ref[i] * ref[i]) / (ref[0] * ref[0]) : fabs(s[i] - ref[i]) / ref[0];
            if (!(err <= tol) && ref[0] > 0) {
                if (!quiet && ok) fprintf(stderr, "    S[%d]: got %.8g, CPU %.8g\n", i, s[i], ref[i]);
                ok = 0;
            }
            if (ref[0] == 0 && s[i] != 0) ok = 0; /* a zero matrix has only zero singular values */
        }
    if (!quiet && !ok)
        fprintf(stderr,
                "    %s: residual %.2e, max|U^T U - I| %.2e (tolerance %.2e over %d columns), max|V^T V - I| "
                "%.2e, tolerance %.2e\n",
                versions[j->route].name, q.resid, q.orth_u, orth_tol, cols, q.orth_v, tol);
    snprintf(verdict, len, "%s (resid %.1e, orth %.1e%s%s)", ok ? "PASS" : "FAIL", q.resid,
             q.orth_u > q.orth_v ? q.orth_u : q.orth_v, ref ? ", sigma vs CPU" : "",
             eigen && cols < n ? ", U beyond the noise skipped" : "");
    return ok;
}

/* ================================================================ the SVD of a test matrix */

/* A (M,N): uniform in [-1, 1), or of rank R as (M,R) x (R,N) (one GEMM on the GPU), or 0 */
static void make_matrix(cublasHandle_t blas, const svd_options *o, lb_rng *rng, float *h_a, float *d_a)
{
    size_t mn = (size_t)o->M * o->N;
    if (o->rank < 0) {
        lb_fill_uniform(h_a, mn, -1.0f, 1.0f, rng);
        CUDA_CHECK(cudaMemcpy(d_a, h_a, sizeof(float) * mn, cudaMemcpyHostToDevice));
        return;
    }
    if (o->rank == 0) {
        memset(h_a, 0, sizeof(float) * mn);
        CUDA_CHECK(cudaMemset(d_a, 0, sizeof(float) * mn));
        return;
    }
    size_t xn = (size_t)o->M * o->rank, yn = (size_t)o->rank * o->N;
    float *h_xy = lb_host_alloc(sizeof(float) * (xn + yn), "the rank-R factors"), *d_xy;
    lb_fill_uniform(h_xy, xn + yn, -1.0f, 1.0f, rng);
    CUDA_CHECK(cudaMalloc((void **)&d_xy, sizeof(float) * (xn + yn)));
    CUDA_CHECK(cudaMemcpy(d_xy, h_xy, sizeof(float) * (xn + yn), cudaMemcpyHostToDevice));
    /* row-major A = X Y is column-major A^T = Y^T X^T: cuBLAS multiplies "Y times X" */
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, o->N, o->M, o->rank, &one, d_xy + xn, o->N, d_xy, o->rank,
                             &zero, d_a, o->N));
    CUDA_CHECK(cudaMemcpy(h_a, d_a, sizeof(float) * mn, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d_xy));
    free(h_xy);
}

/* One route: set up, run once on poisoned outputs, check, time. Returns pass; the row is
 * reported. */
static int svd_route(lb_report *rep, const lb_args *args, svd_job *j, const double *ref, double *work_mib)
{
    char verdict[240], why[200];
    svd_job_setup(j);
    *work_mib = (double)j->work_bytes / (1024.0 * 1024.0);
    lb_poison_device(j->d_u, sizeof(float) * (size_t)j->m * j->n);
    lb_poison_device(j->d_s, sizeof(float) * (size_t)j->n);
    lb_poison_device(j->d_v, sizeof(float) * (size_t)j->n * j->n);
    CUDA_CHECK(svd_run(j));
    CUDA_CHECK(cudaDeviceSynchronize());
    int pass = 0, u_cols = 0;
    float ms = 0.0f;
    if (svd_failed(j, why, sizeof why)) {
        if (!args->quiet) fprintf(stderr, "    %s\n", why);
        snprintf(verdict, sizeof verdict, "FAIL (no convergence)");
    } else {
        float *s = lb_host_alloc(sizeof(float) * (size_t)j->n, "S");
        svd_download_s(j, s);
        pass = judge(j, s, ref, &u_cols, args->quiet, verdict, sizeof verdict);
        free(s);
        if (pass && !args->check_only) {
            ms = lb_time_ms(svd_run, j, 1, args->iters);
            /* the timed runs are checked too: each one's info, here the last one's */
            if (svd_failed(j, why, sizeof why)) pass = 0, snprintf(verdict, sizeof verdict, "FAIL (%s)", why);
        }
    }
    lb_report_row(rep, j->route, NULL, ms, ms > 0 ? 1000.0 / ms : 0.0, pass, verdict);
    svd_job_free(j);
    return pass;
}

static int run_svd(const lb_program *prog, const lb_args *args, const svd_options *o, const lb_gpu *gpu,
                   cusolverDnHandle_t solver, cublasHandle_t blas, double create_ms)
{
    size_t mn = (size_t)o->M * o->N;
    int p = o->M > o->N ? o->M : o->N, q = o->M > o->N ? o->N : o->M;
    /* A, the route's buffers, and the checks' double copies of B, U, V and U^T U */
    lb_require_device_memory(sizeof(float) * mn + svd_job_bytes(o->M, o->N) +
                                 sizeof(double) * (2 * mn + 2 * (size_t)q * q + q),
                             "A, its factors and the checks' double copies");
    float *h_a = lb_host_alloc(sizeof(float) * mn, "A"), *d_a;
    CUDA_CHECK(cudaMalloc((void **)&d_a, sizeof(float) * mn));
    lb_rng rng;
    lb_rng_seed(&rng, args->seed);
    make_matrix(blas, o, &rng, h_a, d_a);

    double *ref = NULL;
    if ((double)p * q * q <= CPU_REFERENCE_BUDGET) {
        ref = lb_host_alloc(sizeof(double) * (size_t)q, "the reference singular values");
        if (svd_values_cpu(h_a, o->M, o->N, ref) < 0)
            lb_die(LB_EXIT_FAIL, "svd_pca: the CPU reference did not converge");
    }
    char size[48], heading[160];
    snprintf(size, sizeof size, "%dx%d", o->M, o->N);
    snprintf(heading, sizeof heading, "SVD of A (%d,%d)%s, U (%d,%d), S (%d), V (%d,%d); B = %s", o->M, o->N,
             o->rank < 0    ? ""
             : o->rank == 0 ? " = 0"
                            : ", rank-deficient",
             o->M, q, q, o->N, q, o->N >= o->M ? "A^T (no copy)" : "A transposed by geam");
    if (!args->quiet)
        printf("svd_pca: SVD, M=%d N=%d%s, %s (%s), seed %llu%s\n", o->M, o->N, o->rank >= 0 ? " (--rank)" : "",
               gpu->prop.name, gpu->sm, args->seed, ref ? ", CPU reference: Jacobi in double" : "");
    lb_report rep = {
        .prog = prog, .args = args, .unit = "svd_s", .unit_head = "SVD/s", .base = "gesvd", .base_head = "vs gesvd"};
    lb_report_table(&rep, size, heading);
    double work_mib[SVD_PCA_VERSIONS] = {0};
    int ran[SVD_PCA_VERSIONS] = {0};
    for (int v = 0; v < SVD_PCA_VERSIONS; v++) {
        if (!lb_version_wanted(prog, args, gpu, v)) continue;
        svd_job j = {
            .solver = solver, .blas = blas, .route = v, .M = o->M, .N = o->N, .d_a = d_a, .max_sweeps = o->sweeps};
        svd_route(&rep, args, &j, ref, &work_mib[v]);
        ran[v] = 1;
    }
    if (!args->quiet) {
        printf("device memory each route needs beyond A, B, U, S, V:");
        for (int v = 0; v < SVD_PCA_VERSIONS; v++)
            if (ran[v]) printf(" %s %.2f MiB", versions[v].name, work_mib[v]);
        printf("\ncusolverDnCreate (the first, with the library's loading): %.1f ms, paid once per program\n",
               create_ms);
    }
    if (!args->check_only) {
        for (int v = 0; v < SVD_PCA_VERSIONS; v++)
            if (ran[v]) {
                char name[32];
                snprintf(name, sizeof name, "%s_workspace", versions[v].name);
                lb_result r = {prog->name, v, name, size, 0.0, "mib", work_mib[v], NULL, 0.0, -1};
                lb_print_result(&r, args->quiet);
            }
        lb_result r = {prog->name, -1, "cusolver_create", "1", create_ms, "create_ms", create_ms, NULL, 0.0, -1};
        lb_print_result(&r, args->quiet);
    }
    free(ref);
    free(h_a);
    CUDA_CHECK(cudaFree(d_a));
    return lb_report_finish(&rep);
}

/* ================================================================ PCA of a data set */

/* A's right singular vectors (its principal axes), first k, as V_A (f,k) row-major, from the
 * job's factors of B (see svd_pca_routes.h: B = A^T swaps the roles of U and V). */
static void principal_axes(const svd_job *j, int k, float *h_axes)
{
    int f = j->N, m = j->m, n = j->n;
    size_t count = j->b_is_a_t ? (size_t)m * n : (size_t)n * n;
    float *h = lb_host_alloc(sizeof(float) * count, "the factors");
    CUDA_CHECK(cudaMemcpy(h, j->b_is_a_t ? j->d_u : j->d_v, sizeof(float) * count, cudaMemcpyDeviceToHost));
    for (int r = 0; r < f; r++)
        for (int c = 0; c < k; c++) {
            float v;
            if (j->b_is_a_t)
                v = h[r + (size_t)c * m]; /* A's V = B's U (m = f rows) */
            else if (j->v_is_vt)
                v = h[c + (size_t)r * n]; /* B's V^T, column-major: V(r,c) = VT(c,r) */
            else
                v = h[r + (size_t)c * n];
            h_axes[(size_t)r * k + c] = v;
        }
    free(h);
}

typedef struct {
    int n, f, k;
    float *xc;        /* the centred data (n,f) */
    double total_var; /* sum of the features' variances */
    double *cov_eig;  /* the CPU covariance route's eigenvalues, largest first (NULL: skipped) */
} pca_data;

/* The covariance route on the CPU, and the centred data the GPU factors. */
static pca_data pca_prepare(const lb_dataset *d, int components)
{
    pca_data pd = {d->n, d->features, 0, NULL, 0.0, NULL};
    int q = d->n < d->features ? d->n : d->features;
    pd.k = components < q ? components : q;
    double *mean = lb_host_alloc(sizeof(double) * (size_t)pd.f, "the means");
    double *cov = lb_host_alloc(sizeof(double) * (size_t)pd.f * pd.f, "the covariance");
    covariance_cpu(d->x, pd.n, pd.f, mean, cov);
    for (int j = 0; j < pd.f; j++) pd.total_var += cov[(size_t)j * pd.f + j];
    if (pd.f <= 512) { /* Jacobi on f x f costs about 10 f^3 per sweep */
        pd.cov_eig = lb_host_alloc(sizeof(double) * (size_t)pd.f, "the eigenvalues");
        if (sym_eigenvalues_cpu(cov, pd.f, pd.cov_eig) < 0)
            lb_die(LB_EXIT_FAIL, "svd_pca: CPU Jacobi did not converge");
    }
    pd.xc = lb_host_alloc(sizeof(float) * (size_t)pd.n * pd.f, "the centred data");
    for (int i = 0; i < pd.n; i++)
        for (int j = 0; j < pd.f; j++) pd.xc[(size_t)i * pd.f + j] = (float)(d->x[(size_t)i * pd.f + j] - mean[j]);
    free(mean);
    free(cov);
    return pd;
}

/* The PCA checks: the explained shares sum to 1 (sigma^2 against the data's own total
 * variance), each projected column's variance equals sigma^2 / (n - 1), and the CPU covariance
 * route has the same variances. */
static int pca_check(const pca_data *pd, const float *s, int q, const float *scores, double tol, int quiet)
{
    int ok = 1;
    double sum = 0, top = (double)s[0] * s[0] / (pd->n - 1);
    for (int i = 0; i < q; i++) sum += (double)s[i] * s[i] / (pd->n - 1);
    double share_err = pd->total_var > 0 ? fabs(sum / pd->total_var - 1.0) : sum;
    if (!(share_err <= tol)) {
        if (!quiet) fprintf(stderr, "    explained shares sum to %.8f, not 1\n", 1.0 + share_err);
        ok = 0;
    }
    for (int c = 0; c < pd->k; c++) {
        double v = 0; /* the scores are centred, as the data are: their variance is a mean square */
        for (int i = 0; i < pd->n; i++) v += (double)scores[(size_t)i * pd->k + c] * scores[(size_t)i * pd->k + c];
        v /= pd->n - 1;
        double want = (double)s[c] * s[c] / (pd->n - 1);
        if (!(fabs(v - want) <= tol * top + 1e-30)) {
            if (!quiet)
                fprintf(stderr, "    component %d: projected variance %.8g, sigma^2/(n-1) %.8g\n", c + 1, v, want);
            ok = 0;
        }
    }
    if (pd->cov_eig)
        for (int c = 0; c < q; c++) {
            double want = pd->cov_eig[c], got = (double)s[c] * s[c] / (pd->n - 1);
            if (!(fabs(got - want) <= tol * pd->cov_eig[0] + 1e-30)) {
                if (!quiet)
                    fprintf(stderr, "    component %d: variance %.8g, CPU covariance route %.8g\n", c + 1, got, want);
                ok = 0;
                break;
            }
        }
    return ok;
}

/* The table of explained variance, the components for 90/95/99%, the picture. */
static void pca_print(const pca_data *pd, const lb_dataset *d, const char *data_name, const float *s, int q,
                      const float *scores, const char *png_path, int check_only)
{
    double *var = lb_host_alloc(sizeof(double) * (size_t)q, "the variances"), cum = 0;
    for (int i = 0; i < q; i++) var[i] = (double)s[i] * s[i] / (pd->n - 1);
    printf(" comp        sigma     variance    explained   cumulative\n");
    for (int c = 0; c < pd->k; c++) {
        cum += var[c];
        printf(" %4d %12.5g %12.5g %11.2f%% %11.2f%%\n", c + 1, s[c], var[c], 100 * var[c] / pd->total_var,
               100 * cum / pd->total_var);
    }
    int keep[3] = {components_for(var, q, pd->total_var, 0.90), components_for(var, q, pd->total_var, 0.95),
                   components_for(var, q, pd->total_var, 0.99)};
    printf("components that keep 90%% of the variance: %d, 95%%: %d, 99%%: %d (of %d)\n", keep[0], keep[1], keep[2], q);
    /* the same as RESULT lines, for the chapter README's table (make bench; not with --check-only) */
    char size[96], name[32];
    snprintf(size, sizeof size, "%s_%dx%d", data_name, pd->n, pd->f);
    for (int c = 0; c < pd->k && c < 10; c++) {
        snprintf(name, sizeof name, "component_%d", c + 1);
        lb_result r = {"svd_pca", -1, name, size, 0.0, "explained_pct", 100 * var[c] / pd->total_var, NULL, 0.0, 1};
        lb_print_result(&r, check_only);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "keep_%dpct", i == 0 ? 90 : i == 1 ? 95 : 99);
        lb_result r = {"svd_pca", -1, name, size, 0.0, "components", keep[i], NULL, 0.0, 1};
        lb_print_result(&r, check_only);
    }
    free(var);
    if (!png_path || !*png_path) return;
    if (pd->k < 2) {
        printf("no picture: a scatter needs two components, this data has %d\n", pd->k);
        return;
    }
    float *px = lb_host_alloc(sizeof(float) * (size_t)pd->n * 2, "the picture's points"), *py = px + pd->n;
    for (int i = 0; i < pd->n; i++) px[i] = scores[(size_t)i * pd->k], py[i] = scores[(size_t)i * pd->k + 1];
    if (write_scatter_png(png_path, px, py, d->y, pd->n))
        lb_die(LB_EXIT_USAGE, "svd_pca: cannot write %s: %s", png_path, strerror(errno));
    printf("wrote %s: component 1 across, component 2 up; colours:", png_path);
    for (int c = 0; c < d->classes; c++)
        printf(" %s %s%s", d->class_names[c], scatter_colour_name(c), c + 1 < d->classes ? "," : "\n");
    free(px);
}

/* The data set, read before the GPU is looked for: a bad file is exit 2 with its line anywhere. */
static void pca_load(const char *path, lb_dataset *d)
{
    char err[512];
    if (lb_load_csv(path, d, 1, err, sizeof err)) lb_die(LB_EXIT_USAGE, "svd_pca: %s", err);
    if (d->n < 2) lb_die(LB_EXIT_USAGE, "svd_pca: %s: PCA needs at least 2 samples (has %d)", path, d->n);
    if ((size_t)d->n * d->features > (1u << 28) || d->n > 32768 || d->features > 32768)
        lb_die(LB_EXIT_USAGE, "svd_pca: %s: %d x %d values; at most 32768 each and 2^28 in all", path, d->n,
               d->features);
}

static int run_pca(const lb_program *prog, const lb_args *args, const svd_options *o, const lb_gpu *gpu,
                   cusolverDnHandle_t solver, cublasHandle_t blas, lb_dataset d)
{
    pca_data pd = pca_prepare(&d, o->components);
    int q = d.n < d.features ? d.n : d.features;
    size_t nf = (size_t)d.n * d.features;
    lb_require_device_memory(sizeof(float) * (2 * nf + (size_t)d.n * pd.k) + svd_job_bytes(d.n, d.features) +
                                 sizeof(double) * (2 * nf + 2 * (size_t)q * q + q),
                             "the data, its factors and the checks' double copies");
    float *d_x, *d_axes, *d_scores;
    CUDA_CHECK(cudaMalloc((void **)&d_x, sizeof(float) * nf));
    CUDA_CHECK(cudaMalloc((void **)&d_axes, sizeof(float) * (size_t)d.features * pd.k));
    CUDA_CHECK(cudaMalloc((void **)&d_scores, sizeof(float) * (size_t)d.n * pd.k));
    CUDA_CHECK(cudaMemcpy(d_x, pd.xc, sizeof(float) * nf, cudaMemcpyHostToDevice));
    if (!args->quiet)
        printf("svd_pca: PCA of %s: %d samples, %d features, %d classes; %s (%s)%s\n", o->pca_path, d.n, d.features,
               d.classes, gpu->prop.name, gpu->sm, pd.cov_eig ? "; CPU reference: the covariance route" : "");
    float *s = lb_host_alloc(sizeof(float) * (size_t)q, "S");
    float *axes = lb_host_alloc(sizeof(float) * (size_t)d.features * pd.k, "the axes");
    float *scores = lb_host_alloc(sizeof(float) * (size_t)d.n * pd.k, "the scores");
    int all_ok = 1, printed = 0;
    for (int v = 0; v < SVD_PCA_VERSIONS; v++) {
        if (!lb_version_wanted(prog, args, gpu, v)) continue;
        svd_job j = {
            .solver = solver, .blas = blas, .route = v, .M = d.n, .N = d.features, .d_a = d_x, .max_sweeps = o->sweeps};
        svd_job_setup(&j);
        lb_poison_device(d_scores, sizeof(float) * (size_t)d.n * pd.k);
        CUDA_CHECK(svd_run(&j));
        char why[200], verdict[240];
        int ok = 0, u_cols;
        if (svd_failed(&j, why, sizeof why)) {
            snprintf(verdict, sizeof verdict, "FAIL (%s)", why);
        } else {
            svd_download_s(&j, s);
            ok = judge(&j, s, NULL, &u_cols, args->quiet, verdict, sizeof verdict);
            /* project: scores (n,k) = Xc (n,f) x axes (f,k), row-major (the row-major trick) */
            principal_axes(&j, pd.k, axes);
            CUDA_CHECK(cudaMemcpy(d_axes, axes, sizeof(float) * (size_t)d.features * pd.k, cudaMemcpyHostToDevice));
            const float one = 1.0f, zero = 0.0f;
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, pd.k, d.n, d.features, &one, d_axes, pd.k, d_x,
                                     d.features, &zero, d_scores, pd.k));
            CUDA_CHECK(cudaMemcpy(scores, d_scores, sizeof(float) * (size_t)d.n * pd.k, cudaMemcpyDeviceToHost));
            int pca_ok = pca_check(&pd, s, q, scores, route_tolerance(v, j.m), args->quiet);
            if (!pca_ok) snprintf(verdict, sizeof verdict, "FAIL (PCA checks)");
            ok &= pca_ok;
        }
        all_ok &= ok;
        if (!args->quiet) printf("  %-28s %s\n", versions[v].title, verdict);
        if (ok && !printed && !args->quiet) {
            pca_print(&pd, &d, o->pca_name, s, q, scores, o->png_path, args->check_only);
            printed = 1;
        }
        svd_job_free(&j);
    }
    if (args->quiet)
        printf("svd_pca: PCA of %s, %d x %d, %s\n", o->pca_path, d.n, d.features, all_ok ? "all PASS" : "FAIL");
    free(s);
    free(axes);
    free(scores);
    free(pd.xc);
    free(pd.cov_eig);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_axes));
    CUDA_CHECK(cudaFree(d_scores));
    lb_free_dataset(&d);
    return all_ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

/* ================================================================ main */

int main(int argc, char **argv)
{
    svd_options o = {.rank = -1, .sweeps = 100, .components = 10, .pca_path = NULL, .png_path = NULL};
    const lb_opt options[] = {
        {"--rank", LB_OPT_INT, &o.rank, "make A of rank R (a product of (M,R) and (R,N) factors); 0: all zeros"},
        {"--sweeps", LB_OPT_INT, &o.sweeps, "gesvdj's limit on Jacobi sweeps (default 100, cuSOLVER's)"},
        {"--pca", LB_OPT_STRING, &o.pca_path, "PCA of this data set (CSV, datasets/ layout) instead of the SVD timing"},
        {"--png", LB_OPT_STRING, &o.png_path, "with --pca: the scatter picture (default pca_<data>.png; \"\": none)"},
        {"--components", LB_OPT_INT, &o.components, "with --pca: components projected and listed"},
    };
    const lb_program program = {
        .name = "svd_pca",
        .synopsis = "SVD with cuSOLVER (gesvd, gesvdj, syrk + syevd), checked in double; PCA of a data set",
        .details = "--size M,N (or N for square), each at most 32768 and M*N at most 2^28.\n"
                   "Timed: making B from A (a copy or a transpose) and the route; not the handles or the workspace.\n",
        .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
        .opts = options,
        .n_opts = sizeof options / sizeof options[0],
        .versions = versions,
        .n_versions = SVD_PCA_VERSIONS,
    };
    lb_args args = {.size = {{1000, 5000}, 2}, .max_size_dims = 2, .iters = 5, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    o.M = (int)args.size.v[0];
    o.N = (int)(args.size.n == 2 ? args.size.v[1] : args.size.v[0]);
    if (args.size.v[0] > 32768 || (args.size.n == 2 && args.size.v[1] > 32768) || (size_t)o.M * o.N > (1u << 28))
        lb_usage_error(&program, "--size: M and N at most 32768 each, M*N at most 2^28 (got %lldx%lld)", args.size.v[0],
                       args.size.n == 2 ? args.size.v[1] : args.size.v[0]);
    if (o.rank > (o.M < o.N ? o.M : o.N) || o.rank < -1)
        lb_usage_error(&program, "--rank must be 0..min(M,N) = %d", o.M < o.N ? o.M : o.N);
    if (o.sweeps < 1 || o.sweeps > 10000) lb_usage_error(&program, "--sweeps must be 1..10000");
    if (o.components < 1) lb_usage_error(&program, "--components must be positive");
    char png_default[96];
    if (o.pca_path) {
        const char *base = strrchr(o.pca_path, '/') ? strrchr(o.pca_path, '/') + 1 : o.pca_path;
        int stem = (int)(strchr(base, '.') ? strchr(base, '.') - base : (long)strlen(base));
        snprintf(o.pca_name, sizeof o.pca_name, "%.*s", stem, base);
        for (char *c = o.pca_name; *c; c++) /* a RESULT size has no spaces */
            if (*c == ' ' || *c == '=') *c = '_';
        snprintf(png_default, sizeof png_default, "pca_%s.png", o.pca_name);
        if (!o.png_path) o.png_path = png_default;
    }
    if (!o.pca_path && o.png_path) lb_usage_error(&program, "--png goes with --pca");
    for (int i = 1; i < argc; i++) /* given, not just the default: it would be ignored */
        if (!o.pca_path && !strncmp(argv[i], "--components", 12))
            lb_usage_error(&program, "--components goes with --pca");
    lb_check_output_path(&program, "--png", o.png_path);
    lb_dataset data = {0};
    if (o.pca_path) pca_load(o.pca_path, &data);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    /* the handles: created once, timed once (the first create loads the library) */
    cublasHandle_t blas;
    cusolverDnHandle_t solver;
    CUBLAS_CHECK(cublasCreate(&blas));
    CUDA_CHECK(cudaDeviceSynchronize());
    double t0 = lb_wall_ms();
    CUSOLVER_CHECK(cusolverDnCreate(&solver));
    double create_ms = lb_wall_ms() - t0;
    int rc = o.pca_path ? run_pca(&program, &args, &o, &gpu, solver, blas, data)
                        : run_svd(&program, &args, &o, &gpu, solver, blas, create_ms);
    CUSOLVER_CHECK(cusolverDnDestroy(solver));
    CUBLAS_CHECK(cublasDestroy(blas));
    return rc;
}
