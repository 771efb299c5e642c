/* adamw_kernels.cu - one AdamW step over all of a model's tensors.
 *
 *   1  a launch per tensor: a GPT-2 has 148 tensors, most of them small (768 biases), so the
 *      GPU spends much of the step between launches, and a small tensor's grid fills a part of it
 *   2  one launch over every tensor, as PyTorch's multi-tensor apply: the tensors are cut into
 *      chunks of ADAMW_CHUNK elements, a table (tensor, start) on the device says which chunk a
 *      block updates, and the tensors' pointers are in a second table
 *   3  as 2, with 16-byte loads and stores (a chunk's start is a multiple of 4 elements, every
 *      tensor 256-byte aligned; a tensor's last n % 4 elements one at a time)
 *   4  as 3 in one kernel a step: versions 1-3 launch a one-thread kernel first to move the step
 *      count; here every block reads the count and adds one itself, and the last block to finish
 *      (a counter in adamw_state) stores the new count, so no block can see it early
 * Each element reads p, g, m, v and writes p, m, v: 28 bytes, the floor of the step. The step
 * count and the learning rate are read on the device (adamw_state), and the step count is
 * incremented there first: a CUDA graph of the step replays with a schedule, unchanged.
 */
#include "adamw_kernels.h"

#include "lb_bf16.cuh" /* lb_bf16_rn, lb_bf16_pack4 */

#include <math.h>

/* elements a block updates in the one-launch versions: a tensor is cut into chunks of this many
 * (a tunable: make adamw ADAMW_CHUNK=65536); a multiple of 4, so that every chunk of a tensor
 * starts on a float4. 2048 was the fastest of 2048 .. 262144 on the H200 (NOTES: the last wave
 * of blocks is a smaller share of the step the smaller the chunk) */
#ifndef ADAMW_CHUNK
#define ADAMW_CHUNK 2048
#endif
static_assert(ADAMW_CHUNK % 4 == 0 && ADAMW_CHUNK >= 4, "ADAMW_CHUNK must be a multiple of 4");

#define ADAMW_BLOCK 256
#define ADAMW_B1 0.9f
#define ADAMW_B2 0.999f
#define ADAMW_EPS 1e-8f

/* versions 1-3: the step count moves first, in its own one-thread kernel: every block of the
 * update then reads the same t */
__global__ void adamw_next_step_kernel(adamw_state *s) { s->t += 1; }

/* the bias corrections 1 / (1 - beta^t) of step t */
__device__ __forceinline__ float2 corrections(int t)
{
    return make_float2(1.0f / (1.0f - powf(ADAMW_B1, (float)t)), 1.0f / (1.0f - powf(ADAMW_B2, (float)t)));
}

/* the gradients' factor: the state's grad_scale, 0 meaning none */
__device__ __forceinline__ float grad_scale(const adamw_state *s) { return s->grad_scale != 0.0f ? s->grad_scale : 1.0f; }

/* one element: the moments, then the decoupled decay and the step */
__device__ __forceinline__ void adamw_element(float &p, float g, float &m, float &v, float lr, float wd, float2 c)
{
    m = ADAMW_B1 * m + (1.0f - ADAMW_B1) * g;
    v = ADAMW_B2 * v + (1.0f - ADAMW_B2) * g * g;
    p -= lr * ((m * c.x) / (sqrtf(v * c.y) + ADAMW_EPS) + wd * p);
}

/* ---------------------------------------------------------------- 1: a launch per tensor */

__global__ void adamw_kernel1(float *p, const float *g, float *m, float *v, uint16_t *p16, long long n, float wd,
                              const adamw_state *s)
{
    float lr = s->lr, gs = grad_scale(s);
    float2 c = corrections(s->t);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        adamw_element(p[i], g[i] * gs, m[i], v[i], lr, wd, c);
        if (p16) p16[i] = lb_bf16_rn(p[i]);
    }
}

