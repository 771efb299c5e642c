/* attention_hopper.cu - attention's versions 4-7: FlashAttention on Hopper's tensor cores, with
 * wgmma and TMA (FlashAttention-3's structure). Their instructions exist only in sm_90a, Hopper's
 * own target, so this file is compiled for sm_90a alone, whatever ARCH is (common/rules.mk): no
 * later GPU runs sm_90a's machine code, and on any GPU but an H100/H200 the versions are listed as
 * skipped (attention_hopper_unavailable). Versions 0-3, the table of launchers and the problem's
 * description are in attention_kernels.cu and attention_kernels.h.
 *
 *   4  a producer warp asks the copy engine for Q once and K and V tiles of 128 keys into a ring
 *      of stages; two consumer warpgroups of 64 queries each run S = Q K^T (wgmma, both operands
 *      in shared memory), the softmax, and O += P V (wgmma with P from registers, V read
 *      transposed); while one consumer does its softmax on the CUDA cores the other keeps the
 *      tensor cores busy
 *   5  FlashAttention-3's schedule: each consumer issues S of tile t together with P V of tile
 *      t - 1, and the two consumers take turns at issuing (named barriers hand the turn over)
 *   6  5, persistent: one block an SM walks the (head, query block) items
 *   7  5 with a consumer warpgroup a head dimension can afford: three at D = 64 (blocks of 192
 *      queries, FlashAttention-3's tile there), two at D = 128 (version 5's)
 */
#include "attention_kernels.h"
#include "attention_device.cuh" /* bf16, last_key, online_rows, inverse_row_sums */
#include "labbook.h"            /* lb_sm90a_unavailable */
#include "lb_tensor_core.cuh"   /* mbarrier, TMA, wgmma, tensor maps */
#include "attention_maps.cuh"   /* attention_heads_map */

#include <cuda.h> /* CUtensorMap (a type only: no libcuda link) */
#include <stdlib.h>

/* Versions 4-7: the depth of the ring of K and V tiles (make attention ATT_STAGES=2). A stage
 * holds a tile of K and one of V, 64 KiB at D = 128 (32 at D = 64), beside Q's 32 KiB: at most 3
 * fit in the 227 KiB a block may have on an H100/H200, and a ring needs 2. With 2, version 5's
 * consumers hold both at once (S of tile t, P V of tile t - 1), so the next tile's copy starts
 * only when P V of t - 1 is done; the third lets it start a tile earlier (NOTES: "Why version 5
 * lost to version 4"). Refused here, when building, rather than by the driver when the program
 * sets up. */
#ifndef ATT_STAGES
#define ATT_STAGES 3
#endif
#if ATT_STAGES < 2 || 32 + ATT_STAGES * 64 + 1 > 226
#error \
    "ATT_STAGES must be 2..3: a stage of K and V is 64 KiB at D = 128, and a block may have at most 227 KiB of shared memory"
#endif

/* ================================================================ version 4: wgmma + TMA */

#define ATT4_QUERIES 128 /* two consumer warpgroups of 64 */
#define ATT4_KEYS 128
#define ATT4_THREADS 384 /* warpgroup 0 the producer, 1 and 2 the consumers */
#define ATT4_STAGES ATT_STAGES
#define ATT4_BOX_BYTES(rows) ((rows)*128) /* a box: rows x 64 bf16 (128 bytes, one swizzle row) */

/* where the consumers write O: its rows (attention_rows_of: (B, H, S, D) or token rows) */
struct att_out {
    uint16_t *o;
    attention_rows rows;
};

/* shared memory, each tile as D/64 boxes of rows x 128 bytes, 1024-byte aligned: Q (64 rows a
 * consumer warpgroup, NC of them), then the ring of K and V stages */
template <int D, int NC = 2> struct att4_layout {
    static const int Q_ROWS = 64 * NC;
    static const int Q_BYTES = (D / 64) * ATT4_BOX_BYTES(Q_ROWS);
    static const int KV_BYTES = (D / 64) * ATT4_BOX_BYTES(ATT4_KEYS); /* one of K or V */
    static const int BYTES = Q_BYTES + ATT4_STAGES * 2 * KV_BYTES + 1024;
};

/* O (64 x D) += P (64 x 16, four registers a thread: the layout of mma.sync's A) V (16 x D,
 * descriptor, N-major: read transposed), by the wgmma of D's width (lb_tensor_core.cuh) */
