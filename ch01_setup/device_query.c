/* device_query.c - what is in this machine's GPUs, read through the CUDA runtime API.
 *
 *   For every device: name, compute capability and architecture, SMs and FP32 cores, clocks,
 *   memory, caches, shared memory, registers, thread and grid limits, and the theoretical
 *   FP32 peak and memory bandwidth computed from those attributes.
 *   build: make ch01      run: ./device_query [--json] [--quiet]
 *
 * No kernels: a plain C program linked with the CUDA runtime. CUDA 13 removed clockRate and
 * memoryClockRate from cudaDeviceProp, so the clocks come from cudaDeviceGetAttribute.
 */
#include "labbook.h"

#include <string.h>

/* ---------------------------------------------------------------- architecture tables */

typedef struct {
    int major, minor;
    const char *arch;
    int fp32_cores_per_sm;
} arch_info;

/* FP32 lanes per SM from NVIDIA's CUDA C Programming Guide (arithmetic instruction
 * throughput table): 128 on most, 64 on GP100, Volta, Turing and GA100. */
static const arch_info arch_table[] = {
    {5, 0, "Maxwell", 128},      {5, 2, "Maxwell", 128},    {5, 3, "Maxwell", 128},    {6, 0, "Pascal", 64},
    {6, 1, "Pascal", 128},       {6, 2, "Pascal", 128},     {7, 0, "Volta", 64},       {7, 2, "Volta", 64},
    {7, 5, "Turing", 64},        {8, 0, "Ampere", 64},      {8, 6, "Ampere", 128},     {8, 7, "Ampere", 128},
    {8, 9, "Ada Lovelace", 128}, {9, 0, "Hopper", 128},     {10, 0, "Blackwell", 128}, {10, 1, "Blackwell", 128},
    {10, 3, "Blackwell", 128},   {11, 0, "Blackwell", 128}, {12, 0, "Blackwell", 128}, {12, 1, "Blackwell", 128},
};

static const arch_info *find_arch(int major, int minor)
{
    for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
        if (arch_table[i].major == major && arch_table[i].minor == minor) return &arch_table[i];
    return NULL; /* a GPU newer (or older) than this table: reported as unknown */
}

/* ---------------------------------------------------------------- gathering */

typedef struct {
    struct cudaDeviceProp p;
    const arch_info *arch;
    int clock_khz, mem_clock_khz, bus_bits;
    double peak_tflops, peak_gbps; /* 0 when unknown */
} device_info;

static void query(int dev, device_info *d)
{
    CUDA_CHECK(cudaGetDeviceProperties(&d->p, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&d->clock_khz, cudaDevAttrClockRate, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&d->mem_clock_khz, cudaDevAttrMemoryClockRate, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&d->bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    d->arch = find_arch(d->p.major, d->p.minor);
    /* one FMA = 2 flops per core per clock */
    d->peak_tflops =
        d->arch ? 2.0 * d->p.multiProcessorCount * d->arch->fp32_cores_per_sm * d->clock_khz * 1e3 / 1e12 : 0.0;
    /* double data rate: two transfers per memory clock, bus_bits / 8 bytes each */
    d->peak_gbps = 2.0 * d->mem_clock_khz * 1e3 * (d->bus_bits / 8.0) / 1e9;
}

static void version_text(int v, char *buf, size_t len) { snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10); }

/* ---------------------------------------------------------------- printing */

static void print_text(int dev, const device_info *d)
{
    const struct cudaDeviceProp *p = &d->p;
    char cores[64];
    if (d->arch)
        snprintf(cores, sizeof cores, "%d (%d in all)", d->arch->fp32_cores_per_sm,
                 d->arch->fp32_cores_per_sm * p->multiProcessorCount);
    else
        snprintf(cores, sizeof cores, "unknown (sm_%d%d is not in this program's table)", p->major, p->minor);
    printf("device %d: %s\n", dev, p->name);
    printf("  compute capability       %d.%d (sm_%d%d, %s)\n", p->major, p->minor, p->major, p->minor,
           d->arch ? d->arch->arch : "unknown architecture");
    printf("  multiprocessors (SMs)    %d\n", p->multiProcessorCount);
    printf("  FP32 cores per SM        %s\n", cores);
    printf("  SM clock (peak)          %.0f MHz\n", d->clock_khz / 1e3);
    printf("  memory clock (peak)      %.0f MHz\n", d->mem_clock_khz / 1e3);
    printf("  memory                   %.1f GiB, %d-bit bus\n", p->totalGlobalMem / 1073741824.0, d->bus_bits);
    printf("  L2 cache                 %.1f MiB\n", p->l2CacheSize / 1048576.0);
    printf("  shared memory per block  %zu KiB (up to %zu KiB when a kernel opts in)\n", p->sharedMemPerBlock / 1024,
           p->sharedMemPerBlockOptin / 1024);
    printf("  shared memory per SM     %zu KiB\n", p->sharedMemPerMultiprocessor / 1024);
    printf("  registers per block      %d (per SM %d)\n", p->regsPerBlock, p->regsPerMultiprocessor);
    printf("  warp size                %d\n", p->warpSize);
    printf("  threads per block (max)  %d, block dims (max) %d x %d x %d\n", p->maxThreadsPerBlock, p->maxThreadsDim[0],
           p->maxThreadsDim[1], p->maxThreadsDim[2]);
    printf("  threads per SM (max)     %d (%d warps), blocks per SM (max) %d\n", p->maxThreadsPerMultiProcessor,
           p->maxThreadsPerMultiProcessor / p->warpSize, p->maxBlocksPerMultiProcessor);
    printf("  grid dims (max)          %d x %d x %d\n", p->maxGridSize[0], p->maxGridSize[1], p->maxGridSize[2]);
    if (d->arch)
        printf("  FP32 peak (theoretical)  %.1f TFLOP/s = %d SMs x %d cores x 2 flops x %.0f MHz\n", d->peak_tflops,
               p->multiProcessorCount, d->arch->fp32_cores_per_sm, d->clock_khz / 1e3);
    else
        printf("  FP32 peak (theoretical)  unknown (cores per SM of sm_%d%d not in this program's table)\n", p->major,
               p->minor);
    printf("  memory bandwidth (theor.) %.0f GB/s = 2 x %.0f MHz x %d bytes\n", d->peak_gbps, d->mem_clock_khz / 1e3,
           d->bus_bits / 8);
}

static void json_string(const char *key, const char *v, int comma)
{
    printf("      \"%s\": \"", key);
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\') putchar('\\');
        if ((unsigned char)*c >= 0x20) putchar(*c);
    }
    printf("\"%s\n", comma ? "," : "");
}

