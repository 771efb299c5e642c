/* emu_attention.cpp - ch11's attention kernels (versions 1-5) on CPU threads (emu_cuda.h),
 * against the attention in double, at one shape:
 *
 *   emu_attention B H S D causal [amplitude [version...]]
 *
 * Q and K uniform in [-amplitude, amplitude] (default 2), V in [-1, 1], all bf16, from a fixed
 * seed. An element passes within 2^-6 (|o| + 1): the kernels' own error is the bf16 roundings of
 * P and of O (2^-8 each, relative to the terms and to O; |v| <= 1) and the fp32 logits, under
 * 2^-8 in all at these shapes; a lost key, a missing rescale or a wrong fragment moves O by
 * 0.1 and more. Every version (1-5) unless some are named. Exit 0 when every one passes, 1
 * otherwise. */
#include "emu_cuda.h"
#include "attention_kernels.h"

#include <random>

static double reference_row(const std::vector<uint16_t> &q, const std::vector<uint16_t> &k,
                            const std::vector<uint16_t> &v, int S, int D, int causal, size_t row, double *o)
{
    size_t head = row / S;
    int keys = causal ? (int)(row % S) + 1 : S;
    std::vector<double> p(keys);
    double m = -INFINITY, l = 0.0;
    for (int j = 0; j < keys; j++) {
        double dot = 0.0;
        for (int d = 0; d < D; d++) dot += (double)emu_bf16(q[row * D + d]) * emu_bf16(k[(head * S + j) * D + d]);
        p[j] = dot / sqrt((double)D);
        m = std::max(m, p[j]);
    }
    for (int j = 0; j < keys; j++) l += p[j] = exp(p[j] - m);
    for (int d = 0; d < D; d++) {
        double s = 0.0;
        for (int j = 0; j < keys; j++) s += p[j] * emu_bf16(v[(head * S + j) * D + d]);
        o[d] = s / l;
    }
    return l;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: emu_attention B H S D causal [amplitude [version...]]\n");
        return 2;
    }
    int B = atoi(argv[1]), H = atoi(argv[2]), S = atoi(argv[3]), D = atoi(argv[4]), causal = atoi(argv[5]);
    float amplitude = argc > 6 ? (float)atof(argv[6]) : 2.0f;
    if (B < 1 || H < 1 || S < 1 || (D != 64 && D != 128)) {
        fprintf(stderr, "emu_attention: B, H, S positive, D 64 or 128\n");
        return 2;
    }
    size_t n = (size_t)B * H * S * D;
    std::vector<uint16_t> q(n), k(n), v(n), o(n);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) {
        q[i] = __float2bfloat16_rn(amplitude * uniform(rng)).x;
        k[i] = __float2bfloat16_rn(amplitude * uniform(rng)).x;
        v[i] = __float2bfloat16_rn(uniform(rng)).x;
    }
    std::vector<double> want(n);
    for (size_t row = 0; row < (size_t)B * H * S; row++) reference_row(q, k, v, S, D, causal, row, &want[row * D]);

    attention_problem p = {q.data(), k.data(), v.data(), o.data(), B, H, S, D, causal, NULL};
    if (attention_prepare(&p) != cudaSuccess) {
        fprintf(stderr, "emu_attention: attention_prepare failed\n");
        return 1;
    }
    std::vector<int> versions;
    for (int a = 7; a < argc; a++) versions.push_back(atoi(argv[a]));
    if (versions.empty())
        for (int v = 1; v < ATTENTION_VERSIONS; v++) versions.push_back(v);
    int failed = 0;
    for (int version : versions) {
        std::fill(o.begin(), o.end(), (uint16_t)0xFFFF); /* NaN: a row never written fails */
        cudaError_t e = attention_launch(version, &p);
        size_t bad = 0, first = 0;
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            double err = fabs(emu_bf16(o[i]) - want[i]);
            if (!(err <= 0x1.0p-6 * (fabs(want[i]) + 1.0))) {
                if (!bad) first = i;
                bad++;
            }
            if (!(err <= worst)) worst = err;
        }
        printf("emulated attention %dx%dx%dx%d%s version %d: %s, %zu of %zu wrong, worst error %.3g", B, H, S, D,
               causal ? "_causal" : "", version, e == cudaSuccess ? "launched" : "LAUNCH FAILED", bad, n, worst);
        if (bad)
            printf(" (first: row %zu column %zu, got %.6g, want %.6g)", first / D, first % D, emu_bf16(o[first]),
                   want[first]);
        printf(" %s\n", bad == 0 && e == cudaSuccess ? "PASS" : "FAIL");
        failed += bad > 0 || e != cudaSuccess;
    }
    attention_release(&p);
    return failed ? 1 : 0;
}
