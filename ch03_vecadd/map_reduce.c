/* map_reduce.c - map, scan and map-reduce with user operators: the C counterpart of PyCUDA's
 * ElementwiseKernel, InclusiveScanKernel and ReductionKernel (the book's chapter 3).
 *
 *   x, y: n floats uniform in [-1, 1); ints for the scans; n default 2^26 (256 MB a vector)
 *   build: make ch03      run: ./map_reduce [version] [--size N] [--expr "a*x+y"] [--a 2.5]
 *
 * Versions (GB/s of the bytes that must move, against a device-to-device cudaMemcpy):
 *   0  cuBLAS sdot                      the library's dot product, the baseline of the next row
 *   1  dot: map x*y, reduce +           ReductionKernel's "x[i]*y[i]" with "a+b"
 *   2  map: z = a*x + y                 ElementwiseKernel
 *   3  inclusive scan, +                InclusiveScanKernel with "a+b"
 *   4  inclusive scan, max              the book's max-scan: its last element is the maximum
 *   5  inclusive scan, min
 *   6  map from --expr, built by NVRTC  the kernel's source made at run time from the
 *                                       expression, as PyCUDA does with its string kernels
 * The generic kernels (templates over an operator) are in map_reduce_kernels.cu.
 *
 * Checks: the scans are exact (ints, against a CPU scan); saxpy within an ulp; the --expr map
 * within a running bound of its roundings, element by element (expr_bound); the dot within a
 * bound of the float rounding of its additions (see dot_tolerance). --expr accepts + - * / ( ), numbers, a, x, y and
 * sqrt exp sin cos fabs; it is parsed here first, so a typo is a one-line error, not a compile
 * log, and nothing but an expression reaches the compiler.
 */
#define _POSIX_C_SOURCE 200809L
#include <cublas_v2.h>
#include <nvrtc.h>
#include "lb_driver.h"
#include "labbook.h"
#include "map_reduce_kernels.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#define F32_EPS 1.1920929e-07 /* 2^-23: one ulp of a float in [1, 2) */

/* ---------------------------------------------------------------- expressions */

typedef enum { E_NUM, E_A, E_X, E_Y, E_NEG, E_ADD, E_SUB, E_MUL, E_DIV, E_FUNC } expr_kind;
static const char *const func_name[] = {"sqrt", "exp", "sin", "cos", "fabs"};
enum { N_FUNCS = sizeof func_name / sizeof func_name[0] };

typedef struct {
    expr_kind kind;
    float num;    /* E_NUM */
    int func;     /* E_FUNC: index in func_name */
    int lhs, rhs; /* operands (node indices); E_NEG and E_FUNC use lhs */
} expr_node;

#define EXPR_MAX_NODES 128
#define EXPR_MAX_DEPTH 64 /* nested (, functions and unary minus: the parser recurses once for each */
typedef struct {
    expr_node node[EXPR_MAX_NODES];
    int count, root;
    int depth;     /* the parser's current nesting */
    const char *p; /* parse position */
    char err[160];
} expr;

static int expr_add(expr *e, expr_node nd)
{
    if (e->count == EXPR_MAX_NODES) {
        snprintf(e->err, sizeof e->err, "too long (at most %d terms)", EXPR_MAX_NODES);
        return -1;
    }
    e->node[e->count] = nd;
    return e->count++;
}

static void skip_space(expr *e)
{
    while (isspace((unsigned char)*e->p)) e->p++;
}

static int parse_sum(expr *e);

