/* dnn_math.cuh - the per-element arithmetic that both of ch09's steps share: the activations,
 * their derivatives and the optimizers' update of one parameter. dnn_kernels.cu (the step
 * around cuBLAS) and dnn_fused_kernels.cu (the fused step) include it, so the two paths
 * compute the same thing in the same order and their weights can be compared. */
#ifndef DNN_MATH_CUH
#define DNN_MATH_CUH
#include "dnn_kernels.h"

__device__ __forceinline__ float activate(float z, int act)
{
    return act == ACT_RELU ? fmaxf(z, 0.0f) : 1.0f / (1.0f + __expf(-z));
}
/* the derivative from the output a = act(z): relu' = (a > 0), sigmoid' = a (1 - a) */
__device__ __forceinline__ float activate_grad(float a, int act)
{
    return act == ACT_RELU ? (a > 0.0f ? 1.0f : 0.0f) : a * (1.0f - a);
}

/* SGD with momentum and L2 decay, one parameter: g' = g + wd w, v = mu v - lr g', w += v */
__device__ __forceinline__ void sgd_update(float *w, float *v, float g, float lr, float mu, float wd)
{
    float vi = mu * *v - lr * (g + wd * *w);
    *v = vi;
    *w += vi;
}

/* Adam's bias corrections for step t (t = 1 on the first step): 1 / (1 - beta^t) */
#define DNN_ADAM_B1 0.9f
#define DNN_ADAM_B2 0.999f
__device__ __forceinline__ float2 adam_corrections(int t)
{
    return make_float2(1.0f / (1.0f - powf(DNN_ADAM_B1, (float)t)), 1.0f / (1.0f - powf(DNN_ADAM_B2, (float)t)));
}

/* Adam, one parameter, with the decay decoupled from the moments (AdamW): the moments see only
 * the loss's gradient g; w -= lr (m^ / (sqrt(v^) + eps) + wd w) */
__device__ __forceinline__ void adam_update(float *w, float *m, float *v, float g, float lr, float wd, float2 c)
{
    float mi = DNN_ADAM_B1 * *m + (1.0f - DNN_ADAM_B1) * g, vi = DNN_ADAM_B2 * *v + (1.0f - DNN_ADAM_B2) * g * g;
    *m = mi;
    *v = vi;
    *w -= lr * ((mi * c.x) / (sqrtf(vi * c.y) + 1e-8f) + wd * *w);
}

#endif
