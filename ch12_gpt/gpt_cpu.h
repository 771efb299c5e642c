/* gpt_cpu.h - ch12's GPT on the CPU in double: the model's shape, its parameters' layout, each
 * layer's forward and backward, and the whole model's loss and gradient. It is the reference
 * every GPU version is held to, and is itself checked by finite differences (tests/test_gpt.c).
 *
 * The model is GPT-2's: token and position embeddings; L blocks of
 *   x = x + proj(attention(LN1(x)))      causal self-attention, H heads of C/H
 *   x = x + fcproj(GELU(fc(LN2(x))))     the MLP, 4C wide, GELU in its tanh form
 * a final LayerNorm, and the output layer tied to the token embedding (logits = x wte^T). The
 * loss is the mean cross-entropy of the next token over all B T positions.
 *
 * Shapes, row-major: a batch is B sequences of T tokens; activations are (B T, width). A linear
 * layer's weight is (out, in), as PyTorch's nn.Linear stores it: y = x W^T + b. Host C only. */
#ifndef GPT_CPU_H
#define GPT_CPU_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int layers;       /* L */
    int heads;        /* H, dividing C */
    int channels;     /* C */
    int context;      /* T_max: the position embedding's rows, the longest sequence */
    int vocab;        /* V: the tokens */
    int vocab_padded; /* Vp >= V: the token embedding's rows (GPT-2 pads 50257 to 50304 so that
                         its GEMMs tile evenly); rows past V take no part in the model */
} gpt_config;

/* NULL when c describes a model this chapter builds, else why not (one line) */
const char *gpt_config_error(const gpt_config *c);

/* ---- the parameters: one array of floats (or doubles), tensor after tensor in this order:
 *   wte (Vp, C), wpe (T_max, C),
 *   per layer: ln1_w (C), ln1_b (C), qkv_w (3C, C), qkv_b (3C), proj_w (C, C), proj_b (C),
 *              ln2_w (C), ln2_b (C), fc_w (4C, C), fc_b (4C), fcproj_w (C, 4C), fcproj_b (C),
 *   lnf_w (C), lnf_b (C).
 * qkv's rows are Q's C, then K's, then V's; head h uses columns h C/H .. (h + 1) C/H - 1 of each.
 * The checkpoint file and bench/torch_gpt.py walk the same list (gpt_tensor_at). */
enum {
    GPT_LN1_W, GPT_LN1_B, GPT_QKV_W, GPT_QKV_B, GPT_PROJ_W, GPT_PROJ_B,
    GPT_LN2_W, GPT_LN2_B, GPT_FC_W, GPT_FC_B, GPT_FCPROJ_W, GPT_FCPROJ_B,
    GPT_LAYER_TENSORS
};
typedef struct {
    const char *name; /* "wte", "wpe", "ln1_w" .. "fcproj_b" (a layer's), "lnf_w", "lnf_b" */
    int layer;        /* 0..L-1, or -1 for the embeddings and the final LayerNorm */
    size_t offset;    /* in elements from the first parameter */
    size_t rows, cols;
} gpt_tensor;

size_t gpt_tensor_count(const gpt_config *c); /* 2 + 12 L + 2 */
gpt_tensor gpt_tensor_at(const gpt_config *c, size_t i);
size_t gpt_param_count(const gpt_config *c);
size_t gpt_offset(const gpt_config *c, int layer, int tensor); /* a layer's tensor (GPT_QKV_W, ...) */
size_t gpt_offset_wte(const gpt_config *c);
size_t gpt_offset_wpe(const gpt_config *c);
size_t gpt_offset_lnf(const gpt_config *c, int bias); /* lnf_w (bias 0) or lnf_b (1) */

/* ---- the layers, forward and backward. A backward adds into its gradients (+=): a tensor used
 * twice (the residual stream, the tied embedding) sums its two gradients. N is rows (B T). */
#define GPT_LN_EPS 1e-5

/* the token and the position embedding: x[b, t] = wte[token] + wpe[t] */
void gpt_embed_cpu(double *x, const int *tokens, const double *wte, const double *wpe, int B, int T, int C);
void gpt_embed_backward_cpu(double *dwte, double *dwpe, const double *dx, const int *tokens, int B, int T, int C);

/* LayerNorm of each row of x: out = (x - mean) rstd w + b, keeping mean and rstd for the backward */
void gpt_layernorm_cpu(double *out, double *mean, double *rstd, const double *x, const double *w, const double *b,
                       int N, int C);
void gpt_layernorm_backward_cpu(double *dx, double *dw, double *db, const double *dout, const double *x,
                                const double *mean, const double *rstd, const double *w, int N, int C);

/* out (N, O) = x (N, I) W^T + b, W (O, I); b may be NULL */
void gpt_linear_cpu(double *out, const double *x, const double *W, const double *b, int N, int I, int O);
void gpt_linear_backward_cpu(double *dx, double *dW, double *db, const double *dout, const double *x, const double *W,
                             int N, int I, int O);

/* causal self-attention: qkv (B T, 3C) -> y (B T, C), keeping each head's probabilities att
 * (B, H, T, T; zero above the diagonal) for the backward */
void gpt_attention_cpu(double *y, double *att, const double *qkv, int B, int T, int C, int H);
void gpt_attention_backward_cpu(double *dqkv, const double *dy, const double *att, const double *qkv, int B, int T,
                                int C, int H);

/* GELU, tanh form: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
void gpt_gelu_cpu(double *out, const double *x, size_t n);
void gpt_gelu_backward_cpu(double *dx, const double *dout, const double *x, size_t n);

/* the tied classifier and the loss: logits (N, V) = x wte[0..V)^T, the mean over rows of
 * -log softmax(logits)[target]; the backward's dlogits = (softmax - onehot) / N, then dx and
 * dwte from it. probs (N, V) keeps the softmax. */
double gpt_classifier_cpu(double *probs, const double *x, const double *wte, const int *targets, int N, int C, int V);
void gpt_classifier_backward_cpu(double *dx, double *dwte, const double *probs, const double *x, const double *wte,
                                 const int *targets, int N, int C, int V);

/* ---- the whole model: the mean loss of B sequences of T tokens (T <= T_max) with their
 * targets (the next tokens); with grads non-NULL, also every parameter's gradient (grads is
 * overwritten: gpt_param_count doubles). Returns NAN, with *err set, when memory runs out. */
double gpt_model_cpu(const gpt_config *c, const double *params, const int *tokens, const int *targets, int B, int T,
                     double *grads, const char **err);

#ifdef __cplusplus
}
#endif
#endif
