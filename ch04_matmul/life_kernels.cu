/* life_kernels.cu - Conway's Game of Life on a torus, one generation per launch.
 *
 *   A cell with exactly 3 live neighbours is born; a live cell with 2 or 3 survives; every
 *   other cell is dead in the next generation. The 8 neighbours wrap around the edges.
 *
 *   1  global memory, one thread per cell, any number of blocks (the book's version runs in
 *      a single block and syncs it; separate input and output boards make that unnecessary:
 *      every thread reads only the old board and writes only the new one)
 *   2  shared-memory tiles: a block copies its tile plus a one-cell halo into shared memory
 *      once and its threads read the neighbourhoods from there, 4 cells (bytes) per 32-bit
 *      word added at once (one cell per thread when the width is not a multiple of 4)
 *   3  bit-packed: 32 cells per 32-bit word, the 8 neighbour counts of 32 cells added at once
 *      with bitwise full adders, 8 rows per thread
 *   7  as 3, with every load of a thread issued before it computes (latencies overlap)
 *   8  as 7 with 64-bit words: 64 cells per word, half the loads, shuffles and stores
 *
 * All G generations in one launch (the book's conway_gpu_syncthreads and _shared), for small
 * boards, where a launch per generation costs more than the generation:
 *   4  one block of 32 x 32 threads over the whole board in global memory, __syncthreads()
 *      between generations (a block can wait for itself; blocks cannot wait for each other)
 *   5  the same with both boards in shared memory: the board must fit there
 *   6  many blocks, one cell per thread, a cooperative-groups grid sync between generations:
 *      every block must be resident at once, so the board is limited by the whole GPU
 *
 * Versions 1 and 2 move at least 2 bytes per cell per generation (read the old cell, write
 * the new one): memory-bound. Version 3 moves 1/4 byte per cell.
 */
#include "life_kernels.h"

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ __forceinline__ uint8_t rule(int neighbours, uint8_t alive)
{
    return (uint8_t)(neighbours == 3 || (neighbours == 2 && alive));
}

/* ---------------------------------------------------------------- 1: global memory */

__global__ void life_kernel1(const uint8_t *in, uint8_t *out, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    /* the torus: column -1 is column W-1, row H is row 0 */
    int xl = x == 0 ? W - 1 : x - 1, xr = x == W - 1 ? 0 : x + 1;
    size_t up = (size_t)(y == 0 ? H - 1 : y - 1) * W, mid = (size_t)y * W, down = (size_t)(y == H - 1 ? 0 : y + 1) * W;
    int n = in[up + xl] + in[up + x] + in[up + xr] + in[mid + xl] + in[mid + xr] + in[down + xl] + in[down + x] +
            in[down + xr];
    out[mid + x] = rule(n, in[mid + x]);
}

/* ---------------------------------------------------------------- 2: shared tiles + halo */

/* Four cells per 32-bit word. Byte b of a word is cell 4*i + b (the GPU is little-endian),
 * each byte 0 or 1. The 8 neighbour counts of a word's 4 cells are added as whole words:
 * a count is at most 8, so no byte ever carries into the next. The left neighbours of the
 * 4 cells are the word shifted up one byte with the previous word's last byte shifted in:
 * __funnelshift_l(prev, cur, 8) = (cur << 8) | (prev >> 24); the right ones likewise. */
__device__ __forceinline__ uint32_t rule4(uint32_t count, uint32_t alive)
{
    /* __vcmpeq4: 0xFF in each byte where the bytes are equal */
    uint32_t born_or_stay = __vcmpeq4(count, 0x03030303u) | (__vcmpeq4(count, 0x02020202u) & (alive * 0xFFu));
    return born_or_stay & 0x01010101u;
}

#define LIFE2_W 32   /* tile width in words (128 cells) = blockDim.x = warp size */
#define LIFE2_H 64   /* tile height in rows = blockDim.y * LIFE2_ROWS */
#define LIFE2_ROWS 8 /* consecutive rows per thread */
/* The block (32 x 8 threads) owns 32 words x 64 rows. It copies them with a one-word halo on
 * every side into shared memory, (64+2) x (32+2) words: 1.09 global reads per word. Warp w
 * copies rows w, w+8, ...: each row's 32 inner words are one coalesced 128-byte load, and
 * lanes 0 and 1 also fetch the row's left and right halo word. The loop is unrolled, so a
 * thread has all its 9 loads in flight at once. Each thread then walks down its 8 rows
 * keeping the row above, the row and the row below in registers: 3 shared-memory reads
 * per output word. */
