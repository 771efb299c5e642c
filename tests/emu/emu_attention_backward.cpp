/* emu_attention_backward.cpp - ch11's attention backward kernels (versions 1..) on CPU threads
 * (emu_cuda.h), against the gradients in double, at one shape:
 *
 *   emu_attention_backward B H S D causal [amplitude [version...]]
 *
 * Q and K uniform in [-amplitude, amplitude] (default 2), V and dO in [-1, 1], all bf16, from a
 * fixed seed, each with NaN after its end (emu_guarded). O and the log-sum-exps are the CPU's
 * forward, O rounded to bf16 as a forward writes it. Every element of dQ, dK and dV is held to the
 * program's bound (attention_cpu.c: attention_backward_head_cpu and attention_backward_bound).
 * Exit 0 when every version passes, 1 otherwise. With EMU_TOKEN_ROWS=1 in the environment, the
 * tensors are laid out as ch12 keeps them: Q, K, V and dQ, dK, dV as (B, S, 3 H D) rows (ld_qkv 3 H
 * D), O and dO as (B, S, H D) rows (ld_o H D); the versions by default those that read token rows (4). */
#include "emu_cuda.h"
#include <cuda_bf16.h> /* its twin (emu/include) */
#include "attention_backward_kernels.h"
#include "attention_cpu.h"

#include <random>

/* element i of a (B, H, S, D) contiguous tensor in token rows ld apart, the tensor `part` H D
 * columns into each row (ch12's qkv: Q, K, V at parts 0, 1, 2) */