/* primary := number | a | x | y | func ( sum ) | ( sum ) ;  unary := - unary | primary */
static int parse_primary(expr *e);
static int parse_unary(expr *e)
{
    if (e->depth == EXPR_MAX_DEPTH) {
        snprintf(e->err, sizeof e->err, "nested too deeply (at most %d levels of (, functions and -)", EXPR_MAX_DEPTH);
        return -1;
    }
    e->depth++;
    int v = parse_primary(e);
    e->depth--;
    return v;
}
static int parse_primary(expr *e)
{
    skip_space(e);
    const char *at = e->p;
    if (*e->p == '-') {
        e->p++;
        int v = parse_unary(e);
        return v < 0 ? v : expr_add(e, (expr_node){E_NEG, 0, 0, v, -1});
    }
    if (*e->p == '(') {
        e->p++;
        int v = parse_sum(e);
        skip_space(e);
        if (v >= 0 && *e->p != ')') {
            snprintf(e->err, sizeof e->err, "missing ) at \"%s\"", e->p);
            return -1;
        }
        e->p++;
        return v;
    }
    if (isdigit((unsigned char)*e->p) || *e->p == '.') {
        char *end;
        errno = 0;
        float v = strtof(e->p, &end);
        if (errno == ERANGE && (isinf(v) || v == 0)) { /* 1e39 would be inff, 1e-50 silently 0 */
            snprintf(e->err, sizeof e->err, "the number \"%.*s\" is outside float's range", (int)(end - e->p), e->p);
            return -1;
        }
        e->p = end;
        return expr_add(e, (expr_node){E_NUM, v, 0, -1, -1});
    }
    int len = 0;
    while (isalpha((unsigned char)e->p[len])) len++;
    if (len == 1 && strchr("axy", *e->p)) {
        e->p++;
        return expr_add(e, (expr_node){*at == 'a' ? E_A : *at == 'x' ? E_X : E_Y, 0, 0, -1, -1});
    }
    for (int f = 0; f < N_FUNCS; f++)
        if ((int)strlen(func_name[f]) == len && strncmp(e->p, func_name[f], (size_t)len) == 0) {
            e->p += len;
            skip_space(e);
            if (*e->p != '(') break;
            e->p++;
            int v = parse_sum(e);
            skip_space(e);
            if (v >= 0 && *e->p != ')') {
                snprintf(e->err, sizeof e->err, "missing ) after %s( ... at \"%s\"", func_name[f], e->p);
                return -1;
            }
            e->p++;
            return v < 0 ? v : expr_add(e, (expr_node){E_FUNC, 0, f, v, -1});
        }
    snprintf(e->err, sizeof e->err, "expected a number, a, x, y, a function or ( at \"%s\"", at);
    return -1;
}

/* product := unary (( * | / ) unary)* ;  sum := product (( + | - ) product)* */
static int parse_product(expr *e)
{
    int v = parse_unary(e);
    for (skip_space(e); v >= 0 && (*e->p == '*' || *e->p == '/'); skip_space(e)) {
        expr_kind k = *e->p++ == '*' ? E_MUL : E_DIV;
        int r = parse_unary(e);
        v = r < 0 ? r : expr_add(e, (expr_node){k, 0, 0, v, r});
    }
    return v;
}

static int parse_sum(expr *e)
{
    int v = parse_product(e);
    for (skip_space(e); v >= 0 && (*e->p == '+' || *e->p == '-'); skip_space(e)) {
        expr_kind k = *e->p++ == '+' ? E_ADD : E_SUB;
        int r = parse_product(e);
        v = r < 0 ? r : expr_add(e, (expr_node){k, 0, 0, v, r});
    }
    return v;
}

/* 0, or -1 with the reason in e->err */
static int expr_parse(expr *e, const char *text)
{
    memset(e, 0, sizeof *e);
    e->p = text;
    e->root = parse_sum(e);
    if (e->root < 0) return -1;
    skip_space(e);
    if (*e->p) {
        snprintf(e->err, sizeof e->err, "unexpected \"%s\"", e->p);
        return -1;
    }
    return 0;
}

