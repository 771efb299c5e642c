/* attention_cpu.c - attention's CPU reference in double and the bound of its check
 * (attention_cpu.h): the answer every version of attention_kernels.cu is held to. */
#include "attention_cpu.h"

#include <math.h>

/* One row of O in double: query `row` (0 .. B H S - 1) against the keys its head lets it see.
 * o[d] = sum_j p_j v[j][d] with p = softmax(s), s_j = q . k_j / sqrt(D). Also, for the bound:
 * mag[d] = sum_j p_j |v[j][d]| (the size of the terms, which the roundings of p scale), and
 * *logit_err, the float rounding of the worst logit: ulps of what its D products add up to. */
void attention_row_cpu(const attention_cpu_inputs *in, size_t row, double *o, double *mag, double *logit_err,
                       double *s, double *lse)
{
    int S = in->seq, D = in->dim;
    size_t head = row / (size_t)S;
    int i = (int)(row % (size_t)S), keys = in->causal ? i + 1 : S;
    const float *q = in->q + row * D, *k = in->k + head * S * D, *v = in->v + head * S * D;
    double scale = 1.0 / sqrt((double)D), m = -INFINITY, worst = 0.0;
    for (int j = 0; j < keys; j++) {
        double dot = 0.0, size = 0.0;
        for (int d = 0; d < D; d++) {
            dot += (double)q[d] * k[(size_t)j * D + d];
            size += fabs((double)q[d] * k[(size_t)j * D + d]);
        }
        s[j] = dot * scale;
        m = fmax(m, s[j]);
        worst = fmax(worst, size * scale + fabs(s[j]));
    }
    double l = 0.0;
    for (int d = 0; d < D; d++) o[d] = mag[d] = 0.0;
    for (int j = 0; j < keys; j++) {
        double p = exp(s[j] - m);
        l += p;
        for (int d = 0; d < D; d++) {
            o[d] += p * v[(size_t)j * D + d];
            mag[d] += p * fabs((double)v[(size_t)j * D + d]);
        }
    }
    for (int d = 0; d < D; d++) o[d] /= l, mag[d] /= l;
    *logit_err = worst;
    if (lse) *lse = m + log(l);
}

/* The bound on one element of O, from where a kernel's arithmetic differs from the CPU's:
 *   - each logit is a sum of D bf16 products in fp32 (exact products, rounded sums, in an order
 *     the tensor cores choose), then scaled and, for exp2, multiplied by log2(e): an absolute
 *     error of a few ulps of the sizes involved (16 sqrt(D) ulps of `logit_err`), which exp turns
 *     into the same relative error of p; p enters O's numerator and its sum l: twice that, times
 *     mag (the sum of p |v|);
 *   - the exponential itself (ex2.approx, 2 ulps) and l's float sum (4 sqrt(S) ulps);
 *   - versions 0, 3 and 4 round p to bf16 before the product with V: bf16 keeps 8 significant
 *     bits, so a rounding moves a value by at most u = 2^-8 of it, and the p v terms by at most
 *     u mag in all;
 *   - O is written in bf16: u |o|, and a bit more for its own error.
 * Both roundings can fall the same way (the float emulation in tests/test_attention.c comes to
 * half the bound on a row of 4 keys, where they did). A lost key (a tile skipped, the causal mask one off) moves
 * O by that key's p (v - o), far beyond this at the tested sizes, and so does a missing rescale. */
double attention_bound(double o, double mag, double logit_err, int dim, int seq)
{
    const double ulp = 0x1.0p-24, u_bf16 = 0x1.0p-8;
    double p_rel = (16.0 * sqrt((double)dim) * logit_err + 4.0 + 4.0 * sqrt((double)seq)) * ulp;
    return 1.25 * u_bf16 * fabs(o) + (1.25 * u_bf16 + 2.0 * p_rel) * mag + 0x1.0p-125;
}

/* A row's log-sum-exp on the GPU is (m + log2 l) ln 2 in float, m the largest logit (in log2
 * units) and l the sum of exp2(s - m): l carries the logits' and the exponentials' roundings
 * (p_rel of attention_bound, relative), so log l moves by that much (absolute); the max, the
 * product by ln 2 and log2f add a few ulps of the result. Version 0 takes m + logf(d) from its
 * scores: the same terms. */
double attention_lse_bound(double lse, double logit_err, int dim, int seq)
{
    const double ulp = 0x1.0p-24;
    double p_rel = (16.0 * sqrt((double)dim) * logit_err + 4.0 + 4.0 * sqrt((double)seq)) * ulp;
    return 1.25 * p_rel + 8.0 * ulp * (fabs(lse) + 1.0);
}

