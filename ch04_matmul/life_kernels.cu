/* life_kernels.cu - Conway's Game of Life on a torus, one generation per launch.
 *
 *   A cell with exactly 3 live neighbours is born; a live cell with 2 or 3 survives; every
 *   other cell is dead in the next generation. The 8 neighbours wrap around the edges.
 *
 *   1  global memory, one thread per cell, any number of blocks (the book's version runs in
 *      a single block and syncs it; separate input and output boards make that unnecessary:
 *      every thread reads only the old board and writes only the new one)
 *   2  shared-memory tiles: a block copies its 32x32 cells plus a 1-cell halo into shared
 *      memory once, and its threads read the 9-cell neighbourhoods from there
 *   3  bit-packed: 32 cells per 32-bit word, the 8 neighbour counts of 32 cells added at once
 *      with bitwise full adders
 *
 * Versions 1 and 2 move at least 2 bytes per cell per generation (read the old cell, write
 * the new one): memory-bound. Version 3 moves 1/4 byte per cell.
 */
#include "life_kernels.h"

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
    int n = in[up + xl] + in[up + x] + in[up + xr] + in[mid + xl] + in[mid + xr] +
            in[down + xl] + in[down + x] + in[down + xr];
    out[mid + x] = rule(n, in[mid + x]);
}

/* ---------------------------------------------------------------- 2: shared tiles + halo */

#define T2_W 32               /* tile width = blockDim.x */
#define T2_H 32               /* tile height = blockDim.y * T2_ROWS */
#define T2_ROWS 4             /* rows per thread */
/* The block (32 x 8 threads) owns a 32 x 32 tile. Its neighbourhoods need one more cell on
 * every side, so it loads (32+2) x (32+2) cells: 1.13 global bytes per cell instead of the
 * 9 reads per cell of version 1 (which the L1 cache mostly absorbed, at the cost of 9 load
 * instructions per cell). */
__global__ void life_kernel2(const uint8_t *in, uint8_t *out, int W, int H)
{
    __shared__ uint8_t tile[T2_H + 2][T2_W + 2];
    int x0 = blockIdx.x * T2_W, y0 = blockIdx.y * T2_H;
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    for (int i = tid; i < (T2_H + 2) * (T2_W + 2); i += blockDim.x * blockDim.y) {
        int r = i / (T2_W + 2), c = i % (T2_W + 2);
        int gx = x0 + c - 1, gy = y0 + r - 1;
        /* wrap: the halo of the first tile is the last column/row of the board; a tile that
         * sticks out past the board's end (W or H not a multiple of 32) wraps the same way,
         * and the cells it computes there are not written */
        gx = gx < 0 ? gx + W : gx >= W ? gx % W : gx;
        gy = gy < 0 ? gy + H : gy >= H ? gy % H : gy;
        tile[r][c] = in[(size_t)gy * W + gx];
    }
    __syncthreads();   /* the whole tile, halo included, must be in place before anyone reads it */
    int lx = threadIdx.x + 1, x = x0 + threadIdx.x;
#pragma unroll
    for (int k = 0; k < T2_ROWS; k++) {
        int ly = threadIdx.y + k * blockDim.y + 1, y = y0 + ly - 1;
        int n = tile[ly - 1][lx - 1] + tile[ly - 1][lx] + tile[ly - 1][lx + 1] + tile[ly][lx - 1] +
                tile[ly][lx + 1] + tile[ly + 1][lx - 1] + tile[ly + 1][lx] + tile[ly + 1][lx + 1];
        if (x < W && y < H) out[(size_t)y * W + x] = rule(n, tile[ly][lx]);
    }
}

/* ---------------------------------------------------------------- 3: bit-packed */

/* One thread per word: 32 cells. For each of the 3 rows it builds the words of the left
 * neighbours (cells x-1: the word shifted up one bit, plus the last cell of the previous
 * word) and of the right neighbours (x+1), so that bit b of each of the 8 neighbour words
 * is one neighbour of cell b. Then it adds the 8 words bit by bit with full adders: 3 sum
 * bits per cell (a count of 8 wraps to 0, which is dead anyway, like 0). */