/* the CPU reference: the expression in float, one rounding per operation */
static float expr_eval(const expr *e, int i, float a, float x, float y)
{
    const expr_node *nd = &e->node[i];
    switch (nd->kind) {
    case E_NUM: return nd->num;
    case E_A: return a;
    case E_X: return x;
    case E_Y: return y;
    case E_NEG: return -expr_eval(e, nd->lhs, a, x, y);
    case E_ADD: return expr_eval(e, nd->lhs, a, x, y) + expr_eval(e, nd->rhs, a, x, y);
    case E_SUB: return expr_eval(e, nd->lhs, a, x, y) - expr_eval(e, nd->rhs, a, x, y);
    case E_MUL: return expr_eval(e, nd->lhs, a, x, y) * expr_eval(e, nd->rhs, a, x, y);
    case E_DIV: return expr_eval(e, nd->lhs, a, x, y) / expr_eval(e, nd->rhs, a, x, y);
    case E_FUNC: {
        float v = expr_eval(e, nd->lhs, a, x, y);
        switch (nd->func) {
        case 0: return sqrtf(v);
        case 1: return expf(v);
        case 2: return sinf(v);
        case 3: return cosf(v);
        default: return fabsf(v);
        }
    }
    }
    return NAN;
}

/* The expression as CUDA C, fully parenthesized, floats as float literals (2.5 would be a
 * double and turn the arithmetic into doubles), functions as their float versions (sinf). */
static void expr_emit(const expr *e, int i, char *buf, size_t len)
{
    const expr_node *nd = &e->node[i];
    size_t used = strlen(buf);
    char *out = buf + used;
    size_t room = len - used;
    static const char op_char[] = {[E_ADD] = '+', [E_SUB] = '-', [E_MUL] = '*', [E_DIV] = '/'};
    switch (nd->kind) {
    case E_NUM: snprintf(out, room, "%.9ef", (double)nd->num); return;
    case E_A: snprintf(out, room, "a"); return;
    case E_X: snprintf(out, room, "x"); return;
    case E_Y: snprintf(out, room, "y"); return;
    case E_NEG: snprintf(out, room, "(-"); break;
    case E_FUNC: snprintf(out, room, "%sf(", func_name[nd->func]); break;
    default: snprintf(out, room, "("); break;
    }
    expr_emit(e, nd->lhs, buf, len);
    if (nd->kind != E_NEG && nd->kind != E_FUNC) {
        used = strlen(buf);
        snprintf(buf + used, len - used, " %c ", op_char[nd->kind]);
        expr_emit(e, nd->rhs, buf, len);
    }
    used = strlen(buf);
    snprintf(buf + used, len - used, ")");
}

/* The tolerance of one element: a first-order running error bound. The GPU and the CPU both
 * evaluate the expression in float; each differs from the exact value by at most
 * F32_EPS * m / 2 (half of it: the other half is the other side's), where m grows node by node:
 *   a constant or an input:  0 (exact, and the same float on both sides)
 *   l + r, l - r:           m(l) + m(r) + |l +- r|           (the operands' errors, one rounding)
 *   l * r:                  m(l) |r| + |l| m(r) + |l r|
 *   l / r:                  (m(l) + |l / r| m(r)) / |r| + |l / r|
 *   f(u):                   |f'(u)| m(u) + 4 |f(u)|          (CUDA's sinf, cosf, expf: 2 ulps;
 *                                                             the CPU's under 1; sqrtf exact)
 * A difference of nearly equal values keeps the absolute error of its operands, so its bound
 * does not shrink with the result, and a tiny result gets a tiny bound: no absolute floor that
 * a kernel returning 0 could hide under. Returns the value (double); *m gets the bound. */
