/* gpt.c - a GPT trained from scratch on the book's own kernels: GPT-2's architecture
 * (gpt_cpu.h), character-level, on ../datasets/shakespeare.txt; it prints its loss as it learns,
 * the validation loss every --eval-every steps, saves a checkpoint, and writes text.
 *   build: make ch12 (or `make` here)
 *   run:   ./gpt [version] [--data FILE] [--layers L --heads H --channels C --context T --batch B]
 *          ./gpt --check                      one step of every version against the CPU model in double
 *          ./gpt --load ckpt --sample 500     text from a checkpoint
 *
 * versions (the table versions[] below; each one a whole training step):
 *   0  unfused: every layer as its own kernels in fp32, the products by cuBLAS (SGEMM, attention's
 *      scores and P V batched over the heads, the scores in memory), ch11's LayerNorm, softmax,
 *      cross-entropy and AdamW kernels through their launchers, ch12's own for the rest
 *      (gpt_kernels.cu: embeddings, bias, GELU, residual adds, the global norm)
 *   1  the loss, its softmax and its gradient in one pass (ch11's cross-entropy version 3)
 *   2  AdamW in one launch a group of tensors (ch11's AdamW version 4)
 *   3  the linear layers' products on the tensor cores in bf16 (cublasGemmEx)
 *   4  attention by ch11's flash kernels, forward and backward: no T x T matrix in memory
 *   5  the products by cuBLASLt with their epilogues, bf16 activations kept (gpt_fused.c)
 *   6  ch11's one-read LayerNorm (forward writing bf16, backward adding into the residual's
 *      gradient) and loss (on bf16 logits, its gradient in bf16 over them); the bias gradients
 *      and GELU's derivative by our own passes over the gradients (cuBLASLt's DGELU and BGRADB
 *      epilogues cost more than their data at these shapes), dQ joined from ch11's fp32 sum
 *   7  version 6's step recorded once as a CUDA graph and launched as one (gpt_run_graph)
 *   8  the clip and the weights' bf16 copy inside AdamW (ch11's grad_scale and p16), in a graph
 *   9  attention on token rows: ch11's flash kernels read Q, K, V inside the qkv product's rows
 *      and write O as the projection's input (and back: dO in, dQ, dK, dV into the qkv
 *      gradient's rows), through four-dimensional tensor maps: no reshape passes (sm_90a)
 *
 * A step: the batch's forward (loss), its backward (every parameter's gradient), the gradient
 * clipped by its global norm, and AdamW (decay on the matrices, not on biases and LayerNorms) at
 * the learning rate of a linear warm-up and a cosine decay to a tenth.
 * Checked (--check): at a tiny configuration, the loss and every parameter's gradient of one step
 * against gpt_model_cpu in double.
 */
#include "gpt_model.h" /* cublas_v2.h first, then labbook.h: CUBLAS_CHECK */
#include "labbook.h"
#include "gpt_data.h"
#include "softmax_kernels.h" /* ch11's: SOFTMAX_MAX_COLS, version 0's longest context */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the versions */

/* A version's work on the batch already on the device (gpt_model.h: GPT_STEP, GPT_LOSS,
 * GPT_GRADIENT) */
typedef struct {
    gpt_gpu *g;
    int B, T;
    float lr, wd, clip;
    int what;                 /* GPT_STEP, GPT_LOSS or GPT_GRADIENT */
    const gpt_parts *parts;   /* the version's (version_parts below) */
    double atol, rtol;        /* set by the run: the version's check tolerance (gpt_check_tolerance) */
} gpt_step_job;

/* versions 0-6's run: their parts (gpt_model.h) through the forward, backward and update, each
 * kernel launched from here */
