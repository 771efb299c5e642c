/* emu_cublas.cpp - the few cuBLAS calls a host program of the book makes (ch12's gpt_model.c), on
 * the CPU: column-major products as cuBLAS defines them (fp32 arithmetic; fp32 or bf16 operands), with its checks of the
 * leading dimensions (a wrong one fails here as it does there: CUBLAS_STATUS_INVALID_VALUE). The
 * memory is the emulation's (host memory: emu_runtime.cpp's cudaMalloc). fp32 sums in order. */
#include "emu_cuda.h" /* first: cublas_v2.h reaches the emulation's cuda_bf16.h twin */
#include <cublas_v2.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

struct cublasContext {
    int unused;
};

/* an operand: fp32, or bf16 bits (the top half of an fp32) */
struct operand {
    const void *p;
    cudaDataType type;
    float operator[](long long e) const
    {
        if (type == CUDA_R_32F) return static_cast<const float *>(p)[e];
        uint32_t u = (uint32_t) static_cast<const uint16_t *>(p)[e] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
};
/* op(X)(i, j) of a column-major X with leading dimension ld */
static inline float at(const operand &X, int ld, cublasOperation_t op, long long i, long long j)
{
    return op == CUBLAS_OP_N ? X[i + j * ld] : X[j + i * ld];
}

static cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, operand A,
                           int lda, operand B, int ldb, float beta, float *C, int ldc)
{
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? (m > 1 ? m : 1) : (k > 1 ? k : 1)) ||
        ldb < (tb == CUBLAS_OP_N ? (k > 1 ? k : 1) : (n > 1 ? n : 1)) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    emu_enqueue([=] { /* now, or at each launch of the graph being captured */
        for (long long j = 0; j < n; j++)
            for (long long i = 0; i < m; i++) {
                float s = 0.0f;
                for (long long p = 0; p < k; p++) s += at(A, lda, ta, i, p) * at(B, ldb, tb, p, j);
                float *c = C + i + j * ldc;
                *c = beta == 0.0f ? alpha * s : alpha * s + beta * *c; /* beta 0: C is not read (cuBLAS's rule) */
            }
    });
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" {
cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    *handle = new cublasContext();
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc)
{
    return gemm(ta, tb, m, n, k, *alpha, {A, CUDA_R_32F}, lda, {B, CUDA_R_32F}, ldb, *beta, C, ldc);
}
/* fp32 or bf16 operands, an fp32 result and fp32 arithmetic: what ch12's bf16 products ask */
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at_, int lda, const void *B, cudaDataType bt,
                            int ldb, const void *beta, void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t)
{
    bool ok_type = (at_ == CUDA_R_32F || at_ == CUDA_R_16BF) && (bt == CUDA_R_32F || bt == CUDA_R_16BF);
    if (!ok_type || ct != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm(ta, tb, m, n, k, *(const float *)alpha, {A, at_}, lda, {B, bt}, ldb, *(const float *)beta, (float *)C,
                ldc);
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda, long long sa, const float *B,
                                         int ldb, long long sb, const float *beta, float *C, int ldc, long long sc,
                                         int batches)
{
    for (int b = 0; b < batches; b++) {
        cublasStatus_t s = gemm(ta, tb, m, n, k, *alpha, {A + b * sa, CUDA_R_32F}, lda, {B + b * sb, CUDA_R_32F}, ldb, *beta,
                                C + b * sc, ldc);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusName(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "a cuBLAS error"; }
const char *cublasGetStatusString(cublasStatus_t s) { return s == CUBLAS_STATUS_INVALID_VALUE ? "an invalid value" : "see cublas_api.h"; }
}
