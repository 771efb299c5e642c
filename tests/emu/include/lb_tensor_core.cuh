/* lb_tensor_core.cuh's twin for tests/emu: the same functions as common/lb_tensor_core.cuh, each
 * doing on CPU threads what its PTX instruction does on the GPU (emu_cuda.h says how: operands met
 * at a barrier, asynchronous results landing only at their wait). The descriptor builders and the
 * tensor-map maker are the real ones (lb_tensor_core_plain.cuh). A wrapper added to the real header needs its twin here, or the
 * emulated build of a kernels file that uses it fails to compile. Needs emu_cuda.h first.
 */
#pragma once
#include <cuda.h> /* its twin: CUtensorMap */

/* the emulated GPU runs every version's device code */
#define LB_SM80 1
#define LB_SM90A 1

/* ================================================================ the special function unit */
inline float fast_exp2(float x) { return exp2f(x); }

/* ================================================================ named barriers, setmaxnreg */
/* named barrier `id` of `threads` threads (its first use fixes the count, as on the GPU) */
inline std::barrier<> *emu_named(int id, int threads)
{
    std::lock_guard<std::mutex> lock(emu_blk->named_made);
    if (!emu_blk->named[id]) emu_blk->named[id].reset(new std::barrier<>(threads));
    return emu_blk->named[id].get();
}
template <int id, int threads> inline void bar_sync() { emu_named(id, threads)->arrive_and_wait(); }
template <int id, int threads> inline void bar_arrive() { (void)emu_named(id, threads)->arrive(); }
/* registers are no warpgroup's here */
template <int regs> inline void setmaxnreg_dec() {}
template <int regs> inline void setmaxnreg_inc() {}


/* ================================================================ warp-wide: ldmatrix, mma.sync */
/* ldmatrix .x4: lanes 8m..8m+7 give the row addresses of matrix m (8 rows of 8 bf16); lane t
 * receives row t/4, columns 2(t%4) and +1 of each matrix (.trans: column t/4, rows 2(t%4), +1) */
inline void emu_ldmatrix(uint32_t r[4], const void *smem, bool trans)
{
    int w = emu_warp(), l = emu_lane();
    emu_blk->rows[w][l] = smem;
    emu_warp_sync();
    for (int m = 0; m < 4; m++) {
        uint16_t lo, hi;
        if (!trans) {
            const uint16_t *row = (const uint16_t *)emu_blk->rows[w][8 * m + l / 4];
            lo = row[2 * (l % 4)], hi = row[2 * (l % 4) + 1];
        } else {
            lo = ((const uint16_t *)emu_blk->rows[w][8 * m + 2 * (l % 4)])[l / 4];
            hi = ((const uint16_t *)emu_blk->rows[w][8 * m + 2 * (l % 4) + 1])[l / 4];
        }
        r[m] = (uint32_t)lo | ((uint32_t)hi << 16);
    }
    emu_warp_sync();
}
inline void ldmatrix_x4(uint32_t r[4], const void *smem) { emu_ldmatrix(r, smem, false); }
inline void ldmatrix_x4_trans(uint32_t r[4], const void *smem) { emu_ldmatrix(r, smem, true); }

/* The fragments of mma.sync m16n8k16 (and of wgmma's register A, warp by warp): lane t = 4g + q
 * holds A's rows g and g + 8, columns 2q, 2q + 1 (registers 0, 1) and 8 further (2, 3); B's column
 * g, rows 2q, 2q + 1 (register 0) and 8 further (1); D's rows g (0, 1) and g + 8 (2, 3) at
 * columns 2q, 2q + 1. These give the lane and register that hold an element. */
inline int emu_a_lane(int row, int k) { return (row % 8) * 4 + (k % 8) / 2; }
inline int emu_a_reg(int row, int k) { return (row % 16 >= 8) + 2 * (k >= 8); }
inline int emu_b_lane(int k, int col) { return col * 4 + (k % 8) / 2; }
inline int emu_b_reg(int k) { return k >= 8; }