static cudaError_t run_parts(void *ctx)
{
    gpt_step_job *j = ctx;
    j->atol = j->rtol = gpt_check_tolerance(&j->g->c, j->B, j->T, j->parts->bf16);
    gpt_run(j->g, j->parts, j->what, j->B, j->T, j->lr, j->wd, j->clip);
    return cudaGetLastError();
}
/* version 7's: the same parts recorded once as a CUDA graph, then one launch a run */
static cudaError_t run_graph(void *ctx)
{
    gpt_step_job *j = ctx;
    j->atol = j->rtol = gpt_check_tolerance(&j->g->c, j->B, j->T, j->parts->bf16);
    gpt_run_graph(j->g, j->parts, j->what, j->B, j->T, j->lr, j->wd, j->clip);
    return cudaGetLastError();
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it; and its parts, a row of
 * gpt_model.c. To add one: its parts there (a gpt_parts row) and a row in each table here. */
static const lb_version versions[] = {
    {0, "unfused", "separate kernels, fp32, cuBLAS", LB_OLDEST_SM, run_parts},
    {1, "fused_loss", "+ loss and gradient in one pass", LB_OLDEST_SM, run_parts},
    {2, "multi_adamw", "+ AdamW in one launch a group", LB_OLDEST_SM, run_parts},
    {3, "bf16_products", "+ layers' products in bf16", 80, run_parts},
    {4, "flash_attention", "+ ch11's flash attention, bf16", 80, run_parts},
    {5, "fused_epilogues", "+ cuBLASLt epilogues, bf16 kept", 80, run_parts},
    {6, "fast_rows", "+ one-read LN and loss, in bf16", 80, run_parts},
    {7, "cuda_graph", "+ the whole step as one CUDA graph", 80, run_graph},
    {8, "fused_adamw", "+ clip and bf16 weights in AdamW", 80, run_graph},
    {9, "token_rows", "+ attention on the products' rows", 90, run_graph},
};
static const gpt_parts *const version_parts[] = {&gpt_parts_unfused,       &gpt_parts_fused_loss,
                                                 &gpt_parts_adamw_one_launch, &gpt_parts_bf16_products,
                                                 &gpt_parts_flash_attention, &gpt_parts_fused_epilogues,
                                                 &gpt_parts_fast_rows,        &gpt_parts_fast_rows,
                                                 &gpt_parts_fused_adamw,      &gpt_parts_token_rows};
_Static_assert(sizeof versions / sizeof versions[0] == sizeof version_parts / sizeof version_parts[0],
               "one gpt_parts row for each version");
#define GPT_VERSIONS ((int)(sizeof versions / sizeof versions[0]))

/* NULL when version v's parts can run a model of config c on this GPU, else why not */
static const char *version_unavailable(int v, const gpt_config *c, const lb_gpu *gpu)
{
    return gpt_parts_unavailable(version_parts[v], c, gpu->prop.sharedMemPerBlockOptin);
}

/* ---------------------------------------------------------------- parameters, schedule, sampling */

/* GPT-2's initialisation: weights normal(0, 0.02), the two projections into the residual stream
 * scaled by 1 / sqrt(2 L), biases 0, LayerNorm weights 1 */
static void init_params(float *p, const gpt_config *c, lb_rng *rng)
{
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        gpt_tensor t = gpt_tensor_at(c, i);
        size_t n = t.rows * t.cols;
        int is_ln_weight = strstr(t.name, "ln") && strstr(t.name, "_w");
        float std = 0.02f;
        if (!strcmp(t.name, "proj_w") || !strcmp(t.name, "fcproj_w")) std /= sqrtf(2.0f * c->layers);
        for (size_t e = 0; e < n; e++) {
            float value = 0.0f;
            if (is_ln_weight) {
                value = 1.0f;
            } else if (t.rows > 1) { /* Box-Muller */
                float u1 = lb_rng_uniform(rng, 1e-7f, 1.0f), u2 = lb_rng_uniform(rng, 0.0f, 1.0f);
                value = std * sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
            }
            p[t.offset + e] = value;
        }
    }
}

/* the learning rate at step s of `steps`: linear warm-up over `warmup`, then a cosine to lr / 10 */
static float schedule(float lr, int s, int warmup, int steps)
{
    if (s < warmup) return lr * (float)(s + 1) / (float)warmup;
    float progress = steps > warmup ? (float)(s - warmup) / (float)(steps - warmup) : 1.0f;
    return 0.1f * lr + 0.45f * lr * (1.0f + cosf(3.14159265f * progress));
}

/* `n` characters from the model (a string the caller frees): each the next of the last (at most
 * T) tokens, drawn from the softmax of the last position's logits / temperature */
static char *sample_text(gpt_gpu *g, const gpt_parts *parts, const unsigned char *chars, int n, float temperature,
                         lb_rng *rng)
{
    int V = g->c.vocab, T = g->T, len = 0;
    int *ctx = lb_host_alloc(sizeof(int) * (size_t)(n + 1), "the sample");
    char *text = lb_host_alloc((size_t)n + 1, "the sample");
    float *logits = lb_host_alloc(sizeof(float) * (size_t)V, "the logits");
    double *p = lb_host_alloc(sizeof(double) * (size_t)V, "the probabilities");
    ctx[len++] = 0; /* the vocabulary's first character: the newline in any text that has one */
    for (int i = 0; i < n; i++) {
        int t = len < T ? len : T, *window = ctx + len - t;
        CUDA_CHECK(cudaMemcpy(g->tokens, window, sizeof(int) * t, cudaMemcpyHostToDevice));
        gpt_forward(g, parts, 1, t, 0); /* the trained version's forward, without the loss */
        gpt_logits_row(g, parts, t - 1, logits);
        double m = -INFINITY, sum = 0.0;
        for (int v = 0; v < V; v++) m = fmax(m, logits[v] / temperature);
        for (int v = 0; v < V; v++) sum += (p[v] = exp(logits[v] / temperature - m));
        double u = (double)(lb_rng_next(rng) >> 11) * 0x1.0p-53 * sum;
        int next = V - 1;
        for (int v = 0; v < V; v++)
            if ((u -= p[v]) < 0) {
                next = v;
                break;
            }
        ctx[len++] = next;
        text[i] = (char)chars[next];
    }
    text[n] = 0;
    free(ctx), free(logits), free(p);
    return text;
}

