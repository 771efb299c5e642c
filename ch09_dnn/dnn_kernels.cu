/* dnn_kernels.cu - the small kernels around the network's GEMMs (cuBLAS does those).
 *
 *   gather_batch_kernel     copies this step's rows of the (shuffled) training set into the batch
 *   bias_act_kernel         Z = act(Z + b): bias and activation fused, one pass
 *   softmax_xent_kernel     the loss layer, 1 to 8 warps a row: bias, stable softmax, cross-entropy,
 *                           its gradient, accuracy; the last block sums the loss and moves the step on
 *   column_sums_kernel      the loss layer's bias gradient: column sums in two levels, over the GPU
 *   act_backward_kernel     dZ = dA * act'(A), with the bias gradient (column sums) in the same pass
 *   sgd_momentum_kernel, adam_kernel   one update over every parameter of every layer
 *   predict_kernel          argmax, its probability and the row's loss, for evaluation
 * Every sum is taken in a fixed order (atomics only count finished blocks), so a run is bit-for-bit
 * repeatable.
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

/* a thread per column (its bias read once), walking rows blockIdx.y, + gridDim.y, ...: no
 * division per element, and a warp's loads are 32 neighbours of a row */
__global__ void bias_act_kernel(float *z, const float *b, int rows, int cols, int act)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float bc = b[c];
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        size_t i = (size_t)r * cols + c;
        z[i] = activate(z[i] + bc, act);
    }
}

extern "C" cudaError_t bias_act_launch(float *d_z, const float *d_b, int rows, int cols, int act, cudaStream_t stream)
{
    int threads = cols < 256 ? (cols + 31) / 32 * 32 : 256;
    unsigned bx = (unsigned)((cols + threads - 1) / threads), by = (4096 + bx - 1) / bx; /* about 4096 blocks */
    if (by > (unsigned)rows) by = (unsigned)rows;
    bias_act_kernel<<<dim3(bx, by), threads, 0, stream>>>(d_z, d_b, rows, cols, act);
    return cudaGetLastError();
}

#define DNN_SUM_ROWS 64 /* rows a chunk of the column sums: 8 a thread */

/* ---------------------------------------------------------------- column sums in two levels
 *
 * The bias gradients are column sums of dZ (rows x cols). A thread walking a whole column alone
 * leaves the GPU idle (512 rows, one load after another), so the sums go in two levels, still in
 * a fixed order: grid (strips of 32 columns, chunks of DNN_SUM_ROWS rows), block (32, 8). Thread
 * (x, y) sums column c = 32 strip + x over rows y, y + 8, ... of its chunk; the block's 8 sums
 * meet in shared memory and go to part[chunk][c]. The block of a strip that finishes last
 * (a counter per strip, counted after a fence) adds the chunks in chunk order into db[c] and sets
 * the counter back to 0 for the next launch. Which block is last changes from run to run; the
 * order of the additions does not, so a run repeats bit for bit. */

/* the end of both column-sum kernels: s is this thread's sum of column c over its rows */
__device__ void finish_column_sums(float s, int c, int cols, float *part, unsigned *counters, float *db)
{
    __shared__ float acc[8][33]; /* 33: no bank conflicts when a column's 8 values are read */
    __shared__ int last;
    int chunks = gridDim.y;
    acc[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int k = 0; k < 8; k++) t += acc[k][threadIdx.x];
        if (chunks == 1)
            db[c] = t;
        else
            part[(size_t)blockIdx.y * cols + c] = t;
    }
    if (chunks == 1) return;
    __threadfence(); /* this block's partial sums are in memory before the counter says so */
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) last = atomicAdd(&counters[blockIdx.x], 1u) == (unsigned)chunks - 1;
    __syncthreads();
    if (!last) return;
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int k = 0; k < chunks; k++) t += __ldcg(&part[(size_t)k * cols + c]); /* from L2: other SMs wrote them */
        db[c] = t;
    }
    if (threadIdx.x == 0 && threadIdx.y == 0) counters[blockIdx.x] = 0;
}

