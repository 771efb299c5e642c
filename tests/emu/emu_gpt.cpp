/* emu_gpt.cpp - ch12's training step on CPU threads: gpt_model.c (the host code of version 0, as
 * written) over the emulated runtime and cuBLAS (emu_runtime.cpp, emu_cublas.cpp), with
 * gpt_kernels.cu and ch11's LayerNorm, softmax, cross-entropy and AdamW kernels emulated
 * (emu_cuda.h), against the model on the CPU in double (gpt_cpu.c):
 *
 *   emu_gpt L H C T V Vp B [parts]
 *
 * parts: unfused (version 0's, the default), fused_loss (1), multi_adamw (2), bf16_products (3) or
 * flash_attention (4, ch11's attention kernels emulated too, sm_90a's versions) or fused_epilogues
 * (5, cuBLASLt emulated by emu_cublaslt.cpp) or fast_rows (6) or cuda_graph (7: version 6's parts
 * recorded as graphs by stream capture and launched, emu_runtime.cpp's graphs) or fused_adamw (8:
 * the clip and the bf16 weights inside AdamW, in graphs too) or token_rows (9: attention on
 * token rows, ch11's four-dimensional tensor maps emulated, in graphs):
 * gpt_model.h's rows, each checked within its own tolerance.
 * one step of B sequences of T tokens: the loss, every parameter's gradient, then the update's
 * squared norm, the clipped gradient and the parameters after one AdamW step (the CPU's AdamW on
 * the CPU's gradient). Parameters uniform in [-0.3, 0.3] and tokens from a fixed seed. Exit 0 when
 * all agree, 1 otherwise. */
#include "emu_cuda.h"
#include "gpt_model.h"
#include <cuda_bf16.h> /* the emulation's twin: bf16 rounding */

#include <cstdarg>

/* the shared memory an sm_90 block may opt into (227 KiB): what the one-read loss is checked against */
#define EMU_SHARED_OPTIN ((size_t)227 << 10)

/* what gpt_model.c asks of labbook.c: errors end the run, as they do there; guarded buffers */
extern "C" {
void lb_cuda_fail(cudaError_t err, const char *call, const char *file, int line)
{
    fprintf(stderr, "%s:%d: %s failed: error %d\n", file, line, call, (int)err);
    exit(3);
}
void lb_lib_fail(const char *lib, int code, const char *name, const char *text, const char *call, const char *file,
                 int line)
{
    fprintf(stderr, "%s:%d: %s failed: %s %d %s (%s)\n", file, line, call, lib, code, name, text);
    exit(3);
}
void *lb_host_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of host memory for %s\n", what);
        exit(2);
    }
    return p;
}
/* lb_malloc_guarded: the buffer, then LB_GUARD_BYTES (64 KiB) of 0xFF (NaN) after its end */
cudaError_t lb_malloc_guarded(void **d, size_t bytes)
{
    const size_t guard = (size_t)64 << 10;
    cudaError_t e = cudaMalloc(d, bytes + guard);
    if (e == cudaSuccess) memset((char *)*d + bytes, 0xFF, guard);
    return e;
}
/* lb_poison_device: NaN (0xFF bytes), as the program poisons its buffers */
void lb_poison_device(void *d, size_t bytes) { memset(d, 0xFF, bytes); }
void lb_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}
}

static uint64_t state = 0x9E3779B97F4A7C15ull;
static double uniform() /* splitmix64, in [-1, 1) */
{
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

/* got against want, tensor by tensor: within atol of the tensor's largest |want| plus rtol of the
 * element's (gpt_check_tolerance: the parts' arithmetic against double); prints the first miss */
/* x rounded to bf16 by another route than the kernels' (cuda_bf16.h's twin adds 0x7FFF and the
 * odd bit): its two bf16 neighbours, and the nearer in double (on a tie, the even one); for
 * finite x of the parameters' size, so the check of AdamW's bf16 copy is not the code it checks */
static uint16_t bf16_nearest(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t lo = u & 0xFFFF0000u, hi = lo + 0x10000u; /* toward 0, and the next one away from it */
    float below, above;
    memcpy(&below, &lo, 4), memcpy(&above, &hi, 4);
    double to_lo = fabs((double)x - below), to_hi = fabs((double)above - x);
    return (uint16_t)((to_lo < to_hi || (to_lo == to_hi && !(lo & 0x10000u)) ? lo : hi) >> 16);
}

static double worst_seen; /* the largest error in units of its tensor's largest |want| */
static double atol_, rtol_; /* the parts' own: gpt_check_tolerance */
static int compare(const char *what, const gpt_config *c, const float *got, const double *want)
{
    int bad = 0;
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        gpt_tensor t = gpt_tensor_at(c, i);
        size_t n = t.rows * t.cols, misses = 0, first = 0;
        double largest = 0.0;
        for (size_t e = 0; e < n; e++) largest = std::max(largest, fabs(want[t.offset + e]));
        for (size_t e = 0; e < n; e++) {
            double w = want[t.offset + e], err = fabs(got[t.offset + e] - w);
            if (largest > 0) worst_seen = std::max(worst_seen, err / largest);
            if (!(err <= atol_ * largest + rtol_ * fabs(w) + 1e-12) && !misses++) first = e;
        }
        if (misses) {
            printf("  %s of %s (layer %d): %zu of %zu wrong, first at %zu: got %.7g, want %.7g\n", what, t.name, t.layer,
                   misses, n, first, got[t.offset + first], want[t.offset + first]);
            bad = 1;
        }
    }
    return bad;
}