inline void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
    int w = emu_warp(), l = emu_lane();
    for (int i = 0; i < 4; i++) emu_blk->xch[w][l][i] = a[i];
    emu_blk->xch[w][l][4] = b[0], emu_blk->xch[w][l][5] = b[1];
    emu_warp_sync();
    float out[4];
    for (int e = 0; e < 4; e++) {
        int row = l / 4 + 8 * (e / 2), col = 2 * (l % 4) + (e & 1);
        float s = d[e];
        for (int k = 0; k < 16; k++)
            s += emu_half(emu_blk->xch[w][emu_a_lane(row, k)][emu_a_reg(row, k)], k % 2) *
                 emu_half(emu_blk->xch[w][emu_b_lane(k, col)][4 + emu_b_reg(k)], k % 2);
        out[e] = s;
    }
    emu_warp_sync();
    for (int e = 0; e < 4; e++) d[e] = out[e];
}


/* TF32 mma.sync is not emulated (ch09's fused GEMM checks its TF32 path on the GPU only) */
inline uint32_t to_tf32(float x)
{
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7F800000u) != 0x7F800000u) u = (u + 0x1000u) & 0xFFFFE000u; /* to nearest, ties away */
    return u;
}
inline void mma_tf32(float *, float *, float *, float *, const uint32_t *, const uint32_t *)
{
    fprintf(stderr, "emulation: the TF32 tensor-core path is not emulated\n");
    abort();
}

/* ================================================================ copies: cp.async, mbarrier, TMA */
inline uint32_t smem_addr(const void *p) { return (uint32_t)((const uint8_t *)p - emu_blk->smem); }
inline uint8_t *aligned_smem(uint8_t *smem)
{
    uint32_t a = smem_addr(smem);
    return smem + (((a + 1023) & ~1023u) - a);
}

/* cp.async: src_bytes of the source, the rest of the size zeros. The copy lands at the issuing
 * thread's cp.async.wait_group that covers its group (as late as the GPU may land it); until
 * then its destination reads as NaN. Copies not yet committed are in no group: no wait lands
 * them. */
struct emu_async_copy {
    void *dst;
    const void *src;
    int size, src_bytes;
};
inline thread_local std::vector<emu_async_copy> emu_cp_open;
inline thread_local std::vector<std::vector<emu_async_copy>> emu_cp_groups; /* committed, oldest first */
inline void emu_copy(void *dst, const void *src, int size, int src_bytes)
{
    memset(dst, 0xFF, size);
    emu_cp_open.push_back({dst, src, size, src_bytes});
}
inline void cp_async16(void *s, const void *g) { emu_copy(s, g, 16, 16); }
inline void cp_async16(void *s, const void *g, int src_bytes) { emu_copy(s, g, 16, src_bytes); }
inline void cp_async16_or_zero(void *s, const void *g, bool valid) { emu_copy(s, g, 16, valid ? 16 : 0); }
inline void cp_async4(void *s, const void *g, int src_bytes) { emu_copy(s, g, 4, src_bytes); }
inline void cp_async_commit()
{
    emu_cp_groups.push_back(emu_cp_open);
    emu_cp_open.clear();
}
/* the oldest committed groups land until at most `pending` remain */
template <int pending> inline void cp_async_wait()
{
    while (emu_cp_groups.size() > (size_t)pending) {
        for (const emu_async_copy &c : emu_cp_groups.front()) {
            memcpy(c.dst, c.src, c.src_bytes);
            memset((uint8_t *)c.dst + c.src_bytes, 0, c.size - c.src_bytes);
        }
        emu_cp_groups.erase(emu_cp_groups.begin());
    }
}

/* An mbarrier in its 64 bits: phase (bit 63), arrivals a phase expects (48..62), arrivals still
 * pending (32..47), transaction bytes still pending (0..31, signed). The phase completes, and
 * flips, when both pending counts reach 0. */