/* db = column sums of dz (rows x cols) */
__global__ void column_sums_kernel(const float *dz, int rows, int cols, float *part, unsigned *counters, float *db)
{
    int c = blockIdx.x * 32 + threadIdx.x, r_end = min(rows, (int)(blockIdx.y + 1) * DNN_SUM_ROWS);
    float s = 0.0f;
    if (c < cols)
        for (int r = blockIdx.y * DNN_SUM_ROWS + threadIdx.y; r < r_end; r += 8) s += dz[(size_t)r * cols + c];
    finish_column_sums(s, c, cols, part, counters, db);
}

static dim3 column_sums_grid(int rows, int cols)
{
    return dim3((unsigned)(cols + 31) / 32, (unsigned)(rows + DNN_SUM_ROWS - 1) / DNN_SUM_ROWS);
}

/* ---------------------------------------------------------------- the loss layer */

#define DNN_LOSS_WARPS 8 /* a block's warps: 8 / wpr rows, wpr warps each */

/* the row's (max, first index of it) of two: larger value, then smaller index, a total order,
 * so any order of merging finds what a serial scan finds */
__device__ __forceinline__ void max_merge(float &mx, int &arg, float om, int oa)
{
    if (om > mx || (om == mx && oa < arg)) mx = om, arg = oa;
}

/* wpr warps per row (1, 2, 4 or 8; more for longer rows, so that each thread's loads stay few
 * and the GPU has warps enough in flight: 512 rows of 1000 logits a warp each left it waiting
 * on 32 loads after one another per pass): the logits' max and argmax, the sum of exp, the
 * row's loss and its gradient, each thread a column in 32 wpr, the row's warps meeting in
 * shared memory in warp order. The block that finishes last (a counter) adds the rows' losses
 * and counts in a fixed order, and moves the step on. */
