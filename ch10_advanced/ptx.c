/* ptx.c - inline PTX (ptx_kernels.cu), each function checked against plain C on many inputs:
 * %laneid, %warpid, %smid, a 128-bit add with add.cc/addc, fma.rn, bfe, prmt, lop3, and a
 * double shuffled as two 32-bit halves (the book's split and combine).
 *   build: make ch10      run: ./ptx [--size N]
 */
#include "labbook.h"
#include "ptx_kernels.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- C references */

static void add128_cpu(uint64_t a_lo, uint64_t a_hi, uint64_t b_lo, uint64_t b_hi, uint64_t *lo, uint64_t *hi)
{
    *lo = a_lo + b_lo;
    *hi = a_hi + b_hi + (*lo < a_lo); /* the carry: the low sum wrapped around */
}

/* bfe.u32: bit i of the result is bit pos + i of x, for i < len and pos + i <= 31, else 0
 * (pos and len are taken modulo 256, as the PTX manual defines) */
static unsigned int bfe_cpu(unsigned int x, unsigned int pos, unsigned int len)
{
    pos &= 0xff;
    len &= 0xff;
    unsigned int d = 0;
    for (unsigned int i = 0; i < 32; i++)
        if (i < len && pos + i <= 31) d |= ((x >> (pos + i)) & 1u) << i;
    return d;
}

/* prmt.b32: byte k of the result is byte (s & 7) of b:a (a's bytes 0-3, b's 4-7), s the k-th
 * nibble of sel; with s & 8 it is that byte's sign bit copied into all 8 bits */
static unsigned int prmt_cpu(unsigned int a, unsigned int b, unsigned int sel)
{
    uint64_t src = ((uint64_t)b << 32) | a;
    unsigned int d = 0;
    for (int k = 0; k < 4; k++) {
        unsigned int s = (sel >> (4 * k)) & 0xf, byte = (unsigned int)(src >> (8 * (s & 7))) & 0xff;
        if (s & 8) byte = (byte & 0x80) ? 0xff : 0;
        d |= byte << (8 * k);
    }
    return d;
}

static unsigned int majority_cpu(unsigned int a, unsigned int b, unsigned int c) { return (a & b) | (a & c) | (b & c); }

/* ---------------------------------------------------------------- main */

