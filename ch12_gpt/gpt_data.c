/* gpt_data.c - ch12's text, batches and checkpoints on the host (gpt_data.h). */
#include "gpt_data.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return 0;
}

/* ---------------------------------------------------------------- the text */

static int text_byte(unsigned char b) { return b == '\n' || b == '\t' || (b >= 0x20 && b < 0x7F); }

int gpt_text_load(const char *path, gpt_text *t, char *why, size_t why_len)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(why, why_len, "%s: %s", path, strerror(errno));
    unsigned char *bytes = NULL;
    size_t n = 0, cap = 0;
    for (;;) { /* the whole file, whatever its size (a pipe has none to ask for) */
        if (n == cap) {
            cap = cap ? 2 * cap : 1 << 20;
            unsigned char *grown = (unsigned char *)realloc(bytes, cap);
            if (!grown) {
                free(bytes), fclose(f);
                return fail(why, why_len, "%s: out of host memory at %zu bytes", path, n);
            }
            bytes = grown;
        }
        size_t got = fread(bytes + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int read_error = ferror(f);
    fclose(f);
    if (read_error) {
        free(bytes);
        return fail(why, why_len, "%s: read error", path);
    }
    if (n == 0) {
        free(bytes);
        return fail(why, why_len, "%s: the file is empty", path);
    }
    int seen[256] = {0};
    size_t line = 1, col = 1;
    for (size_t i = 0; i < n; i++, col++) {
        if (!text_byte(bytes[i])) {
            unsigned b = bytes[i];
            free(bytes);
            if (b == 0) return fail(why, why_len, "%s: a binary file (a zero byte at offset %zu), not text", path, i);
            return fail(why, why_len, "%s: not ASCII text: byte 0x%02X at offset %zu (line %zu, column %zu)", path, b, i,
                        line, col);
        }
        seen[bytes[i]] = 1;
        if (bytes[i] == '\n') line++, col = 0;
    }
    int token_of[256];
    for (int b = 0; b < 256; b++)
        if (seen[b]) token_of[b] = t->vocab, t->chars[t->vocab++] = (unsigned char)b;
    t->tokens = (int *)malloc(sizeof(int) * n);
    if (!t->tokens) {
        free(bytes);
        return fail(why, why_len, "%s: out of host memory for %zu tokens", path, n);
    }
    for (size_t i = 0; i < n; i++) t->tokens[i] = token_of[bytes[i]];
    free(bytes);
    t->n = n;
    t->n_train = n / 10 * 9 + (n % 10) * 9 / 10; /* floor(0.9 n), without overflow */
    return 1;
}

void gpt_text_free(gpt_text *t)
{
    free(t->tokens);
    t->tokens = NULL;
}

int gpt_text_fits(const gpt_text *t, int T, char *why, size_t why_len)
{
    size_t need = (size_t)T + 1, val = t->n - t->n_train;
    if (t->n_train < need || val < need)
        return fail(why, why_len,
                    "the text is too short for a context of %d: %zu characters train and %zu validate, each part needs "
                    "%zu (one sequence and its targets)",
                    T, t->n_train, val, need);
    return 1;
}

/* ---------------------------------------------------------------- the batches */

void gpt_batch(const gpt_text *t, int validation, int B, int T, lb_rng *rng, int *inputs, int *targets)
{
    size_t lo = validation ? t->n_train : 0, hi = validation ? t->n : t->n_train;
    for (int b = 0; b < B; b++) {
        size_t start = lo + (size_t)(lb_rng_next(rng) % (uint64_t)(hi - lo - (size_t)T));
        for (int i = 0; i < T; i++) {
            inputs[(size_t)b * T + i] = t->tokens[start + i];
            targets[(size_t)b * T + i] = t->tokens[start + i + 1];
        }
    }
}

/* ---------------------------------------------------------------- the checkpoint */

#define CKPT_INTS 8
static size_t ckpt_header_bytes(void) { return 8 + 4 * CKPT_INTS + 256 + 8; }

static int little_endian(void)
{
    uint16_t x = 1;
    unsigned char b;
    memcpy(&b, &x, 1);
    return b == 1;
}

int gpt_checkpoint_save(const char *path, const gpt_checkpoint *ck, char *why, size_t why_len)
{
    if (!little_endian()) return fail(why, why_len, "%s: checkpoints are little-endian; this host is not", path);
    const char *bad = gpt_config_error(&ck->config);
    if (bad) return fail(why, why_len, "%s: not saved: %s", path, bad);
    FILE *f = fopen(path, "wb");
    if (!f) return fail(why, why_len, "%s: %s", path, strerror(errno));
    const gpt_config *c = &ck->config;
    int32_t ints[CKPT_INTS] = {c->layers, c->heads, c->channels, c->context, c->vocab, c->vocab_padded, ck->m && ck->v, 0};
    size_t P = gpt_param_count(c);
    int ok = fwrite(GPT_CKPT_MAGIC, 1, 8, f) == 8 && fwrite(ints, 4, CKPT_INTS, f) == CKPT_INTS &&
             fwrite(ck->chars, 1, 256, f) == 256 && fwrite(&ck->step, 8, 1, f) == 1 && fwrite(ck->params, 4, P, f) == P;
    if (ok && ints[6]) ok = fwrite(ck->m, 4, P, f) == P && fwrite(ck->v, 4, P, f) == P;
    if (fclose(f) != 0) ok = 0;
    if (!ok) return fail(why, why_len, "%s: write error (disk full?)", path);
    return 1;
}

int gpt_checkpoint_load(const char *path, gpt_checkpoint *ck, char *why, size_t why_len)
{
    memset(ck, 0, sizeof *ck);
    if (!little_endian()) return fail(why, why_len, "%s: checkpoints are little-endian; this host is not", path);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(why, why_len, "%s: %s", path, strerror(errno));
    char magic[8];
    int32_t ints[CKPT_INTS];
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, GPT_CKPT_MAGIC, 8) != 0) {
        fclose(f);
        return fail(why, why_len, "%s: not a checkpoint of this chapter's gpt (its first 8 bytes are not \"LBGPT01\\n\")",
                    path);
    }
    if (fread(ints, 4, CKPT_INTS, f) != CKPT_INTS || fread(ck->chars, 1, 256, f) != 256 || fread(&ck->step, 8, 1, f) != 1) {
        fclose(f);
        return fail(why, why_len, "%s: truncated in its header (%zu bytes)", path, ckpt_header_bytes());
    }
    ck->config = (gpt_config){ints[0], ints[1], ints[2], ints[3], ints[4], ints[5]};
    const char *bad = gpt_config_error(&ck->config);
    if (bad || (ints[6] != 0 && ints[6] != 1) || ints[7] != 0 || ck->step < 0) {
        fclose(f);
        return fail(why, why_len, "%s: a malformed header (%s)", path, bad ? bad : "flags or step out of range");
    }
    size_t P = gpt_param_count(&ck->config), arrays = ints[6] ? 3 : 1;
    uint64_t want = ckpt_header_bytes() + (uint64_t)arrays * P * 4;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return fail(why, why_len, "%s: cannot seek (not a regular file?)", path);
    }
    long have = ftell(f);
    if (have < 0 || (uint64_t)have != want) {
        fclose(f);
        return fail(why, why_len, "%s: %ld bytes, but its header describes %llu (%s)", path, have,
                    (unsigned long long)want, (uint64_t)have < want ? "truncated" : "not ours, or written by another version");
    }
    fseek(f, (long)ckpt_header_bytes(), SEEK_SET);
    float **dst[3] = {&ck->params, &ck->m, &ck->v};
    for (size_t a = 0; a < arrays; a++) {
        *dst[a] = (float *)malloc(4 * P);
        if (!*dst[a] || fread(*dst[a], 4, P, f) != P) {
            fclose(f);
            gpt_checkpoint_free(ck);
            return fail(why, why_len, "%s: out of host memory or a read error in its %zu parameters", path, P);
        }
    }
    fclose(f);
    return 1;
}

void gpt_checkpoint_free(gpt_checkpoint *ck)
{
    free(ck->params), free(ck->m), free(ck->v);
    ck->params = ck->m = ck->v = NULL;
}

int gpt_config_same(const gpt_config *here, const gpt_config *file, char *why, size_t why_len)
{
    const int a[6] = {here->layers, here->heads, here->channels, here->context, here->vocab, here->vocab_padded};
    const int b[6] = {file->layers, file->heads, file->channels, file->context, file->vocab, file->vocab_padded};
    static const char *const names[6] = {"layers", "heads", "channels", "context", "vocabulary", "padded vocabulary"};
    for (int i = 0; i < 6; i++)
        if (a[i] != b[i])
            return fail(why, why_len, "a checkpoint of another configuration: %s %d here, %d in the checkpoint", names[i],
                        a[i], b[i]);
    return 1;
}
