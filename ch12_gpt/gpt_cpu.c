/* gpt_cpu.c - ch12's GPT on the CPU in double (gpt_cpu.h): the parameters' layout, each layer's
 * forward and backward, and the model's loss and gradient. Written for clarity, not speed: it
 * runs the tiny configurations of the checks (a few layers of a few channels).
 *   Checked by tests/test_gpt.c: every parameter's gradient against central differences of the
 *   loss, and the layers against known answers.
 */
#include "gpt_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the parameters' layout */

const char *gpt_config_error(const gpt_config *c)
{
    if (c->layers < 1 || c->heads < 1 || c->channels < 1 || c->context < 1 || c->vocab < 1)
        return "layers, heads, channels, context and vocabulary must be positive";
    if (c->channels % c->heads) return "the heads must divide the channels";
    if (c->vocab_padded < c->vocab) return "the padded vocabulary must hold the vocabulary";
    if (c->layers > 1024 || c->channels > 65536 || c->context > 65536 || c->vocab_padded > (1 << 24))
        return "a dimension past what the chapter handles (layers 1024, channels and context 65536, vocabulary 2^24)";
    return NULL;
}

static const char *const layer_names[GPT_LAYER_TENSORS] = {"ln1_w", "ln1_b", "qkv_w",  "qkv_b", "proj_w",   "proj_b",
                                                           "ln2_w", "ln2_b", "fc_w",   "fc_b",  "fcproj_w", "fcproj_b"};

/* a layer's tensor's rows and columns (a vector is 1 row) */
static void layer_shape(const gpt_config *c, int t, size_t *rows, size_t *cols)
{
    size_t C = (size_t)c->channels;
    static const int out_mult[GPT_LAYER_TENSORS] = {1, 1, 3, 3, 1, 1, 1, 1, 4, 4, 1, 1};
    static const int in_mult[GPT_LAYER_TENSORS] = {0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 0}; /* 0: a vector */
    *rows = in_mult[t] ? out_mult[t] * C : 1;
    *cols = in_mult[t] ? in_mult[t] * C : out_mult[t] * C;
}
static size_t layer_params(const gpt_config *c)
{
    size_t n = 0, r, k;
    for (int t = 0; t < GPT_LAYER_TENSORS; t++) layer_shape(c, t, &r, &k), n += r * k;
    return n;
}

size_t gpt_offset_wte(const gpt_config *c) { (void)c; return 0; }
size_t gpt_offset_wpe(const gpt_config *c) { return (size_t)c->vocab_padded * c->channels; }
size_t gpt_offset(const gpt_config *c, int layer, int tensor)
{
    size_t at = gpt_offset_wpe(c) + (size_t)c->context * c->channels + (size_t)layer * layer_params(c), r, k;
    for (int t = 0; t < tensor; t++) layer_shape(c, t, &r, &k), at += r * k;
    return at;
}
size_t gpt_offset_lnf(const gpt_config *c, int bias)
{
    return gpt_offset(c, c->layers, 0) + (size_t)bias * c->channels;
}
size_t gpt_param_count(const gpt_config *c) { return gpt_offset_lnf(c, 1) + (size_t)c->channels; }
size_t gpt_tensor_count(const gpt_config *c) { return 4 + (size_t)GPT_LAYER_TENSORS * c->layers; }

gpt_tensor gpt_tensor_at(const gpt_config *c, size_t i)
{
    size_t C = (size_t)c->channels, last = gpt_tensor_count(c) - 2;
    if (i == 0) return (gpt_tensor){"wte", -1, gpt_offset_wte(c), (size_t)c->vocab_padded, C};
    if (i == 1) return (gpt_tensor){"wpe", -1, gpt_offset_wpe(c), (size_t)c->context, C};
    if (i >= last) return (gpt_tensor){i == last ? "lnf_w" : "lnf_b", -1, gpt_offset_lnf(c, (int)(i - last)), 1, C};
    int layer = (int)((i - 2) / GPT_LAYER_TENSORS), t = (int)((i - 2) % GPT_LAYER_TENSORS);
    gpt_tensor g = {layer_names[t], layer, gpt_offset(c, layer, t), 0, 0};
    layer_shape(c, t, &g.rows, &g.cols);
    return g;
}

/* ---------------------------------------------------------------- the layers */