template <int D> __device__ __forceinline__ void wgmma_pv(float *d, const uint32_t a[4], uint64_t dv);
template <> __device__ __forceinline__ void wgmma_pv<128>(float *d, const uint32_t a[4], uint64_t dv)
{
    wgmma_m64n128k16_bf16_rs_bt(d, a, dv);
}
template <> __device__ __forceinline__ void wgmma_pv<64>(float *d, const uint32_t a[4], uint64_t dv)
{
    wgmma_m64n64k16_bf16_rs_bt(d, a, dv);
}

/* ---- the pieces of versions 4-7, each run by one consumer warpgroup (c: 0 .. NC - 1, its 64
 * queries are q0 + 64c ..) on the tile of keys in a stage (sK, sV) */

/* S (64 x 128) = Q_c K^T, issued as one group: k-step ks is 32 bytes into box ks / 4 of Q (boxes
 * of 64 NC rows) and K */
template <int D, int NC>
__device__ __forceinline__ void issue_qk(float sc[64], const uint8_t *sQ, const uint8_t *sK, int c)
{
    wgmma_fence(); /* sc's registers may be written by the tensor cores now */
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) {
        int box = ks / 4, off = (ks % 4) * 32;
        wgmma_m64n128k16_bf16_ss(sc, wgmma_desc(sQ + box * ATT4_BOX_BYTES(64 * NC) + c * 64 * 128 + off),
                 wgmma_desc(sK + box * ATT4_BOX_BYTES(ATT4_KEYS) + off), ks > 0);
    }
    wgmma_commit();
}

/* O (64 x D) += P V, issued as one group: k-step ks is keys 16ks.., 2048 bytes into V's boxes;
 * the next 64 columns of D are the next box, ATT4_BOX_BYTES(ATT4_KEYS) further */
template <int D> __device__ __forceinline__ void issue_pv(float *o, const uint32_t p[8][4], const uint8_t *sV)
{
    wgmma_fence(); /* o was rescaled and p written by the CUDA cores: both ready for the tensor cores */
#pragma unroll
    for (int ks = 0; ks < 8; ks++) wgmma_pv<D>(o, p[ks], wgmma_desc_mn(sV + ks * 16 * 128, ATT4_BOX_BYTES(ATT4_KEYS)));
    wgmma_commit();
}

/* The online softmax of a tile of S in place: sc[4j + e] is row (e < 2 ? g : g + 8), key
 * k0 + 8j + 2 t4 + (e & 1). Keys past a row's last are masked (only where the tile reaches past
 * S or the diagonal: `edge`); the tile's max and the running max m, in log2 units (the raw scores
 * times scale); each weight as one exp2 of s scale - m; l rescaled and grown. Returns in alpha
 * the factor O must be multiplied by before this tile's P V is added. */
__device__ __forceinline__ void softmax_tile(float sc[64], int k0, int t4, const int last[2], bool edge, float scale,
                                             float m[2], float l[2], float alpha[2])
{
    float tile_max[2] = {-INFINITY, -INFINITY};
    /* key k0 + 8j + 2 t4 + (e & 1) is past the row's last when 8j + (e & 1) > last - k0 - 2 t4:
     * one subtraction a row, then comparisons with constants (no register for each key) */
    int lim[2] = {last[0] - k0 - 2 * t4, last[1] - k0 - 2 * t4};
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            if (edge && 8 * j + (e & 1) > lim[e / 2]) sc[4 * j + e] = -INFINITY;
            tile_max[e / 2] = fmaxf(tile_max[e / 2], sc[4 * j + e]);
        }
    tile_max[0] *= scale, tile_max[1] *= scale; /* scale > 0: the max of the scaled scores */
    float m_use[2];
    online_rows(tile_max, m, l, alpha, m_use);
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            sc[4 * j + e] = fast_exp2(fmaf(sc[4 * j + e], scale, -m_use[e / 2]));
            l[e / 2] += sc[4 * j + e];
        }
}

template <int D> __device__ __forceinline__ void rescale_o(float *o, const float alpha[2])
{
#pragma unroll
    for (int j = 0; j < D / 8; j++)
        o[4 * j] *= alpha[0], o[4 * j + 1] *= alpha[0], o[4 * j + 2] *= alpha[1], o[4 * j + 3] *= alpha[1];
}

/* P (64 x 128, floats in S's layout) as 8 A operands of 16 keys each, bf16: two 8-column tiles
 * of the accumulators make one operand, as with mma.sync */