inline uint64_t emu_mbar_pack(uint64_t phase, uint64_t expected, uint64_t pending, int32_t tx)
{
    return (phase << 63) | (expected << 48) | (pending << 32) | (uint32_t)tx;
}
inline void emu_mbar_update(uint64_t *bar, int arrivals, int32_t tx_delta)
{
    std::atomic_ref<uint64_t> a(*bar);
    uint64_t old = a.load(), next;
    do {
        uint64_t phase = old >> 63, expected = (old >> 48) & 0x7FFF, pending = (old >> 32) & 0xFFFF;
        int32_t tx = (int32_t)(uint32_t)old + tx_delta;
        if ((int)pending < arrivals) {
            fprintf(stderr, "emulation: more arrivals on an mbarrier than it expects\n");
            abort();
        }
        pending -= arrivals;
        next = pending == 0 && tx == 0 ? emu_mbar_pack(phase ^ 1, expected, expected, 0)
                                       : emu_mbar_pack(phase, expected, pending, tx);
    } while (!a.compare_exchange_weak(old, next));
}
inline void mbar_init(uint64_t *bar, int arrivals)
{
    std::atomic_ref<uint64_t>(*bar).store(emu_mbar_pack(0, arrivals, arrivals, 0));
}
inline void mbar_fence_init() {}
inline void mbar_arrive_expect(uint64_t *bar, uint32_t bytes) { emu_mbar_update(bar, 1, (int32_t)bytes); }
inline void mbar_arrive(uint64_t *bar) { emu_mbar_update(bar, 1, 0); }
/* TMA loads in flight: their data and transaction bytes reach shared memory and the barrier at
 * the first wait on that barrier (emu_tma_land), not when issued; until then the box reads as
 * NaN. A consumer that reads a stage without waiting on its barrier sees NaN. (The list belongs
 * to the block that runs: emu_launch empties it between blocks.) */
struct emu_tma_copy {
    uint64_t *bar;
    uint32_t dst; /* shared memory byte address (through the swizzle) */
    std::vector<uint8_t> bytes;
};
inline std::vector<emu_tma_copy> emu_tma_pending;
inline std::mutex emu_tma_lock;
inline std::atomic<int> emu_tma_count{0}; /* emu_tma_pending's size, read without the lock */
inline void emu_tma_land(uint64_t *bar)
{
    if (emu_tma_count.load() == 0) return;
    std::lock_guard<std::mutex> lock(emu_tma_lock);
    for (size_t i = 0; i < emu_tma_pending.size();) {
        emu_tma_copy &c = emu_tma_pending[i];
        if (c.bar != bar) {
            i++;
            continue;
        }
        memcpy(emu_blk->smem + c.dst, c.bytes.data(), c.bytes.size());
        emu_mbar_update(bar, 0, -(int32_t)c.bytes.size());
        emu_tma_pending.erase(emu_tma_pending.begin() + i);
        emu_tma_count--;
    }
}
/* wait until the phase of this parity has completed (the barrier's phase bit is no longer it) */
inline void mbar_wait(uint64_t *bar, int parity)
{
    for (long spins = 0; emu_tma_land(bar), (int)(std::atomic_ref<uint64_t>(*bar).load() >> 63) == parity; spins++) {
        std::this_thread::yield();
        if (spins > 200000000L) {
            fprintf(stderr, "emulation: an mbarrier wait never ended (a lost arrival or a wrong parity)\n");
            abort();
        }
    }
}

/* Tensor maps: the encoder's arguments kept in the opaque 128 bytes. Only what the kernels use:
 * bytes (fp8), bf16 or fp32, 2 to 4 dimensions, boxes of 128-byte rows (one plane deep), the
 * 128-byte swizzle. */
