/* bandwidth.c - how fast cudaMemcpy moves data: host to device and back, pageable and pinned,
 * and device to device, for sizes from 4 KB to 1 GB.
 *
 *   build: make ch06      run: ./bandwidth [--size MAX] [--iters I]      (MAX default 1G)
 *
 * Pageable memory (malloc) cannot be read by the GPU's copy engines directly: the driver
 * first copies it into a pinned staging buffer, piece by piece. Pinned memory
 * (cudaMallocHost) is locked in RAM and the engines read it over PCIe themselves. Small
 * copies are dominated by the fixed cost of each call, large ones by the link. GB/s here is
 * bytes copied per second; a device-to-device copy reads and writes each byte, so it moves
 * twice that through device memory (the lab book's other programs count both).
 * No kernels: a plain C program on the runtime API.
 */
#include "labbook.h"

#include <string.h>

enum { H2D_PAGEABLE, H2D_PINNED, D2H_PAGEABLE, D2H_PINNED, D2D, N_PATHS };
static const char *const path_name[N_PATHS] = {"h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned", "d2d"};

typedef struct {
    int path;
    size_t bytes;
    unsigned char *pageable, *pinned, *d_a, *d_b;
} copy_job;

static cudaError_t run_copy(void *ctx)
{
    copy_job *j = (copy_job *)ctx;
    switch (j->path) {
    case H2D_PAGEABLE: return cudaMemcpy(j->d_a, j->pageable, j->bytes, cudaMemcpyHostToDevice);
    case H2D_PINNED: return cudaMemcpy(j->d_a, j->pinned, j->bytes, cudaMemcpyHostToDevice);
    case D2H_PAGEABLE: return cudaMemcpy(j->pageable, j->d_a, j->bytes, cudaMemcpyDeviceToHost);
    case D2H_PINNED: return cudaMemcpy(j->pinned, j->d_a, j->bytes, cudaMemcpyDeviceToHost);
    default: return cudaMemcpy(j->d_b, j->d_a, j->bytes, cudaMemcpyDeviceToDevice);
    }
}

/* Round trip through every path; the bytes must come back unchanged. */
static int verify(copy_job *j, unsigned char *want, size_t bytes, lb_rng *rng)
{
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t v = lb_rng_next(rng);
        memcpy(want + i, &v, bytes - i < 8 ? bytes - i : 8);
    }
    copy_job c = *j;
    c.bytes = bytes;
    memcpy(c.pageable, want, bytes);
    lb_poison_device(c.d_a, bytes);
    lb_poison_device(c.d_b, bytes);
    memset(c.pinned, 0, bytes);
    int bad = 0;
    c.path = H2D_PAGEABLE;
    CUDA_CHECK(run_copy(&c)); /* pageable -> d_a */
    c.path = D2D;
    CUDA_CHECK(run_copy(&c)); /* d_a -> d_b */
    CUDA_CHECK(cudaMemcpy(c.pinned, c.d_b, bytes, cudaMemcpyDeviceToHost));
    bad |= memcmp(c.pinned, want, bytes) != 0;
    lb_poison_device(c.d_a, bytes);
    memset(c.pageable, 0, bytes);
    c.path = H2D_PINNED;
    CUDA_CHECK(run_copy(&c)); /* pinned -> d_a */
    c.path = D2H_PAGEABLE;
    CUDA_CHECK(run_copy(&c)); /* d_a -> pageable */
    bad |= memcmp(c.pageable, want, bytes) != 0;
    memset(c.pinned, 0, bytes);
    c.path = D2H_PINNED;
    CUDA_CHECK(run_copy(&c)); /* d_a -> pinned */
    bad |= memcmp(c.pinned, want, bytes) != 0;
    return bad;
}