__global__ void life_kernel2(const uint32_t *in, uint32_t *out, int NW, int H)
{
    __shared__ uint32_t tile[LIFE2_H + 2][LIFE2_W + 2];
    int x0 = blockIdx.x * LIFE2_W, y0 = blockIdx.y * LIFE2_H, lane = threadIdx.x;
    /* wrap: the halo of the first tile is the board's last column/row; a tile sticking out
     * past the board's end wraps the same way and does not write those cells */
    int gx = x0 + lane < NW ? x0 + lane : (x0 + lane) % NW;
    int hx = lane == 0 ? (x0 == 0 ? NW - 1 : x0 - 1) : (x0 + LIFE2_W) % NW; /* halo column */
    constexpr int STEP = LIFE2_H / LIFE2_ROWS, N_LOADS = (LIFE2_H + 2 + STEP - 1) / STEP;
    uint32_t inner[N_LOADS], halo[N_LOADS];
#pragma unroll
    for (int k = 0; k < N_LOADS; k++) { /* first issue every load ... */
        int r = threadIdx.y + k * STEP, gy = y0 + r - 1;
        gy = gy < 0 ? gy + H : gy >= H ? gy % H : gy;
        const uint32_t *row = in + (size_t)gy * NW;
        if (r < LIFE2_H + 2) {
            inner[k] = row[gx];
            if (lane < 2) halo[k] = row[hx];
        }
    }
#pragma unroll
    for (int k = 0; k < N_LOADS; k++) { /* ... then store them: the latencies overlap */
        int r = threadIdx.y + k * STEP;
        if (r < LIFE2_H + 2) {
            tile[r][lane + 1] = inner[k];
            if (lane < 2) tile[r][lane == 0 ? 0 : LIFE2_W + 1] = halo[k];
        }
    }
    __syncthreads(); /* the whole tile, halo included, must be in place before anyone reads it */

    int lx = threadIdx.x + 1, x = x0 + threadIdx.x, ly0 = threadIdx.y * LIFE2_ROWS + 1;
    uint32_t three[LIFE2_ROWS + 2], sides[LIFE2_ROWS + 2], centre[LIFE2_ROWS + 2];
#pragma unroll
    for (int k = 0; k < LIFE2_ROWS + 2; k++) { /* per row: left + right, and left + centre + right */
        uint32_t p = tile[ly0 - 1 + k][lx - 1], c = tile[ly0 - 1 + k][lx], n = tile[ly0 - 1 + k][lx + 1];
        sides[k] = __funnelshift_l(p, c, 8) + __funnelshift_r(c, n, 8);
        three[k] = sides[k] + c;
        centre[k] = c;
    }
#pragma unroll
    for (int k = 1; k <= LIFE2_ROWS; k++) {
        int y = y0 + ly0 - 1 + k - 1;
        uint32_t count = three[k - 1] + sides[k] + three[k + 1];
        if (x < NW && y < H) out[(size_t)y * NW + x] = rule4(count, centre[k]);
    }
}