/* Up to ATT_GROUP rows of one head at once, as attention_row_cpu computes each (the same sums,
 * in the same order: the same doubles): the rows go through K and V together, so that each key
 * is loaded once for the group, and each step adds into ATT_GROUP independent sums, which the
 * compiler vectorizes, where one row's sum over D is a chain of dependent additions. Rows in
 * ascending order; a causal row stops at its own last key. o, mag: n x D; s: ATT_GROUP x S. */
void attention_rows_cpu(const attention_cpu_inputs *in, const size_t *rows, int n, double *o, double *mag,
                        double *logit_err, double *s, double *lse)
{
    int S = in->seq, D = in->dim, keys[ATT_GROUP];
    size_t head = rows[0] / (size_t)S;
    const float *k = in->k + head * S * D, *v = in->v + head * S * D;
    double scale = 1.0 / sqrt((double)D), m[ATT_GROUP], l[ATT_GROUP], qt[128][ATT_GROUP];
    for (int r = 0; r < ATT_GROUP; r++) {
        int live = r < n;
        keys[r] = !live ? 0 : in->causal ? (int)(rows[r] % (size_t)S) + 1 : S;
        for (int d = 0; d < D; d++) qt[d][r] = live ? in->q[rows[r] * D + d] : 0.0; /* q transposed: rows inner */
        m[r] = -INFINITY, logit_err[r] = 0.0, l[r] = 0.0;
    }
    int most = keys[n - 1]; /* the last row sees the most keys */
    for (int j = 0; j < most; j++) {
        double dot[ATT_GROUP] = {0}, size[ATT_GROUP] = {0};
        for (int d = 0; d < D; d++) {
            double kd = k[(size_t)j * D + d];
            for (int r = 0; r < ATT_GROUP; r++) {
                double t = qt[d][r] * kd;
                dot[r] += t, size[r] += fabs(t);
            }
        }
        for (int r = 0; r < n; r++) {
            if (j >= keys[r]) continue;
            s[(size_t)r * S + j] = dot[r] * scale;
            m[r] = fmax(m[r], s[(size_t)r * S + j]);
            logit_err[r] = fmax(logit_err[r], size[r] * scale + fabs(s[(size_t)r * S + j]));
        }
    }
    double ot[128][ATT_GROUP] = {{0}}, mt[128][ATT_GROUP] = {{0}};
    for (int j = 0; j < most; j++) {
        double p[ATT_GROUP];
        for (int r = 0; r < ATT_GROUP; r++) p[r] = r < n && j < keys[r] ? exp(s[(size_t)r * S + j] - m[r]) : 0.0;
        for (int r = 0; r < n; r++) l[r] += p[r];
        for (int d = 0; d < D; d++) {
            double vd = v[(size_t)j * D + d], avd = fabs(vd);
            for (int r = 0; r < ATT_GROUP; r++) ot[d][r] += p[r] * vd, mt[d][r] += p[r] * avd;
        }
    }
    for (int r = 0; r < n; r++)
        for (int d = 0; d < D; d++) o[(size_t)r * D + d] = ot[d][r] / l[r], mag[(size_t)r * D + d] = mt[d][r] / l[r];
    if (lse)
        for (int r = 0; r < n; r++) lse[r] = m[r] + log(l[r]);
}

/* One query row i of a head's backward pass in double: its P again (the forward's softmax, from its
 * max), delta_i, dS_i, and so dQ_i (D doubles, written) and the row's share of dK and dV (added;
 * NULL: not wanted), with the terms' sizes for the bound where mq_i is not NULL (mk, mv as dk,
 * dv). O_i is P_i V in double, not a kernel's: the reference is the exact gradient of the exact
 * attention. p, dp: S doubles of scratch each. */