struct emu_map {
    uint8_t *base;
    uint64_t dims[4], strides[3]; /* elements (unused dimensions 1); bytes from one row (plane) to the next */
    uint32_t box[4], elem;        /* box in elements; an element's bytes */
    /* the byte offset of element (x, y, z, w), or -1 outside the tensor */
    int64_t at(uint64_t x, uint64_t y, uint64_t z, uint64_t w) const
    {
        if (x >= dims[0] || y >= dims[1] || z >= dims[2] || w >= dims[3]) return -1;
        return (int64_t)(w * strides[2] + z * strides[1] + y * strides[0] + x * elem);
    }
};
inline CUresult emu_encode_tiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *base,
                                 const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                 const cuuint32_t *elem_strides, CUtensorMapInterleave, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill)
{
    uint32_t elem = type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 ? 2
                    : type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ? 4
                    : type == CU_TENSOR_MAP_DATA_TYPE_UINT8   ? 1
                                                              : 0;
    if (!elem || rank < 2 || rank > 4 || swizzle != CU_TENSOR_MAP_SWIZZLE_128B) return 1;
    emu_map e = {(uint8_t *)base, {1, 1, 1, 1}, {0, 0, 0}, {1, 1, 1, 1}, elem};
    for (cuuint32_t i = 0; i < rank; i++) {
        e.dims[i] = dims[i], e.box[i] = box[i];
        if (i > 0) e.strides[i - 1] = strides[i - 1];
        if (elem_strides[i] != 1) return 1;
    }
    if (e.box[0] * elem != 128 || e.box[1] > 256 || e.box[2] != 1 || e.box[3] != 1) return 1;
    for (int i = 0; i < 3; i++)
        if (e.strides[i] % 16) return 1;
    if ((uintptr_t)base % 16) return 1;
    static_assert(sizeof e <= sizeof(CUtensorMap), "an emu_map fits in a CUtensorMap");
    memset(map, 0, sizeof *map);
    memcpy(map, &e, sizeof e);
    return CUDA_SUCCESS;
}
typedef CUresult (*lb_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                       const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                       CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);
inline cudaError_t lb_tensor_map_encoder(lb_encode_tiled_fn *encode)
{
    *encode = emu_encode_tiled;
    return cudaSuccess;
}

/* The 128-byte swizzle on a shared-memory byte address: the 16-byte chunk (bits 4-6) XOR the row
 * of 128 bytes within its 1024 (bits 7-9). TMA writes through it and wgmma reads through it. */
inline uint32_t emu_swizzle128(uint32_t a) { return a ^ (((a >> 7) & 7) << 4); }

/* a box at (x, y, z, w): elements past the tensor's end arrive as zeros; the bytes count on bar */
inline void tma_load_4d(void *dst, const CUtensorMap *map, int x, int y, int z, int w, uint64_t *bar)
{
    emu_map e;
    memcpy(&e, map, sizeof e);
    uint32_t d0 = smem_addr(dst), row_bytes = e.box[0] * e.elem;
    if (d0 % 1024) {
        fprintf(stderr, "emulation: a swizzled TMA box must land 1024-byte aligned\n");
        abort();
    }
    /* the box as it will land: swizzled, whole 1024-byte blocks of 8 rows (the swizzle stays
     * inside one), zeros past the tensor's end; NaN in shared memory until the wait lands it */
    std::vector<uint8_t> box(e.box[1] * row_bytes);
    for (uint32_t r = 0; r < e.box[1]; r++)
        for (uint32_t c = 0; c < e.box[0]; c++) {
            uint8_t v[4] = {0, 0, 0, 0};
            int64_t at = e.at((uint64_t)x + c, (uint64_t)y + r, (uint64_t)z, (uint64_t)w);
            if (at >= 0) memcpy(v, e.base + at, e.elem);
            memcpy(box.data() + (emu_swizzle128(d0 + r * row_bytes + c * e.elem) - d0), v, e.elem);
        }
    if (e.box[1] % 8) {
        fprintf(stderr, "emulation: a swizzled TMA box of whole 8-row (1024-byte) blocks only\n");
        abort();
    }
    memset(emu_blk->smem + d0, 0xFF, box.size());
    std::lock_guard<std::mutex> lock(emu_tma_lock);
    emu_tma_pending.push_back({bar, d0, std::move(box)});
    emu_tma_count++;
}
inline void tma_load_3d(void *dst, const CUtensorMap *map, int x, int y, int z, uint64_t *bar)
{
    tma_load_4d(dst, map, x, y, z, 0, bar);
}
inline void tma_load(void *dst, const CUtensorMap *map, int k, int row, uint64_t *bar)
{
    tma_load_4d(dst, map, k, row, 0, 0, bar);
}

