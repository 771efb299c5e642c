/* test_gpt.c - host-only tests of ch12_gpt's CPU model and data code:
 *   the model: every parameter's gradient (gpt_model_cpu) against central differences of the
 *   loss at two tiny configurations, the padded vocabulary's rows and the unused positions at
 *   zero (tests/ch12_gpt.sh plants the bugs in gpt_cpu.c and sees this test fail);
 *   the layers against known answers, attention's causality; the parameters' layout tiling the
 *   array;
 *   the data: a text's vocabulary, split and tokens; bad files (missing, empty, binary, not ASCII,
 *   too short) refused with their reason; the batch generator's first numbers (common's lb_rng,
 *   which bench/torch_gpt.py must draw the same); a checkpoint written and read back bit for bit, and truncated, foreign,
 *   or of another configuration refused. Needs no GPU. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "../ch12_gpt/gpt_cpu.h"
#include "../ch12_gpt/gpt_data.h"
#include "unit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the model's gradient */

static double uniform(lb_rng *r) { return (double)(lb_rng_next(r) >> 11) * 0x1.0p-53 * 2.0 - 1.0; }

/* the worst |analytic - numeric| / (|numeric| + 1e-4) over every parameter; *zero_ok: the rows no
 * input touches have exactly zero gradient */
static double gradient_error(const gpt_config *c, int B, int T, uint64_t seed, int *zero_ok)
{
    size_t P = gpt_param_count(c);
    double *p = malloc(sizeof(double) * P), *g = malloc(sizeof(double) * P);
    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
    lb_rng s;
    lb_rng_seed(&s, seed);
    for (size_t i = 0; i < P; i++) p[i] = 0.5 * uniform(&s);
    for (int i = 0; i < B * T; i++) tok[i] = (int)(lb_rng_next(&s) % c->vocab), tgt[i] = (int)(lb_rng_next(&s) % c->vocab);
    const char *err = NULL;
    gpt_model_cpu(c, p, tok, tgt, B, T, g, &err);
    double worst = 0.0, h = 1e-5;
    for (size_t i = 0; i < P; i++) {
        double keep = p[i];
        p[i] = keep + h;
        double up = gpt_model_cpu(c, p, tok, tgt, B, T, NULL, &err);
        p[i] = keep - h;
        double down = gpt_model_cpu(c, p, tok, tgt, B, T, NULL, &err);
        p[i] = keep;
        double num = (up - down) / (2 * h), e = fabs(g[i] - num) / (fabs(num) + 1e-4);
        worst = isnan(e) ? INFINITY : fmax(worst, e);
    }
    /* rows of wte past V, and of wpe past T, take no part: their gradient is exactly zero */
    *zero_ok = 1;
    for (size_t i = (size_t)c->vocab * c->channels; i < (size_t)c->vocab_padded * c->channels; i++) *zero_ok &= g[i] == 0.0;
    for (size_t i = gpt_offset_wpe(c) + (size_t)T * c->channels; i < gpt_offset(c, 0, 0); i++) *zero_ok &= g[i] == 0.0;
    free(p), free(g), free(tok), free(tgt);
    return worst;
}

static void test_gradient(void)
{
    gpt_config a = {2, 2, 8, 6, 7, 9}, b = {1, 3, 6, 4, 5, 5};
    int zero_a, zero_b;
    double ea = gradient_error(&a, 2, 5, 1, &zero_a), eb = gradient_error(&b, 3, 4, 2, &zero_b);
    printf("test_gpt: gradient vs central differences, worst relative error %.2e (L2 H2 C8) and %.2e (L1 H3 C6)\n", ea, eb);
    CHECK(ea < 1e-5);
    CHECK(eb < 1e-5);
    CHECK(zero_a && zero_b);
}

/* ---------------------------------------------------------------- the layers */

