/* hello_threads.c - every thread of a grid prints its block, thread, global index, warp and lane.
 *
 *   build: make ch01      run: ./hello_threads --grid 2 --block 5     (2D: --grid 2x2 --block 4x3)
 *
 * The kernel (hello_threads_kernels.cu) also writes, at its global index, a number naming the
 * thread that computed it; the CPU computes the same mapping and checks every element, so a
 * wrong index formula fails even when nobody reads the printout. The lines come out in
 * whatever order the warps ran: blocks are independent and the GPU schedules them freely.
 */
#include "labbook.h"
#include "hello_threads_kernels.h"

#define MAX_PRINTED_THREADS 1024

/* ---------------------------------------------------------------- CPU reference */

/* who[index] for every thread, computed the way the kernel's comment explains */
static void hello_cpu(int gx, int gy, int bx, int by, int *who)
{
    for (int byi = 0; byi < gy; byi++)
        for (int bxi = 0; bxi < gx; bxi++)
            for (int ty = 0; ty < by; ty++)
                for (int tx = 0; tx < bx; tx++) {
                    long long x = (long long)bxi * bx + tx, y = (long long)byi * by + ty;
                    long long index = y * ((long long)gx * bx) + x;
                    who[index] = (byi * gx + bxi) * (bx * by) + (ty * bx + tx);
                }
}

/* ---------------------------------------------------------------- main */

static lb_dims grid = {{2, 1}, 1}, block = {{5, 1}, 1};
static const lb_opt options[] = {
    {"--grid", LB_OPT_DIMS, &grid, "blocks in the grid, X or XxY"},
    {"--block", LB_OPT_DIMS, &block, "threads in a block, X or XxY"},
};
static const lb_program program = {
    .name = "hello_threads",
    .synopsis = "device printf from each thread: block, thread, global index, warp, lane",
    .details = "Up to 1024 threads print; larger grids are only checked.\n",
    .uses = LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 2,
};

int main(int argc, char **argv)
{
    lb_args args = {.version = -1};
    lb_parse_args(&program, &args, argc, argv);
    long long gx = grid.v[0], gy = grid.n > 1 ? grid.v[1] : 1;
    long long bx = block.v[0], by = block.n > 1 ? block.v[1] : 1;
    if (gx < 1 || gy < 1 || bx < 1 || by < 1) lb_usage_error(&program, "grid and block sizes must be positive");

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    const struct cudaDeviceProp *p = &gpu.prop;
    if (bx * by > p->maxThreadsPerBlock || bx > p->maxThreadsDim[0] || by > p->maxThreadsDim[1])
        lb_usage_error(&program, "block %lldx%lld is not allowed on %s: at most %d threads, %d x %d", bx, by, p->name,
                       p->maxThreadsPerBlock, p->maxThreadsDim[0], p->maxThreadsDim[1]);
    if (gx > p->maxGridSize[0] || gy > p->maxGridSize[1])
        lb_usage_error(&program, "grid %lldx%lld is too large (at most %d x %d)", gx, gy, p->maxGridSize[0],
                       p->maxGridSize[1]);
    long long threads = gx * gy * bx * by;
    if (threads > (1LL << 30)) lb_usage_error(&program, "%lld threads is more than this demo allows (2^30)", threads);
    size_t bytes = (size_t)threads * sizeof(int);
    lb_require_device_memory(bytes, "hello_threads");

    int print = !args.check_only && !args.quiet && threads <= MAX_PRINTED_THREADS;
    if (!args.quiet)
        printf("hello_threads: grid %lldx%lld blocks of %lldx%lld threads = %lld threads on %s (%s)%s\n", gx, gy, bx,
               by, threads, p->name, gpu.sm, print || args.check_only ? "" : " (too many to print: checking only)");
    int *who = lb_host_alloc(bytes, "the result"), *want = lb_host_alloc(bytes, "the reference");
    int *d_who;
    CUDA_CHECK(cudaMalloc((void **)&d_who, bytes));
    lb_poison_device(d_who, bytes);
    CUDA_CHECK(hello_launch((int)gx, (int)gy, (int)bx, (int)by, d_who, print));
    CUDA_CHECK(cudaDeviceSynchronize()); /* device printf output appears here */
    fflush(stdout);
    CUDA_CHECK(cudaMemcpy(who, d_who, bytes, cudaMemcpyDeviceToHost));
    hello_cpu((int)gx, (int)gy, (int)bx, (int)by, want);
    lb_check c = lb_check_i32("who", who, want, (size_t)threads, args.quiet);
    char buf[96];
    printf("%s%lld threads wrote their index: %s\n", args.quiet ? "hello_threads: " : "", threads,
           lb_check_summary(&c, buf, sizeof buf));

    CUDA_CHECK(cudaFree(d_who));
    free(who);
    free(want);
    return c.n_bad ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
