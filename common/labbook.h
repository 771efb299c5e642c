/* labbook.h - the helpers every program of the lab book uses (C11 and CUDA C).
 *
 *   error checks  CUDA_CHECK, CUBLAS_CHECK, CUFFT_CHECK, CURAND_CHECK, CUSOLVER_CHECK, NVRTC_CHECK
 *                 (CU_CHECK: lb_driver.h)
 *                 (the library ones exist once that library's header is included first)
 *   GPU presence  lb_gpu_init(): no driver / no device -> clear message, exit 77
 *   versions      lb_version: one table row per version of a program's kernel
 *   arguments     lb_parse_args(): --help, -n/--size, --block, --iters, --seed,
 *                 --check-only, --quiet, a version number, and a program's own flags (lb_args.c)
 *   data          lb_rng / lb_fill_uniform (seeded), lb_poison_* (NaN bytes), lb_malloc_guarded
 *                 (an input with NaN after its end), lb_bf16_*
 *   checking      lb_check_f32 (abs + rel tolerance, NaN fails), lb_check_rows_cols (sampled
 *                 rows and columns of a large matrix), lb_check_i32 (exact),
 *                 lb_dot_tolerance (a float sum's rounding)
 *   timing        lb_time_ms (CUDA events, warm-up, median), lb_memcpy_ceiling (D2D)
 *   reporting     lb_report_row (table row + RESULT line), lb_report_finish (--quiet summary)
 *   pictures      lb_write_png, lb_read_pgm (lb_image.c)
 *   run-time code lb_nvrtc_ptx (with nvrtc.h included first)
 *
 * Exit codes: 0 pass, 1 wrong result, 2 bad input, 3 CUDA/system error, 77 no usable GPU.
 */
#ifndef LABBOOK_H
#define LABBOOK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { LB_EXIT_PASS = 0, LB_EXIT_FAIL = 1, LB_EXIT_USAGE = 2, LB_EXIT_CUDA = 3, LB_EXIT_NO_GPU = 77 };

#if defined(__GNUC__)
#define LB_NORETURN __attribute__((noreturn))
#define LB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define LB_NORETURN
#define LB_PRINTF(f, a)
#endif

/* The GPU architecture this program was built for; rules.mk passes -DLB_ARCH=sm_90. */
#ifndef LB_ARCH
#define LB_ARCH unknown
#endif
#define LB_STR_(x) #x
#define LB_STR(x) LB_STR_(x)
#define LB_ARCH_NAME LB_STR(LB_ARCH)

/* ---------------------------------------------------------------- errors */

/* Print "file:line: <what> failed: <name> (<text>)" and exit. A missing driver or device
 * exits 77, "no kernel image" explains the sm_XX mismatch and exits 77, anything else 3. */
LB_NORETURN void lb_cuda_fail(cudaError_t err, const char *call, const char *file, int line);
LB_NORETURN void lb_lib_fail(const char *lib, int code, const char *name, const char *text, const char *call,
                             const char *file, int line);
/* One-line message and exit: lb_die(LB_EXIT_USAGE, "--size must be positive") */
LB_NORETURN void lb_die(int exit_code, const char *fmt, ...) LB_PRINTF(2, 3);

#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        cudaError_t lb_err_ = (call);                                                 \
        if (lb_err_ != cudaSuccess) lb_cuda_fail(lb_err_, #call, __FILE__, __LINE__); \
    } while (0)

/* Library checks. Each appears only where its library's header was included before this
 * one, so a program links only the libraries it really uses. */
#ifdef CUBLAS_VER_MAJOR
static inline void lb_cublas_check(cublasStatus_t s, const char *call, const char *file, int line)
{
    if (s != CUBLAS_STATUS_SUCCESS)
        lb_lib_fail("cuBLAS", (int)s, cublasGetStatusName(s), cublasGetStatusString(s), call, file, line);
}
#define CUBLAS_CHECK(call) lb_cublas_check((call), #call, __FILE__, __LINE__)

/* Row-major C (M,N) = A (M,K) B (K,N) in fp32 on cuBLAS. cuBLAS reads a matrix as
 * column-major: our row-major C is, to it, C^T (N,M). Since C^T = B^T A^T, asking cuBLAS for
 * "B times A" with M and N swapped, on the same pointers, leaves exactly our row-major C in
 * memory. No transposes are copied. */