static void test_layers(void)
{
    /* LayerNorm of a constant row is its bias; of (1, 3) with w = 1, b = 0 it is (-1, 1) */
    double x[4] = {2, 2, 1, 3}, w[2] = {1, 1}, b[2] = {0.5, -0.5}, out[4], mean[2], rstd[2];
    gpt_layernorm_cpu(out, mean, rstd, x, w, b, 2, 2);
    CHECK(out[0] == 0.5 && out[1] == -0.5);
    CHECK(fabs(out[2] - 0.5 + 1.0) < 1e-4 && fabs(out[3] + 0.5 - 1.0) < 1e-4);
    /* attention at T = 1 returns V; at T = 2 with equal logits, the second row is the mean of V */
    double qkv[2 * 6] = {1, 0, 0, 1, 5, 7, 1, 0, 0, 1, 9, 3}, y[4], att[8];
    gpt_attention_cpu(y, att, qkv, 1, 2, 2, 1);
    CHECK(y[0] == 5 && y[1] == 7);
    CHECK(fabs(y[2] - 7) < 1e-12 && fabs(y[3] - 5) < 1e-12);
    CHECK(att[1] == 0.0); /* above the diagonal */
    /* causal: changing the last position's K and V leaves every earlier row of y as it was */
    double big[5 * 3 * 4], y1[5 * 4], y2[5 * 4], att5[2 * 25];
    lb_rng s;
    lb_rng_seed(&s, 3);
    for (int i = 0; i < 5 * 12; i++) big[i] = uniform(&s);
    gpt_attention_cpu(y1, att5, big, 1, 5, 4, 2);
    for (int i = 4 * 12 + 4; i < 5 * 12; i++) big[i] += 1.0;
    gpt_attention_cpu(y2, att5, big, 1, 5, 4, 2);
    CHECK(!memcmp(y1, y2, sizeof(double) * 4 * 4) && memcmp(y1 + 16, y2 + 16, sizeof(double) * 4));
    /* GELU: 0 at 0 with slope 1/2; about x far right, 0 far left */
    double g[3], in[3] = {0, 10, -10}, dg[3] = {0, 0, 0}, one[3] = {1, 1, 1};
    gpt_gelu_cpu(g, in, 3);
    gpt_gelu_backward_cpu(dg, one, in, 3);
    CHECK(g[0] == 0 && fabs(g[1] - 10) < 1e-9 && fabs(g[2]) < 1e-9 && dg[0] == 0.5);
    /* the classifier with equal logits: the loss is log V */
    double xc[2] = {0, 0}, wte[6] = {1, 2, 3, 4, 5, 6}, probs[3];
    int target = 2;
    CHECK(fabs(gpt_classifier_cpu(probs, xc, wte, &target, 1, 2, 3) - log(3.0)) < 1e-12);
}

static void test_layout(void)
{
    gpt_config c = {3, 2, 8, 5, 7, 8};
    size_t at = 0, n = gpt_tensor_count(&c);
    CHECK(n == 4 + 12 * 3);
    for (size_t i = 0; i < n; i++) { /* tensors tile the array in order, no gap, no overlap */
        gpt_tensor t = gpt_tensor_at(&c, i);
        CHECK(t.offset == at);
        at += t.rows * t.cols;
    }
    CHECK(at == gpt_param_count(&c));
    CHECK(gpt_tensor_at(&c, 2 + 12 + 2).offset == gpt_offset(&c, 1, GPT_QKV_W));
    CHECK(gpt_tensor_at(&c, 2 + 12 + 2).rows == 24 && gpt_tensor_at(&c, 2 + 12 + 2).cols == 8);
    CHECK(!strcmp(gpt_tensor_at(&c, n - 1).name, "lnf_b"));
    gpt_config bad = {2, 3, 8, 5, 7, 7}, small_pad = {2, 2, 8, 5, 7, 6};
    CHECK(gpt_config_error(&bad) && gpt_config_error(&small_pad) && !gpt_config_error(&c));
}