/* The same tile idea one cell per thread, for boards whose width is not a multiple of 4. */
__global__ void life_kernel2_bytes(const uint8_t *in, uint8_t *out, int W, int H)
{
    __shared__ uint8_t tile[LIFE2_H + 2][LIFE2_W + 2];
    int x0 = blockIdx.x * LIFE2_W, y0 = blockIdx.y * LIFE2_H;
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    for (int i = tid; i < (LIFE2_H + 2) * (LIFE2_W + 2); i += blockDim.x * blockDim.y) {
        int r = i / (LIFE2_W + 2), c = i % (LIFE2_W + 2);
        int gx = x0 + c - 1, gy = y0 + r - 1;
        gx = gx < 0 ? gx + W : gx >= W ? gx % W : gx;
        gy = gy < 0 ? gy + H : gy >= H ? gy % H : gy;
        tile[r][c] = in[(size_t)gy * W + gx];
    }
    __syncthreads();
    int lx = threadIdx.x + 1, x = x0 + threadIdx.x;
#pragma unroll
    for (int k = 0; k < LIFE2_ROWS; k++) {
        int ly = threadIdx.y + k * blockDim.y + 1, y = y0 + ly - 1;
        int n = tile[ly - 1][lx - 1] + tile[ly - 1][lx] + tile[ly - 1][lx + 1] + tile[ly][lx - 1] + tile[ly][lx + 1] +
                tile[ly + 1][lx - 1] + tile[ly + 1][lx] + tile[ly + 1][lx + 1];
        if (x < W && y < H) out[(size_t)y * W + x] = rule(n, tile[ly][lx]);
    }
}

/* ---------------------------------------------------------------- 3: bit-packed */

/* One thread per word column: 32 cells wide, 8 rows down. For each row it builds the words of the left
 * neighbours (cells x-1: the word shifted up one bit, plus the last cell of the previous
 * word) and of the right neighbours (x+1), so that bit b of each of the 8 neighbour words
 * is one neighbour of cell b. Then it adds the 8 words bit by bit with full adders: 3 sum
 * bits per cell (a count of 8 wraps to 0, which is dead anyway, like 0). */
template <typename Word> __device__ __forceinline__ void full_add(Word a, Word b, Word c, Word &sum, Word &carry)
{
    Word t = a ^ b;
    sum = t ^ c;
    carry = (a & b) | (t & c);
}

template <typename Word> struct row_words_of {
    Word left, centre, right;
};
typedef row_words_of<uint32_t> row_words;

/* 8 neighbour words and the centre -> the next state of 32 (or 64) cells */
template <typename Word>
__device__ __forceinline__ Word rule_words(const row_words_of<Word> &u, const row_words_of<Word> &m,
                                           const row_words_of<Word> &d)
{
    /* add 8 one-bit numbers per bit position: ones (s0), twos (s1), fours (s2) */
    Word sa, ca, sb, cb, s0, cd, t1, t2;
    full_add(u.left, u.centre, u.right, sa, ca);
    full_add(m.left, m.right, d.left, sb, cb);
    Word sc = d.centre ^ d.right, cc = d.centre & d.right; /* half adder */
    full_add(sa, sb, sc, s0, cd);                          /* weight 1 */
    full_add(ca, cb, cc, t1, t2);                          /* weight 2 ... */
    Word s1 = t1 ^ cd, t3 = t1 & cd;
    Word s2 = t2 ^ t3; /* weight 4 (8 neighbours give 0: dead either way) */
    /* alive next: count == 3 (s2=0, s1=1, s0=1), or count == 2 (s0=0) and alive now */
    return ~s2 & s1 & (s0 | m.centre);
}

#define LIFE3_ROWS 8 /* consecutive rows per thread: each row's words are loaded once, used 3 times */
/* The left and right neighbour words of lane l are lane l-1's and l+1's own words: a warp
 * shuffle passes them over, and only the lanes at the warp's edges (and at the row's wrap)
 * load a second word. Every lane takes part in the shuffles, so lanes past the row's end
 * load a valid word and simply do not store. */
__device__ __forceinline__ row_words row_neighbours(const uint32_t *row, int j, int nw, int valid)
{
    int lane = threadIdx.x, jc = j < nw ? j : nw - 1;
    uint32_t cur = row[jc];
    uint32_t from_left = __shfl_up_sync(0xffffffffu, cur, 1), from_right = __shfl_down_sync(0xffffffffu, cur, 1);
    uint32_t prev = (lane > 0 && jc > 0) ? from_left : row[jc == 0 ? nw - 1 : jc - 1];
    uint32_t next = (lane < 31 && jc + 1 < nw) ? from_right : row[jc == nw - 1 ? 0 : jc + 1];
    uint32_t west_bit = jc == 0 ? (prev >> (valid - 1)) & 1u : prev >> 31;
    int top = jc == nw - 1 ? valid - 1 : 31;
    row_words r;
    r.centre = cur;
    r.left = (cur << 1) | west_bit;
    r.right = (cur >> 1) | ((next & 1u) << top);
    return r;
}

