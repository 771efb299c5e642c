/* emu_cublas.cpp - the few cuBLAS calls a host program of the book makes (ch12's gpt_model.c), on
 * the CPU: column-major single-precision products as cuBLAS defines them, with its checks of the
 * leading dimensions (a wrong one fails here as it does there: CUBLAS_STATUS_INVALID_VALUE). The
 * memory is the emulation's (host memory: emu_runtime.cpp's cudaMalloc). fp32 sums in order. */
#include "emu_cuda.h" /* first: cublas_v2.h reaches the emulation's cuda_bf16.h twin */
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>

struct cublasContext {
    int unused;
};

/* op(X)(i, j) of a column-major X with leading dimension ld */
static inline float at(const float *X, int ld, cublasOperation_t op, long long i, long long j)
{
    return op == CUBLAS_OP_N ? X[i + j * ld] : X[j + i * ld];
}

static cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const float *A,
                           int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? (m > 1 ? m : 1) : (k > 1 ? k : 1)) ||
        ldb < (tb == CUBLAS_OP_N ? (k > 1 ? k : 1) : (n > 1 ? n : 1)) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    for (long long j = 0; j < n; j++)
        for (long long i = 0; i < m; i++) {
            float s = 0.0f;
            for (long long p = 0; p < k; p++) s += at(A, lda, ta, i, p) * at(B, ldb, tb, p, j);
            float *c = C + i + j * ldc;
            *c = beta == 0.0f ? alpha * s : alpha * s + beta * *c; /* beta 0: C is not read (cuBLAS's rule) */
        }
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" {
cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    *handle = new cublasContext();
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc)
{
    return gemm(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda, long long sa, const float *B,
                                         int ldb, long long sb, const float *beta, float *C, int ldc, long long sc,
                                         int batches)
{
    for (int b = 0; b < batches; b++) {
        cublasStatus_t s = gemm(ta, tb, m, n, k, *alpha, A + b * sa, lda, B + b * sb, ldb, *beta, C + b * sc, ldc);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusName(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "a cuBLAS error"; }
const char *cublasGetStatusString(cublasStatus_t s) { return s == CUBLAS_STATUS_INVALID_VALUE ? "an invalid value" : "see cublas_api.h"; }
}