/* ---------------------------------------------------------------- the data */

static char dir[] = "/tmp/test_gpt_XXXXXX";
static const char *path_of(const char *name)
{
    static char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}
static void write_file(const char *name, const void *bytes, size_t n)
{
    FILE *f = fopen(path_of(name), "wb");
    if (f) fwrite(bytes, 1, n, f), fclose(f);
}

/* load must fail, and its reason contain `want` */
static void refused(const char *name, const char *want)
{
    gpt_text t;
    char why[512] = "";
    int ok = gpt_text_load(path_of(name), &t, why, sizeof why);
    if (ok) gpt_text_free(&t);
    CHECK(!ok);
    CHECK(strstr(why, want) != NULL);
    if (!strstr(why, want)) fprintf(stderr, "  (%s: got \"%s\", wanted \"%s\")\n", name, why, want);
}

static void test_text(void)
{
    const char *text = "to be, or not to be:\nthat is the question.\n"; /* 43 characters */
    write_file("ok.txt", text, strlen(text));
    gpt_text t;
    char why[512];
    CHECK(gpt_text_load(path_of("ok.txt"), &t, why, sizeof why));
    CHECK(t.n == strlen(text) && t.n_train == 38); /* floor(0.9 x 43) */
    CHECK(t.vocab == 17);                           /* \n space , . : a b e h i n o q r s t u */
    CHECK(t.chars[0] == '\n' && t.chars[1] == ' ' && t.chars[t.vocab - 1] == 'u');
    int round_trip = 1;
    for (size_t i = 0; i < t.n; i++) round_trip &= t.chars[t.tokens[i]] == (unsigned char)text[i];
    CHECK(round_trip);
    CHECK(gpt_text_fits(&t, 4, why, sizeof why));
    CHECK(!gpt_text_fits(&t, 4 + 1, why, sizeof why) && strstr(why, "too short")); /* validation: 5 characters */
    /* a batch: targets are the inputs one further on, both inside their part */
    lb_rng s;
    lb_rng_seed(&s, 7);
    int in[3 * 4], tg[3 * 4], inside = 1;
    gpt_batch(&t, 1, 3, 4, &s, in, tg);
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < 3; i++) inside &= tg[b * 4 + i] == in[b * 4 + i + 1];
    CHECK(inside);
    gpt_text_free(&t);

    /* the chapter's corpus: 5,057,282 characters, 84 of them distinct (newline and 83 printable) */
    if (gpt_text_load("../datasets/shakespeare.txt", &t, why, sizeof why)) {
        CHECK(t.n == 5057282 && t.vocab == 84 && t.chars[0] == '\n' && t.n_train == 4551553);
        gpt_text_free(&t);
    } else {
        CHECK(!"../datasets/shakespeare.txt loads (run from a chapter folder or tests/)");
        fprintf(stderr, "  (%s)\n", why);
    }

    refused("missing.txt", "No such file");
    write_file("empty.txt", "", 0);
    refused("empty.txt", "empty");
    write_file("binary.txt", "abc\0def", 7);
    refused("binary.txt", "a zero byte at offset 3");
    write_file("utf8.txt", "ab\ncd\xe2\x80\x99s", 9);
    refused("utf8.txt", "byte 0xE2 at offset 5 (line 2, column 3)");
    write_file("cr.txt", "ab\r\n", 4);
    refused("cr.txt", "byte 0x0D at offset 2");
}