static void print_json(int dev, const device_info *d, int last)
{
    const struct cudaDeviceProp *p = &d->p;
    printf("    {\n      \"index\": %d,\n", dev);
    json_string("name", p->name, 1);
    printf("      \"compute_capability\": \"%d.%d\",\n      \"sm\": \"sm_%d%d\",\n", p->major, p->minor, p->major,
           p->minor);
    json_string("architecture", d->arch ? d->arch->arch : "unknown", 1);
    printf("      \"multiprocessors\": %d,\n", p->multiProcessorCount);
    if (d->arch)
        printf("      \"fp32_cores_per_sm\": %d,\n", d->arch->fp32_cores_per_sm);
    else
        printf("      \"fp32_cores_per_sm\": null,\n");
    printf("      \"sm_clock_mhz\": %.0f,\n      \"memory_clock_mhz\": %.0f,\n", d->clock_khz / 1e3,
           d->mem_clock_khz / 1e3);
    printf("      \"memory_bytes\": %zu,\n      \"memory_bus_bits\": %d,\n", p->totalGlobalMem, d->bus_bits);
    printf("      \"l2_cache_bytes\": %d,\n", p->l2CacheSize);
    printf("      \"shared_memory_per_block\": %zu,\n      \"shared_memory_per_block_optin\": %zu,\n",
           p->sharedMemPerBlock, p->sharedMemPerBlockOptin);
    printf("      \"shared_memory_per_sm\": %zu,\n", p->sharedMemPerMultiprocessor);
    printf("      \"registers_per_block\": %d,\n      \"registers_per_sm\": %d,\n", p->regsPerBlock,
           p->regsPerMultiprocessor);
    printf("      \"warp_size\": %d,\n      \"max_threads_per_block\": %d,\n", p->warpSize, p->maxThreadsPerBlock);
    printf("      \"max_block_dims\": [%d, %d, %d],\n", p->maxThreadsDim[0], p->maxThreadsDim[1], p->maxThreadsDim[2]);
    printf("      \"max_grid_dims\": [%d, %d, %d],\n", p->maxGridSize[0], p->maxGridSize[1], p->maxGridSize[2]);
    printf("      \"max_threads_per_sm\": %d,\n      \"max_blocks_per_sm\": %d,\n", p->maxThreadsPerMultiProcessor,
           p->maxBlocksPerMultiProcessor);
    if (d->arch)
        printf("      \"fp32_peak_tflops\": %.2f,\n", d->peak_tflops);
    else
        printf("      \"fp32_peak_tflops\": null,\n");
    printf("      \"memory_bandwidth_gbps\": %.1f\n    }%s\n", d->peak_gbps, last ? "" : ",");
}

/* ---------------------------------------------------------------- main */

static int as_json = 0;
static const lb_opt options[] = {
    {"--json", LB_OPT_FLAG, &as_json, "print the same as JSON, for scripts"},
};
static const lb_program program = {
    .name = "device_query",
    .synopsis = "list every CUDA device with its limits, peak FP32 rate and memory bandwidth",
    .details = NULL,
    .uses = LB_USE_QUIET,
    .opts = options,
    .n_opts = 1,
};

int main(int argc, char **argv)
{
    lb_args args = {.version = -1};
    lb_parse_args(&program, &args, argc, argv);

    int count = 0, driver = 0, runtime = 0;
    char drv[16], rt[16];
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    cudaError_t err = cudaGetDeviceCount(&count); /* no driver or no GPU: exit 77 here */
    if (err != cudaSuccess) lb_cuda_fail(err, "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    version_text(driver, drv, sizeof drv);
    version_text(runtime, rt, sizeof rt);

    if (as_json)
        printf("{\n  \"driver_cuda_version\": \"%s\",\n  \"runtime_version\": \"%s\",\n  \"devices\": [\n", drv, rt);
    else if (!args.quiet)
        printf("CUDA driver supports CUDA %s, this program's runtime is CUDA %s, %d device(s)\n\n", drv, rt, count);
    for (int dev = 0; dev < count; dev++) {
        device_info d;
        query(dev, &d);
        if (as_json)
            print_json(dev, &d, dev == count - 1);
        else if (args.quiet)
            printf("device_query: %d: %s, sm_%d%d, %d SMs, %.0f GiB, %.1f TFLOP/s FP32, %.0f GB/s (theoretical)\n", dev,
                   d.p.name, d.p.major, d.p.minor, d.p.multiProcessorCount, d.p.totalGlobalMem / 1073741824.0,
                   d.peak_tflops, d.peak_gbps);
        else {
            print_text(dev, &d);
            if (dev + 1 < count) putchar('\n');
        }
    }
    if (as_json) printf("  ]\n}\n");
    return LB_EXIT_PASS;
}
