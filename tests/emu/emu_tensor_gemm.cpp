/* emu_tensor_gemm.cpp - ch10's tensor_gemm kernels on CPU threads (emu_cuda.h), against C = A B
 * in double, at one shape:
 *
 *   emu_tensor_gemm M N K bf16|tf32|fp8 version...
 *
 * As tensor_gemm.c does: A (M x K) and B (stored N x K, K-major) uniform in [-1, 1), rounded to
 * bf16 (or tf32; or fp8: e4m3 codes of x / s with a power-of-two scale s a tensor, C = s_A s_B
 * codes x codes), in buffers zero-padded to whole tiles (tensor_gemm_kernels.h), NaN past the
 * pads; C exactly M x N (fp32; bf16 for fp8). An element passes within K 2^-20 + 2^-16 |want|
 * (every product exact in fp32; only the order of the sums differs: the emulation adds fp8's
 * products in fp32 too), which one lost k step (an error near 2) fails; fp8's bf16 C within
 * K 2^-20 + 2^-8 |want| (its rounding).
 * Versions in clusters (6, 8, 10) cannot run here. Exit 0 when every version passes, 1 otherwise. */
#include "emu_cuda.h"
#include <mma.h> /* its twin (emu/include): bf16 and the rounding to tf32 */
#include "tensor_gemm_kernels.h"

#include <random>

static int round_up(int x, int to) { return (x + to - 1) / to * to; }

/* x's nearest e4m3 code by a search over every finite code (ties to the even code, whose last
 * mantissa bit is 0), read through the emulation's own decoder: independent of labbook.c's
 * lb_e4m3_bits, which tensor_gemm.c uses */
static uint8_t e4m3_nearest(float x)
{
    int best = 0;
    double best_d = INFINITY;
    for (int code = 0; code < 256; code++) {
        float v = emu_e4m3((uint8_t)code);
        if (std::isnan(v)) continue;
        double d = fabs((double)v - x);
        if (d < best_d || (d == best_d && (code & 1) == 0)) best = code, best_d = d;
    }
    return (uint8_t)best;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: emu_tensor_gemm M N K bf16|tf32|fp8 version...\n");
        return 2;
    }
    int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
    tg_type type = strcmp(argv[4], "tf32") == 0 ? TG_TF32 : strcmp(argv[4], "fp8") == 0 ? TG_FP8 : TG_BF16;
    if (M < 1 || N < 1 || K < 1) {
        fprintf(stderr, "emu_tensor_gemm: M, N, K must be positive\n");
        return 2;
    }
    int mp = round_up(M, TENSOR_GEMM_PAD_MN), np = round_up(N, TENSOR_GEMM_PAD_MN);
    int kp = round_up(K, tensor_gemm_pad_k(type));
    size_t elem = (size_t)tensor_gemm_elem_bytes(type);
    const float fp8_scale = 0x1p-8f; /* uniform in [-1, 1): 2^-8 brings 1 to 256 <= 448, as tensor_gemm.c picks */
    /* zero-padded to whole tiles, then NaN (emu_guarded): the pads are for reading, past them not */
    std::vector<uint8_t> a = emu_guarded<uint8_t>((size_t)mp * kp * elem), b = emu_guarded<uint8_t>((size_t)np * kp * elem);
    memset(a.data(), 0, (size_t)mp * kp * elem), memset(b.data(), 0, (size_t)np * kp * elem);
    std::vector<float> av((size_t)M * K), bv((size_t)N * K), C((size_t)M * N);
    std::vector<uint16_t> C16((size_t)M * N); /* fp8's C is bf16 */
    const bool bf16_out = tensor_gemm_out_bytes(type) == 2;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    auto fill = [&](std::vector<uint8_t> &buf, std::vector<float> &val, int rows) {
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < K; k++) {
                float x = uniform(rng);
                if (type == TG_FP8) { /* e4m3 code of x / s */
                    uint8_t code = e4m3_nearest(x / fp8_scale);
                    buf[(size_t)r * kp + k] = code;
                    val[(size_t)r * K + k] = emu_e4m3(code) * fp8_scale;
                } else if (type == TG_BF16) {
                    uint16_t bits = __float2bfloat16_rn(x).x;
                    memcpy(&buf[((size_t)r * kp + k) * 2], &bits, 2);
                    val[(size_t)r * K + k] = emu_bf16(bits);
                } else {
                    float t = nvcuda::wmma::__float_to_tf32(x);
                    memcpy(&buf[((size_t)r * kp + k) * 4], &t, 4);
                    val[(size_t)r * K + k] = t;
                }
            }
    };
    fill(a, av, M);
    fill(b, bv, N);
    std::vector<double> want((size_t)M * N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) s += (double)av[(size_t)i * K + k] * bv[(size_t)j * K + k];
            want[(size_t)i * N + j] = s;
        }
    tg_gemm g = {type, a.data(), b.data(), bf16_out ? (void *)C16.data() : (void *)C.data(), M, N, K, mp, np, kp, NULL,
                 type == TG_FP8 ? fp8_scale * fp8_scale : 1.0f};
    if (tensor_gemm_prepare(&g) != cudaSuccess) {
        fprintf(stderr, "emu_tensor_gemm: tensor_gemm_prepare failed\n");
        return 1;
    }
    int failed = 0;
    for (int arg = 5; arg < argc; arg++) {
        int version = atoi(argv[arg]);
        if (const char *why = tensor_gemm_unavailable(version, type, N)) { /* as the program lists it */
            printf("emulated tensor_gemm %dx%dx%d %s version %d: skipped: %s\n", M, N, K, argv[4], version, why);
            continue;
        }
        std::fill(C.begin(), C.end(), NAN); /* a C never written fails */
        std::fill(C16.begin(), C16.end(), (uint16_t)0xFFFF);
        cudaError_t e = tensor_gemm_launch(version, &g);
        if (bf16_out)
            for (size_t i = 0; i < C.size(); i++) C[i] = emu_bf16(C16[i]);
        /* the emulation adds in fp32; a bf16 C is rounded once more: 2^-9 of it, 2^-8 allowed */
        double rel = bf16_out ? 0x1.0p-8 : 0x1.0p-16;
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < C.size(); i++)
            if (!(fabs(C[i] - want[i]) <= K * 0x1.0p-20 + rel * fabs(want[i]))) {
                if (!bad) first = i;
                bad++;
            }
        printf("emulated tensor_gemm %dx%dx%d %s version %d: %s, %zu of %zu wrong", M, N, K, argv[4], version,
               e == cudaSuccess ? "launched" : "LAUNCH FAILED", bad, C.size());
        if (bad) printf(" (first: C[%zu][%zu] = %.7g, want %.7g)", first / N, first % N, C[first], want[first]);
        printf(" %s\n", bad == 0 && e == cudaSuccess ? "PASS" : "FAIL");
        failed += bad > 0 || e != cudaSuccess;
    }
    tensor_gemm_release(&g);
    return emu_finish(failed);
}