__device__ __forceinline__ void pack_p(uint32_t p[8][4], const float sc[64])
{
#pragma unroll
    for (int ks = 0; ks < 8; ks++) {
        const float *x = sc + 8 * ks;
        p[ks][0] = lb_bf16_pack2(x[0], x[1]), p[ks][1] = lb_bf16_pack2(x[2], x[3]);
        p[ks][2] = lb_bf16_pack2(x[4], x[5]), p[ks][3] = lb_bf16_pack2(x[6], x[7]);
    }
}

/* O / l in bf16, two columns a store, rows row0 and row0 + 8 where they are inside S */
template <int D>
__device__ __forceinline__ void store_o(const att_out &O, float *lse_out, size_t bh, int seq, int row0, int t4,
                                        const float *o, const float m[2], float l[2])
{
    uint16_t *head = O.o + (long long)(bh / O.rows.heads) * O.rows.batch + (long long)(bh % O.rows.heads) * O.rows.head;
    inverse_row_sums(l);
    store_lse(lse_out, bh * seq, seq, row0, t4, m, l);
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        int col = 8 * j + 2 * t4;
        if (row0 < seq)
            *reinterpret_cast<uint32_t *>(head + row0 * O.rows.row + col) =
                lb_bf16_pack2(o[4 * j] * l[0], o[4 * j + 1] * l[0]);
        if (row0 + 8 < seq)
            *reinterpret_cast<uint32_t *>(head + (row0 + 8) * O.rows.row + col) =
                lb_bf16_pack2(o[4 * j + 2] * l[1], o[4 * j + 3] * l[1]);
    }
}

/* The tiles of 128 keys a block of q_rows queries from q0 sees: all of S, or, causal, up to the
 * diagonal (none above it) */
__device__ __forceinline__ int att4_tiles(int q0, int seq, int causal, int q_rows = ATT4_QUERIES)
{
    int tiles = (seq + ATT4_KEYS - 1) / ATT4_KEYS;
    return causal ? min(tiles, (q0 + q_rows - 1) / ATT4_KEYS + 1) : tiles;
}

/* The producer (one thread of warpgroup 0), for one block of queries (64 NC of them, mapQ's box
 * rows): Q's boxes on q_full, then each tile's K and V boxes on full[s], once every consumer has
 * released the stage's last use (empty[s]). The ring's uses are counted on from u (version 6 runs
 * one ring through many blocks of queries); returns the count after this block's tiles. */
template <int D, int NC = 2>
__device__ __forceinline__ int produce(const CUtensorMap *mapQ, const CUtensorMap *mapK, const CUtensorMap *mapV,
                                       uint8_t *sQ, uint8_t *sKV, uint64_t *q_full, uint64_t *full, uint64_t *empty,
                                       int q0, int bh, int heads, int tiles, int u)
{
    typedef att4_layout<D, NC> L;
    int h = bh % heads, b4 = bh / heads; /* the maps' (d, s, h, b) */
    mbar_arrive_expect(q_full, L::Q_BYTES);
    for (int b = 0; b < D / 64; b++) tma_load_4d(sQ + b * ATT4_BOX_BYTES(L::Q_ROWS), mapQ, 64 * b, q0, h, b4, q_full);
    for (int t = 0; t < tiles; t++, u++) {
        int s = u % ATT4_STAGES, use = u / ATT4_STAGES;
        if (use > 0) mbar_wait(&empty[s], (use - 1) & 1);
        uint8_t *sK = sKV + 2 * s * L::KV_BYTES, *sV = sK + L::KV_BYTES;
        mbar_arrive_expect(&full[s], 2 * L::KV_BYTES);
        for (int b = 0; b < D / 64; b++) {
            tma_load_4d(sK + b * ATT4_BOX_BYTES(ATT4_KEYS), mapK, 64 * b, t * ATT4_KEYS, h, b4, &full[s]);
            tma_load_4d(sV + b * ATT4_BOX_BYTES(ATT4_KEYS), mapV, 64 * b, t * ATT4_KEYS, h, b4, &full[s]);
        }
    }
    return u;
}

/* Ping-pong (versions 5-7): the NC consumers take turns at issuing their products, in a
 * round (0, 1, .., NC - 1, 0, ..), so that one's softmax runs on the CUDA cores while another's
 * products run on the tensor cores. Consumer c waits on named barrier 1 + c until the one before
 * it has issued (bar.sync: its 128 threads and that one's 128 arrivals), issues, then lets the
 * next go (bar.arrive on the next one's barrier). The last consumer lets consumer 0 start, and
 * skips its very last handoff, so that every barrier completes as often as it is waited on.
 * Named barrier 0 is __syncthreads'; the numbers are immediates, hence the switches. */
