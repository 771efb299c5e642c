/* dnn_kernels.cu - the small kernels around the network's GEMMs (cuBLAS does those).
 *
 *   gather_batch_kernel     copies this step's rows of the (shuffled) training set into the batch
 *   bias_act_kernel         Z = act(Z + b): bias and activation fused, one pass
 *   softmax_xent_kernel     the loss layer in one block: bias, stable softmax, cross-entropy,
 *                           its gradient, the bias gradient, accuracy, and the step counter
 *   column_sums_kernel      the bias gradient of a loss layer with many classes, over the GPU
 *   act_backward_kernel     dZ = dA * act'(A), with the bias gradient (column sums) in the same pass
 *   sgd_momentum_kernel, adam_kernel   one update over every parameter of every layer
 *   predict_kernel          argmax, its probability and the row's loss, for evaluation
 * Every sum is taken in a fixed order (no atomics), so a run is bit-for-bit repeatable.
 */
#include "dnn_kernels.h"
#include <math.h>
#include "dnn_math.cuh" /* activate, activate_grad, sgd_update, adam_update */

__global__ void gather_batch_kernel(const float *x, const int *y, const int *perm, const step_state *state, int rows,
                                    int features, float *xb, int *yb)
{
    int base = state->cursor; /* read on the device: the same graph serves every step */
    size_t total = (size_t)rows * features;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int r = (int)(i / features), f = (int)(i % features);
        int src = perm[base + r];
        xb[i] = x[(size_t)src * features + f];
        if (f == 0) yb[r] = y[src];
    }
}

extern "C" cudaError_t gather_batch_launch(const float *d_x, const int *d_y, const int *d_perm,
                                           const step_state *d_state, int rows, int features, float *d_xb, int *d_yb,
                                           cudaStream_t stream)
{
    size_t total = (size_t)rows * features;
    unsigned int blocks = (unsigned int)((total + 255) / 256);
    if (blocks > 1024) blocks = 1024;
    gather_batch_kernel<<<blocks, 256, 0, stream>>>(d_x, d_y, d_perm, d_state, rows, features, d_xb, d_yb);
    return cudaGetLastError();
}

__global__ void bias_act_kernel(float *z, const float *b, int rows, int cols, int act)
{
    size_t n = (size_t)rows * cols;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        z[i] = activate(z[i] + b[i % cols], act);
}

extern "C" cudaError_t bias_act_launch(float *d_z, const float *d_b, int rows, int cols, int act, cudaStream_t stream)
{
    size_t n = (size_t)rows * cols;
    unsigned int blocks = (unsigned int)((n + 255) / 256);
    if (blocks > 2048) blocks = 2048;
    bias_act_kernel<<<blocks, 256, 0, stream>>>(d_z, d_b, rows, cols, act);
    return cudaGetLastError();
}

#define DNN_LOSS_THREADS 256
/* up to this many classes the loss kernel sums db itself (a thread per column); beyond, a thread
 * walking 512 rows one load after another is the slowest part of the step, and
 * column_sums_kernel spreads the sums over the GPU instead (one more launch) */
#define DNN_LOSS_OWN_SUMS 32

/* db = column sums of dz (rows x cols). Block: 32 columns x 8 row groups; each thread walks its
 * column over rows ty, ty + 8, ...; the 8 partial sums of a column are added in order. */
__global__ void column_sums_kernel(const float *dz, int rows, int cols, float *db)
{
    __shared__ float part[8][33]; /* 33: no bank conflicts when a column's 8 values are read */
    int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += 8) s += dz[(size_t)r * cols + c];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int k = 0; k < 8; k++) t += part[k][threadIdx.x];
        db[c] = t;
    }
}

__global__ void softmax_xent_kernel(const float *z, const float *b, const int *y, const int *perm, int rows,
                                    int classes, float *dz, float *db, step_state *state, int advance)
{
    __shared__ float row_loss[DNN_LOSS_THREADS];
    __shared__ int row_ok[DNN_LOSS_THREADS];
    float loss = 0.0f;
    int ok = 0;
    float inv_rows = 1.0f / rows;
    int base = state->cursor;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        const float *zr = z + (size_t)r * classes;
        float *dr = dz + (size_t)r * classes;
        /* stable softmax: subtract the row's largest logit before exp, so nothing overflows */
        float mx = -INFINITY;
        int arg = 0;
        for (int c = 0; c < classes; c++) {
            float v = zr[c] + (b ? b[c] : 0.0f);
            if (v > mx) mx = v, arg = c;
        }
        float sum = 0.0f;
        for (int c = 0; c < classes; c++) sum += __expf(zr[c] + (b ? b[c] : 0.0f) - mx);
        int label = perm ? y[perm[base + r]] : y[r];
        /* -log p[y] = log(sum) - (logit[y] - max): no division, no log of a tiny p */
        loss += logf(sum) - (zr[label] + (b ? b[label] : 0.0f) - mx);
        ok += arg == label;
        for (int c = 0; c < classes; c++) {
            float p = __expf(zr[c] + (b ? b[c] : 0.0f) - mx) / sum;
            dr[c] = (p - (c == label ? 1.0f : 0.0f)) * inv_rows; /* d(mean loss)/d logit */
        }
    }
    row_loss[threadIdx.x] = loss;
    row_ok[threadIdx.x] = ok;
    __syncthreads(); /* every row's dZ is written before the column sums read them */
    for (int c = threadIdx.x; db && classes <= DNN_LOSS_OWN_SUMS && c < classes; c += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < rows; r++) s += dz[(size_t)r * classes + c];
        db[c] = s;
    }
    /* the block's loss and count, summed in a fixed tree order */
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            row_loss[threadIdx.x] += row_loss[threadIdx.x + half];
            row_ok[threadIdx.x] += row_ok[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        state->loss_sum += row_loss[0] * inv_rows;
        state->correct += row_ok[0];
        if (advance) {
            state->cursor += rows; /* one block, and every thread has read the cursor: safe */
            state->t += 1;
        }
    }
}

