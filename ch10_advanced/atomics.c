/* atomics.c - atomicAdd, atomicMax, atomicExch and a float max built from atomicCAS, across
 * many blocks, each result checked; and what contention costs: n atomicAdds (default 2^24)
 * onto 1, 32, 1024 ... addresses.
 *   build: make ch10      run: ./atomics [--size N]
 */
#include "labbook.h"
#include "atomics_kernels.h"

#include <limits.h>
#include <math.h>
#include <string.h>

typedef struct {
    int op;
    void *a, *b;
    unsigned int spread;
    size_t n;
} atomic_job;

static cudaError_t run_atomic(void *ctx)
{
    atomic_job *j = (atomic_job *)ctx;
    switch (j->op) {
    case 0: return count_launch(j->a, j->spread, j->n);
    case 1: return int_max_launch(j->a, j->n, j->b);
    case 2: return exchange_launch(j->a, j->b, j->n);
    default: return float_max_launch(j->a, j->n, j->b);
    }
}

static const lb_program program = {
    .name = "atomics",
    .synopsis = "atomicAdd, atomicMax, atomicExch and a CAS-built float max, checked; the cost of contention",
    .details = "--size is the number of threads, one atomic operation each.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = NULL,
    .n_opts = 0,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 24}, 1}, .max_size_dims = 1, .iters = 10, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0];
    if (n > ((size_t)1 << 31) - 2) lb_usage_error(&program, "--size: below 2^31 (thread numbers are 32-bit)");
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(8 * n + 4 * ((size_t)1 << 20), "the arrays");
    if (!args.quiet) printf("atomics: n=%zu threads, %s (%s), seed %llu\n", n, gpu.prop.name, gpu.sm, args.seed);

    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    int *h_i = lb_host_alloc(4 * n, "ints");
    float *h_f = lb_host_alloc(4 * n, "floats");
    unsigned int *h_u = lb_host_alloc(4 * n, "results");
    int want_max = INT_MIN;
    float want_fmax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        h_i[i] = (int)(unsigned int)lb_rng_next(&rng); /* any int, negative ones too */
        h_f[i] = lb_rng_uniform(&rng, -1000.0f, 1000.0f);
        want_max = h_i[i] > want_max ? h_i[i] : want_max;
        want_fmax = h_f[i] > want_fmax ? h_f[i] : want_fmax;
    }
    void *d_x, *d_y, *d_r;
    CUDA_CHECK(cudaMalloc(&d_x, 4 * n));
    CUDA_CHECK(cudaMalloc(&d_y, 4 * n + 4 * ((size_t)1 << 20)));
    CUDA_CHECK(cudaMalloc(&d_r, 16));
    /* the report: atomic operations per second; no library to compare with */
    char sz[32];
    snprintf(sz, sizeof sz, "%zu", n);
    lb_report rep = {.prog = &program, .args = &args, .unit = "gatomics_s", .unit_head = "G atomics/s"};
    lb_report_table(&rep, sz, NULL);
    rep.base_value = -1.0;

    /* ---- atomicAdd onto `spread` counters: every counter must hold its share */
    static const unsigned int spreads[] = {1, 32, 1024, 32768, 1u << 20};
    for (size_t s = 0; s < sizeof spreads / sizeof spreads[0]; s++) {
        unsigned int spread = spreads[s];
        if (spread > n && s > 0) break;
        atomic_job j = {0, d_y, NULL, spread, n};
        CUDA_CHECK(run_atomic(&j));
        CUDA_CHECK(cudaMemcpy(h_u, d_y, 4 * (size_t)spread, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (unsigned int c = 0; c < spread; c++) bad += h_u[c] != n / spread + (c < n % spread);
        int ok = bad == 0;
        float ms = args.check_only ? 0.0f : lb_time_ms(run_atomic, &j, 1, args.iters);
        char name[32], label[48];
        snprintf(name, sizeof name, "add_%u_addresses", spread);
        snprintf(label, sizeof label, "atomicAdd, %u addresses", spread);
        lb_report_item(&rep, name, label, ms, ms > 0 ? n / (ms * 1e6) : 0.0, ok,
                       ok ? "PASS (every count exact)" : "FAIL");
    }

    /* ---- atomicMax, atomicExch, the CAS float max */
    CUDA_CHECK(cudaMemcpy(d_x, h_i, 4 * n, cudaMemcpyHostToDevice));
    for (int op = 1; op <= 3; op++) {
        if (op == 3) CUDA_CHECK(cudaMemcpy(d_x, h_f, 4 * n, cudaMemcpyHostToDevice));
        atomic_job j = {op, op == 2 ? d_r : d_x, op == 2 ? d_y : d_r, 1, n};
        CUDA_CHECK(run_atomic(&j));
        int ok;
        if (op == 1) {
            int got;
            CUDA_CHECK(cudaMemcpy(&got, d_r, 4, cudaMemcpyDeviceToHost));
            ok = got == want_max;
        } else if (op == 2) {
            /* every number 0..n once: the n old values, plus the last one left in the slot */
            unsigned int last;
            CUDA_CHECK(cudaMemcpy(h_u, d_y, 4 * n, cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaMemcpy(&last, d_r, 4, cudaMemcpyDeviceToHost));
            unsigned char *seen = calloc(n + 1, 1);
            ok = seen != NULL && last <= n;
            if (ok) seen[last] = 1;
            for (size_t i = 0; ok && i < n; i++) {
                if (h_u[i] > n || seen[h_u[i]])
                    ok = 0;
                else
                    seen[h_u[i]] = 1;
            }
            free(seen);
        } else {
            float got;
            CUDA_CHECK(cudaMemcpy(&got, d_r, 4, cudaMemcpyDeviceToHost));
            ok = got == want_fmax;
        }
        float ms = args.check_only ? 0.0f : lb_time_ms(run_atomic, &j, 1, args.iters);
        static const char *const what[] = {"", "atomicMax(&m, x[i])", "atomicExch(&slot, i + 1)",
                                           "float max by atomicCAS"};
        static const char *const pass[] = {"", "PASS (the CPU's max)", "PASS (each number once)",
                                           "PASS (the CPU's max)"};
        static const char *const names[] = {"", "max_int", "exchange", "max_float_cas"};
        lb_report_item(&rep, names[op], what[op], ms, ms > 0 ? n / (ms * 1e6) : 0.0, ok, ok ? pass[op] : "FAIL");
    }
    if (!args.quiet)
        printf("one address serializes every atomic on it in the L2; spread over more addresses they proceed in\n"
               "parallel. The CAS max reads first and skips the atomic when the value is already as large.\n");
    free(h_i);
    free(h_f);
    free(h_u);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    CUDA_CHECK(cudaFree(d_r));
    return lb_report_finish(&rep);
}