static cudaError_t launch1(const adamw_tensor *t, const adamw_tensor *d_t, const adamw_chunk *d_chunks, int count,
                           int n_chunks, float wd, adamw_state *s)
{
    (void)d_t, (void)d_chunks, (void)n_chunks;
    for (int k = 0; k < count; k++) {
        long long blocks = (t[k].n + ADAMW_BLOCK - 1) / ADAMW_BLOCK;
        if (blocks > 132 * 8) blocks = 132 * 8; /* grid-stride past a few waves */
        adamw_kernel1<<<(unsigned int)blocks, ADAMW_BLOCK>>>(t[k].p, t[k].g, t[k].m, t[k].v, t[k].p16, t[k].n, wd, s);
    }
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 2: one launch, multi-tensor */

__global__ void __launch_bounds__(ADAMW_BLOCK) adamw_kernel2(const adamw_tensor *tensors, const adamw_chunk *chunks,
                                                             float wd, const adamw_state *s)
{
    adamw_chunk ch = chunks[blockIdx.x];
    adamw_tensor t = tensors[ch.tensor];
    long long end = ch.start + ADAMW_CHUNK < t.n ? ch.start + ADAMW_CHUNK : t.n;
    float lr = s->lr, gs = grad_scale(s);
    float2 c = corrections(s->t);
    for (long long i = ch.start + threadIdx.x; i < end; i += ADAMW_BLOCK) {
        adamw_element(t.p[i], t.g[i] * gs, t.m[i], t.v[i], lr, wd, c);
        if (t.p16) t.p16[i] = lb_bf16_rn(t.p[i]);
    }
}

static cudaError_t launch2(const adamw_tensor *t, const adamw_tensor *d_t, const adamw_chunk *d_chunks, int count,
                           int n_chunks, float wd, adamw_state *s)
{
    (void)t, (void)count;
    adamw_kernel2<<<n_chunks, ADAMW_BLOCK>>>(d_t, d_chunks, wd, s); /* a block a chunk */
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 3: one launch, float4 */

/* a chunk's whole float4, then (in its tensor's last chunk) the last n % 4 one by one; the
 * gradients times gs; the bf16 copy, if any, four at a time (8 bytes: p16 is 8-byte aligned
 * where p is 16-byte aligned, a tensor's start being a multiple of 4 elements in both) */
__device__ __forceinline__ void adamw_chunk4(const adamw_tensor &t, long long start, float lr, float wd, float2 c,
                                             float gs)
{
    long long end = start + ADAMW_CHUNK < t.n ? start + ADAMW_CHUNK : t.n;
    long long end4 = start + (end - start) / 4 * 4;
    for (long long i = start + 4 * threadIdx.x; i < end4; i += 4 * ADAMW_BLOCK) {
        float4 p = *reinterpret_cast<float4 *>(t.p + i), m = *reinterpret_cast<float4 *>(t.m + i);
        float4 v = *reinterpret_cast<float4 *>(t.v + i);
        float4 g = *reinterpret_cast<const float4 *>(t.g + i);
        adamw_element(p.x, g.x * gs, m.x, v.x, lr, wd, c);
        adamw_element(p.y, g.y * gs, m.y, v.y, lr, wd, c);
        adamw_element(p.z, g.z * gs, m.z, v.z, lr, wd, c);
        adamw_element(p.w, g.w * gs, m.w, v.w, lr, wd, c);
        *reinterpret_cast<float4 *>(t.p + i) = p;
        *reinterpret_cast<float4 *>(t.m + i) = m;
        *reinterpret_cast<float4 *>(t.v + i) = v;
        if (t.p16)
            *reinterpret_cast<uint2 *>(t.p16 + i) = lb_bf16_pack4(p.x, p.y, p.z, p.w);
    }
    long long i = end4 + threadIdx.x;
    if (i < end) {
        adamw_element(t.p[i], t.g[i] * gs, t.m[i], t.v[i], lr, wd, c);
        if (t.p16) t.p16[i] = lb_bf16_rn(t.p[i]);
    }
}

__global__ void __launch_bounds__(ADAMW_BLOCK) adamw_kernel3(const adamw_tensor *tensors, const adamw_chunk *chunks,
                                                             float wd, const adamw_state *s)
{
    adamw_chunk ch = chunks[blockIdx.x];
    adamw_chunk4(tensors[ch.tensor], ch.start, s->lr, wd, corrections(s->t), grad_scale(s));
}

static cudaError_t launch3(const adamw_tensor *t, const adamw_tensor *d_t, const adamw_chunk *d_chunks, int count,
                           int n_chunks, float wd, adamw_state *s)
{
    (void)t, (void)count;
    adamw_kernel3<<<n_chunks, ADAMW_BLOCK>>>(d_t, d_chunks, wd, s);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 4: one kernel a step */

__global__ void __launch_bounds__(ADAMW_BLOCK) adamw_kernel4(const adamw_tensor *tensors, const adamw_chunk *chunks,
                                                             float wd, adamw_state *s)
{
    int step = s->t + 1; /* this step's count: read by every block before the last one stores it */
    adamw_chunk ch = chunks[blockIdx.x];
    adamw_chunk4(tensors[ch.tensor], ch.start, s->lr, wd, corrections(step), grad_scale(s));

    /* the last block to get here stores the count (and clears the counter for the next step):
     * every other block has read s->t before its atomicAdd, which came before this one's */
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&s->blocks_done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (last && threadIdx.x == 0) {
        s->t = step;
        s->blocks_done = 0;
    }
}

static cudaError_t launch4(const adamw_tensor *t, const adamw_tensor *d_t, const adamw_chunk *d_chunks, int count,
                           int n_chunks, float wd, adamw_state *s)
{
    (void)t, (void)count;
    adamw_kernel4<<<n_chunks, ADAMW_BLOCK>>>(d_t, d_chunks, wd, s);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- launchers */

typedef cudaError_t (*launcher)(const adamw_tensor *, const adamw_tensor *, const adamw_chunk *, int, int, float,
                                adamw_state *);
static const launcher launchers[] = {NULL, launch1, launch2, launch3, launch4};
static_assert(sizeof launchers / sizeof launchers[0] == ADAMW_VERSIONS,
              "one launcher per version: ADAMW_VERSIONS in adamw_kernels.h");

extern "C" int adamw_chunk_size(void) { return ADAMW_CHUNK; }

extern "C" int adamw_chunks(const adamw_tensor *tensors, int count, adamw_chunk *list)
{
    int n = 0;
    for (int k = 0; k < count; k++)
        for (long long start = 0; start < tensors[k].n; start += ADAMW_CHUNK, n++)
            if (list) list[n].tensor = k, list[n].start = start;
    return n;
}

extern "C" cudaError_t adamw_launch(int v, const adamw_tensor *h_tensors, const adamw_tensor *d_tensors,
                                    const adamw_chunk *d_chunks, int count, int n_chunks, float wd,
                                    adamw_state *d_state)
{
    if (v < 1 || v >= ADAMW_VERSIONS || count < 1 || n_chunks < 1) return cudaErrorInvalidValue;
    if (v < 4) adamw_next_step_kernel<<<1, 1>>>(d_state); /* version 4 moves the count itself */
    return launchers[v](h_tensors, d_tensors, d_chunks, count, n_chunks, wd, d_state);
}