inline uint32_t cluster_rank() { emu_no_clusters(); }
inline void cluster_sync() { emu_no_clusters(); }
inline void mbar_arrive_cluster(uint64_t *, uint32_t) { emu_no_clusters(); }
inline void tma_load_multicast(void *, const CUtensorMap *, int, int, uint64_t *, uint16_t) { emu_no_clusters(); }

/* ================================================================ wgmma */

inline void wgmma_fence() {}

/* a descriptor's start address, leading and stride byte offsets (128-byte swizzle only) */
struct emu_desc {
    uint32_t start, lbo, sbo;
};
inline emu_desc emu_decode(uint64_t d)
{
    if ((d >> 62) != 1) {
        fprintf(stderr, "emulation: a wgmma descriptor without the 128-byte swizzle\n");
        abort();
    }
    return {(uint32_t)(d & 0x3FFF) << 4, (uint32_t)((d >> 16) & 0x3FFF) << 4, (uint32_t)((d >> 32) & 0x3FFF) << 4};
}
/* an element of shared memory at a (logical) byte address, read through the swizzle: fp8 e4m3 (1
 * byte; e5m2 when asked), bf16 (2) or tf32 (4: an fp32 whose low 13 bits the tensor cores ignore) */
inline float emu_smem_element(uint32_t addr, int bytes, int e5m2 = 0)
{
    uint32_t a = emu_swizzle128(addr);
    if (bytes == 1) return e5m2 ? emu_e5m2(emu_blk->smem[a]) : emu_e4m3(emu_blk->smem[a]);
    if (bytes == 2) {
        uint16_t v;
        memcpy(&v, emu_blk->smem + a, 2);
        return emu_bf16(v);
    }
    uint32_t u;
    memcpy(&u, emu_blk->smem + a, 4);
    return __uint_as_float(u & 0xFFFFE000u);
}
/* K-major (K contiguous): element (row, k) of a rows x K operand; rows in groups of 8 at SBO */
inline float emu_kmajor(emu_desc d, int row, int k, int bytes, int e5m2 = 0)
{
    return emu_smem_element(d.start + (row / 8) * d.sbo + (row % 8) * 128 + bytes * k, bytes, e5m2);
}
/* MN-major (N contiguous, wgmma's transpose flag; bf16): element (k, n) of a 16 x N operand; 64
 * columns a 128-byte row, the next 64 at LBO; k in groups of 8 rows at SBO */
inline float emu_mnmajor(emu_desc d, int k, int n)
{
    return emu_smem_element(d.start + (n / 64) * d.lbo + (k / 8) * d.sbo + (k % 8) * 128 + 2 * (n % 64), 2);
}

/* wgmma m64nNk(32 bytes), fp32 accumulators, by the 128 threads of a warpgroup: d (64 x N) =
 * (accumulate ? d : 0) + A (64 x K) B (K x N), K = 16 bf16 (bytes 2) or 8 tf32 (bytes 4). A from
 * desc_a, K-major or (mn_major_a, bf16) MN-major, or from registers a (non-null, bf16: warp w's
 * four registers hold rows 16w.., as mma.sync's A); B from desc_b, K-major or (mn_major_b, bf16)
 * MN-major. Thread (warp w, lane
 * 4g + q) holds d[4j + e] = row 16w + g (+8 when e >= 2), column 8j + 2q + (e & 1).
 *
 * As on the GPU, the result lands at wgmma.wait_group: issued, a wgmma is recorded (with its
 * register operands as they are now, and d's value if it accumulates onto registers no earlier
 * wgmma still owns) and d reads as NaN; the wait that covers its group computes it, reading
 * shared memory then, so a stage released before the wait is read after the producer refilled
 * it. Wgmma on the same d in flight chain, as the tensor cores chain them. */
