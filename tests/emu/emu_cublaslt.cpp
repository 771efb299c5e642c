/* emu_cublaslt.cpp - the cuBLASLt calls of ch12's version 5 (gpt_fused.c), on the CPU: a product
 * D = alpha op(A) op(B) + beta C as cublasLtMatmul defines it (column-major layouts; A and B fp32
 * or bf16, C and D fp32 or bf16; fp32 sums in order), then the epilogues the book uses: BIAS,
 * GELU_AUX_BIAS (tanh form), DGELU, BGRADB. The descriptors are kept inside cuBLASLt's opaque
 * structures. A layout that does not fit the product, a leading dimension too small, or an
 * epilogue without the pointer it needs fails as cuBLASLt does (CUBLAS_STATUS_INVALID_VALUE). */
#include "emu_cuda.h" /* first: the cuBLAS headers reach the emulation's cuda_bf16.h twin */
#include <cublasLt.h>

#include <cmath>
#include <cstdint>
#include <cstring>

struct cublasLtContext {
    int unused;
};

namespace {
struct desc { /* kept in cublasLtMatmulDescOpaque_t's 256 bytes */
    cublasOperation_t ta, tb;
    cublasLtEpilogue_t epilogue;
    const void *bias;
    void *aux;
    int64_t aux_ld;
};
struct layout { /* in cublasLtMatrixLayoutOpaque_t's 64 bytes */
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
};
static_assert(sizeof(desc) <= sizeof(cublasLtMatmulDescOpaque_t), "desc fits cuBLASLt's opaque descriptor");
static_assert(sizeof(layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout fits cuBLASLt's opaque layout");

desc *of(cublasLtMatmulDesc_t d) { return reinterpret_cast<desc *>(d->data); }
const layout *of(cublasLtMatrixLayout_t l) { return reinterpret_cast<const layout *>(l->data); }

float load(const void *p, cudaDataType type, long long e)
{
    if (type == CUDA_R_32F) return static_cast<const float *>(p)[e];
    uint32_t u = (uint32_t) static_cast<const uint16_t *>(p)[e] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
void store(void *p, cudaDataType type, long long e, float x)
{
    if (type == CUDA_R_32F)
        static_cast<float *>(p)[e] = x;
    else /* rounded to nearest even, as the GPU writes bf16 (the emulation's cuda_bf16.h) */
        static_cast<uint16_t *>(p)[e] = __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
/* GELU in its tanh form and its derivative (gpt_cpu.c's, in float) */
float gelu(float x)
{
    const float k = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
float gelu_grad(float x)
{
    const float k = 0.7978845608028654f;
    float t = tanhf(k * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
}
/* a layout of r x c elements at least, its ld at least its rows */
bool fits(const layout *l, uint64_t r, uint64_t c)
{
    return l->rows == r && l->cols == c && l->ld >= (int64_t)(r ? r : 1);
}
} // namespace
static void product(const desc &x, const layout &la, const layout &lb, const layout &lc, const layout &ld, float al,
                    float be, const void *A, const void *B, const void *C, void *D);

extern "C" {
cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    *h = new cublasLtContext();
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale)
{
    if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    *d = new cublasLtMatmulDescOpaque_t();
    *of(*d) = desc{CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT, nullptr, nullptr, 0};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    delete d;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size)
{
    desc *x = of(d);
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
        return size == sizeof x->ta ? memcpy(&x->ta, buf, size), CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_TRANSB:
        return size == sizeof x->tb ? memcpy(&x->tb, buf, size), CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        return size == sizeof x->epilogue ? memcpy(&x->epilogue, buf, size),
               CUBLAS_STATUS_SUCCESS      : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        return size == sizeof x->bias ? memcpy(&x->bias, buf, size),
               CUBLAS_STATUS_SUCCESS  : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
        return size == sizeof x->aux ? memcpy(&x->aux, buf, size), CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
        return size == sizeof x->aux_ld ? memcpy(&x->aux_ld, buf, size),
               CUBLAS_STATUS_SUCCESS    : CUBLAS_STATUS_INVALID_VALUE;
    default: return CUBLAS_STATUS_NOT_SUPPORTED; /* an attribute the book does not set */
    }
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows, uint64_t cols,
                                          int64_t ld)
{
    if (type != CUDA_R_32F && type != CUDA_R_16BF) return CUBLAS_STATUS_NOT_SUPPORTED;
    *l = new cublasLtMatrixLayoutOpaque_t();
    *reinterpret_cast<layout *>((*l)->data) = layout{type, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    delete l;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    *p = new cublasLtMatmulPreferenceOpaque_t();
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    delete p;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    const void *, size_t)
{
    return CUBLAS_STATUS_SUCCESS;
}
/* one algorithm, whatever the problem: the emulation has one way to multiply */
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int *returned)
{
    if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    memset(&results[0], 0, sizeof results[0]);
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t computeDesc, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
                              const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t)
{
    const desc x = *of(computeDesc); /* copies: the work may run later (a graph), after they are destroyed */
    const layout la = *of(Adesc), lb = *of(Bdesc), lc = *of(Cdesc), ld = *of(Ddesc);
    const layout *a = &la, *b = &lb, *c = &lc, *d = &ld;
    uint64_t m = d->rows, n = d->cols, k = x.ta == CUBLAS_OP_N ? a->cols : a->rows;
    bool an = x.ta == CUBLAS_OP_N, bn = x.tb == CUBLAS_OP_N;
    if (!fits(a, an ? m : k, an ? k : m) || !fits(b, bn ? k : n, bn ? n : k) || !fits(c, m, n) || !fits(d, m, n) ||
        c->type != d->type)
        return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtEpilogue_t e = x.epilogue;
    bool needs_bias =
        e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_BGRADB;
    bool needs_aux = e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU;
    if (e != CUBLASLT_EPILOGUE_DEFAULT && !needs_bias && !needs_aux) return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((needs_bias && !x.bias) || (needs_aux && (!x.aux || x.aux_ld < (int64_t)m))) return CUBLAS_STATUS_INVALID_VALUE;
    float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta); /* read now, as cuBLASLt does */
    emu_enqueue([=] { product(x, la, lb, lc, ld, al, be, A, B, C, D); });
    return CUBLAS_STATUS_SUCCESS;
}
}

/* the product and its epilogue, checked above: D = al op(A) op(B) + be C, then x's epilogue */
static void product(const desc &x, const layout &la, const layout &lb, const layout &lc, const layout &ld, float al,
                    float be, const void *A, const void *B, const void *C, void *D)
{
    const layout *a = &la, *b = &lb, *c = &lc, *d = &ld;
    uint64_t m = d->rows, n = d->cols, k = x.ta == CUBLAS_OP_N ? a->cols : a->rows;
    bool an = x.ta == CUBLAS_OP_N, bn = x.tb == CUBLAS_OP_N;
    cublasLtEpilogue_t e = x.epilogue;
    for (uint64_t j = 0; j < n; j++)
        for (uint64_t i = 0; i < m; i++) {
            float s = 0.0f;
            for (uint64_t p = 0; p < k; p++) {
                float av = load(A, a->type, an ? (long long)(i + p * a->ld) : (long long)(p + i * a->ld));
                float bv = load(B, b->type, bn ? (long long)(p + j * b->ld) : (long long)(j + p * b->ld));
                s += av * bv;
            }
            float v = al * s;
            if (be != 0.0f) v += be * load(C, c->type, (long long)(i + j * c->ld)); /* beta 0: C is not read */
            long long aux_at = (long long)(i + j * x.aux_ld);
            if (e == CUBLASLT_EPILOGUE_BIAS) v += load(x.bias, d->type, (long long)i);
            if (e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
                v += load(x.bias, d->type, (long long)i);
                store(x.aux, d->type, aux_at, v);
                v = gelu(v);
            }
            if (e == CUBLASLT_EPILOGUE_DGELU) v *= gelu_grad(load(x.aux, d->type, aux_at));
            store(D, d->type, (long long)(i + j * d->ld), v);
        }
    if (e == CUBLASLT_EPILOGUE_BGRADB) /* the bias gradient: each column of op(B) summed over k */
        for (uint64_t j = 0; j < n; j++) {
            float s = 0.0f;
            for (uint64_t p = 0; p < k; p++)
                s += load(B, b->type, bn ? (long long)(p + j * b->ld) : (long long)(j + p * b->ld));
            store(const_cast<void *>(x.bias), d->type, (long long)j, s);
        }
}