/* after one clipped AdamW step at rate lr from parameters dp (the CPU's gradient dg, its squared
 * norm sumsq): the squared norm, the clipped gradient and the parameters against the CPU's */
static int check_update(const gpt_config *c, const gpt_gpu &g, const std::vector<double> &dp,
                        const std::vector<double> &dg, double sumsq, float clip, float lr, float wd, bool scaled)
{
    size_t P = dp.size();
    int bad = 0;
    double f = clip / sqrt(sumsq);
    if (!(fabs(*g.sumsq - sumsq) <= rtol_ * sumsq)) bad = 1, printf("  the squared norm %.7g, want %.7g\n", *g.sumsq, sumsq);
    /* version 8: the gradient left as it was, the factor in AdamW's states, the bf16 copy written */
    double gs = 1.0;
    if (scaled) {
        gs = g.adam[0].grad_scale;
        if (!(fabs(gs - f) <= rtol_ * f) || g.adam[1].grad_scale != g.adam[0].grad_scale)
            bad = 1, printf("  the clip's factor %.7g and %.7g, want %.7g\n", gs, g.adam[1].grad_scale, f);
        size_t stale = 0;
        for (size_t i = 0; i < P; i++) stale += g.params16[i] != bf16_nearest(g.params[i]);
        if (stale) bad = 1, printf("  the bf16 copy: %zu of %zu not the parameters rounded\n", stale, P);
    }
    /* AdamW's first step from the GPU's own clipped gradient (itself checked against the CPU's
     * just below): m / (1 - beta1) = g and v / (1 - beta2) = g^2, so the step is lr g / (|g| + eps);
     * from the CPU's gradient instead, an element near zero whose fp32 sign differs would move the
     * other way */
    std::vector<double> clipped(P), after(P);
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        gpt_tensor t = gpt_tensor_at(c, i);
        double decay = t.rows > 1 ? wd : 0.0;
        for (size_t e = t.offset; e < t.offset + t.rows * t.cols; e++) {
            double gr = g.grads[e] * gs;
            clipped[e] = dg[e] * f / gs; /* version 8's stays unclipped (gs = f) */
            after[e] = dp[e] - lr * (gr / (fabs(gr) + 1e-8) + decay * dp[e]);
        }
    }
    bad |= compare(scaled ? "the gradient (unclipped)" : "the clipped gradient", c, g.grads, clipped.data());
    bad |= compare("the parameters after AdamW", c, g.params, after.data());
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 8 && argc != 9) {
        fprintf(stderr, "usage: emu_gpt L H C T V Vp B [unfused|fused_loss|multi_adamw|bf16_products|flash_attention|fused_epilogues|fast_rows|cuda_graph|fused_adamw|token_rows]\n");
        return 2;
    }
    const char *which = argc > 8 ? argv[8] : "unfused";
    const gpt_parts *parts = !strcmp(which, "unfused")       ? &gpt_parts_unfused
                             : !strcmp(which, "fused_loss")  ? &gpt_parts_fused_loss
                             : !strcmp(which, "multi_adamw") ? &gpt_parts_adamw_one_launch
                             : !strcmp(which, "bf16_products") ? &gpt_parts_bf16_products
                             : !strcmp(which, "flash_attention") ? &gpt_parts_flash_attention
                             : !strcmp(which, "fused_epilogues") ? &gpt_parts_fused_epilogues
                             : !strcmp(which, "fast_rows") || !strcmp(which, "cuda_graph") ? &gpt_parts_fast_rows
                             : !strcmp(which, "fused_adamw")     ? &gpt_parts_fused_adamw
                             : !strcmp(which, "token_rows")      ? &gpt_parts_token_rows
                                                                 : nullptr;
    bool graph = !strcmp(which, "cuda_graph") || !strcmp(which, "fused_adamw") || !strcmp(which, "token_rows"),
         scaled = parts == &gpt_parts_fused_adamw || parts == &gpt_parts_token_rows;
    if (!parts) {
        fprintf(stderr, "emu_gpt: parts '%s' unknown (unfused, fused_loss, multi_adamw, bf16_products, "
                        "flash_attention, fused_epilogues, fast_rows, cuda_graph, fused_adamw, token_rows)\n", which);
        return 2;
    }
    gpt_config c = {atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6])};
    int B = atoi(argv[7]), T = c.context, N = B * T;
    if (gpt_config_error(&c) || B < 1 || gpt_parts_unavailable(parts, &c, EMU_SHARED_OPTIN)) {
        fprintf(stderr, "emu_gpt: %s\n", B < 1 ? "B must be positive" : gpt_config_error(&c) ? gpt_config_error(&c)
                                                                           : gpt_parts_unavailable(parts, &c, EMU_SHARED_OPTIN));
        return 2;
    }
    size_t P = gpt_param_count(&c);
    std::vector<float> p(P), got(P);
    std::vector<double> dp(P), dg(P);
    std::vector<int> tok(N), tgt(N);
    for (size_t i = 0; i < P; i++) p[i] = (float)(0.3 * uniform()), dp[i] = p[i];
    for (int i = 0; i < N; i++)
        tok[i] = (int)((uniform() + 1) * 0.5 * c.vocab) % c.vocab, tgt[i] = (int)((uniform() + 1) * 0.5 * c.vocab) % c.vocab;
    const char *err = NULL;
    double want_loss = gpt_model_cpu(&c, dp.data(), tok.data(), tgt.data(), B, T, dg.data(), &err);

    gpt_gpu g;
    gpt_gpu_alloc(&g, &c, B, T, parts->buffers); /* only its own: a buffer it reads unallocated is NULL */
    gpt_params_set(&g, p.data());
    memcpy(g.tokens, tok.data(), 4 * (size_t)N);
    memcpy(g.targets, tgt.data(), 4 * (size_t)N);
    atol_ = rtol_ = gpt_check_tolerance(&c, B, T, parts->bf16);
    if (graph) /* run as usual, then recorded and launched (nothing runs while it is recorded):
                * the second checked, the gradient and loss poisoned before it */
        for (int run = 0; run < 2; run++) {
            memset(g.grads, 0xFF, 4 * P), memset(g.loss, 0xFF, 4);
            gpt_run_graph(&g, parts, GPT_GRADIENT, B, T, 0.0f, 0.0f, 0.0f);
        }
    else
        gpt_forward(&g, parts, B, T, 1), gpt_backward(&g, parts, B, T);
    float loss = *g.loss;
    int bad = !(fabs(loss - want_loss) <= rtol_ * fabs(want_loss));
    printf("emulated gpt L%d H%d C%d T%d V%d Vp%d B%d, %s: loss %.7f, the CPU's %.7f\n", c.layers, c.heads, c.channels,
           c.context, c.vocab, c.vocab_padded, B, which, loss, want_loss);
    bad |= compare("the gradient", &c, g.grads, dg.data());

    /* one update: clipped to a norm of half the gradient's, then AdamW (lr 0.01, wd 0.1 on the
     * matrices), against the same on the CPU. The graphs: the whole step from the same start
     * three times at three rates: run as usual, recorded and launched, launched again (the
     * graph reads the rate set before each launch, not the one it was recorded with) */
    double sumsq = 0.0;
    for (size_t i = 0; i < P; i++) sumsq += dg[i] * dg[i];
    float clip = (float)(0.5 * sqrt(sumsq)), wd = 0.1f;
    const float rates[3] = {0.01f, 0.02f, 0.03f};
    for (int r = 0; r < (graph ? 3 : 1); r++) {
        if (graph) {
            /* the start again: parameters (and their bf16 copy, as fresh as AdamW leaves it, so that
             * the graphs stay: gpt_params_set would drop them), moments, step counts */
            memcpy(g.params, p.data(), 4 * P);
            for (size_t i = 0; i < P && g.params16; i++) g.params16[i] = __bfloat16_as_ushort(__float2bfloat16_rn(p[i]));
            memset(g.m, 0, 4 * P), memset(g.v, 0, 4 * P), memset((void *)g.adam, 0, 2 * sizeof(adamw_state));
            gpt_run_graph(&g, parts, GPT_STEP, B, T, rates[r], wd, clip);
        } else {
            gpt_update(&g, parts, rates[r], wd, clip);
        }
        bad |= check_update(&c, g, dp, dg, sumsq, clip, rates[r], wd, scaled);
    }
    printf("emulated gpt: loss, %zu gradients, the norm, the clipped gradient and one AdamW step (worst %.2g of a "
           "tensor's largest): %s\n", P, worst_seen, bad ? "FAIL" : "PASS");
    gpt_gpu_free(&g);
    return emu_finish(bad);
}