__device__ __forceinline__ void my_turn(int c)
{
    if (c == 0)
        bar_sync<1, 256>();
    else if (c == 1)
        bar_sync<2, 256>();
    else
        bar_sync<3, 256>();
}
template <int NC> __device__ __forceinline__ void your_turn(int c)
{
    int next = (c + 1) % NC;
    if (next == 0)
        bar_arrive<1, 256>();
    else if (next == 1)
        bar_arrive<2, 256>();
    else
        bar_arrive<3, 256>();
}
/* the end of consumer c's turn: the handoff, but for the last consumer's very last (`final`) */
template <int NC> __device__ __forceinline__ void end_turn(int c, bool final)
{
    if (!(final && c == NC - 1)) your_turn<NC>(c);
}

/* What a consumer warpgroup of versions 4-7 works on: its 64 queries from q0 + 64c, the tiles
 * of K and V they see (ring uses u .. u + tiles - 1), and what it needs to know of them */
template <int D, int NC = 2> struct att4_job {
    const uint8_t *sQ, *sKV; /* Q's boxes; the ring (stage s: K at 2s, V at 2s + 1) */
    uint64_t *full, *empty;  /* the ring's barriers */
    int c, q0, bh, tiles, u, seq, causal;
    __device__ const uint8_t *stage_k(int v) const { return sKV + 2 * (v % ATT4_STAGES) * att4_layout<D, NC>::KV_BYTES; }
    __device__ const uint8_t *stage_v(int v) const { return stage_k(v) + att4_layout<D, NC>::KV_BYTES; }
    /* keys past a row's last only where the tile reaches past S or the diagonal */
    __device__ bool edge(int k0) const { return k0 + ATT4_KEYS > seq || (causal && k0 + ATT4_KEYS > q0 + 64 * c); }
};

/* Versions 4-7: warp-specialised. Warpgroup 0 produces (above); consumer c (warpgroups 1 .. NC)
 * takes queries q0 + 64c .. and, per tile of 128 keys: S = Q_c K^T, the online softmax on S's 64
 * registers (a lane holds two rows, as with mma.sync: rows g and g + 8 of its warp's 16, whose
 * other values sit in its quad), P to bf16 registers, O += P V, and the stage released; at the
 * end O / l is stored. setmaxnreg moves registers from the producer, which needs few, to the
 * consumers' S (64), O (D/2) and P (32).
 *   version 4 (consume_in_order): those steps one after the other; the two consumers share the
 *     tensor cores as the warp schedulers happen to interleave them.
 *   versions 5 and 6 (consume_fa3, FlashAttention-3's schedule): S of tile t is issued together
 *     with P V of tile t - 1, and the consumers take turns at issuing (my_turn / your_turn): one's
 *     softmax runs on the CUDA cores while the other's products run on the tensor cores; O is
 *     rescaled once its product has landed. (A turn for each product separately, without
 *     issuing the two together, does not survive ptxas: it moves the softmax, pure register
 *     work, past the turn's bar.sync, into the turn. NOTES.) */
template <int D, int NC>
__device__ __forceinline__ void consume_in_order(const att4_job<D, NC> &j, const att_out &O, float *lse_out)
{
    int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    int row0 = j.q0 + 64 * j.c + 16 * warp + g; /* this lane's rows: row0 and row0 + 8 */
    int last[2] = {last_key(row0, j.seq, j.causal), last_key(row0 + 8, j.seq, j.causal)};
    const float scale = LOG2E * rsqrtf((float)D);
    float o[D / 2] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, sc[64], alpha[2];
    uint32_t p[8][4];
    bool releaser = threadIdx.x % 128 == 0; /* one arrival a consumer on a stage's empty barrier */
    for (int t = 0; t < j.tiles; t++) {
        int v = j.u + t, k0 = t * ATT4_KEYS;
        mbar_wait(&j.full[v % ATT4_STAGES], (v / ATT4_STAGES) & 1);
        issue_qk<D, NC>(sc, j.sQ, j.stage_k(v), j.c);
        wgmma_wait<0>();
        wgmma_settle<64>(sc);
        softmax_tile(sc, k0, t4, last, j.edge(k0), scale, m, l, alpha);
        rescale_o<D>(o, alpha);
        pack_p(p, sc);
        issue_pv<D>(o, p, j.stage_v(v));
        wgmma_wait<0>();
        wgmma_settle<D / 2>(o);
        if (releaser) mbar_arrive(&j.empty[v % ATT4_STAGES]);
    }
    store_o<D>(O, lse_out, (size_t)j.bh, j.seq, row0, t4, o, m, l);
}

