/* gpt_data.h - ch12's data on the host: the training text and its vocabulary, the batches drawn
 * from it, and the checkpoint file. No GPU; tests/test_gpt.c checks each against bad input.
 *
 * Every function that can meet a bad file returns 0 and writes a one-line reason into `why`
 * (the program prints it and exits 2 before touching the GPU); 1 on success. */
#ifndef GPT_DATA_H
#define GPT_DATA_H
#include "gpt_cpu.h"
#include "labbook.h" /* lb_rng */

#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* ---- the text: a file of ASCII (printable characters, newlines and tabs), one token a
 * character. The vocabulary is the characters the file holds, in ascending order: token i is
 * chars[i]. The first 90% of the characters train, the last 10% validate. */
typedef struct {
    size_t n;                  /* characters (= tokens) */
    int *tokens;               /* n */
    int vocab;                 /* distinct characters */
    unsigned char chars[256];  /* token -> character */
    size_t n_train;            /* tokens[0, n_train) train, tokens[n_train, n) validate */
} gpt_text;

int gpt_text_load(const char *path, gpt_text *t, char *why, size_t why_len);
void gpt_text_free(gpt_text *t);
/* both parts must hold a sequence of T tokens and its T targets: T + 1 tokens each */
int gpt_text_fits(const gpt_text *t, int T, char *why, size_t why_len);

/* ---- the batches, drawn with common/'s lb_rng (splitmix64, seeded by lb_rng_seed: both written
 * out in labbook.c, so that bench/torch_gpt.py draws the same sequences in the same order):
 * sequence b of a batch starts at lo + lb_rng_next() % (hi - lo - T), where [lo, hi) is the part
 * (training or validation); inputs are the T tokens from there, targets the T tokens one further. */
void gpt_batch(const gpt_text *t, int validation, int B, int T, lb_rng *rng, int *inputs, int *targets);

/* ---- the checkpoint, little-endian, its size fixed by its header:
 *   8 bytes   "LBGPT01\n"
 *   8 int32   layers, heads, channels, context, vocab, vocab_padded, moments (1: AdamW's m and v
 *             follow the parameters), 0
 *   256 bytes the vocabulary's characters (token i is byte i; zeros past vocab)
 *   int64     the optimizer's steps so far
 *   P float32 the parameters (fp32 master weights) in gpt_tensor_at's order (gpt_cpu.h)
 *   P float32 AdamW's first moments, then P its second moments, when moments is 1
 * P = gpt_param_count(config). */
#define GPT_CKPT_MAGIC "LBGPT01\n"
typedef struct {
    gpt_config config;
    unsigned char chars[256];
    int64_t step;
    float *params, *m, *v; /* m, v NULL when the file has no moments */
} gpt_checkpoint;

int gpt_checkpoint_save(const char *path, const gpt_checkpoint *ck, char *why, size_t why_len);
int gpt_checkpoint_load(const char *path, gpt_checkpoint *ck, char *why, size_t why_len);
void gpt_checkpoint_free(gpt_checkpoint *ck);
/* 1 when a and b are the same model; else 0 and the first difference ("layers: 6 here, 4 in the
 * checkpoint") */
int gpt_config_same(const gpt_config *here, const gpt_config *file, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
