/* test_attention.c - host-only tests of ch11_transformer/attention.c's CPU reference and bound:
 * known answers (one key: O is its V row; equal logits: O is the mean of V), a float emulation
 * of the flash versions' arithmetic (tiles, the online max and sum, exp2f, P rounded to bf16, O
 * written in bf16) inside the bound at every shape, and the planted bugs the GPU tests plant
 * (the rescale of O dropped, the last partial tile of keys skipped, the causal mask one key too
 * far) outside it. Needs no GPU. */
#define main attention_main /* take the program's functions, not its main */
#include "../ch11_transformer/attention.c"
#undef main

#include "unit.h"

enum { EXACT, NO_RESCALE, SKIP_LAST_TILE, MASK_ONE_OFF };

static float round_bf16(float x) { return lb_bf16_value(lb_bf16_bits(x)); }

/* One row of O as the flash versions compute it, in float: K/V tiles of `tile` keys, the logits
 * scaled by log2(e) / sqrt(D), the row's max and sum carried from tile to tile, P rounded to
 * bf16 before its product with V (versions 3 and 4) and O to bf16 at the end. */
static void flash_row_float(const attention_cpu_inputs *in, size_t row, float *o, int tile, int bug)
{
    int S = in->seq, D = in->dim, i = (int)(row % (size_t)S);
    size_t head = row / (size_t)S;
    const float *q = in->q + row * D, *k = in->k + head * S * D, *v = in->v + head * S * D;
    int keys = in->causal ? i + 1 + (bug == MASK_ONE_OFF && i + 1 < S) : S;
    int tiles = (keys + tile - 1) / tile;
    if (bug == SKIP_LAST_TILE && keys % tile && tiles > 1) tiles--;
    const float scale = 1.4426950408889634f / sqrtf((float)D);
    float m = -INFINITY, l = 0.0f;
    for (int d = 0; d < D; d++) o[d] = 0.0f;
    for (int t = 0; t < tiles; t++) {
        int k0 = t * tile, k1 = k0 + tile < keys ? k0 + tile : keys;
        float s[256], tile_max = -INFINITY;
        for (int j = k0; j < k1; j++) {
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += q[d] * k[(size_t)j * D + d];
            s[j - k0] = dot * scale;
            tile_max = fmaxf(tile_max, s[j - k0]);
        }
        float m_new = fmaxf(m, tile_max), alpha = exp2f(m - m_new);
        l *= alpha;
        if (bug != NO_RESCALE)
            for (int d = 0; d < D; d++) o[d] *= alpha;
        for (int j = k0; j < k1; j++) {
            float p = exp2f(s[j - k0] - m_new);
            l += p;
            for (int d = 0; d < D; d++) o[d] += round_bf16(p) * v[(size_t)j * D + d];
        }
        m = m_new;
    }
    for (int d = 0; d < D; d++) o[d] = round_bf16(o[d] / l);
}

/* The emulation (or a planted bug) on the reference's rows; the number of elements outside the bound */
static size_t emulate(const attention_cpu_inputs *in, const attention_reference *r, int tile, int bug)
{
    size_t n = r->n_rows * in->dim;
    float *got = malloc(sizeof(float) * n), *want = malloc(sizeof(float) * n);
    for (size_t t = 0; t < r->n_rows; t++) {
        flash_row_float(in, r->rows[t], got + t * in->dim, tile, bug);
        for (int d = 0; d < in->dim; d++) want[t * in->dim + d] = (float)r->want[t * in->dim + d];
    }
    bound_ctx b = {r->bound};
    size_t bad = lb_check_f32_bound("emulation", got, want, n, bound_of, &b, 1).n_bad;
    free(got);
    free(want);
    return bad;
}

/* inputs of a shape, made as the program makes them */
static attention_cpu_inputs make_inputs(int batch, int heads, int seq, int dim, int causal, float amp, uint64_t seed)
{
    size_t n = (size_t)batch * heads * seq * dim;
    float *x[3];
    uint16_t *bits = malloc(2 * n);
    lb_rng rng;
    lb_rng_seed(&rng, seed);
    for (int t = 0; t < 3; t++) {
        x[t] = malloc(4 * n);
        lb_bf16_uniform(bits, x[t], n, t < 2 ? amp : 1.0f, &rng);
    }
    free(bits);
    attention_cpu_inputs in = {x[0], x[1], x[2], batch, heads, seq, dim, causal};
    return in;
}

static void free_inputs(attention_cpu_inputs *in) { free((void *)in->q), free((void *)in->k), free((void *)in->v); }

/* The loss L = sum dO o O of one head's forward in double (attention_row_cpu), for the finite
 * differences of the backward pass */
static double head_loss(const attention_cpu_inputs *in, const float *do_, size_t head)
{
    int S = in->seq, D = in->dim;
    double o[128], mag[128], err, *s = malloc(sizeof(double) * S), loss = 0.0;
    for (int i = 0; i < S; i++) {
        attention_row_cpu(in, head * S + i, o, mag, &err, s, NULL);
        for (int d = 0; d < D; d++) loss += (double)do_[(size_t)i * D + d] * o[d];
    }
    free(s);
    return loss;
}