__global__ void life_kernel3(const uint32_t *in, uint32_t *out, int W, int H)
{
    int nw = (W + 31) / 32, valid = W - 32 * (nw - 1);
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * LIFE3_ROWS;
    if (y0 >= H) return; /* the whole warp shares y0: it leaves together */
    uint32_t mask = (j == nw - 1 && valid < 32) ? (1u << valid) - 1u : ~0u; /* unused bits stay 0 */
    row_words u = row_neighbours(in + (size_t)(y0 == 0 ? H - 1 : y0 - 1) * nw, j, nw, valid);
    row_words m = row_neighbours(in + (size_t)y0 * nw, j, nw, valid);
#pragma unroll
    for (int k = 0; k < LIFE3_ROWS; k++) {
        int y = y0 + k;
        if (y >= H) break; /* also the same for the whole warp */
        row_words d = row_neighbours(in + (size_t)(y == H - 1 ? 0 : y + 1) * nw, j, nw, valid);
        if (j < nw) out[(size_t)y * nw + j] = rule_words(u, m, d) & mask;
        u = m;
        m = d;
    }
}

/* ---------------------------------------------------------------- 7-8: bit-packed, every load first */

#ifndef LIFE7_ROWS
#define LIFE7_ROWS 8 /* tunable: consecutive rows per thread */
#endif
/* Version 3 loads a row, computes it, stores it, then loads the next: in and out might be
 * the same memory as far as the compiler knows, so no load moves above an earlier store, and
 * a warp waits for one device-memory latency per row. Here (__restrict__, and all the rows
 * in a register array) a thread issues the loads of its LIFE7_ROWS + 2 rows, and of the
 * neighbour words its lane needs at the warp's edges, before it computes anything: the
 * latencies overlap. Word is 32 bits (version 7) or 64 (version 8: half the words, so half
 * the loads, shuffles and stores per cell; the additions are twice as wide). The board
 * layout is version 3's; a row of nw words, the last holding `valid` cells. */
template <typename Word>
__global__ void __launch_bounds__(256)
    life_kernel7(const Word *__restrict__ in, Word *__restrict__ out, int nw, int valid, int H)
{
    constexpr int BITS = 8 * sizeof(Word), R = LIFE7_ROWS;
    int lane = threadIdx.x, j = blockIdx.x * 32 + lane, jc = j < nw ? j : nw - 1;
    int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * R;
    if (y0 >= H) return; /* the whole warp shares y0 */
    /* the words left and right of the lane's: a neighbour lane's, except at the warp's edges
     * and where the row wraps around */
    bool load_left = lane == 0 || jc == 0, load_right = lane == 31 || jc == nw - 1;
    int jl = jc == 0 ? nw - 1 : jc - 1, jr = jc == nw - 1 ? 0 : jc + 1;
    Word cur[R + 2], west[R + 2], east[R + 2];
#pragma unroll
    for (int k = 0; k < R + 2; k++) { /* rows y0-1 .. y0+R, wrapped */
        int y = y0 - 1 + k;
        y = y < 0 ? y + H : y >= H ? y % H : y;
        const Word *row = in + (size_t)y * nw;
        cur[k] = row[jc];
        west[k] = load_left ? row[jl] : 0;
        east[k] = load_right ? row[jr] : 0;
    }
    row_words_of<Word> w[R + 2];
#pragma unroll
    for (int k = 0; k < R + 2; k++) {
        Word from_left = __shfl_up_sync(0xffffffffu, cur[k], 1), from_right = __shfl_down_sync(0xffffffffu, cur[k], 1);
        Word prev = load_left ? west[k] : from_left, next = load_right ? east[k] : from_right;
        Word west_bit = jc == 0 ? (prev >> (valid - 1)) & 1u : prev >> (BITS - 1);
        int top = jc == nw - 1 ? valid - 1 : BITS - 1;
        w[k].centre = cur[k];
        w[k].left = (cur[k] << 1) | west_bit;
        w[k].right = (cur[k] >> 1) | ((next & (Word)1) << top);
    }
    Word mask = (j == nw - 1 && valid < BITS) ? ((Word)1 << valid) - 1 : ~(Word)0; /* unused bits stay 0 */
#pragma unroll
    for (int k = 1; k <= R; k++) {
        int y = y0 + k - 1;
        if (y < H && j < nw) out[(size_t)y * nw + j] = rule_words(w[k - 1], w[k], w[k + 1]) & mask;
    }
}

