/* shuffle.c - the book's warp shuffles in their _sync forms (neighbour swap, warp sum, warp
 * inclusive scan, broadcast), each against its shared-memory equivalent: checked against the
 * CPU, then timed. Each element goes through the operation --reps times (default 64) in
 * registers, so that the exchange, not memory, is what is timed.
 *   build: make ch10      run: ./shuffle [--size N] [--reps R]
 */
#include "labbook.h"
#include "shuffle_kernels.h"

#include <string.h>

static const char *const op_names[N_OPS] = {"swap", "sum", "scan", "broadcast"};

/* ---------------------------------------------------------------- CPU reference */

/* one round of `op` over each group of 32, then the same mixing step as the kernel */
static void warp_op_cpu(int op, unsigned int *v, size_t n, int reps)
{
    unsigned int w[32];
    for (size_t base = 0; base < n; base += 32) {
        for (int r = 0; r < reps; r++) {
            memcpy(w, v + base, sizeof w);
            unsigned int acc = 0;
            for (int l = 0; l < 32; l++) acc += w[l];
            unsigned int run = 0;
            for (int l = 0; l < 32; l++) {
                run += w[l];
                unsigned int x = op == OP_SWAP ? w[l ^ 1] : op == OP_SUM ? acc : op == OP_SCAN ? run : w[0];
                v[base + l] = x * 2654435761u + (unsigned int)r;
            }
        }
    }
}

/* ---------------------------------------------------------------- main */

typedef struct {
    int op, shared;
    const unsigned int *in;
    unsigned int *out;
    size_t n;
    int reps;
} op_job;

static cudaError_t run_op(void *ctx)
{
    op_job *j = (op_job *)ctx;
    return warp_op_launch(j->op, j->shared, j->in, j->out, j->n, j->reps);
}

static int reps = 64;
static const lb_opt options[] = {
    {"--reps", LB_OPT_INT, &reps, "rounds of the operation per element"},
};
static const lb_program program = {
    .name = "shuffle",
    .synopsis = "warp shuffles (swap, sum, scan, broadcast) against shared memory, checked and timed",
    .details = "--size is the number of elements, a multiple of 32 (one warp per 32).\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 1,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 24}, 1}, .max_size_dims = 1, .iters = 10, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0];
    if (n % 32) lb_usage_error(&program, "--size must be a multiple of 32 (whole warps)");
    if (n > ((size_t)1 << 31)) lb_usage_error(&program, "--size: at most 2^31");
    if (reps < 1 || reps > 100000) lb_usage_error(&program, "--reps must be 1..100000");
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(8 * n, "the arrays");
    if (!args.quiet)
        printf("shuffle: n=%zu, %d rounds each, %s (%s), seed %llu\n", n, reps, gpu.prop.name, gpu.sm, args.seed);

    unsigned int *h_in = lb_host_alloc(4 * n, "input"), *want = lb_host_alloc(4 * n, "reference"),
                 *got = lb_host_alloc(4 * n, "result");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    for (size_t i = 0; i < n; i++) h_in[i] = (unsigned int)lb_rng_next(&rng);
    unsigned int *d_in, *d_out;
    CUDA_CHECK(cudaMalloc((void **)&d_in, 4 * n));
    CUDA_CHECK(cudaMalloc((void **)&d_out, 4 * n));
    CUDA_CHECK(cudaMemcpy(d_in, h_in, 4 * n, cudaMemcpyHostToDevice));
    int failures = 0;
    char sz[32];
    snprintf(sz, sizeof sz, "%zu_r%d", n, reps);
    if (!args.quiet) printf(" operation     shuffle ms   shared ms   shared / shuffle   check\n");
    for (int op = 0; op < N_OPS; op++) {
        memcpy(want, h_in, 4 * n);
        warp_op_cpu(op, want, n, reps);
        float ms[2] = {0, 0};
        int ok_all = 1;
        for (int sh = 0; sh <= 1; sh++) {
            op_job j = {op, sh, d_in, d_out, n, reps};
            lb_poison_device(d_out, 4 * n);
            CUDA_CHECK(run_op(&j));
            CUDA_CHECK(cudaMemcpy(got, d_out, 4 * n, cudaMemcpyDeviceToHost));
            int ok = memcmp(got, want, 4 * n) == 0;
            ok_all &= ok;
            if (!args.check_only) {
                ms[sh] = lb_time_ms(run_op, &j, 1, args.iters);
                char name[32];
                snprintf(name, sizeof name, "%s_%s", op_names[op], sh ? "shared" : "shfl");
                lb_result r = {"shuffle", -1,  name, sz, ms[sh], "gops_s", (double)n * reps / (ms[sh] * 1e6),
                               NULL,      0.0, ok};
                lb_print_result(&r, args.quiet);
            }
        }
        failures += !ok_all;
        if (!args.quiet) {
            printf(" %-12s", op_names[op]);
            if (!args.check_only) printf("  %10.4f  %10.4f  %17.2f", ms[0], ms[1], ms[1] / ms[0]);
            printf("   %s\n", ok_all ? "PASS (both equal the CPU's, bit for bit)" : "FAIL");
        }
    }
    if (args.quiet) printf("shuffle: n=%zu, %s\n", n, failures ? "FAIL" : "PASS");
    free(h_in);
    free(want);
    free(got);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