void gpt_embed_cpu(double *x, const int *tokens, const double *wte, const double *wpe, int B, int T, int C)
{
    for (int n = 0; n < B * T; n++)
        for (int c = 0; c < C; c++) x[(size_t)n * C + c] = wte[(size_t)tokens[n] * C + c] + wpe[(size_t)(n % T) * C + c];
}
void gpt_embed_backward_cpu(double *dwte, double *dwpe, const double *dx, const int *tokens, int B, int T, int C)
{
    for (int n = 0; n < B * T; n++)
        for (int c = 0; c < C; c++) {
            dwte[(size_t)tokens[n] * C + c] += dx[(size_t)n * C + c];
            dwpe[(size_t)(n % T) * C + c] += dx[(size_t)n * C + c]; /* a position's, summed over the batch */
        }
}

void gpt_layernorm_cpu(double *out, double *mean, double *rstd, const double *x, const double *w, const double *b,
                       int N, int C)
{
    for (int n = 0; n < N; n++) {
        const double *xr = x + (size_t)n * C;
        double m = 0.0, v = 0.0;
        for (int c = 0; c < C; c++) m += xr[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
        double r = 1.0 / sqrt(v / C + GPT_LN_EPS);
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = (xr[c] - m) * r * w[c] + b[c];
        mean[n] = m, rstd[n] = r;
    }
}
/* with xhat = (x - mean) rstd and g = dout w: dx = rstd (g - mean(g) - xhat mean(g xhat)) */
void gpt_layernorm_backward_cpu(double *dx, double *dw, double *db, const double *dout, const double *x,
                                const double *mean, const double *rstd, const double *w, int N, int C)
{
    for (int n = 0; n < N; n++) {
        const double *xr = x + (size_t)n * C, *dr = dout + (size_t)n * C;
        double g_mean = 0.0, gx_mean = 0.0;
        for (int c = 0; c < C; c++) {
            double xhat = (xr[c] - mean[n]) * rstd[n];
            g_mean += dr[c] * w[c];
            gx_mean += dr[c] * w[c] * xhat;
            dw[c] += dr[c] * xhat;
            db[c] += dr[c];
        }
        g_mean /= C, gx_mean /= C;
        for (int c = 0; c < C; c++) {
            double xhat = (xr[c] - mean[n]) * rstd[n];
            dx[(size_t)n * C + c] += rstd[n] * (dr[c] * w[c] - g_mean - xhat * gx_mean);
        }
    }
}

void gpt_linear_cpu(double *out, const double *x, const double *W, const double *b, int N, int I, int O)
{
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) {
            double s = b ? b[o] : 0.0;
            for (int i = 0; i < I; i++) s += x[(size_t)n * I + i] * W[(size_t)o * I + i];
            out[(size_t)n * O + o] = s;
        }
}
void gpt_linear_backward_cpu(double *dx, double *dW, double *db, const double *dout, const double *x, const double *W,
                             int N, int I, int O)
{
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) {
            double d = dout[(size_t)n * O + o];
            if (db) db[o] += d;
            for (int i = 0; i < I; i++) {
                dx[(size_t)n * I + i] += d * W[(size_t)o * I + i];
                dW[(size_t)o * I + i] += d * x[(size_t)n * I + i];
            }
        }
}

/* per (sequence b, head h): a_ij = q_i . k_j / sqrt(hs) for j <= i, att = softmax over j,
 * y_i = sum_j att_ij v_j */
void gpt_attention_cpu(double *y, double *att, const double *qkv, int B, int T, int C, int H)
{
    int hs = C / H;
    double scale = 1.0 / sqrt((double)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + (size_t)(b * T + i) * 3 * C + h * hs;
                double *a = att + (((size_t)b * H + h) * T + i) * T, m = -INFINITY, sum = 0.0;
                for (int j = 0; j < T; j++) {
                    a[j] = 0.0;
                    if (j > i) continue;
                    const double *k = qkv + (size_t)(b * T + j) * 3 * C + C + h * hs;
                    double s = 0.0;
                    for (int d = 0; d < hs; d++) s += q[d] * k[d];
                    a[j] = s * scale;
                    m = fmax(m, a[j]);
                }
                for (int j = 0; j <= i; j++) sum += (a[j] = exp(a[j] - m));
                for (int j = 0; j <= i; j++) a[j] /= sum;
                double *yr = y + (size_t)(b * T + i) * C + h * hs;
                for (int d = 0; d < hs; d++) {
                    double s = 0.0;
                    for (int j = 0; j <= i; j++) s += a[j] * qkv[(size_t)(b * T + j) * 3 * C + 2 * C + h * hs + d];
                    yr[d] = s;
                }
            }
}
/* datt_ij = dy_i . v_j; dv_j += att_ij dy_i; the softmax's dlogit_ij = att_ij (datt_ij -
 * sum_k att_ik datt_ik); dq_i += dlogit_ij k_j / sqrt(hs), dk_j += dlogit_ij q_i / sqrt(hs) */