/* ---------------------------------------------------------------- 4-6: every generation in one launch */

/* the live neighbours of cell (x, y) of a byte board on the torus */
__device__ __forceinline__ int neighbours(const uint8_t *b, int x, int y, int W, int H)
{
    int xl = x == 0 ? W - 1 : x - 1, xr = x == W - 1 ? 0 : x + 1;
    size_t up = (size_t)(y == 0 ? H - 1 : y - 1) * W, mid = (size_t)y * W, down = (size_t)(y == H - 1 ? 0 : y + 1) * W;
    return b[up + xl] + b[up + x] + b[up + xr] + b[mid + xl] + b[mid + xr] + b[down + xl] + b[down + x] + b[down + xr];
}

/* one block; each thread updates every 32nd cell of every 32nd row */
__device__ void one_block_generation(const uint8_t *in, uint8_t *out, int W, int H)
{
    for (int y = threadIdx.y; y < H; y += blockDim.y)
        for (int x = threadIdx.x; x < W; x += blockDim.x)
            out[(size_t)y * W + x] = rule(neighbours(in, x, y, W, H), in[(size_t)y * W + x]);
}

__global__ void life_kernel4(uint8_t *a, uint8_t *b, int W, int H, int gens)
{
    uint8_t *in = a, *out = b;
    for (int g = 0; g < gens; g++) {
        one_block_generation(in, out, W, H);
        __syncthreads(); /* the new board is complete (and visible to the block) before it is read */
        uint8_t *t = in;
        in = out;
        out = t;
    }
}

__global__ void life_kernel5(uint8_t *a, uint8_t *b, int W, int H, int gens)
{
    extern __shared__ uint8_t boards[]; /* both boards, W*H bytes each */
    uint8_t *in = boards, *out = boards + (size_t)W * H;
    int t = threadIdx.y * blockDim.x + threadIdx.x, threads = blockDim.x * blockDim.y;
    for (int i = t; i < W * H; i += threads) in[i] = a[i];
    __syncthreads();
    for (int g = 0; g < gens; g++) {
        one_block_generation(in, out, W, H);
        __syncthreads();
        uint8_t *s = in;
        in = out;
        out = s;
    }
    uint8_t *result = gens % 2 ? b : a; /* where a launch per generation would leave it */
    for (int i = t; i < W * H; i += threads) result[i] = in[i];
}

__global__ void life_kernel6(uint8_t *a, uint8_t *b, int W, int H, int gens)
{
    cg::grid_group grid = cg::this_grid();
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int x = (int)(i % (size_t)W), y = (int)(i / (size_t)W);
    uint8_t *in = a, *out = b;
    for (int g = 0; g < gens; g++) {
        if (i < (size_t)W * H) out[i] = rule(neighbours(in, x, y, W, H), in[i]);
        grid.sync(); /* every block of the grid waits here: only possible when all are resident */
        uint8_t *t = in;
        in = out;
        out = t;
    }
}

#define LIFE6_THREADS 256

/* The largest board (in cells) versions 4-6 take on this GPU; 0 for the others (any); -1 when
 * the GPU cannot run the version. */
extern "C" long long life_max_cells(int version)
{
    int dev, value;
    if (cudaGetDevice(&dev) != cudaSuccess) return -1;
    switch (version) {
    case 4: return LIFE_ONE_BLOCK_MAX_CELLS;
    case 5: /* two byte boards in the block's shared memory (the opt-in maximum) */
        if (cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) return -1;
        return value / 2;
    case 6: { /* one cell per thread, and every block resident at once */
        int per_sm = 0, sms = 0;
        if (cudaDeviceGetAttribute(&value, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess || !value) return -1;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, life_kernel6, LIFE6_THREADS, 0) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return -1;
        return (long long)per_sm * sms * LIFE6_THREADS;
    }
    default: return 0;
    }
}