struct emu_wgmma_op {
    float *d;
    int N, accumulate, chained, mn_major_a, mn_major_b, bytes, e5m2;
    uint64_t desc_a, desc_b;
    bool reg_a;
    uint32_t a[32][4];       /* register A: this thread's warp's lanes (its rows are theirs) */
    std::vector<float> base; /* d when issued, if it accumulates and does not chain */
};
inline thread_local std::vector<emu_wgmma_op> emu_wg_open;                   /* issued, not committed */
inline thread_local std::vector<std::vector<emu_wgmma_op>> emu_wg_groups;    /* committed, oldest first */
inline bool emu_wgmma_in_flight(const float *d)
{
    for (const emu_wgmma_op &op : emu_wg_open)
        if (op.d == d) return true;
    for (const std::vector<emu_wgmma_op> &g : emu_wg_groups)
        for (const emu_wgmma_op &op : g)
            if (op.d == d) return true;
    return false;
}
/* another wgmma on op's d issued after op and not landed yet */
inline bool emu_wgmma_in_flight_after(const emu_wgmma_op &op)
{
    bool after = false;
    for (const std::vector<emu_wgmma_op> &g : emu_wg_groups)
        for (const emu_wgmma_op &o : g) {
            if (after && o.d == op.d) return true;
            after |= &o == &op;
        }
    for (const emu_wgmma_op &o : emu_wg_open)
        if (o.d == op.d) return true;
    return false;
}
inline void emu_wgmma(float *d, int N, uint64_t desc_a, const uint32_t *a, uint64_t desc_b, int mn_major_b,
                      int accumulate, int bytes = 2, int mn_major_a = 0, int e5m2 = 0)
{
    int wg = emu_tid / 128, t = emu_tid % 128, w = t / 32;
    emu_wgmma_op op;
    op.d = d, op.N = N, op.accumulate = accumulate, op.mn_major_b = mn_major_b, op.bytes = bytes;
    op.mn_major_a = mn_major_a, op.e5m2 = e5m2;
    op.desc_a = desc_a, op.desc_b = desc_b, op.reg_a = a != nullptr;
    op.chained = accumulate && emu_wgmma_in_flight(d);
    if (accumulate && !op.chained) op.base.assign(d, d + N / 2);
    /* the tensor cores start a wgmma once all four warps have issued it: the warpgroup meets here
     * (so no warp is still waiting for the stage this wgmma reads when another releases it) */
    if (a) /* the warp's registers, exchanged now: they may change once the wgmma is issued */
        for (int i = 0; i < 4; i++) emu_blk->wg_a[wg][t][i] = a[i];
    emu_wg_sync();
    if (a) {
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 4; i++) op.a[l][i] = emu_blk->wg_a[wg][32 * w + l][i];
        emu_wg_sync();
    }
    for (int i = 0; i < N / 2; i++) d[i] = NAN; /* the tensor cores own d until the wait */
    emu_wg_open.push_back(std::move(op));
}
/* The accumulators as the tensor cores hold them: each d's latest landed value. A chained wgmma
 * starts from it (d's registers may read NaN meanwhile: a later wgmma on d was issued). */
inline thread_local std::vector<std::pair<float *, std::vector<float>>> emu_wg_acc;
inline std::vector<float> &emu_wg_acc_of(float *d)
{
    for (std::pair<float *, std::vector<float>> &a : emu_wg_acc)
        if (a.first == d) return a.second;
    emu_wg_acc.emplace_back(d, std::vector<float>());
    return emu_wg_acc.back().second;
}
/* one wgmma's result (this thread's part) into the accumulators, and into d's registers once no
 * later wgmma on d is in flight */