__device__ __forceinline__ void full_add(uint32_t a, uint32_t b, uint32_t c, uint32_t &sum, uint32_t &carry)
{
    uint32_t t = a ^ b;
    sum = t ^ c;
    carry = (a & b) | (t & c);
}

struct row_words { uint32_t left, centre, right; };

/* The neighbour words of word j of one row (nw words, the last has `valid` bits). */
__device__ __forceinline__ row_words neighbours_in_row(const uint32_t *row, int j, int nw, int valid)
{
    uint32_t cur = row[j];
    uint32_t prev = row[j == 0 ? nw - 1 : j - 1], next = row[j == nw - 1 ? 0 : j + 1];
    /* cell x-1 of bit 0: the top cell of the previous word, or across the wrap the last
     * valid cell of the row (bit valid-1 of the last word) */
    uint32_t west_bit = j == 0 ? (prev >> (valid - 1)) & 1u : prev >> 31;
    /* cell x+1 of the word's top cell: bit 0 of the next word (word 0 across the wrap) */
    int top = j == nw - 1 ? valid - 1 : 31;
    row_words r;
    r.centre = cur;
    r.left = (cur << 1) | west_bit;
    r.right = (cur >> 1) | ((next & 1u) << top);
    return r;
}

__global__ void life_kernel3(const uint32_t *in, uint32_t *out, int W, int H)
{
    int nw = (W + 31) / 32, valid = W - 32 * (nw - 1);
    int j = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (j >= nw || y >= H) return;
    const uint32_t *row_up = in + (size_t)(y == 0 ? H - 1 : y - 1) * nw;
    const uint32_t *row_mid = in + (size_t)y * nw;
    const uint32_t *row_down = in + (size_t)(y == H - 1 ? 0 : y + 1) * nw;
    row_words u = neighbours_in_row(row_up, j, nw, valid);
    row_words m = neighbours_in_row(row_mid, j, nw, valid);
    row_words d = neighbours_in_row(row_down, j, nw, valid);

    /* add 8 one-bit numbers per bit position: ones (s0), twos (s1), fours (s2) */
    uint32_t sa, ca, sb, cb, sc, cc, s0, cd, t1, t2, s1, t3;
    full_add(u.left, u.centre, u.right, sa, ca);
    full_add(m.left, m.right, d.left, sb, cb);
    sc = d.centre ^ d.right;                 /* half adder */
    cc = d.centre & d.right;
    full_add(sa, sb, sc, s0, cd);            /* weight 1 */
    full_add(ca, cb, cc, t1, t2);            /* weight 2 ... */
    s1 = t1 ^ cd;
    t3 = t1 & cd;
    uint32_t s2 = t2 ^ t3;                   /* weight 4 (8 neighbours give 0: dead either way) */
    /* alive next: count == 3 (s2=0, s1=1, s0=1) or count == 2 (s2=0, s1=1, s0=0) and alive */
    uint32_t next = ~s2 & s1 & (s0 | m.centre);
    if (j == nw - 1 && valid < 32) next &= (1u << valid) - 1u;   /* keep the unused bits 0 */
    out[(size_t)y * nw + j] = next;
}

/* ---------------------------------------------------------------- launchers */

static unsigned int cdiv(long long a, int b) { return (unsigned int)((a + b - 1) / b); }

extern "C" cudaError_t life_step_bytes(int version, const uint8_t *d_in, uint8_t *d_out, int w, int h)
{
    switch (version) {
    case 1:
        life_kernel1<<<dim3(cdiv(w, 32), cdiv(h, 8)), dim3(32, 8)>>>(d_in, d_out, w, h);
        break;
    case 2:
        life_kernel2<<<dim3(cdiv(w, T2_W), cdiv(h, T2_H)), dim3(T2_W, T2_H / T2_ROWS)>>>(d_in, d_out, w, h);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t life_step_bits(const uint32_t *d_in, uint32_t *d_out, int w, int h)
{
    int nw = (w + 31) / 32;
    life_kernel3<<<dim3(cdiv(nw, 32), cdiv(h, 8)), dim3(32, 8)>>>(d_in, d_out, w, h);
    return cudaGetLastError();
}