extern "C" cudaError_t softmax_xent_launch(const float *d_z, const float *d_b, const int *d_y, const int *d_perm,
                                           int rows, int classes, float *d_dz, float *d_db, step_state *d_state,
                                           int advance, cudaStream_t stream)
{
    softmax_xent_kernel<<<1, DNN_LOSS_THREADS, 0, stream>>>(d_z, d_b, d_y, d_perm, rows, classes, d_dz, d_db, d_state,
                                                            advance);
    if (d_db && classes > DNN_LOSS_OWN_SUMS)
        column_sums_kernel<<<(classes + 31) / 32, dim3(32, 8), 0, stream>>>(d_dz, rows, classes, d_db);
    return cudaGetLastError();
}

/* Block: 32 columns x 8 row groups. Each thread walks its column over rows ty, ty+8, ...; the
 * 8 partial sums of a column are then added in shared memory, in order. */
__global__ void act_backward_kernel(float *da, const float *a, int rows, int cols, int act, float *db)
{
    __shared__ float part[8][33]; /* 33: no bank conflicts when a column's 8 values are read */
    int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < cols) {
        for (int r = threadIdx.y; r < rows; r += 8) {
            size_t i = (size_t)r * cols + c;
            float g = da[i] * activate_grad(a[i], act);
            da[i] = g;
            s += g;
        }
    }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int k = 0; k < 8; k++) t += part[k][threadIdx.x];
        db[c] = t;
    }
}

extern "C" cudaError_t act_backward_launch(float *d_da, const float *d_a, int rows, int cols, int act, float *d_db,
                                           cudaStream_t stream)
{
    act_backward_kernel<<<(cols + 31) / 32, dim3(32, 8), 0, stream>>>(d_da, d_a, rows, cols, act, d_db);
    return cudaGetLastError();
}

__global__ void sgd_momentum_kernel(float *w, const float *g, float *v, size_t n, float mu, float wd,
                                    const step_state *state)
{
    float lr = state->lr; /* read on the device: the schedule changes it without a new graph */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        sgd_update(&w[i], &v[i], g[i], lr, mu, wd);
}

extern "C" cudaError_t sgd_momentum_launch(float *d_w, const float *d_g, float *d_v, size_t n, float mu, float wd,
                                           const step_state *d_state, cudaStream_t stream)
{
    unsigned int blocks = (unsigned int)((n + 255) / 256);
    if (blocks > 2048) blocks = 2048;
    sgd_momentum_kernel<<<blocks, 256, 0, stream>>>(d_w, d_g, d_v, n, mu, wd, d_state);
    return cudaGetLastError();
}

__global__ void adam_kernel(float *w, const float *g, float *m, float *v, size_t n, float wd, const step_state *state)
{
    float lr = state->lr;
    float2 c = adam_corrections(state->t); /* state->t already counts this step: 1 on the first */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        adam_update(&w[i], &m[i], &v[i], g[i], lr, wd, c);
}

extern "C" cudaError_t adam_launch(float *d_w, const float *d_g, float *d_m, float *d_v, size_t n, float wd,
                                   const step_state *d_state, cudaStream_t stream)
{
    unsigned int blocks = (unsigned int)((n + 255) / 256);
    if (blocks > 2048) blocks = 2048;
    adam_kernel<<<blocks, 256, 0, stream>>>(d_w, d_g, d_m, d_v, n, wd, d_state);
    return cudaGetLastError();
}

__global__ void predict_kernel(const float *z, const float *b, const int *y, int rows, int classes, int *pred,
                               float *prob, float *nll)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *zr = z + (size_t)r * classes;
    float mx = -INFINITY;
    int arg = 0;
    for (int c = 0; c < classes; c++)
        if (zr[c] + (b ? b[c] : 0.0f) > mx) mx = zr[c] + (b ? b[c] : 0.0f), arg = c;
    float sum = 0.0f;
    for (int c = 0; c < classes; c++) sum += expf(zr[c] + (b ? b[c] : 0.0f) - mx);
    pred[r] = arg;
    prob[r] = 1.0f / sum;                                                                 /* exp(max - max) / sum */
    if (y) nll[r] = y[r] < 0 ? 0.0f : logf(sum) - (zr[y[r]] + (b ? b[y[r]] : 0.0f) - mx); /* -1: unlabelled */
}

extern "C" cudaError_t predict_launch(const float *d_z, const float *d_b, const int *d_y, int rows, int classes,
                                      int *d_pred, float *d_prob, float *d_nll, cudaStream_t stream)
{
    predict_kernel<<<(rows + 255) / 256, 256, 0, stream>>>(d_z, d_b, d_y, rows, classes, d_pred, d_prob, d_nll);
    return cudaGetLastError();
}
