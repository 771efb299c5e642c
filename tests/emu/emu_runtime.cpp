/* emu_runtime.cpp - launches for emu_cuda.h, and the few CUDA runtime calls the kernels'
 * launchers make (nothing here touches a GPU: "device" pointers are host memory). */
#include "emu_cuda.h"
#include "lb_tensor_core.cuh" /* its twin (emu/include): the asynchronous state a block leaves behind */

emu_block *emu_blk;
thread_local uint3 threadIdx, blockIdx;
thread_local int emu_tid;
dim3 blockDim, gridDim;

#define EMU_SMEM_BYTES (232 * 1024) /* an H100/H200 block's most, 227 KiB, and some */

/* A block's shared state made fresh: shared memory poisoned, barriers new */
static void fresh_block(emu_block *b, int n)
{
    memset(b->smem, 0xFF, EMU_SMEM_BYTES); /* NaN, as bf16 and as float */
    b->block.reset(new std::barrier<>(n));
    b->warp.clear(), b->wg.clear();
    for (int w = 0; w < (n + 31) / 32; w++) b->warp.emplace_back(new std::barrier<>(n < 32 ? n : 32));
    for (int g = 0; g < n / 128; g++) b->wg.emplace_back(new std::barrier<>(128));
    for (std::unique_ptr<std::barrier<>> &named : b->named) named.reset();
    emu_tma_pending.clear(); /* loads nobody waited for: this block's, gone with it */
    emu_tma_count = 0;
}

/* The block's threads are made once a launch and run the blocks one after another: at the end
 * of each block they meet, and the last to arrive makes the block state fresh for the next. */
struct next_block {
    emu_block *b;
    int n;
    void operator()() noexcept { fresh_block(b, n); }
};

/* The graph a capture is recording (nullptr: none): its work in the order asked. A graph here is
 * that list, run in order at each launch, as the stream's order would run it on the GPU. */
struct CUgraph_st {
    std::vector<std::function<void()>> work;
};
struct CUgraphExec_st {
    std::vector<std::function<void()>> work;
};
static CUgraph_st *capturing;

void emu_enqueue(std::function<void()> work)
{
    if (capturing)
        capturing->work.push_back(std::move(work));
    else
        work();
}

static void launch_now(dim3 grid, dim3 block, size_t smem, const std::function<void()> &body);
void emu_launch(dim3 grid, dim3 block, size_t smem, std::function<void()> body)
{
    emu_enqueue([=] { launch_now(grid, block, smem, body); });
}

static void launch_now(dim3 grid, dim3 block, size_t smem, const std::function<void()> &body)
{
    int n = (int)(block.x * block.y * block.z);
    if (n > 1024 || (n % 32 && n > 32)) { /* a block smaller than a warp is one partial warp */
        fprintf(stderr, "emulation: blocks of whole warps only (got %u x %u x %u)\n", block.x, block.y, block.z);
        abort();
    }
    if (smem > EMU_SMEM_BYTES - 1024) {
        fprintf(stderr, "emulation: %zu bytes of dynamic shared memory asked\n", smem);
        abort();
    }
    static std::vector<uint8_t> buffer(EMU_SMEM_BYTES + 1024);
    std::unique_ptr<emu_block> b(new emu_block);
    b->smem = (uint8_t *)(((uintptr_t)buffer.data() + 1023) & ~(uintptr_t)1023);
    fresh_block(b.get(), n);
    emu_blk = b.get();
    gridDim = grid, blockDim = block;
    long blocks = (long)grid.x * grid.y * grid.z;
    std::barrier<next_block> block_done(n, next_block{b.get(), n});
    std::vector<std::thread> threads;
    for (int t = 0; t < n; t++)
        threads.emplace_back([&, t] {
            emu_tid = t;
            threadIdx = make_uint3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
            for (long i = 0; i < blocks; i++) {
                blockIdx = make_uint3(i % grid.x, i / grid.x % grid.y, i / ((long)grid.x * grid.y));
                body();
                if (!emu_groups.empty() || !emu_open_group.empty()) {
                    fprintf(stderr, "emulation: a thread ended with TMA stores it never waited for\n");
                    abort();
                }
                if (!emu_wg_groups.empty() || !emu_wg_open.empty()) {
                    fprintf(stderr, "emulation: a thread ended with wgmma it never waited for\n");
                    abort();
                }
                emu_cp_open.clear(), emu_cp_groups.clear(); /* copies never waited for: never read */
                emu_wg_acc.clear();
                block_done.arrive_and_wait();
            }
        });
    for (std::thread &t : threads) t.join();
}

extern "C" {
cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int)
{
    /* an H100/H200: every version runs; 132 multiprocessors, or EMU_SMS (fewer make a persistent
     * kernel's blocks walk several tiles at small sizes) */
    const char *sms = getenv("EMU_SMS");
    *value = attr == cudaDevAttrComputeCapabilityMajor ? 9
             : attr == cudaDevAttrMultiProcessorCount  ? (sms && atoi(sms) > 0 ? atoi(sms) : 132)
                                                       : 0;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaFuncSetAttribute(const void *, enum cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t)
{
    emu_enqueue([=] { memset(p, value, bytes); });
    return cudaSuccess;
}
/* device memory is host memory here: a host program (ch12's gpt_model.c) runs on it unchanged.
 * cudaMalloc's bytes start as NaN (0xFF), as nothing guarantees them on the GPU */
cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = malloc(bytes ? bytes : 1);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xFF, bytes);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}
/* the calls that wait for the GPU: refused while capturing, as a capture refuses them */
cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    return capturing ? cudaErrorStreamCaptureUnsupported : cudaMemsetAsync(p, value, bytes, 0);
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind)
{
    if (capturing) return cudaErrorStreamCaptureUnsupported;
    memmove(dst, src, bytes);
    return cudaSuccess;
}
/* a copy between host and device memory is refused while capturing: the host's bytes may be
 * gone when the graph runs (the GPU refuses pageable memory; this emulation, any host memory) */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t)
{
    if (capturing && kind != cudaMemcpyDeviceToDevice) return cudaErrorStreamCaptureUnsupported;
    emu_enqueue([=] { memmove(dst, src, bytes); });
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return capturing ? cudaErrorStreamCaptureUnsupported : cudaSuccess; }

/* CUDA graphs by stream capture: one capture at a time (this emulation has one stream) */
cudaError_t cudaStreamBeginCapture(cudaStream_t, enum cudaStreamCaptureMode)
{
    if (capturing) return cudaErrorIllegalState;
    capturing = new CUgraph_st;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *graph)
{
    if (!capturing) return cudaErrorIllegalState;
    *graph = capturing;
    capturing = nullptr;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long)
{
    *exec = new CUgraphExec_st{graph->work};
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t)
{
    for (const std::function<void()> &w : exec->work) emu_enqueue(w);
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    delete graph;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}
}

int emu_finish(int failed)
{
    printf("(emulated on CPU threads: indices, layouts, barriers, masks and waits checked; not the GPU's "
           "timing, its races or its speed: `make test` and `make sanitize` on a GPU check those)\n");
    return failed ? 1 : 0;
}