/* ---------------------------------------------------------------- --check: one step against the CPU */

/* The loss and every tensor's gradient of one step, GPU against gpt_model_cpu in double, at a
 * tiny configuration: random parameters and tokens from the seed, within the version's tolerance
 * (gpt_check_tolerance: derived from fp32's arithmetic, or bf16's for the bf16 products) */
static int check_step(const gpt_config *c, int B, int T, unsigned long long seed, int ver, int quiet)
{
    size_t P = gpt_param_count(c), N = (size_t)B * T;
    float *h_p = lb_host_alloc(sizeof(float) * P, "parameters"), *h_g = lb_host_alloc(sizeof(float) * P, "gradients");
    double *dp = lb_host_alloc(sizeof(double) * P, "parameters"), *dg = lb_host_alloc(sizeof(double) * P, "gradients");
    int *tok = lb_host_alloc(sizeof(int) * N, "tokens"), *tgt = lb_host_alloc(sizeof(int) * N, "targets");
    lb_rng rng;
    lb_rng_seed(&rng, seed);
    for (size_t i = 0; i < P; i++) h_p[i] = lb_rng_uniform(&rng, -0.3f, 0.3f), dp[i] = h_p[i];
    for (size_t i = 0; i < N; i++)
        tok[i] = (int)(lb_rng_next(&rng) % (uint64_t)c->vocab), tgt[i] = (int)(lb_rng_next(&rng) % (uint64_t)c->vocab);
    const char *err = NULL;
    double want_loss = gpt_model_cpu(c, dp, tok, tgt, B, T, dg, &err);
    if (isnan(want_loss)) lb_die(LB_EXIT_USAGE, "gpt: %s", err);

    gpt_gpu g;
    gpt_gpu_alloc(&g, c, B, T, version_parts[ver]->buffers);
    gpt_params_set(&g, h_p);
    CUDA_CHECK(cudaMemcpy(g.tokens, tok, sizeof(int) * N, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g.targets, tgt, sizeof(int) * N, cudaMemcpyHostToDevice));
    gpt_step_job job = {&g, B, T, 0.0f, 0.0f, 0.0f, GPT_GRADIENT, version_parts[ver], 0, 0};
    /* twice, the second run checked: version 7 launches its parts the first time and its graph,
     * recorded then, the second; the gradient and the loss poisoned before each (a value never
     * written fails) */
    for (int run = 0; run < 2; run++) {
        lb_poison_device(g.grads, sizeof(float) * P);
        lb_poison_device(g.loss, sizeof(float));
        CUDA_CHECK(versions[ver].run(&job));
    }
    float loss;
    CUDA_CHECK(cudaMemcpy(&loss, g.loss, sizeof loss, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_g, g.grads, sizeof(float) * P, cudaMemcpyDeviceToHost));
    gpt_gpu_free(&g);

    int bad = !(fabs(loss - want_loss) <= job.rtol * fabs(want_loss));
    printf("check: version %d (%s): loss %.7f, the CPU's %.7f%s\n", ver, versions[ver].name, loss, want_loss,
           bad ? " FAIL" : "");
    float *want = lb_host_alloc(sizeof(float) * P, "gradients");
    double worst = 0.0; /* the largest error in units of its tensor's largest |gradient| */
    for (size_t i = 0; i < P; i++) want[i] = (float)dg[i];
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        gpt_tensor t = gpt_tensor_at(c, i);
        size_t n = t.rows * t.cols;
        double largest = 0.0;
        for (size_t e = 0; e < n; e++) largest = fmax(largest, fabs(dg[t.offset + e]));
        char what[64];
        if (t.layer >= 0)
            snprintf(what, sizeof what, "d%s of layer %d", t.name, t.layer);
        else
            snprintf(what, sizeof what, "d%s", t.name);
        lb_check r = lb_check_f32(what, h_g + t.offset, want + t.offset, n, job.atol * largest + 1e-12, job.rtol, quiet);
        if (largest > 0) worst = fmax(worst, r.max_abs_err / largest);
        if (r.n_bad) {
            bad = 1;
            printf("check: %s: %zu of %zu outside the tolerance, worst %.3g\n", what, r.n_bad, n, r.max_abs_err);
        }
    }
    printf("check: version %d, one step of %d x %d tokens, L%d H%d C%d V%d: loss and %zu gradients (worst %.2g of a "
           "tensor's largest, tolerance %.2g) %s\n", ver, B, T, c->layers, c->heads, c->channels, c->vocab, P, worst,
           job.atol, bad ? "FAIL" : "PASS");
    free(h_p), free(h_g), free(dp), free(dg), free(tok), free(tgt), free(want);
    return bad ? LB_EXIT_FAIL : LB_EXIT_PASS;
}