inline void emu_wgmma_land(const emu_wgmma_op &op)
{
    int t = emu_tid % 128, w = t / 32, l = t % 32, K = 32 / op.bytes;
    emu_desc A = op.reg_a ? emu_desc{0, 0, 0} : emu_decode(op.desc_a), B = emu_decode(op.desc_b);
    std::vector<float> &acc = emu_wg_acc_of(op.d);
    std::vector<float> out(op.N / 2);
    for (int j = 0; j < op.N / 8; j++)
        for (int e = 0; e < 4; e++) {
            int row = 16 * w + l / 4 + 8 * (e / 2), col = 8 * j + 2 * (l % 4) + (e & 1);
            float s = !op.accumulate ? 0.0f : op.chained ? acc[4 * j + e] : op.base[4 * j + e];
            for (int k = 0; k < K; k++) {
                float av = op.reg_a        ? emu_half(op.a[emu_a_lane(row, k)][emu_a_reg(row, k)], k % 2)
                           : op.mn_major_a ? emu_mnmajor(A, k, row) /* A read transposed: M contiguous */
                                           : emu_kmajor(A, row, k, op.bytes, op.e5m2);
                float bv = op.mn_major_b ? emu_mnmajor(B, k, col) : emu_kmajor(B, col, k, op.bytes, op.e5m2);
                s += av * bv;
            }
            out[4 * j + e] = s;
        }
    acc = out;
    if (emu_wgmma_in_flight_after(op)) return;
    std::copy(out.begin(), out.end(), op.d);
}
inline void wgmma_commit()
{
    emu_wg_groups.push_back(std::move(emu_wg_open));
    emu_wg_open.clear();
}
/* the oldest committed groups land, in order, until at most `pending` remain; a wgmma completes
 * for the whole warpgroup at once, so its threads meet before any goes on (and, say, releases the
 * stage the others are still reading) */
template <int pending> inline void wgmma_wait()
{
    bool landed = false;
    while (emu_wg_groups.size() > (size_t)pending) {
        std::vector<emu_wgmma_op> &group = emu_wg_groups.front();
        for (emu_wgmma_op &op : group) {
            emu_wgmma_land(op);
            op.d = nullptr; /* landed: no longer in flight */
        }
        emu_wg_groups.erase(emu_wg_groups.begin());
        landed = true;
    }
    if (landed) emu_wg_sync();
}


/* ---- the wgmma instructions by shape (K: 32 bytes of bf16 or tf32) */
inline void wgmma_m64n128k16_bf16_ss(float d[64], uint64_t da, uint64_t db, int accumulate)
{
    emu_wgmma(d, 128, da, nullptr, db, 0, accumulate);
}
inline void wgmma_m64n64k16_bf16_ss(float d[32], uint64_t da, uint64_t db, int accumulate)
{
    emu_wgmma(d, 64, da, nullptr, db, 0, accumulate);
}
inline void wgmma_m64n64k16_bf16_ss_tt(float d[32], uint64_t da, uint64_t db, int accumulate)
{
    emu_wgmma(d, 64, da, nullptr, db, 1, accumulate, 2, 1);
}
inline void wgmma_m64n128k16_bf16_ss_tt(float d[64], uint64_t da, uint64_t db, int accumulate)
{
    emu_wgmma(d, 128, da, nullptr, db, 1, accumulate, 2, 1);
}
inline void wgmma_m64n256k16_bf16_ss(float d[128], uint64_t da, uint64_t db) { emu_wgmma(d, 256, da, nullptr, db, 0, 1, 2); }
inline void wgmma_m64n256k8_tf32_ss(float d[128], uint64_t da, uint64_t db) { emu_wgmma(d, 256, da, nullptr, db, 0, 1, 4); }
inline void wgmma_m64n256k32_e4m3_ss(float d[128], uint64_t da, uint64_t db) { emu_wgmma(d, 256, da, nullptr, db, 0, 1, 1); }
inline void wgmma_m64n256k32_e5m2_ss(float d[128], uint64_t da, uint64_t db) { emu_wgmma(d, 256, da, nullptr, db, 0, 1, 1, 0, 1); }
inline void wgmma_m64n128k8_tf32_ss(float d[64], uint64_t da, uint64_t db) { emu_wgmma(d, 128, da, nullptr, db, 0, 1, 4); }
inline void wgmma_m64n128k32_e4m3_ss(float d[64], uint64_t da, uint64_t db) { emu_wgmma(d, 128, da, nullptr, db, 0, 1, 1); }
inline void wgmma_m64n128k16_bf16_rs_bt(float d[64], const uint32_t a[4], uint64_t db) { emu_wgmma(d, 128, 0, a, db, 1, 1); }
inline void wgmma_m64n64k16_bf16_rs_bt(float d[32], const uint32_t a[4], uint64_t db) { emu_wgmma(d, 64, 0, a, db, 1, 1); }
/* the compiler's fence on the accumulators: nothing to hold back here */
template <int N> inline void wgmma_settle(float *) {}