static inline cublasStatus_t lb_sgemm_row_major(cublasHandle_t h, const float *d_a, const float *d_b, float *d_c,
                                                int M, int N, int K)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, d_b, N, d_a, K, &zero, d_c, N);
}
#endif

#ifdef CUFFT_VER_MAJOR
static inline const char *lb_cufft_name(cufftResult r)
{
    switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "CUFFT_ERROR";
    }
}
static inline void lb_cufft_check(cufftResult r, const char *call, const char *file, int line)
{
    if (r != CUFFT_SUCCESS) lb_lib_fail("cuFFT", (int)r, lb_cufft_name(r), "see cufft.h", call, file, line);
}
#define CUFFT_CHECK(call) lb_cufft_check((call), #call, __FILE__, __LINE__)
#endif

#ifdef CURAND_VER_MAJOR
static inline const char *lb_curand_name(curandStatus_t s)
{
    switch (s) {
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
    default: return "CURAND_STATUS_ERROR";
    }
}
static inline void lb_curand_check(curandStatus_t s, const char *call, const char *file, int line)
{
    if (s != CURAND_STATUS_SUCCESS) lb_lib_fail("cuRAND", (int)s, lb_curand_name(s), "see curand.h", call, file, line);
}
#define CURAND_CHECK(call) lb_curand_check((call), #call, __FILE__, __LINE__)
#endif

#ifdef CUSOLVER_VER_MAJOR /* cusolverDn.h (cuSOLVER has no status-to-text call of its own) */
static inline const char *lb_cusolver_name(cusolverStatus_t s)
{
    switch (s) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED: return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_INVALID_WORKSPACE: return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default: return "CUSOLVER_STATUS_ERROR";
    }
}
static inline void lb_cusolver_check(cusolverStatus_t s, const char *call, const char *file, int line)
{
    if (s != CUSOLVER_STATUS_SUCCESS)
        lb_lib_fail("cuSOLVER", (int)s, lb_cusolver_name(s), "see cusolver_common.h", call, file, line);
}
/* The status says the call was accepted; whether the factorisation succeeded is in the
 * routine's own `info` output on the device, which the program must read and check too. */
#define CUSOLVER_CHECK(call) lb_cusolver_check((call), #call, __FILE__, __LINE__)
#endif

/* CU_CHECK, for the driver API, is in lb_driver.h with the driver functions themselves. */