void gpt_attention_backward_cpu(double *dqkv, const double *dy, const double *att, const double *qkv, int B, int T,
                                int C, int H)
{
    int hs = C / H;
    double scale = 1.0 / sqrt((double)hs);
    double *datt = (double *)malloc(sizeof(double) * (size_t)T);
    if (!datt) abort(); /* T doubles: the checks' sizes */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const double *a = att + (((size_t)b * H + h) * T + i) * T, *dyr = dy + (size_t)(b * T + i) * C + h * hs;
                const double *q = qkv + (size_t)(b * T + i) * 3 * C + h * hs;
                double *dq = dqkv + (size_t)(b * T + i) * 3 * C + h * hs, rowsum = 0.0;
                for (int j = 0; j <= i; j++) {
                    const double *v = qkv + (size_t)(b * T + j) * 3 * C + 2 * C + h * hs;
                    double *dv = dqkv + (size_t)(b * T + j) * 3 * C + 2 * C + h * hs;
                    double s = 0.0;
                    for (int d = 0; d < hs; d++) {
                        s += dyr[d] * v[d];
                        dv[d] += a[j] * dyr[d];
                    }
                    datt[j] = s;
                    rowsum += a[j] * s;
                }
                for (int j = 0; j <= i; j++) {
                    double dl = a[j] * (datt[j] - rowsum) * scale;
                    const double *k = qkv + (size_t)(b * T + j) * 3 * C + C + h * hs;
                    double *dk = dqkv + (size_t)(b * T + j) * 3 * C + C + h * hs;
                    for (int d = 0; d < hs; d++) {
                        dq[d] += dl * k[d];
                        dk[d] += dl * q[d];
                    }
                }
            }
    free(datt);
}

#define GELU_K 0.7978845608028654 /* sqrt(2 / pi) */
void gpt_gelu_cpu(double *out, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = 0.5 * x[i] * (1.0 + tanh(GELU_K * (x[i] + 0.044715 * x[i] * x[i] * x[i])));
}
void gpt_gelu_backward_cpu(double *dx, const double *dout, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double u = GELU_K * (x[i] + 0.044715 * x[i] * x[i] * x[i]), t = tanh(u);
        double du = GELU_K * (1.0 + 3.0 * 0.044715 * x[i] * x[i]);
        dx[i] += dout[i] * (0.5 * (1.0 + t) + 0.5 * x[i] * (1.0 - t * t) * du);
    }
}

double gpt_classifier_cpu(double *probs, const double *x, const double *wte, const int *targets, int N, int C, int V)
{
    double loss = 0.0;
    for (int n = 0; n < N; n++) {
        double *p = probs + (size_t)n * V, m = -INFINITY, sum = 0.0;
        gpt_linear_cpu(p, x + (size_t)n * C, wte, NULL, 1, C, V); /* the logits, tied: wte's first V rows */
        for (int v = 0; v < V; v++) m = fmax(m, p[v]);
        for (int v = 0; v < V; v++) sum += (p[v] = exp(p[v] - m));
        for (int v = 0; v < V; v++) p[v] /= sum;
        loss -= log(p[targets[n]]);
    }
    return loss / N;
}
void gpt_classifier_backward_cpu(double *dx, double *dwte, const double *probs, const double *x, const double *wte,
                                 const int *targets, int N, int C, int V)
{
    double *dl = (double *)malloc(sizeof(double) * (size_t)V);
    if (!dl) abort();
    for (int n = 0; n < N; n++) {
        for (int v = 0; v < V; v++) dl[v] = (probs[(size_t)n * V + v] - (v == targets[n])) / N;
        gpt_linear_backward_cpu(dx + (size_t)n * C, dwte, NULL, dl, x + (size_t)n * C, wte, 1, C, V);
    }
    free(dl);
}

/* ---------------------------------------------------------------- the model */