/* ---------------------------------------------------------------- main */

typedef struct {
    const char *data, *save, *load, *grads;
    long long layers, heads, channels, context, batch, steps, warmup, eval_every, eval_batches, sample;
    double lr, wd, clip, temperature;
    int check, synthetic, bench;
} gpt_options;

static const lb_program program_template = {
    .name = "gpt",
    .synopsis = "a GPT trained from scratch on a text file, one token a character: GPT-2's architecture on the "
                "book's kernels",
    .details = "Training runs the version given (default: the last this GPU runs at this shape); --bench times\n"
               "a step of each (or of the one given) and --check holds each to the CPU model in double (one\n"
               "step of L2 H2 C128, 2 x 80 tokens).\n"
               "The vocabulary is the characters of --data (ASCII: printable, newlines, tabs); 90% of it trains,\n"
               "10% validates. --load continues from a checkpoint (its configuration and vocabulary; a model flag\n"
               "given with it must match; --steps more steps). --sample writes text after training, or from --load\n"
               "with --steps 0. --grads writes one batch's loss and gradient for bench/torch_gpt.py compare.\n",
    .uses = LB_USE_SEED | LB_USE_QUIET,
    .versions = versions,
    .n_versions = GPT_VERSIONS,
};

/* --grads: one batch's loss and gradient, from the parameters as they are, into a file that
 * bench/torch_gpt.py compare reads: "LBGPTGR2", int32 B, T and the version, float32 loss and the
 * version's check tolerance (atol, rtol: gpt_check_tolerance's, which the comparison applies),
 * then the gradient's P float32 in gpt_tensor_at's order (little-endian) */
static void write_grads(gpt_gpu *g, const gpt_text *text, int B, int T, lb_rng *batches, const char *path, int ver)
{
    size_t P = g->P;
    int *tok = lb_host_alloc(sizeof(int) * (size_t)B * T, "a batch"), *tgt = lb_host_alloc(sizeof(int) * (size_t)B * T, "");
    float *grads = lb_host_alloc(sizeof(float) * P, "the gradient"), loss;
    gpt_batch(text, 0, B, T, batches, tok, tgt);
    CUDA_CHECK(cudaMemcpy(g->tokens, tok, sizeof(int) * B * T, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g->targets, tgt, sizeof(int) * B * T, cudaMemcpyHostToDevice));
    gpt_step_job job = {g, B, T, 0.0f, 0.0f, 0.0f, GPT_GRADIENT, version_parts[ver], 0, 0};
    CUDA_CHECK(versions[ver].run(&job));
    CUDA_CHECK(cudaMemcpy(&loss, g->loss, sizeof loss, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(grads, g->grads, sizeof(float) * P, cudaMemcpyDeviceToHost));
    FILE *f = fopen(path, "wb");
    int32_t head[3] = {B, T, ver};
    float numbers[3] = {loss, (float)job.atol, (float)job.rtol};
    int ok = f && fwrite("LBGPTGR2", 1, 8, f) == 8 && fwrite(head, 4, 3, f) == 3 && fwrite(numbers, 4, 3, f) == 3 &&
             fwrite(grads, 4, P, f) == P;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) lb_die(LB_EXIT_USAGE, "gpt: %s: cannot write the gradient", path);
    free(tok), free(tgt), free(grads);
}

/* --bench: a training step of each version from the same parameters and batch (the moments and
 * step counts fresh), timed as lb_time_ms times (warm-up steps, then the median of samples): one
 * table with tokens/s and each version against version 0 */
