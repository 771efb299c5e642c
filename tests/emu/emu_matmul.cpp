/* emu_matmul.cpp - ch04's matmul kernels on CPU threads (emu_cuda.h), against C = A B in
 * double, at one shape:
 *
 *   emu_matmul M N K version...
 *
 * A and B uniform in [-1, 1] from a fixed seed, NaN after their ends. An element passes within 2^-20 K of the sum of
 * its |a b| (fp32 sums of K products, in whatever order the kernel adds them); a lost k, row or
 * column moves it by a product or more. Exit 0 when every version passes, 1 otherwise. */
#include "emu_cuda.h"
#include "matmul_kernels.h"

#include <random>

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: emu_matmul M N K version...\n");
        return 2;
    }
    int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
    if (M < 1 || N < 1 || K < 1) {
        fprintf(stderr, "emu_matmul: M, N, K must be positive\n");
        return 2;
    }
    /* A and B with NaN after their ends (emu_guarded): a read past one fails */
    size_t nA = (size_t)M * K, nB = (size_t)K * N;
    std::vector<float> A = emu_guarded<float>(nA), B = emu_guarded<float>(nB), C((size_t)M * N);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (size_t i = 0; i < nA; i++) A[i] = uniform(rng);
    for (size_t i = 0; i < nB; i++) B[i] = uniform(rng);
    std::vector<double> want((size_t)M * N), size((size_t)M * N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0, a = 0.0;
            for (int k = 0; k < K; k++) {
                double t = (double)A[(size_t)i * K + k] * B[(size_t)k * N + j];
                s += t, a += fabs(t);
            }
            want[(size_t)i * N + j] = s, size[(size_t)i * N + j] = a;
        }
    matmul_opts opts = {16, 32, {0, 0, 0}}; /* version 10 picks its own tiling */
    int failed = 0;
    for (int arg = 4; arg < argc; arg++) {
        int version = atoi(argv[arg]);
        std::fill(C.begin(), C.end(), NAN); /* a C never written fails */
        cudaError_t e = matmul_launch(version, A.data(), B.data(), C.data(), M, N, K, &opts);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < C.size(); i++)
            if (!(fabs(C[i] - want[i]) <= 0x1.0p-20 * K * size[i])) {
                if (!bad) first = i;
                bad++;
            }
        printf("emulated matmul %dx%dx%d version %d: %s, %zu of %zu wrong", M, N, K, version,
               e == cudaSuccess ? "launched" : "LAUNCH FAILED", bad, C.size());
        if (bad) printf(" (first: C[%zu][%zu] = %.7g, want %.7g)", first / N, first % N, C[first], want[first]);
        printf(" %s\n", bad == 0 && e == cudaSuccess ? "PASS" : "FAIL");
        failed += bad > 0 || e != cudaSuccess;
    }
    return emu_finish(failed);
}