__global__ void __launch_bounds__(32 * DNN_LOSS_WARPS)
    softmax_xent_kernel(const float *z, const float *b, const int *y, const int *perm, int rows, int classes,
                        float *dz, dnn_scratch sc, step_state *state, int advance, int wpr)
{
    __shared__ float loss_part[32 * DNN_LOSS_WARPS];
    __shared__ int ok_part[32 * DNN_LOSS_WARPS];
    __shared__ float warp_max[DNN_LOSS_WARPS], warp_sum[DNN_LOSS_WARPS];
    __shared__ int warp_arg[DNN_LOSS_WARPS];
    __shared__ int last;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, group = warp / wpr, first_warp = group * wpr;
    int threads = 32 * wpr, j = threadIdx.x - 32 * first_warp; /* this thread's place in its row's group */
    int r = blockIdx.x * (DNN_LOSS_WARPS / wpr) + group;
    bool live = r < rows; /* every thread reaches the barriers */
    float inv_rows = 1.0f / rows;
    const float *zr = z + (size_t)(live ? r : 0) * classes;
    float *dr = dz + (size_t)(live ? r : 0) * classes;
    /* stable softmax: subtract the row's largest logit before exp, so nothing overflows */
    float mx = -INFINITY;
    int arg = 0;
    for (int c = j; live && c < classes; c += threads) {
        float v = zr[c] + (b ? b[c] : 0.0f);
        if (v > mx) mx = v, arg = c;
    }
    for (int off = 16; off > 0; off /= 2) /* the first of equal maxima, as a serial scan finds */
        max_merge(mx, arg, __shfl_xor_sync(0xffffffffu, mx, off), __shfl_xor_sync(0xffffffffu, arg, off));
    if (lane == 0) warp_max[warp] = mx, warp_arg[warp] = arg;
    __syncthreads();
    mx = warp_max[first_warp], arg = warp_arg[first_warp];
    for (int w = 1; w < wpr; w++) max_merge(mx, arg, warp_max[first_warp + w], warp_arg[first_warp + w]);
    float sum = 0.0f;
    for (int c = j; live && c < classes; c += threads) sum += __expf(zr[c] + (b ? b[c] : 0.0f) - mx);
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off); /* every lane the same sum */
    if (lane == 0) warp_sum[warp] = sum;
    __syncthreads();
    sum = warp_sum[first_warp];
    for (int w = 1; w < wpr; w++) sum += warp_sum[first_warp + w]; /* in warp order: the same bits every run */
    if (live) {
        int label = perm ? y[perm[state->cursor + r]] : y[r];
        for (int c = j; c < classes; c += threads) {
            float p = __expf(zr[c] + (b ? b[c] : 0.0f) - mx) / sum;
            dr[c] = (p - (c == label ? 1.0f : 0.0f)) * inv_rows; /* d(mean loss)/d logit */
        }
        if (j == 0) { /* -log p[y] = log(sum) - (logit[y] - max): no division, no log of a tiny p */
            sc.row_loss[r] = logf(sum) - (zr[label] + (b ? b[label] : 0.0f) - mx);
            sc.row_ok[r] = arg == label;
        }
    }
    __threadfence(); /* the rows' losses are in memory before the counter says so */
    __syncthreads();
    unsigned *done = &sc.counters[0]; /* the column sums count in counters + 1 on */
    if (threadIdx.x == 0) last = atomicAdd(done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return; /* every block has read the cursor by now: the last may move it */
    float loss = 0.0f;
    int ok = 0;
    for (int i = threadIdx.x; i < rows; i += blockDim.x) loss += __ldcg(&sc.row_loss[i]), ok += __ldcg(&sc.row_ok[i]);
    loss_part[threadIdx.x] = loss;
    ok_part[threadIdx.x] = ok;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) { /* a fixed tree order */
        if (threadIdx.x < half) {
            loss_part[threadIdx.x] += loss_part[threadIdx.x + half];
            ok_part[threadIdx.x] += ok_part[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        state->loss_sum += loss_part[0] * inv_rows;
        state->correct += ok_part[0];
        if (advance) state->cursor += rows, state->t += 1;
        *done = 0;
    }
}

extern "C" cudaError_t softmax_xent_launch(const float *d_z, const float *d_b, const int *d_y, const int *d_perm,
                                           int rows, int classes, float *d_dz, float *d_db, dnn_scratch sc,
                                           step_state *d_state, int advance, cudaStream_t stream)
{
    if (rows > sc.max_rows || classes > sc.max_cols) return cudaErrorInvalidValue;
    /* about 128 classes a warp, 8 to 32 logits a thread: 1000 classes take 4 warps a row */
    int wpr = classes >= 1024 ? 8 : classes >= 512 ? 4 : classes >= 256 ? 2 : 1;
    int rows_per_block = DNN_LOSS_WARPS / wpr;
    unsigned blocks = (unsigned)((rows + rows_per_block - 1) / rows_per_block);
    softmax_xent_kernel<<<blocks, 32 * DNN_LOSS_WARPS, 0, stream>>>(d_z, d_b, d_y, d_perm, rows, classes, d_dz, sc,
                                                                     d_state, advance, wpr);
    if (d_db)
        column_sums_kernel<<<column_sums_grid(rows, classes), dim3(32, 8), 0, stream>>>(d_dz, rows, classes, sc.part,
                                                                                        sc.counters + 1, d_db);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- back through the activation */

/* dZ = dA * act'(A) in place, and db = its column sums (the two levels above) */
__global__ void act_backward_kernel(float *da, const float *a, int rows, int cols, int act, float *part,
                                    unsigned *counters, float *db)
{
    int c = blockIdx.x * 32 + threadIdx.x, r_end = min(rows, (int)(blockIdx.y + 1) * DNN_SUM_ROWS);
    float s = 0.0f;
    if (c < cols)
        for (int r = blockIdx.y * DNN_SUM_ROWS + threadIdx.y; r < r_end; r += 8) {
            size_t i = (size_t)r * cols + c;
            float g = da[i] * activate_grad(a[i], act);
            da[i] = g;
            s += g;
        }
    finish_column_sums(s, c, cols, part, counters, db);
}

extern "C" cudaError_t act_backward_launch(float *d_da, const float *d_a, int rows, int cols, int act, float *d_db,
                                           dnn_scratch sc, cudaStream_t stream)
{
    if (rows > sc.max_rows || cols > sc.max_cols) return cudaErrorInvalidValue;
    act_backward_kernel<<<column_sums_grid(rows, cols), dim3(32, 8), 0, stream>>>(d_da, d_a, rows, cols, act, sc.part,
                                                                                  sc.counters + 1, d_db);
    return cudaGetLastError();
}

extern "C" size_t dnn_scratch_part_floats(int max_rows, int max_cols)
{
    return (size_t)((max_rows + DNN_SUM_ROWS - 1) / DNN_SUM_ROWS) * (size_t)max_cols;
}
extern "C" size_t dnn_scratch_counters(int max_cols) { return (size_t)(max_cols + 31) / 32 + 1; }

/* The optimizers read four floats a thread at a time (16-byte loads: the parameters start
 * 256-byte aligned, cudaMalloc's), then the last n % 4 one by one. */
__global__ void sgd_momentum_kernel(float *w, const float *g, float *v, size_t n, float mu, float wd,
                                    const step_state *state)
{
    float lr = state->lr; /* read on the device: the schedule changes it without a new graph */
    size_t start = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = start; i < n / 4; i += stride) {
        float4 wi = reinterpret_cast<float4 *>(w)[i], vi = reinterpret_cast<float4 *>(v)[i];
        float4 gi = reinterpret_cast<const float4 *>(g)[i];
        sgd_update(&wi.x, &vi.x, gi.x, lr, mu, wd), sgd_update(&wi.y, &vi.y, gi.y, lr, mu, wd);
        sgd_update(&wi.z, &vi.z, gi.z, lr, mu, wd), sgd_update(&wi.w, &vi.w, gi.w, lr, mu, wd);
        reinterpret_cast<float4 *>(w)[i] = wi, reinterpret_cast<float4 *>(v)[i] = vi;
    }
    for (size_t i = n / 4 * 4 + start; i < n; i += stride) sgd_update(&w[i], &v[i], g[i], lr, mu, wd);
}

static unsigned optimizer_blocks(size_t n)
{
    size_t blocks = (n / 4 + 255) / 256;
    return blocks < 1 ? 1u : blocks > 2048 ? 2048u : (unsigned)blocks;
}

extern "C" cudaError_t sgd_momentum_launch(float *d_w, const float *d_g, float *d_v, size_t n, float mu, float wd,
                                           const step_state *d_state, cudaStream_t stream)
{
    sgd_momentum_kernel<<<optimizer_blocks(n), 256, 0, stream>>>(d_w, d_g, d_v, n, mu, wd, d_state);
    return cudaGetLastError();
}

__global__ void adam_kernel(float *w, const float *g, float *m, float *v, size_t n, float wd, const step_state *state)
{
    float lr = state->lr;
    float2 c = adam_corrections(state->t); /* state->t already counts this step: 1 on the first */
    size_t start = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = start; i < n / 4; i += stride) {
        float4 wi = reinterpret_cast<float4 *>(w)[i], mi = reinterpret_cast<float4 *>(m)[i];
        float4 vi = reinterpret_cast<float4 *>(v)[i], gi = reinterpret_cast<const float4 *>(g)[i];
        adam_update(&wi.x, &mi.x, &vi.x, gi.x, lr, wd, c), adam_update(&wi.y, &mi.y, &vi.y, gi.y, lr, wd, c);
        adam_update(&wi.z, &mi.z, &vi.z, gi.z, lr, wd, c), adam_update(&wi.w, &mi.w, &vi.w, gi.w, lr, wd, c);
        reinterpret_cast<float4 *>(w)[i] = wi, reinterpret_cast<float4 *>(m)[i] = mi;
        reinterpret_cast<float4 *>(v)[i] = vi;
    }
    for (size_t i = n / 4 * 4 + start; i < n; i += stride) adam_update(&w[i], &m[i], &v[i], g[i], lr, wd, c);
}

extern "C" cudaError_t adam_launch(float *d_w, const float *d_g, float *d_m, float *d_v, size_t n, float wd,
                                   const step_state *d_state, cudaStream_t stream)
{
    adam_kernel<<<optimizer_blocks(n), 256, 0, stream>>>(d_w, d_g, d_m, d_v, n, wd, d_state);
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