/* q_empty (version 6): arrived on once the job's last S has landed (Q may be reloaded); final:
 * this consumer's last job, whose last turn consumer 1 hands to nobody */
template <int D, int NC>
__device__ __forceinline__ void consume_fa3(const att4_job<D, NC> &j, const att_out &O, float *lse_out, uint64_t *q_empty, bool final)
{
    int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4, c = j.c;
    int row0 = j.q0 + 64 * c + 16 * warp + g; /* this lane's rows: row0 and row0 + 8 */
    int last[2] = {last_key(row0, j.seq, j.causal), last_key(row0 + 8, j.seq, j.causal)};
    const float scale = LOG2E * rsqrtf((float)D);
    float o[D / 2] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, sc[64], alpha[2];
    uint32_t p[8][4];
    bool releaser = threadIdx.x % 128 == 0;
    /* tile 0's S and softmax alone (O is still zero: nothing to rescale) */
    mbar_wait(&j.full[j.u % ATT4_STAGES], (j.u / ATT4_STAGES) & 1);
    my_turn(c);
    issue_qk<D, NC>(sc, j.sQ, j.stage_k(j.u), c);
    end_turn<NC>(c, false);
    wgmma_wait<0>();
    wgmma_settle<64>(sc);
    if (q_empty && j.tiles == 1 && releaser) mbar_arrive(q_empty); /* the only S has landed */
    softmax_tile(sc, 0, t4, last, j.edge(0), scale, m, l, alpha);
    pack_p(p, sc);
    for (int t = 1; t < j.tiles; t++) {
        int v = j.u + t, k0 = t * ATT4_KEYS;
        mbar_wait(&j.full[v % ATT4_STAGES], (v / ATT4_STAGES) & 1);
        my_turn(c);
        issue_qk<D, NC>(sc, j.sQ, j.stage_k(v), c); /* S of tile t ... */
        issue_pv<D>(o, p, j.stage_v(v - 1));        /* ... and P V of tile t - 1, queued behind it */
        end_turn<NC>(c, false);
        wgmma_wait<1>(); /* S has landed; P V may still run */
        wgmma_settle<64>(sc);
        if (q_empty && t == j.tiles - 1 && releaser) mbar_arrive(q_empty); /* the last S: Q is free */
        softmax_tile(sc, k0, t4, last, j.edge(k0), scale, m, l, alpha);
        wgmma_settle<64>(sc);  /* the softmax before the wait, for nvcc's front end (ptxas: NOTES) */
        wgmma_wait<0>(); /* P V has landed: O and p are free again */
        wgmma_settle<D / 2>(o);
        if (releaser) mbar_arrive(&j.empty[(v - 1) % ATT4_STAGES]);
        rescale_o<D>(o, alpha);
        pack_p(p, sc);
    }
    int v = j.u + j.tiles - 1;
    my_turn(c);
    issue_pv<D>(o, p, j.stage_v(v)); /* the last tile's P V */
    end_turn<NC>(c, final);
    wgmma_wait<0>();
    wgmma_settle<D / 2>(o);
    if (releaser) mbar_arrive(&j.empty[v % ATT4_STAGES]);
    store_o<D>(O, lse_out, (size_t)j.bh, j.seq, row0, t4, o, m, l);
}

/* The block's barriers, made by one thread before anyone uses them: Q's (q_full; q_empty for
 * version 6, which reloads Q), and each stage's full (the producer's arrival and the bytes) and
 * empty (one arrival per consumer: nc of them) */
__device__ __forceinline__ void init_barriers(uint64_t *q_full, uint64_t *q_empty, uint64_t *full, uint64_t *empty,
                                              int nc = 2)
{
    if (threadIdx.x == 0) {
        mbar_init(q_full, 1), mbar_init(q_empty, nc);
        for (int s = 0; s < ATT4_STAGES; s++) mbar_init(&full[s], 1), mbar_init(&empty[s], nc);
        mbar_fence_init();
    }
    __syncthreads();
}

/* The registers a thread of the producer and of a consumer warpgroup keep after setmaxnreg, with
 * NC consumers: all of the SM's 64 K between them (128 x 40 + 256 x 232 with two; with three the
 * producer goes down to setmaxnreg's least, 128 x 24 + 384 x 160: S 64, O D/2 and P 32 of them) */
template <int NC> struct att_regs;
template <> struct att_regs<2> {
    static const int PRODUCER = 40, CONSUMER = 232;
};
template <> struct att_regs<3> {
    static const int PRODUCER = 24, CONSUMER = 160;
};