static void size_text(size_t b, char *buf, size_t len)
{
    if (b >= (1u << 30) && b % (1u << 30) == 0)
        snprintf(buf, len, "%zu GB", b >> 30);
    else if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(buf, len, "%zu MB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, len, "%zu KB", b >> 10);
    else
        snprintf(buf, len, "%zu B", b);
}

static const lb_program program = {
    .name = "bandwidth",
    .synopsis = "cudaMemcpy GB/s: host<->device (pageable, pinned) and device<->device, 4 KB to MAX",
    .details = "--size is the largest copy in bytes (4K, 16K, ... x4 up to it); 1G by default.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = NULL,
    .n_opts = 0,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1LL << 30}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    size_t max = (size_t)args.size.v[0];

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(2 * max, "two device buffers of the largest size");
    copy_job job = {0, 0, lb_host_alloc(max, "the pageable buffer"), NULL, NULL, NULL};
    unsigned char *want = lb_host_alloc(max, "the check buffer");
    cudaError_t e = cudaMallocHost((void **)&job.pinned, max);
    if (e == cudaErrorMemoryAllocation)
        lb_die(LB_EXIT_USAGE, "size too large: %.2f GiB of pinned host memory could not be allocated",
               max / 1073741824.0);
    CUDA_CHECK(e);
    CUDA_CHECK(cudaMalloc((void **)&job.d_a, max));
    CUDA_CHECK(cudaMalloc((void **)&job.d_b, max));
    if (!args.quiet)
        printf("bandwidth: cudaMemcpy, 4 KB .. %.0f MB, %s (%s), median of %d copies (of 5 from 256 MB up)\n",
               max / 1048576.0, gpu.prop.name, gpu.sm, args.iters);

    size_t sizes[40];
    int n_sizes = 0;
    for (size_t s = 4096; s < max && n_sizes < 39; s *= 4) sizes[n_sizes++] = s;
    sizes[n_sizes++] = max;

    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    int failures = 0;
    double best[N_PATHS] = {0};
    if (!args.quiet)
        printf("     size   H2D pageable   H2D pinned   D2H pageable   D2H pinned    D2D   (GB/s)   check\n");
    for (int k = 0; k < n_sizes; k++) {
        size_t bytes = sizes[k];
        int bad = verify(&job, want, bytes, &rng);
        failures += bad;
        char st[32];
        size_text(bytes, st, sizeof st);
        if (args.check_only) {
            if (!args.quiet)
                printf(" %8s   %s\n", st, bad ? "FAIL (data changed in a round trip)" : "PASS (round trips exact)");
            continue;
        }
        double gbps[N_PATHS];
        int iters = bytes >= (256u << 20) && args.iters > 5 ? 5 : args.iters;
        for (int p = 0; p < N_PATHS; p++) {
            job.path = p;
            job.bytes = bytes;
            float ms = lb_time_ms(run_copy, &job, 2, iters);
            gbps[p] = bytes / (ms * 1e6);
            if (gbps[p] > best[p]) best[p] = gbps[p];
            char sz[32];
            snprintf(sz, sizeof sz, "%zu", bytes);
            lb_result r = {"bandwidth", -1, path_name[p], sz, ms, "gbps", gbps[p], NULL, 0.0, !bad};
            lb_print_result(&r, args.quiet);
        }
        if (!args.quiet)
            printf(" %8s %14.2f %12.2f %14.2f %12.2f %8.1f            %s\n", st, gbps[0], gbps[1], gbps[2], gbps[3],
                   gbps[4], bad ? "FAIL" : "PASS");
    }
    if (args.quiet) {
        if (args.check_only)
            printf("bandwidth: round trips up to %zu bytes %s\n", max, failures ? "FAIL" : "PASS");
        else
            printf("bandwidth: up to %zu bytes, best H2D pinned %.1f GB/s, pageable %.1f GB/s, D2D %.0f GB/s, %s\n",
                   max, best[H2D_PINNED], best[H2D_PAGEABLE], best[D2D], failures ? "FAIL" : "PASS");
    }

    CUDA_CHECK(cudaFreeHost(job.pinned));
    CUDA_CHECK(cudaFree(job.d_a));
    CUDA_CHECK(cudaFree(job.d_b));
    free(job.pageable);
    free(want);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