static const lb_program program = {
    .name = "ptx",
    .synopsis = "inline PTX: lane/warp/SM ids, 128-bit add, fma.rn, bfe, prmt, lop3, a double shuffled in halves; vs C",
    .details = "--size is the number of threads, each with its own inputs.\n",
    .uses = LB_USE_SIZE | LB_USE_SEED | LB_USE_QUIET,
    .opts = NULL,
    .n_opts = 0,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 20}, 1}, .max_size_dims = 1, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0];
    if (n > ((size_t)1 << 28)) lb_usage_error(&program, "--size: at most 2^28");
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(n * (sizeof(ptx_out) + 32), "inputs and results");
    if (!args.quiet) printf("ptx: %zu threads, %s (%s), seed %llu\n", n, gpu.prop.name, gpu.sm, args.seed);

    unsigned int *a = lb_host_alloc(4 * n, "a"), *b = lb_host_alloc(4 * n, "b"), *c = lb_host_alloc(4 * n, "c");
    float *x = lb_host_alloc(4 * n, "x"), *y = lb_host_alloc(4 * n, "y"), *z = lb_host_alloc(4 * n, "z");
    double *d = lb_host_alloc(8 * n, "d");
    ptx_out *out = lb_host_alloc(sizeof(ptx_out) * n, "results");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = lb_rng_next(&rng);
        a[i] = (unsigned int)r, b[i] = (unsigned int)(r >> 32), c[i] = (unsigned int)lb_rng_next(&rng);
        if (i % 7 == 0) a[i] = b[i] = 0xffffffffu; /* carries all the way up in the 128-bit add */
        x[i] = lb_rng_uniform(&rng, -2.0f, 2.0f), y[i] = lb_rng_uniform(&rng, -2.0f, 2.0f),
        z[i] = lb_rng_uniform(&rng, -4.0f, 4.0f);
        uint64_t bits = lb_rng_next(&rng) & 0x7fefffffffffffffull; /* a finite double of any magnitude */
        memcpy(&d[i], &bits, 8);
    }
    void *dev[8];
    size_t sizes[8] = {4 * n, 4 * n, 4 * n, 4 * n, 4 * n, 4 * n, 8 * n, sizeof(ptx_out) * n};
    const void *host[7] = {a, b, c, x, y, z, d};
    for (int k = 0; k < 8; k++) {
        CUDA_CHECK(cudaMalloc(&dev[k], sizes[k]));
        if (k < 7) CUDA_CHECK(cudaMemcpy(dev[k], host[k], sizes[k], cudaMemcpyHostToDevice));
    }
    lb_poison_device(dev[7], sizes[7]);
    CUDA_CHECK(ptx_launch(dev[0], dev[1], dev[2], dev[3], dev[4], dev[5], dev[6], dev[7], n));
    CUDA_CHECK(cudaMemcpy(out, dev[7], sizes[7], cudaMemcpyDeviceToHost));

    enum { LANE, WARP, SM, ADD128, FMA, BFE, PRMT, LOP3, SHFL, N_CHECKS };
    static const char *const what[N_CHECKS] = {
        "%laneid == threadIdx.x % 32",  "%warpid < warps per SM", "%smid < SM count",
        "add.cc/addc == 128-bit C add", "fma.rn.f32 == fmaf",     "bfe.u32 == C bit loop",
        "prmt.b32 == C byte pick",      "lop3 0xE8 == majority",  "double via two 32-bit shuffles"};
    size_t bad[N_CHECKS] = {0};
    unsigned int max_warps = (unsigned int)gpu.prop.maxThreadsPerMultiProcessor / 32;
    for (size_t i = 0; i < n; i++) {
        const ptx_out *o = &out[i];
        uint64_t lo, hi;
        add128_cpu(((uint64_t)a[i] << 32) | b[i], ((uint64_t)c[i] << 32) | a[i], ((uint64_t)c[i] << 32) | c[i],
                   ((uint64_t)b[i] << 32) | c[i], &lo, &hi);
        float f = fmaf(x[i], y[i], z[i]);
        size_t src = (i & ~(size_t)31) | ((i + 1) & 31);
        double want_d = src < n ? d[src] : 0.0;
        bad[LANE] += o->lane != i % 32;
        bad[WARP] += o->warp >= max_warps;
        bad[SM] += o->sm >= (unsigned int)gpu.prop.multiProcessorCount;
        bad[ADD128] += o->sum_lo != lo || o->sum_hi != hi;
        bad[FMA] += memcmp(&o->fma, &f, 4) != 0;
        bad[BFE] += o->bfe != bfe_cpu(a[i], b[i] % 40, c[i] % 40);
        bad[PRMT] += o->prmt != prmt_cpu(a[i], b[i], c[i] & 0xffff);
        bad[LOP3] += o->lop3 != majority_cpu(a[i], b[i], c[i]);
        bad[SHFL] += memcmp(&o->shuffled, &want_d, 8) != 0 || memcmp(&o->shuffled_ref, &want_d, 8) != 0;
    }
    int failures = 0;
    for (int k = 0; k < N_CHECKS; k++) {
        failures += bad[k] != 0;
        if (!args.quiet) printf("  %-34s %s\n", what[k], bad[k] ? "FAIL" : "PASS");
        if (bad[k] && !args.quiet) printf("      %zu of %zu threads wrong\n", bad[k], n);
    }
    if (args.quiet) printf("ptx: %zu threads, 9 checks, %s\n", n, failures ? "FAIL" : "PASS");
    for (int k = 0; k < 8; k++) CUDA_CHECK(cudaFree(dev[k]));
    free(a);
    free(b);
    free(c);
    free(x);
    free(y);
    free(z);
    free(d);
    free(out);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