/* Versions 4, 5 and 7: one block of 64 NC queries a block of threads (causal: the longest rows
 * first), NC consumer warpgroups (mapQ's boxes are 64 NC rows) */
template <int D, bool FA3, int NC = 2>
__device__ __forceinline__ void flash_wgmma_body(const CUtensorMap *mapQ, const CUtensorMap *mapK,
                                                 const CUtensorMap *mapV, const att_out &O, float *lse_out, int seq, int causal)
{
    typedef att4_layout<D, NC> L;
    extern __shared__ uint8_t smem4_raw[];
    uint8_t *sQ = aligned_smem(smem4_raw), *sKV = sQ + L::Q_BYTES;
    __shared__ uint64_t q_full, q_empty, full[ATT4_STAGES], empty[ATT4_STAGES];
    int qblock = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    int q0 = qblock * L::Q_ROWS, bh = blockIdx.y, tiles = att4_tiles(q0, seq, causal, L::Q_ROWS);
    init_barriers(&q_full, &q_empty, full, empty, NC);
    int wg = threadIdx.x / 128;
    if (wg == 0) {
        setmaxnreg_dec<att_regs<NC>::PRODUCER>();
        if (threadIdx.x == 0)
            produce<D, NC>(mapQ, mapK, mapV, sQ, sKV, &q_full, full, empty, q0, bh, O.rows.heads, tiles, 0);
        return;
    }
    setmaxnreg_inc<att_regs<NC>::CONSUMER>();
    att4_job<D, NC> j = {sQ, sKV, full, empty, wg - 1, q0, bh, tiles, 0, seq, causal};
    mbar_wait(&q_full, 0);
    if (!FA3) {
        consume_in_order<D, NC>(j, O, lse_out);
    } else {
        if (j.c == NC - 1) your_turn<NC>(j.c); /* consumer 0 goes first */
        consume_fa3<D, NC>(j, O, lse_out, NULL, true);
    }
}

/* version 4: warp-specialised, each consumer's steps one after the other */
template <int D>
__global__ void __launch_bounds__(ATT4_THREADS, 1)
    attention_kernel4(const __grid_constant__ CUtensorMap mapQ, const __grid_constant__ CUtensorMap mapK,
                      const __grid_constant__ CUtensorMap mapV, const att_out O, float *lse_out, int seq, int causal)
{
    flash_wgmma_body<D, false>(&mapQ, &mapK, &mapV, O, lse_out, seq, causal);
}

/* version 5: FlashAttention-3's schedule: S of tile t with P V of tile t - 1, consumers in turn */
template <int D>
__global__ void __launch_bounds__(ATT4_THREADS, 1)
    attention_kernel5(const __grid_constant__ CUtensorMap mapQ, const __grid_constant__ CUtensorMap mapK,
                      const __grid_constant__ CUtensorMap mapV, const att_out O, float *lse_out, int seq, int causal)
{
    flash_wgmma_body<D, true>(&mapQ, &mapK, &mapV, O, lse_out, seq, causal);
}

/* ---- version 6: version 5, persistent. Work item i is a block of 128 queries of one head.
 * Not causal, the items of a head are neighbours (its K and V stay in L2 while its query blocks
 * run); causal, the longest first (the query blocks at the bottom of the triangle, every head's,
 * then the next row up). A block takes its items in a snake over the grid of G blocks: k-th
 * round, item k G + b, or k G + G - 1 - b on odd rounds, so that with longest first each block
 * gets a fair share of long and short ones. */
__device__ __forceinline__ int att6_item(int round, int block, int blocks)
{
    return round * blocks + (round % 2 ? blocks - 1 - block : block);
}
__device__ __forceinline__ void att6_decode(int item, int qblocks, int heads, int causal, int *q0, int *bh)
{
    int qblock = causal ? qblocks - 1 - item / heads : item % qblocks;
    *q0 = qblock * ATT4_QUERIES, *bh = causal ? item % heads : item / qblocks;
}

/* The block walks its items: the producer loads each one's Q once both consumers are done with
 * the last one's (q_empty) and runs the ring on from item to item; the consumers do version 5's
 * work on each, their turns running on across items (consumer 1 skips its handoff only at its
 * very last item). */
