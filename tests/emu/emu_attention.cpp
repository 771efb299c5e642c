/* emu_attention.cpp - ch11's attention kernels (versions 1-7) on CPU threads (emu_cuda.h),
 * against the attention in double, at one shape:
 *
 *   emu_attention B H S D causal [amplitude [version...]]
 *
 * Q and K uniform in [-amplitude, amplitude] (default 2), V in [-1, 1], all bf16, from a fixed
 * seed, each with NaN after its end (emu_guarded). Every element of O is held to the program's own
 * bound (attention_cpu.c: the CPU's row in double and attention_bound, as ./attention checks its
 * rows), and every row's log-sum-exp to attention_lse_bound. Every version (1-7) unless some are named after the amplitude, which must then be given:
 * `emu_attention 1 2 300 128 1 2 3 4` is amplitude 2, versions 3 and 4. Exit 0 when every one
 * passes, 1 otherwise. With EMU_TOKEN_ROWS=1 in the environment, Q, K and V are laid out as ch12's
 * qkv product writes them ((B, S, 3 H D) rows: attention_problem's ld_qkv 3 H D) and O as (B, S, H D)
 * rows (ld_o H D), and the versions by default are those that read token rows (4-7). */
#include "emu_cuda.h"
#include <cuda_bf16.h> /* its twin (emu/include) */
#include "attention_cpu.h"
#include "attention_kernels.h"

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
        fprintf(stderr, "usage: emu_attention B H S D causal [amplitude [version...]]\n");
        return 2;
    }
    int B = atoi(argv[1]), H = atoi(argv[2]), S = atoi(argv[3]), D = atoi(argv[4]), causal = atoi(argv[5]);
    float amplitude = argc > 6 ? (float)atof(argv[6]) : 2.0f;
    if (B < 1 || H < 1 || S < 1 || (D != 64 && D != 128) || !(amplitude > 0.0f)) {
        fprintf(stderr, "emu_attention: B, H, S positive, D 64 or 128, amplitude positive\n");
        return 2;
    }
    size_t n = (size_t)B * H * S * D;
    std::vector<uint16_t> q = emu_guarded<uint16_t>(n), k = emu_guarded<uint16_t>(n), v = emu_guarded<uint16_t>(n),
                          o(n);
    std::vector<float> qf(n), kf(n), vf(n); /* the bf16 values, for the CPU */
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) {
        q[i] = __float2bfloat16_rn(amplitude * uniform(rng)).x;
        k[i] = __float2bfloat16_rn(amplitude * uniform(rng)).x;
        v[i] = __float2bfloat16_rn(uniform(rng)).x;
        qf[i] = emu_bf16(q[i]), kf[i] = emu_bf16(k[i]), vf[i] = emu_bf16(v[i]);
    }
    /* every row's O in double and each element's bound, as the program computes them */
    attention_cpu_inputs in = {qf.data(), kf.data(), vf.data(), B, H, S, D, causal};
    size_t rows = (size_t)B * H * S;
    std::vector<double> want(n), bound(n), mag(D), s(S), want_lse(rows), bound_lse(rows);
    for (size_t row = 0; row < rows; row++) {
        double err;
        attention_row_cpu(&in, row, &want[row * D], mag.data(), &err, s.data(), &want_lse[row]);
        for (int d = 0; d < D; d++) bound[row * D + d] = attention_bound(want[row * D + d], mag[d], err, D, S);
        bound_lse[row] = attention_lse_bound(want_lse[row], err, D, S);
    }

    std::vector<float> lse(rows); /* every version writes each row's log-sum-exp too (the program's --lse) */
    attention_problem p = {q.data(), k.data(), v.data(), o.data(), B, H, S, D, causal, lse.data(), NULL, 0, 0};
    const char *rows_env = getenv("EMU_TOKEN_ROWS");
    int token_rows = rows_env && atoi(rows_env);
    size_t ld = 3 * (size_t)H * D;
    std::vector<uint16_t> qkv = emu_guarded<uint16_t>(3 * n), o_rows(n); /* token rows */
    if (token_rows) {
        for (size_t i = 0; i < n; i++) {
            qkv[token_at(i, H, S, D, ld, 0)] = q[i];
            qkv[token_at(i, H, S, D, ld, 1)] = k[i];
            qkv[token_at(i, H, S, D, ld, 2)] = v[i];
        }
        p.q = qkv.data(), p.k = qkv.data() + H * D, p.v = qkv.data() + 2 * H * D, p.o = o_rows.data();
        p.ld_qkv = (int)ld, p.ld_o = H * D;
    }
    if (attention_prepare(&p) != cudaSuccess) {
        fprintf(stderr, "emu_attention: attention_prepare failed\n");
        return 1;
    }
    std::vector<int> versions;
    for (int a = 7; a < argc; a++) versions.push_back(atoi(argv[a]));
    if (versions.empty())
        for (int ver = token_rows ? 4 : 1; ver < ATTENTION_VERSIONS; ver++) versions.push_back(ver);
    int failed = 0;
    for (int version : versions) {
        std::fill(o.begin(), o.end(), (uint16_t)0xFFFF); /* NaN: a row never written fails */
        std::fill(o_rows.begin(), o_rows.end(), (uint16_t)0xFFFF);
        std::fill(lse.begin(), lse.end(), NAN);
        cudaError_t e = attention_launch(version, &p);
        if (token_rows) /* O back to (B, H, S, D) for the check */
            for (size_t i = 0; i < n; i++) o[i] = o_rows[token_at(i, H, S, D, (size_t)H * D, 0)];
        size_t bad = 0, first = 0;
        double worst = 0.0; /* the largest error in units of the bound; NaN once any element is NaN */
        for (size_t i = 0; i < n; i++) {
            double err = fabs(emu_bf16(o[i]) - want[i]);
            if (!(err <= bound[i])) {
                if (!bad) first = i;
                bad++;
            }
            if (std::isnan(err) || std::isnan(worst))
                worst = NAN;
            else
                worst = std::max(worst, err / bound[i]);
        }
        size_t bad_lse = 0, first_lse = 0;
        for (size_t row = 0; row < rows; row++)
            if (!(fabs(lse[row] - want_lse[row]) <= bound_lse[row]) && !bad_lse++) first_lse = row;
        printf("emulated attention %dx%dx%dx%d%s%s version %d: %s, %zu of %zu wrong, worst error %.3g of its bound; "
               "%zu of %zu log-sum-exps wrong",
               B, H, S, D, causal ? "_causal" : "", token_rows ? " (token rows)" : "", version, e == cudaSuccess ? "launched" : "LAUNCH FAILED", bad, n,
               worst, bad_lse, rows);
        if (bad)
            printf(" (first: row %zu column %zu, got %.6g, want %.6g)", first / D, first % D, emu_bf16(o[first]),
                   want[first]);
        if (bad_lse) printf(" (first lse: row %zu, got %.7g, want %.7g)", first_lse, lse[first_lse], want_lse[first_lse]);
        printf(" %s\n", bad == 0 && bad_lse == 0 && e == cudaSuccess ? "PASS" : "FAIL");
        failed += bad > 0 || bad_lse > 0 || e != cudaSuccess;
    }
    attention_release(&p);
    return emu_finish(failed);
}