static void test_rng(void)
{
    /* gpt_batch over 100 tokens 0..99 (90 train), 3 sequences of 4 from seed 7: they start at 21,
     * 6 and 39 (bench/torch_gpt.py's selftest holds its generator to the same) */
    int tokens[100], in[12], tg[12];
    for (int i = 0; i < 100; i++) tokens[i] = i;
    gpt_text t = {.n = 100, .tokens = tokens, .vocab = 100, .n_train = 90};
    lb_rng r7;
    lb_rng_seed(&r7, 7);
    gpt_batch(&t, 0, 3, 4, &r7, in, tg);
    CHECK(in[0] == 21 && in[4] == 6 && in[8] == 39 && tg[0] == 22 && tg[11] == 43);
    /* splitmix64 with the state 0 (lb_rng_seed mixes a seed first): its published first outputs,
     * which bench/torch_gpt.py checks too */
    lb_rng r = {0};
    CHECK(lb_rng_next(&r) == 0xE220A8397B1DCDAFull);
    CHECK(lb_rng_next(&r) == 0x6E789E6AA1B965F4ull);
}

static void test_checkpoint(void)
{
    gpt_config c = {2, 2, 8, 6, 7, 8};
    size_t P = gpt_param_count(&c);
    gpt_checkpoint ck = {c, "abcdefg", 42, malloc(4 * P), malloc(4 * P), malloc(4 * P)}, back;
    for (size_t i = 0; i < P; i++) ck.params[i] = (float)i * 0.25f, ck.m[i] = -(float)i, ck.v[i] = (float)i * i;
    char why[512];
    CHECK(gpt_checkpoint_save(path_of("a.ckpt"), &ck, why, sizeof why));
    CHECK(gpt_checkpoint_load(path_of("a.ckpt"), &back, why, sizeof why));
    CHECK(gpt_config_same(&c, &back.config, why, sizeof why) && back.step == 42 && !memcmp(back.chars, ck.chars, 256));
    CHECK(back.m && back.v && !memcmp(back.params, ck.params, 4 * P) && !memcmp(back.m, ck.m, 4 * P) &&
          !memcmp(back.v, ck.v, 4 * P));
    gpt_checkpoint_free(&back);
    /* without moments */
    float *m = ck.m, *v = ck.v;
    ck.m = ck.v = NULL;
    CHECK(gpt_checkpoint_save(path_of("b.ckpt"), &ck, why, sizeof why));
    CHECK(gpt_checkpoint_load(path_of("b.ckpt"), &back, why, sizeof why) && !back.m && !back.v);
    gpt_checkpoint_free(&back);
    /* truncated by one byte, one byte too long, not ours, another configuration */
    FILE *f = fopen(path_of("b.ckpt"), "rb");
    size_t n = 0;
    unsigned char *bytes = malloc(64 + 4 * P + 1024);
    if (f) n = fread(bytes, 1, 64 + 4 * P + 1024, f), fclose(f);
    write_file("short.ckpt", bytes, n - 1);
    CHECK(!gpt_checkpoint_load(path_of("short.ckpt"), &back, why, sizeof why) && strstr(why, "truncated"));
    bytes[n] = 0;
    write_file("long.ckpt", bytes, n + 1);
    CHECK(!gpt_checkpoint_load(path_of("long.ckpt"), &back, why, sizeof why) && strstr(why, "not ours"));
    write_file("foreign.ckpt", "GPT2 weights", 12);
    CHECK(!gpt_checkpoint_load(path_of("foreign.ckpt"), &back, why, sizeof why) && strstr(why, "not a checkpoint"));
    gpt_config other = c;
    other.layers = 3;
    CHECK(!gpt_config_same(&other, &c, why, sizeof why) && strstr(why, "layers 3 here, 2 in the checkpoint"));
    free(bytes), free(ck.params), free(m), free(v);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("test_gpt: mkdtemp");
        return 1;
    }
    test_layout();
    test_layers();
    test_gradient();
    test_text();
    test_rng();
    test_checkpoint();
    const char *names[] = {"ok.txt", "empty.txt", "binary.txt", "utf8.txt", "cr.txt", "a.ckpt", "b.ckpt",
                           "short.ckpt", "long.ckpt", "foreign.ckpt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) remove(path_of(names[i]));
    rmdir(dir);
    printf("test_gpt: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