/* what the forward keeps for the backward, one block of doubles */
typedef struct {
    double *res;               /* the residual stream entering each layer and leaving the last: (L + 1) N C */
    double *mid;               /* after each layer's attention: L N C */
    double *ln1, *ln2;         /* L N C each */
    double *mean1, *rstd1, *mean2, *rstd2; /* L N each */
    double *qkv;               /* L N 3C */
    double *att;               /* L B H T T */
    double *atty, *fch, *gelu; /* L N C, L N 4C, L N 4C */
    double *lnf, *meanf, *rstdf, *probs; /* N C, N, N, N V */
    double *block;
} gpt_acts;

static int acts_alloc(gpt_acts *a, const gpt_config *c, int B, int T)
{
    size_t L = (size_t)c->layers, N = (size_t)B * T, C = (size_t)c->channels, H = (size_t)c->heads;
    size_t sizes[] = {(L + 1) * N * C, L * N * C, L * N * C, L * N * C, L * N, L * N, L * N, L * N, L * N * 3 * C,
                      L * B * H * T * T, L * N * C, L * N * 4 * C, L * N * 4 * C, N * C, N, N, N * (size_t)c->vocab};
    double **ptrs[] = {&a->res,  &a->mid,  &a->ln1,  &a->ln2,  &a->mean1, &a->rstd1, &a->mean2, &a->rstd2, &a->qkv,
                       &a->att,  &a->atty, &a->fch,  &a->gelu, &a->lnf,   &a->meanf, &a->rstdf, &a->probs};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += sizes[i];
    a->block = (double *)calloc(total, sizeof(double));
    if (!a->block) return 0;
    double *at = a->block;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) *ptrs[i] = at, at += sizes[i];
    return 1;
}

/* layer l's parameter t */
#define P(t) (params + gpt_offset(c, l, (t)))
#define G(t) (grads + gpt_offset(c, l, (t)))

static double forward(const gpt_config *c, const double *params, const int *tokens, const int *targets, int B, int T,
                      gpt_acts *a)
{
    int N = B * T, C = c->channels, H = c->heads;
    size_t NC = (size_t)N * C;
    gpt_embed_cpu(a->res, tokens, params + gpt_offset_wte(c), params + gpt_offset_wpe(c), B, T, C);
    for (int l = 0; l < c->layers; l++) {
        const double *x = a->res + l * NC;
        double *ln1 = a->ln1 + l * NC, *qkv = a->qkv + l * 3 * NC, *atty = a->atty + l * NC, *mid = a->mid + l * NC;
        double *ln2 = a->ln2 + l * NC, *fch = a->fch + l * 4 * NC, *gelu = a->gelu + l * 4 * NC, *out = a->res + (l + 1) * NC;
        gpt_layernorm_cpu(ln1, a->mean1 + (size_t)l * N, a->rstd1 + (size_t)l * N, x, P(GPT_LN1_W), P(GPT_LN1_B), N, C);
        gpt_linear_cpu(qkv, ln1, P(GPT_QKV_W), P(GPT_QKV_B), N, C, 3 * C);
        gpt_attention_cpu(atty, a->att + (size_t)l * B * H * T * T, qkv, B, T, C, H);
        gpt_linear_cpu(mid, atty, P(GPT_PROJ_W), P(GPT_PROJ_B), N, C, C);
        for (size_t i = 0; i < NC; i++) mid[i] += x[i]; /* the residual */
        gpt_layernorm_cpu(ln2, a->mean2 + (size_t)l * N, a->rstd2 + (size_t)l * N, mid, P(GPT_LN2_W), P(GPT_LN2_B), N, C);
        gpt_linear_cpu(fch, ln2, P(GPT_FC_W), P(GPT_FC_B), N, C, 4 * C);
        gpt_gelu_cpu(gelu, fch, 4 * NC);
        gpt_linear_cpu(out, gelu, P(GPT_FCPROJ_W), P(GPT_FCPROJ_B), N, 4 * C, C);
        for (size_t i = 0; i < NC; i++) out[i] += mid[i];
    }
    gpt_layernorm_cpu(a->lnf, a->meanf, a->rstdf, a->res + (size_t)c->layers * NC, params + gpt_offset_lnf(c, 0),
                      params + gpt_offset_lnf(c, 1), N, C);
    return gpt_classifier_cpu(a->probs, a->lnf, params + gpt_offset_wte(c), targets, N, C, c->vocab);
}