template <int D>
__global__ void __launch_bounds__(ATT4_THREADS, 1)
    attention_kernel6(const __grid_constant__ CUtensorMap mapQ, const __grid_constant__ CUtensorMap mapK,
                      const __grid_constant__ CUtensorMap mapV, const att_out O, float *lse_out, int seq, int heads, int causal)
{
    typedef att4_layout<D> L;
    extern __shared__ uint8_t smem6_raw[];
    uint8_t *sQ = aligned_smem(smem6_raw), *sKV = sQ + L::Q_BYTES;
    __shared__ uint64_t q_full, q_empty, full[ATT4_STAGES], empty[ATT4_STAGES];
    const int qblocks = (seq + ATT4_QUERIES - 1) / ATT4_QUERIES, items = qblocks * heads;
    init_barriers(&q_full, &q_empty, full, empty);
    int wg = threadIdx.x / 128, u = 0; /* u: ring uses so far, counted alike by producer and consumers */
    if (wg == 0) {
        setmaxnreg_dec<40>();
        for (int round = 0; threadIdx.x == 0; round++) {
            int item = att6_item(round, blockIdx.x, gridDim.x), q0, bh;
            if (item >= items) break;
            att6_decode(item, qblocks, heads, causal, &q0, &bh);
            if (round > 0) mbar_wait(&q_empty, (round - 1) & 1); /* both consumers' last S of the last item */
            u = produce<D>(&mapQ, &mapK, &mapV, sQ, sKV, &q_full, full, empty, q0, bh, O.rows.heads,
                           att4_tiles(q0, seq, causal), u);
        }
        return;
    }
    setmaxnreg_inc<232>();
    int c = wg - 1;
    if (c == 1) your_turn<2>(c); /* consumer 0 goes first */
    for (int round = 0;; round++) {
        int item = att6_item(round, blockIdx.x, gridDim.x), q0, bh;
        if (item >= items) break;
        att6_decode(item, qblocks, heads, causal, &q0, &bh);
        att4_job<D> j = {sQ, sKV, full, empty, c, q0, bh, att4_tiles(q0, seq, causal), u, seq, causal};
        mbar_wait(&q_full, round & 1);
        consume_fa3<D, 2>(j, O, lse_out, &q_empty, att6_item(round + 1, blockIdx.x, gridDim.x) >= items);
        u += j.tiles;
    }
}

/* ---- version 7: version 5 with the consumer warpgroups the head dimension can afford. A
 * consumer's softmax takes the same CUDA-core time whatever D is, but its products half as long
 * at D = 64: with two consumers the tensor cores wait for a softmax. A third (FlashAttention-3's
 * 192 x 128 tile at D = 64) gives them two softmaxes to hide behind; its registers (160 a
 * thread: S, O and P of a 64-row slice) fit at D = 64 but not at D = 128 (O alone is 64), where
 * version 7 keeps version 5's two. */
template <int D> struct att7 {
    static const int NC = D == 64 ? 3 : 2;
    static const int THREADS = 128 * (NC + 1);
};
template <int D>
__global__ void __launch_bounds__(att7<D>::THREADS, 1)
    attention_kernel7(const __grid_constant__ CUtensorMap mapQ, const __grid_constant__ CUtensorMap mapK,
                      const __grid_constant__ CUtensorMap mapV, const att_out O, float *lse_out, int seq, int causal)
{
    flash_wgmma_body<D, true, att7<D>::NC>(&mapQ, &mapK, &mapV, O, lse_out, seq, causal);
}

/* ================================================================ launchers */

/* the state bound to the buffers: the tensor maps of Q, K and V (attention_prepare, once) */
typedef struct {
    CUtensorMap q, k, v;
    CUtensorMap q192; /* version 7 at D = 64: Q in boxes of 192 rows */
} att_maps;

extern "C" cudaError_t attention_hopper_prepare(attention_problem *p)
{
    att_maps *m = (att_maps *)calloc(1, sizeof *m);
    if (!m) return cudaErrorMemoryAllocation;
    p->prepared = m;
    int B = p->batch, H = p->heads, S = p->seq, D = p->dim;
    cudaError_t e = attention_heads_map(&m->q, p->q, B, H, S, D, p->ld_qkv, ATT4_QUERIES);
    if (e == cudaSuccess) e = attention_heads_map(&m->k, p->k, B, H, S, D, p->ld_qkv, ATT4_KEYS);
    if (e == cudaSuccess) e = attention_heads_map(&m->v, p->v, B, H, S, D, p->ld_qkv, ATT4_KEYS);
    if (e == cudaSuccess) e = attention_heads_map(&m->q192, p->q, B, H, S, D, p->ld_qkv, 64 * att7<64>::NC);
    return e;
}

extern "C" const char *attention_hopper_unavailable(void) { return lb_sm90a_unavailable(1); }

/* a kernel's shared memory (up to 225 KiB) past the default 48 KiB: each launcher asks once, at
 * its first launch at each D (a function's static is initialised once) */