static double expr_bound(const expr *e, int i, double a, double x, double y, double *m)
{
    const expr_node *nd = &e->node[i];
    double l, r, ml = 0, mr = 0, v;
    switch (nd->kind) {
    case E_NUM: *m = 0; return nd->num;
    case E_A: *m = 0; return a;
    case E_X: *m = 0; return x;
    case E_Y: *m = 0; return y;
    case E_NEG: return -expr_bound(e, nd->lhs, a, x, y, m);
    case E_FUNC: {
        double u = expr_bound(e, nd->lhs, a, x, y, &ml), slope;
        switch (nd->func) {
        case 0: v = sqrt(u), slope = v > 0 ? 0.5 / v : 0; break;
        case 1: v = exp(u), slope = v; break;
        case 2: v = sin(u), slope = fabs(cos(u)); break;
        case 3: v = cos(u), slope = fabs(sin(u)); break;
        default: v = fabs(u), slope = 1; break;
        }
        *m = (ml > 0 ? slope * ml : 0) + 4 * fabs(v);
        return v;
    }
    default: break;
    }
    l = expr_bound(e, nd->lhs, a, x, y, &ml);
    r = expr_bound(e, nd->rhs, a, x, y, &mr);
    switch (nd->kind) {
    case E_ADD: v = l + r, *m = ml + mr + fabs(v); break;
    case E_SUB: v = l - r, *m = ml + mr + fabs(v); break;
    case E_MUL: v = l * r, *m = ml * fabs(r) + fabs(l) * mr + fabs(v); break;
    default: v = l / r, *m = (ml + fabs(v) * mr) / fabs(r) + fabs(v); break;
    }
    return v;
}

typedef struct {
    const expr *e;
    float a;
    const float *x, *y;
} expr_inputs;

/* twice the first-order bound (the second-order terms, and the bound is first-order only) */
static double expr_tolerance(size_t i, const void *ctx)
{
    const expr_inputs *in = (const expr_inputs *)ctx;
    double m;
    expr_bound(in->e, in->e->root, in->a, in->x[i], in->y[i], &m);
    return 2 * F32_EPS * m;
}

/* ---------------------------------------------------------------- NVRTC: the map from --expr */

/* Compile the map kernel around the expression; the PTX is loaded into the current context. */
static CUfunction build_expr_kernel(const expr *e, CUmodule *mod, int quiet)
{
    char body[8192] = "";
    expr_emit(e, e->root, body, sizeof body);
    char src[10240];
    snprintf(src, sizeof src,
             "extern \"C\" __global__ void expr_kernel(const float *xs, const float *ys, float *z, float a,\n"
             "                                        unsigned long long n)\n"
             "{\n"
             "    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;\n"
             "         i += (unsigned long long)gridDim.x * blockDim.x) {\n"
             "        const float x = xs[i], y = ys[i];\n"
             "        z[i] = %s;\n"
             "    }\n"
             "}\n",
             body);
    if (!quiet) printf("  NVRTC builds: z[i] = %s\n", body);
    nvrtcResult r;
    char *log, *ptx = lb_nvrtc_ptx(src, "expr_kernel.cu", &r, &log);
    if (!ptx) { /* the parser let only expressions through: this is not the user's typo */
        fprintf(stderr, "%s\n%s", src, log);
        lb_die(LB_EXIT_CUDA, "map_reduce: NVRTC could not compile the kernel above: %s", nvrtcGetErrorString(r));
    }
    free(log);
    CUfunction fn;
    CU_CHECK(lb_cu.cuModuleLoadData(mod, ptx));
    CU_CHECK(lb_cu.cuModuleGetFunction(&fn, *mod, "expr_kernel"));
    free(ptx);
    return fn;
}

/* ---------------------------------------------------------------- the job */

typedef struct {
    size_t n;
    float a;
    const float *d_x, *d_y;
    float *d_z, *d_partials, *d_dot;
    int *d_in, *d_out, *d_tmp;
    scan_op op;
    cublasHandle_t blas;
    CUfunction expr_fn;
} job;