#ifdef __NVRTC_H__ /* nvrtc.h */
#define NVRTC_CHECK(call)                                                                                           \
    do {                                                                                                            \
        nvrtcResult lb_r_ = (call);                                                                                 \
        if (lb_r_ != NVRTC_SUCCESS)                                                                                 \
            lb_lib_fail("NVRTC", (int)lb_r_, nvrtcGetErrorString(lb_r_), "see nvrtc.h", #call, __FILE__, __LINE__); \
    } while (0)
#endif

/* ---------------------------------------------------------------- GPU presence */

typedef struct {
    int device; /* the device in use (0) */
    struct cudaDeviceProp prop;
    char sm[16]; /* "sm_90" */
    int cc;      /* the same as a number: 90 (compared with lb_version's min_sm) */
} lb_gpu;

/* Find a usable GPU or exit 77 with the reason; select device 0. Call after parsing
 * arguments, so that --help and bad input work on machines with no GPU. */
void lb_gpu_init(lb_gpu *gpu);

/* Exit 2 with "needs X GiB of device memory, Y GiB free" when `bytes` won't fit. */
void lb_require_device_memory(size_t bytes, const char *what);
/* malloc that exits 2 with the size on failure (sizes come from the user). */
void *lb_host_alloc(size_t bytes, const char *what);

/* ---------------------------------------------------------------- versions */

/* The work to run or time: launches on stream 0 and returns the launch's error. ctx is the
 * program's job (its buffers and sizes). */
typedef cudaError_t (*lb_work_fn)(void *ctx);

/* The oldest GPU the lab book supports; a version that needs a newer one says so in min_sm. */
#define LB_OLDEST_SM 75

/* One version of a program's kernel. A program declares all its versions in one table,
 *     static const lb_version versions[] = {
 *         {0, "cublas", "cuBLAS sgemm", LB_OLDEST_SM, run_cublas},
 *         {1, "naive",  "naive, one thread per element", LB_OLDEST_SM, run_kernel},
 *     };
 *     _Static_assert(sizeof versions / sizeof versions[0] == MATMUL_VERSIONS, "...");
 * and everything else (the version argument, --help's list, the table labels, the RESULT
 * names) is derived from it. Numbers are consecutive, in teaching order; 0 is the baseline. */
typedef struct {
    int number;        /* what the user types: ./matmul 3 */
    const char *name;  /* short, no spaces: the RESULT line's name= */
    const char *title; /* for the table and --help */
    int min_sm;        /* the oldest GPU it runs on, 75 = sm_75 (LB_OLDEST_SM: any) */
    lb_work_fn run;    /* runs it once: run(&job) */
} lb_version;

/* ---------------------------------------------------------------- arguments */

typedef struct {
    long long v[3];
    int n;
} lb_dims; /* "4096", "1000,1023,777", "512x256" */

typedef enum { LB_OPT_INT, LB_OPT_I64, LB_OPT_DOUBLE, LB_OPT_FLAG, LB_OPT_STRING, LB_OPT_DIMS } lb_opt_kind;

/* A program's own flag: { "--grid", LB_OPT_DIMS, &grid, "blocks in the grid (X or XxY)" } */
typedef struct {
    const char *name;
    lb_opt_kind kind;
    void *dst;
    const char *help;
} lb_opt;

/* Which shared flags a program accepts (the others are rejected as unknown). */
enum {
    LB_USE_SIZE = 1 << 0,
    LB_USE_BLOCK = 1 << 1,
    LB_USE_ITERS = 1 << 2,
    LB_USE_SEED = 1 << 3,
    LB_USE_CHECK_ONLY = 1 << 4,
    LB_USE_QUIET = 1 << 5,
    LB_USE_ALL = 0x3f
};

typedef struct {
    lb_dims size;            /* -n/--size */
    int size_given;          /* --size was on the command line (set by lb_parse_args) */
    int max_size_dims;       /* how many numbers --size may hold (1 for vectors, 3 for M,N,K) */
    int block;               /* --block: threads per block */
    int iters;               /* --iters: timed repeats */
    unsigned long long seed; /* --seed */
    int check_only;          /* --check-only: verify, don't time */
    int quiet;               /* --quiet: one summary line (no table, no RESULT lines) */
    int version;             /* the version number asked for, -1 = all (set by lb_parse_args) */
} lb_args;

typedef struct {
    const char *name;     /* "vecadd" */
    const char *synopsis; /* one line: what it computes */
    const char *details;  /* notes printed after the flags and versions (may be NULL) */
    unsigned uses;        /* LB_USE_* bits */
    const lb_opt *opts;   /* the program's own flags */
    int n_opts;
    const lb_version *versions; /* the version table (NULL: the program has no versions) */
    int n_versions;
} lb_program;

/* The first and last version numbers of the table, -1 when there is none. */
int lb_first_version(const lb_program *prog);
int lb_last_version(const lb_program *prog);
/* The table row of version `number`, NULL when there is no such version. */
const lb_version *lb_version_of(const lb_program *prog, int number);

/* Parse argv into args (pre-filled with the defaults, which --help prints) and the
 * program's own flags. --help prints usage (with the version table) and exits 0; bad input,
 * including a version number not in the table, exits 2. */
void lb_parse_args(const lb_program *prog, lb_args *args, int argc, char **argv);
/* Usage error: "<prog>: <reason>" + "run <prog> --help", exit 2. */
LB_NORETURN void lb_usage_error(const lb_program *prog, const char *fmt, ...) LB_PRINTF(2, 3);

/* Number syntax shared by every flag: 1000, 2^20, 2^20+3, 1e6, 4k/4M/4G (x1024). Returns 0 on
 * success, -1 on malformed or out-of-range input. */
int lb_parse_i64(const char *s, long long *out);
int lb_parse_dims(const char *s, lb_dims *out, int max_dims);

/* An output file's folder must exist and be writable: checked at start-up, so that a typo in
 * --png out/x.png stops the program before the GPU work, not after it. NULL or "" (no file):
 * nothing to check. Exits 2 with the reason. */
void lb_check_output_path(const lb_program *prog, const char *flag, const char *path);

/* A matrix product's --size: "N" (square) or "M,N,K", each 1..65536; exits 2 otherwise. */
void lb_size_mnk(const lb_program *prog, const lb_args *args, int *M, int *N, int *K);
/* --size ROWSxCOLS (N alone: N x N) as ints: exit 2 past max_cols columns ("at most 32768
 * <cols_name>"), 2^24 rows or 2^31 elements, before anything is allocated */
void lb_size_rows_cols(const lb_program *prog, const lb_args *args, int max_cols, const char *cols_name, int *rows,
                       int *cols);

/* ---------------------------------------------------------------- GPU: what runs, launch shapes */

/* Should version `number` run now? Yes when it is the one asked for, or when all are asked
 * for, and this GPU is new enough. Asked for by number on a GPU too old: exit 2 with the
 * reason; in the all-versions run it is listed as skipped (with the reason) instead. */
int lb_version_wanted(const lb_program *prog, const lb_args *args, const lb_gpu *gpu, int number);

/* lb_version_wanted, then a reason only the program knows (its kernels file's answer: the input
 * type, sm_90a; NULL: none): asked for by number, exit 2 with "<prog>: version N (title): why";
 * in the all-versions run, a skipped row with the reason. */
int lb_version_runs(const lb_program *prog, const lb_args *args, const lb_gpu *gpu, int number, const char *why_not);
/* NULL when code for sm_90a (Hopper's own target: wgmma, setmaxnreg) can run here, else why not:
 * the build did not compile it (built_for_sm90a 0: a build for another ARCH than sm_90), or the
 * current device is not an sm_90 (no later GPU runs sm_90a machine code). */
const char *lb_sm90a_unavailable(int built_for_sm90a);

/* Exit 2 when the block size is not in 1..device limit (call after lb_gpu_init). */
void lb_check_block(const lb_program *prog, const lb_gpu *gpu, int block);

/* Blocks of `block` threads (and smem bytes of dynamic shared memory) that fill the current
 * GPU once: the occupancy API's blocks per SM times the SMs. For grid-stride kernels. */
unsigned int lb_resident_blocks(const void *kernel, int block, size_t smem);

/* ---------------------------------------------------------------- data */

typedef struct {
    uint64_t s;
} lb_rng; /* splitmix64: tiny, seedable, good enough */
void lb_rng_seed(lb_rng *r, unsigned long long seed);
uint64_t lb_rng_next(lb_rng *r);
float lb_rng_uniform(lb_rng *r, float lo, float hi); /* [lo, hi) */
void lb_fill_uniform(float *x, size_t n, float lo, float hi, lb_rng *r);
/* cuRAND's Philox4_32_10 on the CPU: the four 32-bit words for one counter and key. A device
 * state from curand_init(seed, subsequence, 0, &st) returns, on its k-th curand4 call (k from 0),
 * the words for ctr = {k, 0, subsequence low, high 32 bits} and key = {seed low, high 32 bits}. */
void lb_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* bf16, the top half of an fp32 (8 bits of mantissa): the bits of x rounded to nearest, ties to
 * even, and the float that a bf16's bits hold. For the tensor-core programs' inputs, made and
 * checked on the CPU as exactly the numbers the GPU reads. */
uint16_t lb_bf16_bits(float x);
float lb_bf16_value(uint16_t b);
/* n bf16 values uniform in [-a, a] from rng: their bits (for the GPU) and their values (for the
 * CPU, exactly what the GPU reads) */
void lb_bf16_uniform(uint16_t *bits, float *values, size_t n, float a, lb_rng *rng);

/* fp8 e4m3 (NVIDIA's __nv_fp8_e4m3, OCP's E4M3FN): a sign, 4 bits of exponent (bias 7) and 3 of
 * mantissa; no infinities, 0x7F and 0xFF are NaN, the largest finite 448 (0x7E), subnormals
 * m 2^-9 below 2^-6. The bits of x rounded to nearest, ties to even, a magnitude past 448
 * saturated to 448 (as __NV_SATFINITE converts), NaN to 0x7F; and the float a code holds. For
 * an FP8 GEMM's inputs, made and checked on the CPU as exactly the numbers the GPU reads. */
uint8_t lb_e4m3_bits(float x);
float lb_e4m3_value(uint8_t b);

/* Fill with 0xFF bytes: as float that is NaN, as int -1; an element a kernel forgot to write
 * then fails the check instead of passing with leftover data. */
void lb_poison_host(void *p, size_t bytes);
void lb_poison_device(void *d, size_t bytes);

/* cudaMalloc for an input operand, followed by a guard of LB_GUARD_BYTES of 0xFF bytes (NaN as
 * float and as bf16, -1 as int). A kernel that reads past the operand's end then reads NaN, and
 * one NaN term makes a sum NaN, so the check fails, instead of adding whatever lies beyond
 * (cudaMalloc's rounding, often zeros, or the next buffer) and passing by luck. Freed with
 * cudaFree. The guard is inside the allocation: compute-sanitizer's memcheck no longer sees such
 * a read, the check does. Returns the first error (nothing allocated then):
 *     CUDA_CHECK(lb_malloc_guarded((void **)&d_a, sizeof(float) * a_n)); */
#define LB_GUARD_BYTES ((size_t)64 << 10)
cudaError_t lb_malloc_guarded(void **d, size_t bytes);

/* ---------------------------------------------------------------- checking */

typedef struct {
    size_t n_bad; /* elements outside tolerance (NaN counts) */
    double max_abs_err;
    double max_rel_err;
} lb_check;

/* |got - want| <= atol + rtol*|want| for every element; NaN or Inf in got fails. Prints the
 * first few mismatches (index, got, want) unless quiet. Returns the counts. */
lb_check lb_check_f32(const char *what, const float *got, const float *want, size_t n, double atol, double rtol,
                      int quiet);
/* The same with a tolerance of its own for each element: tol(i, ctx), e.g. an error bound computed
 * from that element's inputs (map_reduce's --expr). */
typedef double (*lb_tolerance_fn)(size_t i, const void *ctx);
lb_check lb_check_f32_bound(const char *what, const float *got, const float *want, size_t n, lb_tolerance_fn tol,
                            const void *ctx, int quiet);
/* A matrix too large for a full CPU reference: C (M,N), row-major, against want(ctx, r, c) on one
 * random row in every band of LB_SAMPLE_BAND rows (every tile of C at least that tall holds a
 * checked row) and 8 random columns, as lb_check_f32 ("<what> row", "<what> column"). For
 * products whose references cost K multiply-adds per element (4096^3: 64 rows, 1.1e9). */
#define LB_SAMPLE_BAND 64
typedef double (*lb_element_fn)(const void *ctx, int r, int c);
lb_check lb_check_rows_cols(const char *what, const float *C, int M, int N, lb_element_fn want, const void *ctx,
                            double atol, double rtol, lb_rng *rng, int quiet);

/* The CPU's GEMM, the reference of ch04, ch07 and ch10: C (M,N) row-major = A (M,K) row-major
 * times B, which is stored either as K rows of N (row-major, as matmul and cuBLAS's row-major
 * calls keep it) or as N rows of K (column-major, "K-major", as the tensor cores read it). */
typedef enum { LB_B_K_BY_N, LB_B_N_BY_K } lb_b_layout;
typedef struct {
    const float *A, *B;
    int M, N, K;
    lb_b_layout b;
} lb_gemm;
/* C[r][c], summed in double */
double lb_gemm_element(const lb_gemm *g, int r, int c);
/* The whole C when it costs at most 2^30 multiply-adds (seconds on one core), else NULL */
float *lb_gemm_reference(const lb_gemm *g);
/* C against the CPU: every element against ref when there is one, else 8 random rows and 8
 * random columns computed here (lb_check_rows_cols) */
lb_check lb_gemm_check(const char *what, const float *C, const lb_gemm *g, const float *ref, double atol, double rtol,
                       lb_rng *rng, int quiet);
/* Exact comparison of ints; prints the first mismatches unless quiet. */
lb_check lb_check_i32(const char *what, const int *got, const int *want, size_t n, int quiet);
/* Sampled checks: for (i = 0; i < n; i = lb_sample_next(i, n, step)) visits 0, step, 2*step, ...
 * and always n-1 last, so the ends are covered when checking every element costs too much. */
size_t lb_sample_step(size_t n, double cost_per_element, double budget);
size_t lb_sample_next(size_t i, size_t n, size_t step);
/* The tolerance of a float dot product of x and y (n terms) against the exact sum: each float
 * addition rounds by at most half an ulp of the running sum; summed as a random walk over the
 * `chain` additions that lead to one result (a thread's own run, then the tree), the error is
 * about eps sqrt(chain) sqrt(sum of the squared terms). Eight times that: far from a false
 * alarm (about 80x the error measured), yet below most single terms: thrust_basics' default,
 * 2^26 products of [-1, 1) inputs, gets 0.045, and 81% of its products are larger than that, so
 * one lost product fails four times in five and a lost warp's 32 (their sum about 1.9 in size)
 * almost always. A lost product smaller than the tolerance passes: no bound on a sum can see it. */
double lb_dot_tolerance(const float *x, const float *y, size_t n, double chain);
/* "PASS (max rel err 3.1e-06)" or "FAIL (12 of 1000 wrong, max abs err ...)" into buf. */
const char *lb_check_summary(const lb_check *c, char *buf, size_t len);

/* ---------------------------------------------------------------- timing */

/* Run fn `warmup` times, then take `iters` samples, each between two CUDA events; return the
 * median time of one call in milliseconds (median, not mean: one slow outlier does not move
 * it). A call shorter than LB_MIN_SAMPLE_MS is repeated back to back within each sample. */
#define LB_MIN_SAMPLE_MS 1.0f
float lb_time_ms(lb_work_fn fn, void *ctx, int warmup, int iters);

/* The in-run ceiling for memory-bound kernels: a device-to-device cudaMemcpy that moves
 * `bytes_moved` bytes in total (bytes/2 read + bytes/2 written), timed like lb_time_ms.
 * Returns GB/s counted the same way as the kernels count theirs. */
double lb_memcpy_ceiling_gbps(size_t bytes_moved, int iters, float *ms_out);

double lb_wall_ms(void); /* host monotonic clock in ms, for CPU timings */
/* The median of n host-timed samples (sorts them in place): for timings made with lb_wall_ms. */
double lb_median(double *samples, int n);

/* ---------------------------------------------------------------- reporting */

typedef struct {
    const char *prog; /* "vecadd" */
    int ver;          /* version number (-1: none) */
    const char *name; /* short name without spaces: "float4" */
    const char *size; /* "268435456" or "4096x4096x4096" */
    double ms;
    const char *unit; /* "gbps", "tflops", "giter_s" ... */
    double value;
    const char *base; /* the baseline's name: "memcpy", "cublas" (NULL: none) */
    double ratio;     /* value / baseline value */
    int pass;         /* 1 PASS, 0 FAIL, -1 not checked */
} lb_result;

/* RESULT prog=... ver=... name=... size=... ms=... <unit>=... base=... ratio=... check=...
 * Prints nothing when quiet (--quiet promises a single summary line). */
void lb_print_result(const lb_result *r, int quiet);

/* The report of a program with versions: one table row and one RESULT line per version, and
 * with --quiet only the summary line. Fill the first block, then
 *     lb_report_table(&rep, "4096x4096x4096", NULL);      a table (again for each input)
 *     lb_report_row(&rep, v, NULL, ms, tflops, pass, verdict);   for each version, baseline first
 *     return lb_report_finish(&rep);                     the --quiet line; the exit code */
typedef struct {
    const lb_program *prog;   /* its name and version table */
    const lb_args *args;      /* quiet, check_only */
    const char *unit;         /* the RESULT key of the value: "tflops", "gbps", "giter_s" */
    const char *unit_head;    /* the value's column head: "TFLOP/s" */
    const char *base;         /* the RESULT base= name: "cublas" (the first row of each table) */
    const char *base_head;    /* the ratio's column head: "vs cuBLAS" (NULL: no column) */
    const char *ceiling_head; /* optional second ratio: "vs memcpy" (NULL: none) */
    double ceiling_value;     /* ... against this value (lb_report_ceiling measures it) */
    double ceiling_ms;
    /* set by lb_report_table and the rows */
    const char *size, *heading;
    double base_value; /* the value of the table's first row, the baseline */
    int head_done, failures;
    int have_best, best; /* the best row so far: its version (-1: an item) */
    double best_ratio, best_value;
    char best_name[32], best_size[64];
} lb_report;

/* Start a table: size is the RESULT size=, heading a line above the column heads (or NULL). */
void lb_report_table(lb_report *r, const char *size, const char *heading);
/* One version's row and RESULT line. name NULL: the table's name (a program may pass its own,
 * e.g. with a build-time parameter in it); pass 1/0/-1 (not checked); verdict the check column
 * (NULL: PASS/FAIL). A failed row counts towards the exit code. In --check-only mode the
 * timing columns are "-" and no RESULT line is printed. */
void lb_report_row(lb_report *r, int ver, const char *name, double ms, double value, int pass, const char *verdict);
/* Measure a device-to-device cudaMemcpy moving bytes_moved bytes (lb_memcpy_ceiling_gbps) for
 * the ceiling_head column; every table then shows it as its first row. Nothing in --check-only. */
void lb_report_ceiling(lb_report *r, size_t bytes_moved, int iters);
/* The report of a compute-bound program against cuBLAS: TFLOP/s, each row against version 0's
 * (base "cublas"); the other fields zero. */
lb_report lb_report_vs_cublas(const lb_program *prog, const lb_args *args);
/* Version 0 of a memory-bound program, as a row of the table: a device-to-device cudaMemcpy
 * moving bytes_moved bytes (read and written together), the floor the other versions are
 * compared with (base "memcpy"). Nothing in --check-only. */
void lb_report_memcpy_version(lb_report *r, size_t bytes_moved);
/* The report of a memory-bound program: GB/s, each row against a copy of the same bytes (base
 * "memcpy", lb_report_memcpy_version its version 0); the other fields zero. */
lb_report lb_report_vs_memcpy(const lb_program *prog, const lb_args *args);
/* A measured row that is not a version of the table (ver -1 in its RESULT line): name for the
 * RESULT line, label for the table. Otherwise as lb_report_row. */
void lb_report_item(lb_report *r, const char *name, const char *label, double ms, double value, int pass,
                    const char *verdict);
/* A reference row that is not a version (the memcpy ceiling, a single-thread CPU): table only. */
void lb_report_note(lb_report *r, const char *label, double ms, double value, const char *verdict);
/* With --quiet, the one summary line: "<prog>: <size>, best vN name value = ratio x base,
 * all PASS". Returns the exit code: LB_EXIT_FAIL if any row failed, else LB_EXIT_PASS. */
int lb_report_finish(lb_report *r);

/* ---------------------------------------------------------------- pictures */

/* Write an 8-bit PNG (stored, uncompressed deflate: needs nothing beyond libc).
 * channels 1 = grey, 3 = RGB; palette != NULL (256 RGB triples) writes an indexed image
 * from 1-channel pixels. Returns 0, or -1 with errno set. */
int lb_write_png(const char *path, int width, int height, int channels, const unsigned char *pixels,
                 const unsigned char *palette);

/* Read a binary 8-bit PGM (P5, maxval 1..255, '#' comments allowed) into a malloc'd
 * width*height buffer, row-major. On any problem returns NULL and writes a one-line reason
 * naming the file into err ("camera.pgm: truncated: 1000 of 262144 pixel bytes"). */
unsigned char *lb_read_pgm(const char *path, int *width, int *height, char *err, size_t err_len);

#ifdef __NVRTC_H__ /* nvrtc.h included first: the programs that compile kernels at run time */
/* CUDA C source to PTX with NVRTC, for the architecture this program was built for (PTX also
 * runs on newer GPUs: the driver compiles it for them). Returns the PTX, or NULL when the
 * source does not compile (*result says why); *log gets the compile log either way. The
 * caller frees both. */
static inline char *lb_nvrtc_ptx(const char *src, const char *name, nvrtcResult *result, char **log)
{
    nvrtcProgram prog;
    NVRTC_CHECK(nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL));
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=compute_%s", LB_ARCH_NAME + 3); /* sm_90 -> compute_90 */
    const char *opts[] = {arch, "--std=c++17"};
    *result = nvrtcCompileProgram(prog, 2, opts);
    size_t log_len, ptx_len;
    NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &log_len));
    *log = (char *)lb_host_alloc(log_len + 1, "the compile log");
    NVRTC_CHECK(nvrtcGetProgramLog(prog, *log));
    char *ptx = NULL;
    if (*result == NVRTC_SUCCESS) {
        NVRTC_CHECK(nvrtcGetPTXSize(prog, &ptx_len));
        ptx = (char *)lb_host_alloc(ptx_len, "the PTX");
        NVRTC_CHECK(nvrtcGetPTX(prog, ptx));
    }
    NVRTC_CHECK(nvrtcDestroyProgram(&prog));
    return ptx;
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* LABBOOK_H */