static void backward_row(const attention_cpu_inputs *in, const float *do_, size_t head, int i, double *dq_i,
                         double *dk, double *dv, double *lse_i, double *p, double *dp, double *mq_i, double *mk,
                         double *mv)
{
    int S = in->seq, D = in->dim, keys = in->causal ? i + 1 : S;
    size_t n = (size_t)S * D;
    const float *k = in->k + head * n, *v = in->v + head * n;
    const float *qi = in->q + head * n + (size_t)i * D, *doi = do_ + (size_t)i * D;
    double scale = 1.0 / sqrt((double)D), m = -INFINITY, l = 0.0;
    for (int d = 0; d < D; d++) {
        dq_i[d] = 0.0;
        if (mq_i) mq_i[d] = 0.0;
    }
    for (int j = 0; j < keys; j++) {
        double dot = 0.0;
        for (int d = 0; d < D; d++) dot += (double)qi[d] * k[(size_t)j * D + d];
        p[j] = dot * scale;
        m = fmax(m, p[j]);
    }
    for (int j = 0; j < keys; j++) l += (p[j] = exp(p[j] - m));
    for (int j = 0; j < keys; j++) p[j] /= l;
    *lse_i = m + log(l);
    /* dP_ij = dO_i . V_j, and delta_i = dO_i . O_i = sum_j P_ij dP_ij; for the bound, the sizes of
     * their terms: sum_d |dO_id V_jd| and sum_d |dO_id O_id|, which is what their roundings scale,
     * however much the sums cancel */
    double delta = 0.0, delta_size = 0.0;
    for (int j = 0; j < keys; j++) {
        double dot = 0.0;
        for (int d = 0; d < D; d++) dot += (double)doi[d] * v[(size_t)j * D + d];
        dp[j] = dot;
        delta += p[j] * dot;
    }
    if (mq_i)
        for (int d = 0; d < D; d++) {
            double od = 0.0;
            for (int j = 0; j < keys; j++) od += p[j] * v[(size_t)j * D + d];
            delta_size += fabs((double)doi[d] * od);
        }
    for (int j = 0; j < keys; j++) {
        double ds = p[j] * (dp[j] - delta) * scale; /* dS_ij, with the scale of S = c Q K^T */
        for (int d = 0; d < D; d++) dq_i[d] += ds * k[(size_t)j * D + d];
        if (dk)
            for (int d = 0; d < D; d++) {
                dk[(size_t)j * D + d] += ds * qi[d];
                dv[(size_t)j * D + d] += p[j] * doi[d];
            }
        if (!mq_i) continue;
        double dp_size = 0.0;
        for (int d = 0; d < D; d++) dp_size += fabs((double)doi[d] * v[(size_t)j * D + d]);
        double size = p[j] * (dp_size + delta_size) * scale;
        for (int d = 0; d < D; d++) mq_i[d] += size * fabs((double)k[(size_t)j * D + d]);
        if (mk)
            for (int d = 0; d < D; d++) {
                mk[(size_t)j * D + d] += size * fabs((double)qi[d]);
                mv[(size_t)j * D + d] += p[j] * fabs((double)doi[d]);
            }
    }
}

/* The backward pass of one head in double (attention_cpu.h): row by row. O(S^2 D) a head. */
void attention_backward_head_cpu(const attention_cpu_inputs *in, const float *do_, size_t head, double *dq,
                                 double *dk, double *dv, double *lse, double *scratch, double *mag)
{
    int S = in->seq, D = in->dim;
    size_t n = (size_t)S * D;
    double *mq = mag, *mk = mag ? mag + n : NULL, *mv = mag ? mag + 2 * n : NULL;
    for (size_t e = 0; e < n; e++) {
        dk[e] = dv[e] = 0.0;
        if (mag) mk[e] = mv[e] = 0.0;
    }
    for (int i = 0; i < S; i++)
        backward_row(in, do_, head, i, dq + (size_t)i * D, dk, dv, lse + i, scratch, scratch + S,
                     mq ? mq + (size_t)i * D : NULL, mk, mv);
}

/* dQ's rows alone (attention_cpu.h): O(S D) a row */
void attention_backward_dq_rows_cpu(const attention_cpu_inputs *in, const float *do_, size_t head, const int *rows,
                                    int n_rows, double *dq, double *mag, double *scratch)
{
    double lse;
    for (int t = 0; t < n_rows; t++)
        backward_row(in, do_, head, rows[t], dq + (size_t)t * in->dim, NULL, NULL, &lse, scratch, scratch + in->seq,
                     mag + (size_t)t * in->dim, NULL, NULL);
}

/* The bound on a gradient's element: like the forward's (attention_bound), a kernel's P carries
 * the logits' and exponentials' relative error p_rel; dP and delta are fp32 sums of D bf16
 * products (a few ulps of their sizes, sqrt(D)); versions that round P and dS to bf16 for the
 * tensor cores (and version 0, whose products read them in bf16) move each term by 2^-8 of it;
 * the sums over S keys or queries add sqrt(S) ulps; the result is written in bf16 (2^-8 of it).
 * All of it scales the terms' sizes (mag), but the last. */
double attention_backward_bound(double want, double mag, double logit_err, int dim, int seq)
{
    const double ulp = 0x1.0p-24, u_bf16 = 0x1.0p-8;
    double p_rel = (16.0 * sqrt((double)dim) * logit_err + 4.0 + 4.0 * sqrt((double)seq)) * ulp;
    double term_rel = 2.0 * u_bf16 + 2.0 * p_rel + 8.0 * sqrt((double)dim) * ulp + 4.0 * sqrt((double)seq) * ulp;
    return 1.25 * u_bf16 * fabs(want) + 1.25 * term_rel * mag + 0x1.0p-125;
}