/* ================================================================ TMA stores, bulk groups, fences */

/* TMA stores: a 2-D box of shared memory (through the swizzle) to global; parts outside the
 * tensor are not written (TMA clips them). The emulation reads the shared memory as late as the
 * thread's waits allow, not when the store is issued: a buffer written again before its store
 * was waited for shows as wrong data, as it can on the GPU. */
struct emu_store {
    const CUtensorMap *map;
    uint32_t src;
    int x, y, z;
    bool add; /* tma_reduce_add_3d: fp32 added (atomically: other blocks add into the same place) */
};
inline thread_local std::vector<emu_store> emu_open_group;
inline thread_local std::vector<std::vector<emu_store>> emu_groups; /* committed, oldest first */
inline void emu_do_store(const emu_store &st)
{
    emu_map e;
    memcpy(&e, st.map, sizeof e);
    uint32_t row_bytes = e.box[0] * e.elem;
    for (uint32_t r = 0; r < e.box[1]; r++)
        for (uint32_t c = 0; c < e.box[0]; c++) {
            int64_t at = e.at((uint64_t)st.x + c, (uint64_t)st.y + r, (uint64_t)st.z, 0);
            if (at < 0) continue;
            uint8_t *dst = e.base + at;
            const uint8_t *src = emu_blk->smem + emu_swizzle128(st.src + r * row_bytes + c * e.elem);
            if (st.add) {
                float v;
                memcpy(&v, src, 4);
                std::atomic_ref<float>(*reinterpret_cast<float *>(dst)).fetch_add(v);
            } else {
                memcpy(dst, src, e.elem);
            }
        }
}
inline void tma_store_2d(const CUtensorMap *map, const void *src, int x, int y)
{
    emu_map e;
    memcpy(&e, map, sizeof e);
    uint32_t s0 = smem_addr(src);
    if (s0 % 1024 || e.box[0] * e.elem != 128) {
        fprintf(stderr, "emulation: a swizzled TMA store box must start 1024-byte aligned, 128 bytes a row\n");
        abort();
    }
    emu_open_group.push_back({map, s0, x, y, 0, false});
}
inline void tma_reduce_add_3d(const CUtensorMap *map, const void *src, int x, int y, int z)
{
    emu_map e;
    memcpy(&e, map, sizeof e);
    uint32_t s0 = smem_addr(src);
    if (s0 % 1024 || e.box[0] * e.elem != 128 || e.elem != 4) {
        fprintf(stderr, "emulation: a TMA reduce-add box of fp32, 1024-byte aligned, 128 bytes a row\n");
        abort();
    }
    emu_open_group.push_back({map, s0, x, y, z, true});
}
inline void bulk_commit()
{
    emu_groups.push_back(emu_open_group);
    emu_open_group.clear();
}
/* the oldest groups done until at most `pending` remain */
inline void emu_bulk_wait(size_t pending)
{
    while (emu_groups.size() > pending) {
        for (const emu_store &st : emu_groups.front()) emu_do_store(st);
        emu_groups.erase(emu_groups.begin());
    }
}
template <int pending> inline void bulk_wait_read() { emu_bulk_wait(pending); }
template <int pending> inline void bulk_wait() { emu_bulk_wait(pending); }
inline void fence_proxy_async_shared() {}

/* wgmma_desc, wgmma_desc_mn, lb_tensor_map: the real ones, over the emulated smem_addr and encoder */
#include "lb_tensor_core_plain.cuh"