static cudaError_t run_cublas_dot(void *ctx)
{
    job *j = (job *)ctx;
    /* pointer mode device: the result stays on the GPU, so the call does not wait for it,
     * just as our kernel's does not */
    return cublasSdot(j->blas, (int)j->n, j->d_x, 1, j->d_y, 1, j->d_dot) == CUBLAS_STATUS_SUCCESS ? cudaSuccess
                                                                                                   : cudaErrorUnknown;
}
static cudaError_t run_dot(void *ctx)
{
    job *j = (job *)ctx;
    return map_dot_launch(j->d_x, j->d_y, j->n, j->d_partials, j->d_dot);
}
static cudaError_t run_saxpy(void *ctx)
{
    job *j = (job *)ctx;
    return map_saxpy_launch(j->d_x, j->d_y, j->d_z, j->a, j->n);
}
static cudaError_t run_scan(void *ctx)
{
    job *j = (job *)ctx;
    return map_scan_launch(j->op, j->d_in, j->d_out, j->n, j->d_tmp);
}
static cudaError_t run_expr(void *ctx)
{
    job *j = (job *)ctx;
    unsigned long long n = j->n;
    void *params[] = {&j->d_x, &j->d_y, &j->d_z, &j->a, &n};
    size_t blocks = (j->n + 255) / 256;
    unsigned int grid = (unsigned int)(blocks < 65535 * 16 ? blocks : 65535 * 16);
    /* the default stream of the primary context: the one lb_time_ms's events are recorded in */
    CUresult r = lb_cu.cuLaunchKernel(j->expr_fn, grid, 1, 1, 256, 1, 1, 0, NULL, params, NULL);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}

enum { V_CUBLAS, V_DOT, V_SAXPY, V_SCAN_SUM, V_SCAN_MAX, V_SCAN_MIN, V_EXPR, N_VERSIONS };
static const lb_version versions[] = {
    {V_CUBLAS, "cublas_dot", "cuBLAS sdot", LB_OLDEST_SM, run_cublas_dot},
    {V_DOT, "dot", "dot: map x*y, reduce +", LB_OLDEST_SM, run_dot},
    {V_SAXPY, "map_saxpy", "map: z = a*x + y", LB_OLDEST_SM, run_saxpy},
    {V_SCAN_SUM, "scan_sum", "inclusive scan, +", LB_OLDEST_SM, run_scan},
    {V_SCAN_MAX, "scan_max", "inclusive scan, max", LB_OLDEST_SM, run_scan},
    {V_SCAN_MIN, "scan_min", "inclusive scan, min", LB_OLDEST_SM, run_scan},
    {V_EXPR, "map_expr", "map from --expr (NVRTC)", LB_OLDEST_SM, run_expr},
};
_Static_assert(sizeof versions / sizeof versions[0] == N_VERSIONS, "one table row per version");

/* ---------------------------------------------------------------- CPU references and checks */

static void scan_cpu(scan_op op, const int *in, int *out, size_t n)
{
    int run = in[0];
    out[0] = run;
    for (size_t i = 1; i < n; i++) {
        int v = in[i];
        run = op == SCAN_SUM ? run + v : op == SCAN_MAX ? (v > run ? v : run) : (v < run ? v : run);
        out[i] = run;
    }
}

/* The dot's tolerance (lb_dot_tolerance): a thread adds about n/(blocks x 256) products, then
 * the partials are added in trees of depth ~18. */
static double dot_tolerance(const float *x, const float *y, size_t n)
{
    return lb_dot_tolerance(x, y, n, ceil((double)n / (MAP_REDUCE_BLOCKS * 256.0)) + 18.0);
}

/* ---------------------------------------------------------------- main */