template <typename K> static cudaError_t allow_smem(K kernel, int bytes)
{
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
#define ATT_MAPS(p) ((const att_maps *)(p)->prepared)
static att_out out_of(const attention_problem *p)
{
    att_out o = {p->o, attention_rows_of(p->heads, p->seq, p->dim, p->ld_o)};
    return o;
}

/* version 4: a block of 128 queries a (head, query block) */
template <int D> static cudaError_t launch4_d(const attention_problem *p, const att_maps *m)
{
    static const cudaError_t allowed = allow_smem(attention_kernel4<D>, att4_layout<D>::BYTES);
    if (allowed != cudaSuccess) return allowed;
    dim3 grid((p->seq + ATT4_QUERIES - 1) / ATT4_QUERIES, p->batch * p->heads);
    attention_kernel4<D>
        <<<grid, ATT4_THREADS, att4_layout<D>::BYTES>>>(m->q, m->k, m->v, out_of(p), p->lse, p->seq, p->causal);
    return cudaGetLastError();
}
extern "C" cudaError_t attention_launch4(const attention_problem *p)
{
    if (!p->prepared) return cudaErrorInvalidValue; /* attention_prepare was not called */
    return p->dim == 64 ? launch4_d<64>(p, ATT_MAPS(p)) : launch4_d<128>(p, ATT_MAPS(p));
}

/* version 5: the same grid */
template <int D> static cudaError_t launch5_d(const attention_problem *p, const att_maps *m)
{
    static const cudaError_t allowed = allow_smem(attention_kernel5<D>, att4_layout<D>::BYTES);
    if (allowed != cudaSuccess) return allowed;
    dim3 grid((p->seq + ATT4_QUERIES - 1) / ATT4_QUERIES, p->batch * p->heads);
    attention_kernel5<D>
        <<<grid, ATT4_THREADS, att4_layout<D>::BYTES>>>(m->q, m->k, m->v, out_of(p), p->lse, p->seq, p->causal);
    return cudaGetLastError();
}
extern "C" cudaError_t attention_launch5(const attention_problem *p)
{
    if (!p->prepared) return cudaErrorInvalidValue;
    return p->dim == 64 ? launch5_d<64>(p, ATT_MAPS(p)) : launch5_d<128>(p, ATT_MAPS(p));
}

/* version 6: as many blocks as SMs (or items), each walking its items */
static int sm_count(void)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return 0;
    return sms;
}
template <int D> static cudaError_t launch6_d(const attention_problem *p, const att_maps *m)
{
    static const cudaError_t allowed = allow_smem(attention_kernel6<D>, att4_layout<D>::BYTES);
    static const int sms = sm_count();
    if (allowed != cudaSuccess) return allowed;
    if (sms < 1) return cudaErrorInvalidDevice;
    int qblocks = (p->seq + ATT4_QUERIES - 1) / ATT4_QUERIES, heads = p->batch * p->heads;
    attention_kernel6<D><<<min(sms, qblocks * heads), ATT4_THREADS, att4_layout<D>::BYTES>>>(
        m->q, m->k, m->v, out_of(p), p->lse, p->seq, heads, p->causal);
    return cudaGetLastError();
}
extern "C" cudaError_t attention_launch6(const attention_problem *p)
{
    if (!p->prepared) return cudaErrorInvalidValue;
    return p->dim == 64 ? launch6_d<64>(p, ATT_MAPS(p)) : launch6_d<128>(p, ATT_MAPS(p));
}

/* version 7: a block of 64 NC queries a (head, query block) */
template <int D> static cudaError_t launch7_d(const attention_problem *p, const att_maps *m)
{
    typedef att4_layout<D, att7<D>::NC> L;
    static const cudaError_t allowed = allow_smem(attention_kernel7<D>, L::BYTES);
    if (allowed != cudaSuccess) return allowed;
    dim3 grid((p->seq + L::Q_ROWS - 1) / L::Q_ROWS, p->batch * p->heads);
    const CUtensorMap &q = L::Q_ROWS == ATT4_QUERIES ? m->q : m->q192;
    attention_kernel7<D><<<grid, att7<D>::THREADS, L::BYTES>>>(q, m->k, m->v, out_of(p), p->lse, p->seq, p->causal);
    return cudaGetLastError();
}
extern "C" cudaError_t attention_launch7(const attention_problem *p)
{
    if (!p->prepared) return cudaErrorInvalidValue;
    return p->dim == 64 ? launch7_d<64>(p, ATT_MAPS(p)) : launch7_d<128>(p, ATT_MAPS(p));
}