/* The largest gap between an analytic gradient g (of the head's Q, K or V: x) and L's central
 * difference, over every element, relative to g's largest element. x is perturbed in place by h
 * (exactly representable for these inputs: the forward sees x +- h as floats). */
static double gradient_gap(const attention_cpu_inputs *in, const float *do_, size_t head, float *x, const double *g)
{
    int S = in->seq, D = in->dim;
    const float h = 0x1.0p-8f;
    double worst = 0.0, largest = 0.0;
    for (int e = 0; e < S * D; e++) largest = fmax(largest, fabs(g[e]));
    for (int e = 0; e < S * D; e++) {
        float keep = x[e];
        x[e] = keep + h;
        double up = head_loss(in, do_, head);
        x[e] = keep - h;
        double down = head_loss(in, do_, head);
        x[e] = keep;
        double fd = (up - down) / ((double)(keep + h) - (double)(keep - h));
        worst = fmax(worst, fabs(fd - g[e]));
    }
    return worst / largest;
}

int main(void)
{
    /* known answers: the first row of a causal head sees one key, so O is V's first row; with Q
     * all zero every logit is 0 and O is the mean of V's rows */
    {
        attention_cpu_inputs in = make_inputs(1, 1, 5, 64, 1, 2.0f, 3);
        double o[64], mag[64], err, s[5];
        attention_row_cpu(&in, 0, o, mag, &err, s, NULL);
        int same = 1;
        for (int d = 0; d < 64; d++) same &= o[d] == in.v[d] && mag[d] == fabs(in.v[d]);
        CHECK(same);
        memset((void *)in.q, 0, sizeof(float) * 5 * 64);
        in.causal = 0;
        attention_row_cpu(&in, 2, o, mag, &err, s, NULL);
        double worst = 0.0;
        for (int d = 0; d < 64; d++) {
            double mean = 0.0;
            for (int j = 0; j < 5; j++) mean += in.v[j * 64 + d] / 5.0;
            worst = fmax(worst, fabs(o[d] - mean));
        }
        CHECK(worst < 1e-15);
        free_inputs(&in);
    }

    /* the emulation inside the bound; each planted bug outside it where the shape can show it:
     * S = 1000 is 15 tiles of 64 and 40 keys, logits of spread 1.3 (amplitude 2) and past 80
     * (amplitude 10), D 64 and 128, causal or not, one head and several */
    struct {
        int batch, heads, seq, dim, causal, tile;
        float amp;
    } shapes[] = {
        {1, 2, 1000, 64, 0, 64, 2.0f}, {2, 1, 300, 128, 1, 64, 2.0f}, {1, 1, 1000, 128, 0, 128, 10.0f},
        {1, 3, 17, 64, 1, 64, 10.0f},  {1, 1, 1, 128, 0, 128, 2.0f},  {1, 1, 4097, 64, 1, 128, 2.0f},
    };
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        attention_cpu_inputs in = make_inputs(shapes[c].batch, shapes[c].heads, shapes[c].seq, shapes[c].dim,
                                              shapes[c].causal, shapes[c].amp, 10 + c);
        attention_reference r = reference_rows(&in, 7 + c);
        int tile = shapes[c].tile;
        size_t ok = emulate(&in, &r, tile, EXACT);
        CHECK(ok == 0);
        if (ok) printf("  shape %zu: the emulation is outside the bound at %zu elements\n", c, ok);
        if (in.seq > tile) CHECK(emulate(&in, &r, tile, NO_RESCALE) > 0);
        if (!in.causal && in.seq % tile && in.seq > tile) CHECK(emulate(&in, &r, tile, SKIP_LAST_TILE) > 0);
        if (in.causal && in.seq > 1) CHECK(emulate(&in, &r, tile, MASK_ONE_OFF) > 0);
        /* every head's first row is among the checked ones */
        size_t firsts = 0;
        for (size_t t = 0; t < r.n_rows; t++) firsts += r.rows[t] % in.seq == 0;
        CHECK(firsts >= (size_t)in.batch * in.heads);
        /* every band of 64 queries of every head holds a checked row (the sampled shape too) */
        size_t bands = (size_t)(in.seq + ATT_CHECK_BAND - 1) / ATT_CHECK_BAND, heads = (size_t)in.batch * in.heads;
        char *seen = calloc(heads * bands, 1);
        for (size_t t = 0; t < r.n_rows; t++) seen[r.rows[t] / in.seq * bands + r.rows[t] % in.seq / ATT_CHECK_BAND] = 1;
        size_t covered = 0;
        for (size_t b = 0; b < heads * bands; b++) covered += seen[b];
        CHECK(covered == heads * bands);
        free(seen);
        /* the rows computed in groups are attention_row_cpu's, to the bit */
        double *o1 = malloc(sizeof(double) * in.dim), *mag1 = malloc(sizeof(double) * in.dim),
               *s1 = malloc(sizeof(double) * in.seq), err1;
        int same = 1;
        for (size_t t = 0; t < r.n_rows; t += 1 + r.n_rows / 7) {
            attention_row_cpu(&in, r.rows[t], o1, mag1, &err1, s1, NULL);
            for (int d = 0; d < in.dim; d++)
                same &= o1[d] == r.want[t * in.dim + d] &&
                        attention_bound(o1[d], mag1[d], err1, in.dim, in.seq) == r.bound[t * in.dim + d];
        }
        CHECK(same);
        free(o1), free(mag1), free(s1);
        free(r.rows), free(r.want), free(r.bound);
        free_inputs(&in);
    }
    /* the backward reference against finite differences of the forward, every element of dQ, dK
     * and dV of a head, causal and not (D 64, S 7: the third head of a 1 x 3 batch); and a dQ
     * without the rowsum(dO o O) term (the mistake a kernel is tested for) fails the same check */
    for (int causal = 0; causal < 2; causal++) {
        attention_cpu_inputs in = make_inputs(1, 3, 7, 64, causal, 2.0f, 11);
        int S = in.seq, D = in.dim;
        size_t head = 2, n = (size_t)S * D;
        float *do_ = malloc(sizeof(float) * n);
        lb_rng rng;
        lb_rng_seed(&rng, 5);
        for (size_t e = 0; e < n; e++) do_[e] = lb_rng_uniform(&rng, -1.0f, 1.0f);
        double *dq = malloc(sizeof(double) * n), *dk = malloc(sizeof(double) * n), *dv = malloc(sizeof(double) * n),
               *lse = malloc(sizeof(double) * S), *scratch = malloc(sizeof(double) * 2 * S);
        attention_backward_head_cpu(&in, do_, head, dq, dk, dv, lse, scratch, NULL);
        float *q = (float *)in.q + head * n, *k = (float *)in.k + head * n, *v = (float *)in.v + head * n;
        double gq = gradient_gap(&in, do_, head, q, dq), gk = gradient_gap(&in, do_, head, k, dk),
               gv = gradient_gap(&in, do_, head, v, dv);
        if (getenv("TEST_VERBOSE")) printf("backward causal %d: gaps dQ %.2e dK %.2e dV %.2e\n", causal, gq, gk, gv);
        CHECK(gq < 1e-5 && gk < 1e-5 && gv < 1e-5); /* measured 1.6e-7 at most */
        /* the log-sum-exp of row 0: causal, its one logit q0 . k0 / sqrt(D) */
        double dot = 0.0;
        for (int d = 0; d < D; d++) dot += (double)q[d] * k[d];
        if (causal) CHECK(fabs(lse[0] - dot / sqrt((double)D)) < 1e-12);
        /* dQ_i without delta_i's term: + scale delta_i sum_j P_ij K_j, recomputed here */
        double *wrong = malloc(sizeof(double) * n), o[64], mag[64], err, *s = malloc(sizeof(double) * S);
        for (int i = 0; i < S; i++) {
            attention_row_cpu(&in, head * S + i, o, mag, &err, s, NULL);
            double delta = 0.0;
            for (int d = 0; d < D; d++) delta += (double)do_[(size_t)i * D + d] * o[d];
            int keys = causal ? i + 1 : S;
            double pk[64] = {0};
            for (int j = 0; j < keys; j++) {
                double dotj = 0.0;
                for (int d = 0; d < D; d++) dotj += (double)q[(size_t)i * D + d] * k[(size_t)j * D + d];
                double pj = exp(dotj / sqrt((double)D) - lse[i]);
                for (int d = 0; d < D; d++) pk[d] += pj * k[(size_t)j * D + d];
            }
            for (int d = 0; d < D; d++) wrong[(size_t)i * D + d] = dq[(size_t)i * D + d] + delta * pk[d] / sqrt((double)D);
        }
        double gw = gradient_gap(&in, do_, head, q, wrong);
        if (getenv("TEST_VERBOSE")) printf("  without the delta term: %.2e\n", gw);
        CHECK(gw > 1e-2);
        /* dQ's rows alone are the whole head's, to the bit, and so are their terms' sizes */
        {
            int rows[3] = {0, S / 2, S - 1};
            double rq[3 * 64], rm[3 * 64], *hmag = malloc(sizeof(double) * 3 * n);
            attention_backward_head_cpu(&in, do_, head, dq, dk, dv, lse, scratch, hmag);
            attention_backward_dq_rows_cpu(&in, do_, head, rows, 3, rq, rm, scratch);
            int same = 1;
            for (int t = 0; t < 3; t++)
                for (int d = 0; d < D; d++)
                    same &= rq[t * D + d] == dq[(size_t)rows[t] * D + d] && rm[t * D + d] == hmag[(size_t)rows[t] * D + d];
            CHECK(same);
            free(hmag);
        }
        free(wrong), free(s), free(do_), free(dq), free(dk), free(dv), free(lse), free(scratch);
        free_inputs(&in);
    }
    printf("test_attention: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