static int bench(const lb_program *program, const lb_args *args, const lb_gpu *gpu, gpt_gpu *g, const float *h_params,
                 int B, int T, const gpt_text *text, lb_rng *batches, const gpt_options *o)
{
    int *tok = lb_host_alloc(sizeof(int) * (size_t)B * T, "a batch"), *tgt = lb_host_alloc(sizeof(int) * (size_t)B * T, "");
    if (text)
        gpt_batch(text, 0, B, T, batches, tok, tgt);
    else
        for (size_t i = 0; i < (size_t)B * T; i++)
            tok[i] = (int)(lb_rng_next(batches) % (uint64_t)g->c.vocab), tgt[i] = (int)(lb_rng_next(batches) % (uint64_t)g->c.vocab);
    CUDA_CHECK(cudaMemcpy(g->tokens, tok, sizeof(int) * B * T, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g->targets, tgt, sizeof(int) * B * T, cudaMemcpyHostToDevice));
    lb_report rep = {.prog = program, .args = args, .unit = "tokens_s", .unit_head = "tokens/s", .base = versions[0].name,
                     .base_head = "vs version 0"};
    char size[96];
    snprintf(size, sizeof size, "L%d_H%d_C%d_T%d_B%d", g->c.layers, g->c.heads, g->c.channels, g->c.context, B);
    lb_report_table(&rep, size, NULL);
    gpt_step_job job = {g, B, T, (float)o->lr, (float)o->wd, (float)o->clip, GPT_STEP, NULL, 0, 0};
    for (int v = 0; v < GPT_VERSIONS; v++) {
        if (!lb_version_runs(program, args, gpu, v, version_unavailable(v, &g->c, gpu))) continue;
        job.parts = version_parts[v];
        gpt_params_set(g, h_params);
        CUDA_CHECK(cudaMemset(g->m, 0, sizeof(float) * g->P));
        CUDA_CHECK(cudaMemset(g->v, 0, sizeof(float) * g->P));
        CUDA_CHECK(cudaMemset(g->adam, 0, 2 * sizeof(adamw_state)));
        float ms = lb_time_ms(versions[v].run, &job, 2, 10);
        lb_report_row(&rep, v, NULL, ms, B * T / (ms * 1e-3), -1, "--check checks it");
    }
    free(tok), free(tgt);
    return lb_report_finish(&rep);
}

/* whether a flag was on the command line (a checkpoint's configuration is checked against those) */
static int flag_given(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], flag)) return 1;
    return 0;
}

/* the validation loss: the mean over `batches` batches of the validation part, the same ones
 * every time (drawn from the seed + 2), so that the losses of a run compare */
