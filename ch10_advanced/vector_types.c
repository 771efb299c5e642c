/* vector_types.c - copy and scale n floats (default 2^28) with 4-, 8- and 16-byte accesses:
 * float, float2, float4, and the book's int4 / double2 copies; GB/s against a device-to-device
 * cudaMemcpy of the same bytes in the same run; every output checked exactly. float_x4 and
 * float4_x4 keep four loads in flight per thread: bytes in flight, not width alone, is what
 * reaches the memcpy rate.
 *   build: make ch10      run: ./vector_types [--size N]
 * The load width each compiles to is in the README (cuobjdump --dump-sass vector_types_kernels.o).
 */
#include "labbook.h"
#include "vector_types_kernels.h"

#include <string.h>

static const char *const vt_names[VT_COUNT] = {"float", "float2", "float4", "int4", "double2", "float_x4", "float4_x4"};
static const int vt_bytes[VT_COUNT] = {4, 8, 16, 16, 16, 4, 16};

typedef struct {
    int vt;
    const float *x;
    float *y;
    size_t n;
    float a;
} vt_job;

static cudaError_t run_vt(void *ctx)
{
    vt_job *j = (vt_job *)ctx;
    return vt_launch(j->vt, j->x, j->y, j->n, j->a);
}

static const lb_program program = {
    .name = "vector_types",
    .synopsis = "copy and scale with float, float2, float4, int4 and double2 accesses "
                "(and float, float4 four at a time), against cudaMemcpy",
    .details = NULL,
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = NULL,
    .n_opts = 0,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 28}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0];
    if (n > ((size_t)1 << 32)) lb_usage_error(&program, "--size: at most 2^32");
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(8 * n, "x and y");
    if (!args.quiet) printf("vector_types: n=%zu floats, %s (%s), seed %llu\n", n, gpu.prop.name, gpu.sm, args.seed);

    float *h_x = lb_host_alloc(4 * n, "x"), *h_y = lb_host_alloc(4 * n, "y"), *want = lb_host_alloc(4 * n, "reference");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_x, n, -1.0f, 1.0f, &rng);
    float *d_x, *d_y;
    CUDA_CHECK(cudaMalloc((void **)&d_x, 4 * n));
    CUDA_CHECK(cudaMalloc((void **)&d_y, 4 * n));
    CUDA_CHECK(cudaMemcpy(d_x, h_x, 4 * n, cudaMemcpyHostToDevice));
    /* the report: GB/s (n floats read, n written) against a copy of as many bytes */
    char sz[32];
    snprintf(sz, sizeof sz, "%zu", n);
    lb_report rep = lb_report_vs_memcpy(&program, &args);
    lb_report_table(&rep, sz, NULL);
    if (!args.check_only) {
        float mc_ms = 0.0f;
        rep.base_value = lb_memcpy_ceiling_gbps(8 * n, args.iters, &mc_ms);
        lb_report_note(&rep, "copy by cudaMemcpy", mc_ms, rep.base_value, NULL);
    }
    for (int op = 0; op < 2; op++) {
        float a = op == 0 ? 1.0f : 2.5f;
        for (size_t i = 0; i < n; i++) want[i] = a * h_x[i];
        for (int vt = 0; vt < VT_COUNT; vt++) {
            if (op == 1 && (vt == VT_INT4 || vt == VT_DOUBLE2)) continue; /* integers and doubles: copy only */
            vt_job j = {vt, d_x, d_y, n, a};
            lb_poison_device(d_y, 4 * n);
            CUDA_CHECK(run_vt(&j));
            CUDA_CHECK(cudaMemcpy(h_y, d_y, 4 * n, cudaMemcpyDeviceToHost));
            int ok = memcmp(h_y, want, 4 * n) == 0; /* a copy, or one rounding the CPU does alike */
            float ms = args.check_only ? 0.0f : lb_time_ms(run_vt, &j, 2, args.iters);
            char name[32], label[48];
            snprintf(name, sizeof name, "%s_%s", op ? "scale" : "copy", vt_names[vt]);
            snprintf(label, sizeof label, "%s %s (%d B/load)", op ? "scale" : "copy", vt_names[vt], vt_bytes[vt]);
            lb_report_item(&rep, name, label, ms, ms > 0 ? 8.0 * n / (ms * 1e6) : 0.0, ok,
                           ok ? "PASS (exact)" : "FAIL");
        }
    }
    free(h_x);
    free(h_y);
    free(want);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    return lb_report_finish(&rep);
}