static const char *expr_text = "a*x+y";
static double a_value = 2.5;
static const lb_opt options[] = {
    {"--expr", LB_OPT_STRING, &expr_text, "the map of version 6, in a, x and y (+ - * / ( ) sqrt exp sin cos fabs)"},
    {"--a", LB_OPT_DOUBLE, &a_value, "the scalar a of the maps"},
};
static const lb_program program = {
    .name = "map_reduce",
    .synopsis = "map, inclusive scan (+, max, min) and map-reduce (dot) with user operators; a map built by NVRTC",
    .details = "--size is n. x and y are uniform in [-1, 1): an --expr that is NaN for some of them (sqrt(x)) fails;\n"
               "write sqrt(fabs(x)) instead.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 2,
    .versions = versions,
    .n_versions = N_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 26}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    if (args.size.v[0] > (1LL << 28)) lb_usage_error(&program, "--size: at most 2^28 (the sum scan stays in int)");
    expr ex;
    if (expr_parse(&ex, expr_text)) /* a long expression shown by its first 60 characters */
        lb_usage_error(&program, "--expr \"%.60s%s\": %s", expr_text, strlen(expr_text) > 60 ? "..." : "", ex.err);
    size_t n = (size_t)args.size.v[0];
    float a = (float)a_value;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t tmp_ints = map_scan_tmp_ints(n);
    lb_require_device_memory(n * 5 * sizeof(float) + (tmp_ints + MAP_REDUCE_BLOCKS + 1) * sizeof(float),
                             "x, y, z and the scans' input and output");
    lb_driver_load();
    if (!args.quiet)
        printf("map_reduce: n=%zu, a=%g, --expr \"%s\", %s (%s), seed %llu\n", n, a, expr_text, gpu.prop.name, gpu.sm,
               args.seed);

    float *h_x = lb_host_alloc(n * sizeof(float), "x"), *h_y = lb_host_alloc(n * sizeof(float), "y");
    float *h_z = lb_host_alloc(n * sizeof(float), "z"), *h_want = lb_host_alloc(n * sizeof(float), "the CPU's z");
    int *h_in = lb_host_alloc(n * sizeof(int), "the scan input"), *h_out = lb_host_alloc(n * sizeof(int), "a scan");
    int *h_scan = lb_host_alloc(n * sizeof(int), "the CPU's scan");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_x, n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_y, n, -1.0f, 1.0f, &rng);
    job j = {.n = n, .a = a};
    float *d_x, *d_y;
    CUDA_CHECK(cudaMalloc((void **)&d_x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&d_y, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&j.d_z, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&j.d_in, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc((void **)&j.d_out, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc((void **)&j.d_tmp, tmp_ints * sizeof(int)));
    CUDA_CHECK(cudaMalloc((void **)&j.d_partials, (MAP_REDUCE_BLOCKS + 1) * sizeof(float)));
    j.d_dot = j.d_partials + MAP_REDUCE_BLOCKS;
    CUDA_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y, h_y, n * sizeof(float), cudaMemcpyHostToDevice));
    j.d_x = d_x;
    j.d_y = d_y;
    CUBLAS_CHECK(cublasCreate(&j.blas));
    CUBLAS_CHECK(cublasSetPointerMode(j.blas, CUBLAS_POINTER_MODE_DEVICE));
    CUmodule expr_mod = NULL;
    if (lb_version_wanted(&program, &args, &gpu, V_EXPR)) j.expr_fn = build_expr_kernel(&ex, &expr_mod, args.quiet);

    /* the dot's exact value (double) and tolerance, once */
    double dot_want = 0;
    for (size_t i = 0; i < n; i++) dot_want += (double)h_x[i] * h_y[i];
    double dot_tol = dot_tolerance(h_x, h_y, n);

    char size[32];
    snprintf(size, sizeof size, "%zu", n);
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "gbps",
                     .unit_head = "GB/s",
                     .base = "cublas",
                     .base_head = "vs cuBLAS dot",
                     .ceiling_head = "vs memcpy"};
    lb_report_ceiling(&rep, 8 * n, args.iters);
    lb_report_table(&rep, size, NULL);
    for (int v = 0; v < N_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        double bytes = (v == V_SAXPY || v == V_EXPR ? 12.0 : 8.0) * n; /* 2 reads (+ 1 write) of 4 bytes */
        char verdict[96] = "";
        int pass;
        if (v == V_CUBLAS || v == V_DOT) {
            lb_poison_device(j.d_dot, sizeof(float));
            CUDA_CHECK(versions[v].run(&j));
            float got;
            CUDA_CHECK(cudaMemcpy(&got, j.d_dot, sizeof got, cudaMemcpyDeviceToHost));
            double err = fabs(got - dot_want);
            pass = err <= dot_tol; /* NaN fails: the comparison is false */
            snprintf(verdict, sizeof verdict, "%s (err %.1e, tol %.1e)", pass ? "PASS" : "FAIL", err, dot_tol);
            if (!pass && !args.quiet) fprintf(stderr, "  %s: got %.9g, want %.9g\n", versions[v].name, got, dot_want);
        } else if (v == V_SAXPY || v == V_EXPR) {
            for (size_t i = 0; i < n; i++)
                h_want[i] = v == V_SAXPY ? fmaf(a, h_x[i], h_y[i]) : expr_eval(&ex, ex.root, a, h_x[i], h_y[i]);
            lb_poison_device(j.d_z, n * sizeof(float));
            CUDA_CHECK(versions[v].run(&j));
            CUDA_CHECK(cudaMemcpy(h_z, j.d_z, n * sizeof(float), cudaMemcpyDeviceToHost));
            expr_inputs in = {&ex, a, h_x, h_y};
            lb_check c = v == V_SAXPY ? lb_check_f32(versions[v].name, h_z, h_want, n, F32_EPS, F32_EPS, args.quiet)
                                      : lb_check_f32_bound(versions[v].name, h_z, h_want, n, expr_tolerance, &in,
                                                           args.quiet);
            pass = c.n_bad == 0;
            lb_check_summary(&c, verdict, sizeof verdict);
        } else {
            /* sum: small values, so that no prefix leaves int (|7 * 2^28| < 2^31); max and min:
             * the whole range, so that the running maximum keeps changing early on */
            j.op = v == V_SCAN_SUM ? SCAN_SUM : v == V_SCAN_MAX ? SCAN_MAX : SCAN_MIN;
            for (size_t i = 0; i < n; i++)
                h_in[i] = j.op == SCAN_SUM ? (int)(lb_rng_next(&rng) % 15) - 7 : (int)(uint32_t)lb_rng_next(&rng);
            CUDA_CHECK(cudaMemcpy(j.d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice));
            scan_cpu(j.op, h_in, h_scan, n);
            lb_poison_device(j.d_out, n * sizeof(int));
            CUDA_CHECK(versions[v].run(&j));
            CUDA_CHECK(cudaMemcpy(h_out, j.d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
            lb_check c = lb_check_i32(versions[v].name, h_out, h_scan, n, args.quiet);
            pass = c.n_bad == 0;
            snprintf(verdict, sizeof verdict, "%s (exact%s)", pass ? "PASS" : "FAIL",
                     j.op == SCAN_MAX ? ", last = the maximum" : "");
        }
        double ms = args.check_only ? 0 : lb_time_ms(versions[v].run, &j, 2, args.iters);
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? bytes / (ms * 1e6) : 0, pass, verdict);
    }

    if (expr_mod) CU_CHECK(lb_cu.cuModuleUnload(expr_mod));
    CUBLAS_CHECK(cublasDestroy(j.blas));
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    CUDA_CHECK(cudaFree(j.d_z));
    CUDA_CHECK(cudaFree(j.d_in));
    CUDA_CHECK(cudaFree(j.d_out));
    CUDA_CHECK(cudaFree(j.d_tmp));
    CUDA_CHECK(cudaFree(j.d_partials));
    free(h_x), free(h_y), free(h_z), free(h_want), free(h_in), free(h_out), free(h_scan);
    return lb_report_finish(&rep);
}