static float validation_loss(gpt_gpu *g, const gpt_text *text, int B, int T, int batches, unsigned long long seed,
                             int *tok, int *tgt, int ver)
{
    gpt_step_job job = {g, B, T, 0.0f, 0.0f, 0.0f, GPT_LOSS, version_parts[ver], 0, 0};
    double sum = 0.0;
    lb_rng rng;
    lb_rng_seed(&rng, seed + 2);
    for (int i = 0; i < batches; i++) {
        gpt_batch(text, 1, B, T, &rng, tok, tgt);
        CUDA_CHECK(cudaMemcpy(g->tokens, tok, sizeof(int) * B * T, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(g->targets, tgt, sizeof(int) * B * T, cudaMemcpyHostToDevice));
        CUDA_CHECK(versions[ver].run(&job));
        float loss;
        CUDA_CHECK(cudaMemcpy(&loss, g->loss, sizeof loss, cudaMemcpyDeviceToHost));
        sum += loss;
    }
    return (float)(sum / batches);
}

int main(int argc, char **argv)
{
    gpt_options o = {.data = "../datasets/shakespeare.txt", .save = "", .load = "", .grads = "", .layers = 6, .heads = 6,
                     .channels = 384, .context = 256, .batch = 32, .steps = 2000, .warmup = 100, .eval_every = 250,
                     .eval_batches = 20, .sample = 0, .lr = 1e-3, .wd = 0.1, .clip = 1.0, .temperature = 0.8};
    const lb_opt opts[] = {
        {"--data", LB_OPT_STRING, &o.data, "the text to train on"},
        {"--layers", LB_OPT_I64, &o.layers, "L, transformer blocks"},
        {"--heads", LB_OPT_I64, &o.heads, "H, attention heads (dividing C)"},
        {"--channels", LB_OPT_I64, &o.channels, "C, the width of the residual stream"},
        {"--context", LB_OPT_I64, &o.context, "T, tokens a sequence"},
        {"--batch", LB_OPT_I64, &o.batch, "B, sequences a step"},
        {"--steps", LB_OPT_I64, &o.steps, "training steps"},
        {"--lr", LB_OPT_DOUBLE, &o.lr, "the peak learning rate"},
        {"--warmup", LB_OPT_I64, &o.warmup, "steps of linear warm-up"},
        {"--wd", LB_OPT_DOUBLE, &o.wd, "AdamW's weight decay (matrices only)"},
        {"--clip", LB_OPT_DOUBLE, &o.clip, "the gradient's largest global norm"},
        {"--eval-every", LB_OPT_I64, &o.eval_every, "steps between validation losses (0: at the end only)"},
        {"--eval-batches", LB_OPT_I64, &o.eval_batches, "batches a validation loss averages"},
        {"--save", LB_OPT_STRING, &o.save, "write a checkpoint there after training"},
        {"--grads", LB_OPT_STRING, &o.grads, "write the loss and gradient of the first batch there, and stop"},
        {"--load", LB_OPT_STRING, &o.load, "start from this checkpoint"},
        {"--sample", LB_OPT_I64, &o.sample, "characters of text to write at the end"},
        {"--temperature", LB_OPT_DOUBLE, &o.temperature, "the sampling temperature"},
        {"--check", LB_OPT_FLAG, &o.check, "one step of a tiny model against the CPU model"},
        {"--bench", LB_OPT_FLAG, &o.bench, "time a step of every version (or the one given): the table, tokens/s"},
        {"--synthetic", LB_OPT_FLAG, &o.synthetic, "random tokens at GPT-2 124M's shape (L12 H12 C768 T1024, V 50257), for speed"},
    };
    lb_program program = program_template;
    program.opts = opts, program.n_opts = sizeof opts / sizeof opts[0];
    lb_args args = {.seed = 1};
    lb_parse_args(&program, &args, argc, argv);

    if (o.check) { /* the version asked for, or every one */
        gpt_config tiny = {2, 2, 128, 80, 37, 40}; /* heads of 64: every version's attention runs */
        lb_gpu gpu;
        lb_gpu_init(&gpu);
        int status = LB_EXIT_PASS;
        for (int v = 0; v < GPT_VERSIONS; v++)
            if (lb_version_runs(&program, &args, &gpu, v, NULL) && check_step(&tiny, 2, 80, args.seed, v, args.quiet))
                status = LB_EXIT_FAIL;
        return status;
    }

    /* ---- everything that can be wrong with the input, before the GPU */
    char why[512];
    gpt_checkpoint ck = {0};
    int from_checkpoint = o.load[0] != 0;
    if (from_checkpoint && !gpt_checkpoint_load(o.load, &ck, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s", why);
    gpt_text text = {0};
    /* the text: to train on, to draw --grads' batch from, or for the vocabulary of a new model */
    int need_text = !o.synthetic && (o.steps > 0 || o.grads[0] || !from_checkpoint);
    if (need_text && !gpt_text_load(o.data, &text, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s", why);
    gpt_config c = {(int)o.layers, (int)o.heads, (int)o.channels, (int)o.context, text.vocab, text.vocab};
    if (o.synthetic) { /* GPT-2 124M, where the command line says nothing else; its vocabulary padded to 50304 */
        if (from_checkpoint || o.sample || o.save[0])
            lb_usage_error(&program, "--synthetic trains on random tokens, for speed: no --load, --save or --sample");
        if (!flag_given(argc, argv, "--layers")) o.layers = 12;
        if (!flag_given(argc, argv, "--heads")) o.heads = 12;
        if (!flag_given(argc, argv, "--channels")) o.channels = 768;
        if (!flag_given(argc, argv, "--context")) o.context = 1024;
        if (!flag_given(argc, argv, "--batch")) o.batch = 8;
        c = (gpt_config){(int)o.layers, (int)o.heads, (int)o.channels, (int)o.context, 50257, 50304};
    }
    if (from_checkpoint) { /* the checkpoint's configuration, where the command line says nothing else */
        gpt_config here = ck.config;
        if (flag_given(argc, argv, "--layers")) here.layers = c.layers;
        if (flag_given(argc, argv, "--heads")) here.heads = c.heads;
        if (flag_given(argc, argv, "--channels")) here.channels = c.channels;
        if (flag_given(argc, argv, "--context")) here.context = c.context;
        if (!gpt_config_same(&here, &ck.config, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s: %s", o.load, why);
        c = ck.config;
        if (o.sample && c.vocab > 256)
            lb_die(LB_EXIT_USAGE, "gpt: %s: a vocabulary of %d tokens, not characters: no --sample", o.load, c.vocab);
        if (need_text && (text.vocab != c.vocab || memcmp(text.chars, ck.chars, (size_t)c.vocab)))
            lb_die(LB_EXIT_USAGE, "gpt: %s has another vocabulary (%d characters) than %s (%d)", o.data, text.vocab,
                   o.load, c.vocab);
    }
    if (o.layers < 1 || o.heads < 1 || o.channels < 1 || o.context < 1 || o.layers > 1024 || o.channels > 65536 ||
        o.context > 65536)
        lb_usage_error(&program, "--layers, --heads, --channels and --context must be positive (at most 1024, 65536)");
    const char *bad = gpt_config_error(&c);
    if (bad && (need_text || o.synthetic)) lb_usage_error(&program, "%s (L %d, H %d, C %d, T %d)", bad, c.layers, c.heads, c.channels, c.context);
    if (c.context > SOFTMAX_MAX_COLS) /* version 0's softmax over a row of T scores */
        lb_usage_error(&program, "--context: at most %d tokens (got %d)", SOFTMAX_MAX_COLS, c.context);
    if (o.batch < 1 || o.batch * c.context > (1LL << 24)) lb_usage_error(&program, "--batch: B x T must be 1..2^24");
    if (o.steps < 0 || o.warmup < 0 || o.eval_every < 0 || o.eval_batches < 1 || o.sample < 0)
        lb_usage_error(&program, "--steps, --warmup, --eval-every and --sample must be >= 0, --eval-batches >= 1");
    if (!(o.lr > 0 && o.lr < 1) || !(o.wd >= 0 && o.wd < 1) || !(o.clip > 0) || !(o.temperature > 0))
        lb_usage_error(&program, "--lr in (0, 1), --wd in [0, 1), --clip and --temperature positive");
    if (o.steps == 0 && !from_checkpoint && !o.save[0] && !o.grads[0])
        lb_usage_error(&program, "--steps 0 needs --load, --save or --grads (a model to sample from, or to write)");
    if (o.grads[0] && o.synthetic) lb_usage_error(&program, "--grads takes its batch from --data, not --synthetic");
    if (need_text && !gpt_text_fits(&text, c.context, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s", why);
    lb_check_output_path(&program, "--save", o.save);
    lb_check_output_path(&program, "--grads", o.grads);
    int B = (int)o.batch, T = c.context;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    /* the version asked for (exit 2 if this GPU is too old for it), else the last this GPU runs */
    int ver = args.version;
    if (ver >= 0)
        lb_version_runs(&program, &args, &gpu, ver, version_unavailable(ver, &c, &gpu));
    else
        for (ver = GPT_VERSIONS - 1; ver > 0 && (versions[ver].min_sm > gpu.cc || version_unavailable(ver, &c, &gpu));)
            ver--;
    /* the buffers of the version that trains, or of every version --bench times */
    unsigned buffers = version_parts[ver]->buffers;
    if (o.bench && args.version < 0)
        for (int v = 0; v < GPT_VERSIONS; v++)
            if (versions[v].min_sm <= gpu.cc && !version_unavailable(v, &c, &gpu))
                buffers |= version_parts[v]->buffers;
    lb_require_device_memory(gpt_device_bytes(&c, B, T, buffers),
                             "the model, its gradients, AdamW's moments and the activations");
    gpt_gpu g;
    gpt_gpu_alloc(&g, &c, B, T, buffers);
    size_t P = g.P;
    float *h_params = lb_host_alloc(sizeof(float) * P, "the parameters");
    /* three streams from the seed: the initial parameters and the samples (seed), the training
     * batches (seed + 1), the validation batches (seed + 2) */
    lb_rng rng, batches;
    lb_rng_seed(&rng, args.seed);
    lb_rng_seed(&batches, args.seed + 1);
    long long step0 = 0;
    if (from_checkpoint) {
        memcpy(h_params, ck.params, sizeof(float) * P); /* --bench starts every version from them */
        gpt_params_set(&g, ck.params);
        if (ck.m) CUDA_CHECK(cudaMemcpy(g.m, ck.m, sizeof(float) * P, cudaMemcpyHostToDevice));
        if (ck.v) CUDA_CHECK(cudaMemcpy(g.v, ck.v, sizeof(float) * P, cudaMemcpyHostToDevice));
        adamw_state st[2] = {{(int)ck.step, 0.0f, 0, 0.0f}, {(int)ck.step, 0.0f, 0, 0.0f}};
        CUDA_CHECK(cudaMemcpy(g.adam, st, sizeof st, cudaMemcpyHostToDevice));
        step0 = ck.step;
    } else {
        init_params(h_params, &c, &rng);
        gpt_params_set(&g, h_params);
        memcpy(ck.chars, text.chars, sizeof ck.chars);
    }
    if (!args.quiet)
        printf("gpt: L%d H%d C%d T%d, vocabulary %d, %.2f M parameters; batch %d x %d; %.2f GB of device memory; %s "
               "(%s), seed %llu\n", c.layers, c.heads, c.channels, c.context, c.vocab, P / 1e6, B, T,
               gpt_device_bytes(&c, B, T, buffers) / 1e9, gpu.prop.name, gpu.sm, args.seed);

    if (o.bench) return bench(&program, &args, &gpu, &g, h_params, B, T, o.synthetic ? NULL : &text, &batches, &o);
    if (o.grads[0]) { /* the first training batch's loss and gradient, for bench/torch_gpt.py compare */
        write_grads(&g, &text, B, T, &batches, o.grads, ver);
        if (!args.quiet) printf("gpt: the loss and gradient of one batch of %d x %d written to %s\n", B, T, o.grads);
        gpt_gpu_free(&g);
        gpt_checkpoint_free(&ck);
        gpt_text_free(&text);
        free(h_params);
        return LB_EXIT_PASS;
    }

    /* ---- training */
    int *tok = lb_host_alloc(sizeof(int) * (size_t)B * T, "a batch"), *tgt = lb_host_alloc(sizeof(int) * (size_t)B * T, "");
    gpt_step_job job = {&g, B, T, 0.0f, (float)o.wd, (float)o.clip, GPT_STEP, version_parts[ver], 0, 0};
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    float val = NAN, last_loss = NAN;
    double total_ms = 0.0;
    for (long long s = 0; s < o.steps; s++) {
        if (o.synthetic)
            for (size_t i = 0; i < (size_t)B * T; i++)
                tok[i] = (int)(lb_rng_next(&batches) % (uint64_t)c.vocab), tgt[i] = (int)(lb_rng_next(&batches) % (uint64_t)c.vocab);
        else
            gpt_batch(&text, 0, B, T, &batches, tok, tgt);
        CUDA_CHECK(cudaMemcpy(g.tokens, tok, sizeof(int) * B * T, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(g.targets, tgt, sizeof(int) * B * T, cudaMemcpyHostToDevice));
        job.lr = schedule((float)o.lr, (int)s, (int)o.warmup, (int)o.steps);
        CUDA_CHECK(cudaEventRecord(start, GPT_STREAM));
        CUDA_CHECK(versions[ver].run(&job));
        CUDA_CHECK(cudaEventRecord(stop, GPT_STREAM));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms, sumsq;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        CUDA_CHECK(cudaMemcpy(&last_loss, g.loss, sizeof last_loss, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&sumsq, g.sumsq, sizeof sumsq, cudaMemcpyDeviceToHost));
        if (!isfinite(last_loss)) lb_die(LB_EXIT_FAIL, "gpt: the loss is %g at step %lld", last_loss, step0 + s + 1);
        if (s > 0) total_ms += ms; /* the first step pays cuBLAS's start-up */
        int last = s == o.steps - 1;
        if (!args.quiet && (s % 10 == 0 || last))
            printf("step %5lld: loss %.4f  lr %.2e  norm %.2f  %.1f ms  %.0f tokens/s\n", step0 + s + 1, last_loss,
                   job.lr, sqrt(sumsq), ms, B * T / (ms * 1e-3));
        if (!o.synthetic && ((o.eval_every && (s + 1) % o.eval_every == 0) || last)) {
            val = validation_loss(&g, &text, B, T, (int)o.eval_batches, args.seed, tok, tgt, ver);
            if (!args.quiet) printf("step %5lld: validation loss %.4f\n", step0 + s + 1, val);
        }
    }
    if (o.steps > 1 && !args.quiet) {
        double tps = (double)B * T * (o.steps - 1) / (total_ms * 1e-3);
        printf("gpt: %lld steps of version %d (%s), %.3f ms a step after the first, %.0f tokens/s\n", o.steps, ver,
               versions[ver].name, total_ms / (o.steps - 1), tps);
        if (!o.synthetic) /* the speed's RESULT rows are --bench's; this one's name is its own (make bench keys rows by name) */
            printf("RESULT prog=gpt ver=%d name=train_%s size=L%d_H%d_C%d_T%d_B%d steps=%lld val_loss=%.4f check=none\n",
                   ver, versions[ver].name, c.layers, c.heads, c.channels, c.context, B, o.steps, val);
    }

    /* ---- the checkpoint and the text */
    if (o.save[0]) {
        ck.config = c, ck.step = step0 + o.steps;
        if (!ck.params) ck.params = h_params;
        float *m = lb_host_alloc(sizeof(float) * P, "AdamW's m"), *v = lb_host_alloc(sizeof(float) * P, "AdamW's v");
        CUDA_CHECK(cudaMemcpy(ck.params, g.params, sizeof(float) * P, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(m, g.m, sizeof(float) * P, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(v, g.v, sizeof(float) * P, cudaMemcpyDeviceToHost));
        float *keep_m = ck.m, *keep_v = ck.v;
        ck.m = m, ck.v = v;
        if (!gpt_checkpoint_save(o.save, &ck, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s", why);
        ck.m = keep_m, ck.v = keep_v;
        free(m), free(v);
        if (!args.quiet) printf("gpt: saved %s (step %lld)\n", o.save, (long long)ck.step);
    }
    char *sample = o.sample > 0 ? sample_text(&g, version_parts[ver], ck.chars, (int)o.sample, (float)o.temperature, &rng) : NULL;
    if (sample && !args.quiet) printf("%s\n", sample);
    if (args.quiet) { /* one line: the run, and the sample's start with its newlines shown as | */
        printf("gpt: %lld steps, loss %.4f, validation loss %.4f, %.0f tokens/s", o.steps, last_loss, val,
               o.steps > 1 ? (double)B * T * (o.steps - 1) / (total_ms * 1e-3) : 0.0);
        if (sample) {
            printf(", sample \"");
            for (int i = 0; sample[i] && i < 60; i++) putchar(sample[i] == '\n' ? '|' : sample[i]);
            printf("\"");
        }
        printf("\n");
    }
    free(sample);

    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    gpt_gpu_free(&g);
    if (ck.params == h_params) ck.params = NULL;
    gpt_checkpoint_free(&ck);
    gpt_text_free(&text);
    free(h_params), free(tok), free(tgt);
    return LB_EXIT_PASS;
}