/* the backward, layer by layer from the top; d (N C) carries the residual stream's gradient */
static int backward(const gpt_config *c, const double *params, const int *tokens, const int *targets, int B, int T,
                    const gpt_acts *a, double *grads)
{
    int N = B * T, C = c->channels, H = c->heads;
    size_t NC = (size_t)N * C;
    double *d = (double *)calloc(NC * 7, sizeof(double));   /* d, dmid, dln, datty (N C each), dqkv (N 3C) */
    double *big = (double *)calloc(NC * 8, sizeof(double)); /* dgelu, dfch (N 4C each) */
    if (!d || !big) {
        free(d), free(big);
        return 0;
    }
    double *dmid = d + NC, *dln = d + 2 * NC, *datty = d + 3 * NC, *dqkv = d + 4 * NC, *dgelu = big, *dfch = big + 4 * NC;
    memset(grads, 0, sizeof(double) * gpt_param_count(c));
    gpt_classifier_backward_cpu(dln, grads + gpt_offset_wte(c), a->probs, a->lnf, params + gpt_offset_wte(c), targets, N,
                                C, c->vocab);
    gpt_layernorm_backward_cpu(d, grads + gpt_offset_lnf(c, 0), grads + gpt_offset_lnf(c, 1), dln,
                               a->res + (size_t)c->layers * NC, a->meanf, a->rstdf, params + gpt_offset_lnf(c, 0), N, C);
    for (int l = c->layers - 1; l >= 0; l--) {
        const double *x = a->res + l * NC, *mid = a->mid + l * NC;
        /* the MLP: out = mid + fcproj(gelu(fc(ln2(mid)))) */
        memcpy(dmid, d, sizeof(double) * NC);
        memset(dgelu, 0, sizeof(double) * 4 * NC);
        memset(dfch, 0, sizeof(double) * 4 * NC);
        memset(dln, 0, sizeof(double) * NC);
        gpt_linear_backward_cpu(dgelu, G(GPT_FCPROJ_W), G(GPT_FCPROJ_B), d, a->gelu + l * 4 * NC, P(GPT_FCPROJ_W), N,
                                4 * C, C);
        gpt_gelu_backward_cpu(dfch, dgelu, a->fch + l * 4 * NC, 4 * NC);
        gpt_linear_backward_cpu(dln, G(GPT_FC_W), G(GPT_FC_B), dfch, a->ln2 + l * NC, P(GPT_FC_W), N, C, 4 * C);
        gpt_layernorm_backward_cpu(dmid, G(GPT_LN2_W), G(GPT_LN2_B), dln, mid, a->mean2 + (size_t)l * N,
                                   a->rstd2 + (size_t)l * N, P(GPT_LN2_W), N, C);
        /* attention: mid = x + proj(attention(qkv(ln1(x)))) */
        memcpy(d, dmid, sizeof(double) * NC);
        memset(datty, 0, sizeof(double) * NC);
        memset(dqkv, 0, sizeof(double) * 3 * NC);
        memset(dln, 0, sizeof(double) * NC);
        gpt_linear_backward_cpu(datty, G(GPT_PROJ_W), G(GPT_PROJ_B), dmid, a->atty + l * NC, P(GPT_PROJ_W), N, C, C);
        gpt_attention_backward_cpu(dqkv, datty, a->att + (size_t)l * B * H * T * T, a->qkv + l * 3 * NC, B, T, C, H);
        gpt_linear_backward_cpu(dln, G(GPT_QKV_W), G(GPT_QKV_B), dqkv, a->ln1 + l * NC, P(GPT_QKV_W), N, C, 3 * C);
        gpt_layernorm_backward_cpu(d, G(GPT_LN1_W), G(GPT_LN1_B), dln, x, a->mean1 + (size_t)l * N,
                                   a->rstd1 + (size_t)l * N, P(GPT_LN1_W), N, C);
    }
    gpt_embed_backward_cpu(grads + gpt_offset_wte(c), grads + gpt_offset_wpe(c), d, tokens, B, T, C);
    free(d), free(big);
    return 1;
}
#undef P
#undef G

double gpt_model_cpu(const gpt_config *c, const double *params, const int *tokens, const int *targets, int B, int T,
                     double *grads, const char **err)
{
    gpt_acts a;
    if (!acts_alloc(&a, c, B, T)) {
        *err = "out of host memory for the CPU model's activations";
        return NAN;
    }
    double loss = forward(c, params, tokens, targets, B, T, &a);
    if (grads && !backward(c, params, tokens, targets, B, T, &a, grads)) {
        *err = "out of host memory for the CPU model's gradients";
        loss = NAN;
    }
    free(a.block);
    return loss;
}