extern "C" cudaError_t life_launch_gens(int version, void *d_a, void *d_b, int w, int h, int gens)
{
    uint8_t *a = static_cast<uint8_t *>(d_a), *b = static_cast<uint8_t *>(d_b);
    switch (version) {
    case 4: life_kernel4<<<1, dim3(32, 32)>>>(a, b, w, h, gens); break;
    case 5: {
        size_t smem = 2 * (size_t)w * h;
        cudaError_t e = cudaFuncSetAttribute(life_kernel5, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e) return e;
        life_kernel5<<<1, dim3(32, 32), smem>>>(a, b, w, h, gens);
        break;
    }
    case 6: {
        unsigned int blocks = (unsigned int)(((size_t)w * h + LIFE6_THREADS - 1) / LIFE6_THREADS);
        void *args[] = {&a, &b, &w, &h, &gens};
        /* a cooperative launch fails (cudaErrorCooperativeLaunchTooLarge) rather than deadlock
         * when the blocks cannot all be resident */
        return cudaLaunchCooperativeKernel((const void *)life_kernel6, blocks, LIFE6_THREADS, args, 0, 0);
    }
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- launchers */

static unsigned int cdiv(long long a, int b) { return (unsigned int)((a + b - 1) / b); }

/* One generation of version `version`; the boards are bytes (versions 1, 2) or words (3). */
extern "C" cudaError_t life_launch(int version, const void *d_in, void *d_out, int w, int h)
{
    return life_launch_stream(version, d_in, d_out, w, h, 0);
}

extern "C" cudaError_t life_launch_stream(int version, const void *d_in, void *d_out, int w, int h, cudaStream_t stream)
{
    const uint8_t *in8 = static_cast<const uint8_t *>(d_in);
    uint8_t *out8 = static_cast<uint8_t *>(d_out);
    switch (version) {
    case 1: life_kernel1<<<dim3(cdiv(w, 32), cdiv(h, 8)), dim3(32, 8), 0, stream>>>(in8, out8, w, h); break;
    case 2:
        if (w % 4 == 0) /* whole words per row: 4 cells per thread-word */
            life_kernel2<<<dim3(cdiv(w / 4, LIFE2_W), cdiv(h, LIFE2_H)), dim3(LIFE2_W, LIFE2_H / LIFE2_ROWS), 0,
                           stream>>>(reinterpret_cast<const uint32_t *>(d_in), reinterpret_cast<uint32_t *>(d_out),
                                     w / 4, h);
        else
            life_kernel2_bytes<<<dim3(cdiv(w, LIFE2_W), cdiv(h, LIFE2_H)), dim3(LIFE2_W, LIFE2_H / LIFE2_ROWS), 0,
                                 stream>>>(in8, out8, w, h);
        break;
    case 3: {
        int nw = (w + 31) / 32;
        life_kernel3<<<dim3(cdiv(nw, 32), cdiv(h, 8 * LIFE3_ROWS)), dim3(32, 8), 0, stream>>>(
            static_cast<const uint32_t *>(d_in), static_cast<uint32_t *>(d_out), w, h);
        break;
    }
    case 7:
    case 8: {
        int nw = (w + 31) / 32, valid = w - 32 * (nw - 1); /* 32-bit words, as version 3 */
        if (version == 8 && nw % 2 == 0) { /* rows of whole 64-bit words: the same bits, half the words */
            int valid64 = w - 64 * (nw / 2 - 1);
            life_kernel7<unsigned long long>
                <<<dim3(cdiv(nw / 2, 32), cdiv(h, 8 * LIFE7_ROWS)), dim3(32, 8), 0, stream>>>(
                    static_cast<const unsigned long long *>(d_in), static_cast<unsigned long long *>(d_out), nw / 2,
                    valid64, h);
        } else {
            life_kernel7<uint32_t><<<dim3(cdiv(nw, 32), cdiv(h, 8 * LIFE7_ROWS)), dim3(32, 8), 0, stream>>>(
                static_cast<const uint32_t *>(d_in), static_cast<uint32_t *>(d_out), nw, valid, h);
        }
        break;
    }
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