static size_t token_at(size_t i, int H, int S, int D, size_t ld, int part)
{
    size_t row = i / D, bh = row / S;
    return (bh / H * S + row % S) * ld + (size_t)part * H * D + bh % H * D + i % D;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: emu_attention_backward B H S D causal [amplitude [version...]]\n");
        return 2;
    }
    int B = atoi(argv[1]), H = atoi(argv[2]), S = atoi(argv[3]), D = atoi(argv[4]), causal = atoi(argv[5]);
    float amplitude = argc > 6 ? (float)atof(argv[6]) : 2.0f;
    if (B < 1 || H < 1 || S < 1 || (D != 64 && D != 128) || !(amplitude > 0.0f)) {
        fprintf(stderr, "emu_attention_backward: B, H, S positive, D 64 or 128, amplitude positive\n");
        return 2;
    }
    size_t n = (size_t)B * H * S * D, rows = (size_t)B * H * S;
    std::vector<uint16_t> q = emu_guarded<uint16_t>(n), k = emu_guarded<uint16_t>(n), v = emu_guarded<uint16_t>(n),
                          g = emu_guarded<uint16_t>(n), o = emu_guarded<uint16_t>(n), dq(n), dk(n), dv(n);
    std::vector<float> qf(n), kf(n), vf(n), gf(n), lse = emu_guarded<float>(rows), delta(rows), dq_acc(n);
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) {
        q[i] = __float2bfloat16_rn(amplitude * uniform(rng)).x;
        k[i] = __float2bfloat16_rn(amplitude * uniform(rng)).x;
        v[i] = __float2bfloat16_rn(uniform(rng)).x;
        g[i] = __float2bfloat16_rn(uniform(rng)).x;
        qf[i] = emu_bf16(q[i]), kf[i] = emu_bf16(k[i]), vf[i] = emu_bf16(v[i]), gf[i] = emu_bf16(g[i]);
    }
    /* the forward on the CPU: O in bf16 and each row's log-sum-exp, as a forward version writes them;
     * the head's worst logit error for the bound */
    attention_cpu_inputs in = {qf.data(), kf.data(), vf.data(), B, H, S, D, causal};
    std::vector<double> orow(D), mag(D), s(S), err_head((size_t)B * H, 0.0);
    for (size_t row = 0; row < rows; row++) {
        double err, l;
        attention_row_cpu(&in, row, orow.data(), mag.data(), &err, s.data(), &l);
        for (int d = 0; d < D; d++) o[row * D + d] = __float2bfloat16_rn((float)orow[d]).x;
        lse[row] = (float)l;
        err_head[row / S] = std::max(err_head[row / S], err);
    }
    /* the gradients in double, every head, and each element's bound */
    std::vector<double> want(3 * n), bound(3 * n), dqh((size_t)S * D), dkh((size_t)S * D), dvh((size_t)S * D),
        lse_h(S), scratch(2 * S), mags(3 * (size_t)S * D);
    size_t hn = (size_t)S * D;
    for (size_t h = 0; h < (size_t)B * H; h++) {
        attention_backward_head_cpu(&in, gf.data() + h * hn, h, dqh.data(), dkh.data(), dvh.data(), lse_h.data(),
                                    scratch.data(), mags.data());
        const double *grads[3] = {dqh.data(), dkh.data(), dvh.data()};
        for (int t = 0; t < 3; t++)
            for (size_t e = 0; e < hn; e++) {
                size_t at = t * n + h * hn + e;
                want[at] = grads[t][e];
                bound[at] = attention_backward_bound(want[at], mags[t * hn + e], err_head[h], D, S);
            }
    }

    attention_bwd_problem p = {q.data(), k.data(), v.data(), o.data(), g.data(), lse.data(), dq.data(), dk.data(),
                               dv.data(), delta.data(), dq_acc.data(), B, H, S, D, causal, NULL, 0, 0};
    const char *rows_env = getenv("EMU_TOKEN_ROWS");
    int token_rows = rows_env && atoi(rows_env);
    size_t ld = 3 * (size_t)H * D, ldo = (size_t)H * D;
    std::vector<uint16_t> qkv = emu_guarded<uint16_t>(3 * n), o_rows = emu_guarded<uint16_t>(n),
                          g_rows = emu_guarded<uint16_t>(n), dqkv(3 * n); /* token rows */
    if (token_rows) {
        for (size_t i = 0; i < n; i++) {
            qkv[token_at(i, H, S, D, ld, 0)] = q[i];
            qkv[token_at(i, H, S, D, ld, 1)] = k[i];
            qkv[token_at(i, H, S, D, ld, 2)] = v[i];
            o_rows[token_at(i, H, S, D, ldo, 0)] = o[i];
            g_rows[token_at(i, H, S, D, ldo, 0)] = g[i];
        }
        p.q = qkv.data(), p.k = qkv.data() + H * D, p.v = qkv.data() + 2 * H * D;
        p.o = o_rows.data(), p.d_o = g_rows.data();
        p.dq = dqkv.data(), p.dk = dqkv.data() + H * D, p.dv = dqkv.data() + 2 * H * D;
        p.ld_qkv = (int)ld, p.ld_o = (int)ldo;
    }
    if (attention_bwd_prepare(&p) != cudaSuccess) { /* version 4's tensor maps */
        fprintf(stderr, "emu_attention_backward: attention_bwd_prepare failed\n");
        return 1;
    }
    std::vector<int> versions;
    for (int a = 7; a < argc; a++) versions.push_back(atoi(argv[a]));
    if (versions.empty())
        for (int ver = token_rows ? 4 : 1; ver < ATTENTION_BWD_VERSIONS; ver++) versions.push_back(ver);
    int failed = 0;
    const char *names[3] = {"dQ", "dK", "dV"};
    for (int version : versions) {
        std::fill(dq.begin(), dq.end(), (uint16_t)0xFFFF); /* NaN: an element never written fails */
        std::fill(dk.begin(), dk.end(), (uint16_t)0xFFFF);
        std::fill(dv.begin(), dv.end(), (uint16_t)0xFFFF);
        std::fill(dqkv.begin(), dqkv.end(), (uint16_t)0xFFFF);
        cudaError_t e = attention_bwd_launch(version, &p);
        if (token_rows) /* dQ, dK, dV back to (B, H, S, D) for the check */
            for (size_t i = 0; i < n; i++) {
                dq[i] = dqkv[token_at(i, H, S, D, ld, 0)];
                dk[i] = dqkv[token_at(i, H, S, D, ld, 1)];
                dv[i] = dqkv[token_at(i, H, S, D, ld, 2)];
            }
        const uint16_t *got[3] = {dq.data(), dk.data(), dv.data()};
        printf("emulated attention backward %dx%dx%dx%d%s%s version %d: %s", B, H, S, D, causal ? "_causal" : "",
               token_rows ? " (token rows)" : "", version, e == cudaSuccess ? "launched" : "LAUNCH FAILED");
        int bad_any = e != cudaSuccess;
        for (int t = 0; t < 3; t++) {
            size_t bad = 0, first = 0;
            double worst = 0.0; /* in units of the bound; NaN once any element is NaN */
            for (size_t i = 0; i < n; i++) {
                double err = fabs(emu_bf16(got[t][i]) - want[t * n + i]);
                if (!(err <= bound[t * n + i]) && !bad++) first = i;
                worst = std::isnan(err) || std::isnan(worst) ? NAN : std::max(worst, err / bound[t * n + i]);
            }
            printf("; %s %zu of %zu wrong, worst %.3g of its bound", names[t], bad, n, worst);
            if (bad)
                printf(" (first: row %zu column %zu, got %.6g, want %.6g)", first / D, first % D,
                       emu_bf16(got[t][first]), want[t * n + first]);
            bad_any |= bad > 0;
        }
        printf(" %s\n", bad_any ? "FAIL" : "PASS");
        failed += bad_any;
    }
    attention_bwd_release(&p);
    return emu_finish(failed);
}
